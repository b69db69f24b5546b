import { DomainError } from '../domain/errors.js';
import type { SystemMetric } from '../domain/types.js';
import type { GpuRow } from '../store/index.js';
import type { SeriesArgs } from './args.js';
import type { Context } from './context.js';
import { MetricSeriesRef, windowArgs } from './metric-series.js';
import { reportStale } from './staleness.js';
import { ComputeNodeRef, GpuRef, JobRef, NodeInterfaceRef } from './refs.js';
import { systemSeries } from './series-fields.js';

/** A GPU's own series; null where the platform reports only node aggregates (never invented). */
async function gpuSeries(ctx: Context, gpu: GpuRow, name: SystemMetric, args: SeriesArgs) {
  const job = await ctx.store.loaders.jobById.load(gpu.jobId);
  if (!job) return null;
  const [series] = await systemSeries(ctx, job, { ...args, names: [name], scope: 'GPU' }, (row) => row.gpuId === gpu.id);
  return series ?? null;
}

GpuRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'One GPU of a job. Its series exist only where the platform reports per-GPU numbers',
  fields: (t) => {
    const args = windowArgs(t.arg);
    return {
      id: t.exposeID('id', { description: 'Global id, `<providerId>:gpu:<job external id>#<node name>#<index>`; stable across restarts' }),
      index: t.exposeInt('idx', { description: 'The rank / device index within its node, from 0' }),
      node: t.field({
        type: ComputeNodeRef,
        nullable: true,
        description: 'The node this GPU is in; null if the node is no longer cached',
        resolve: (g, _a, ctx) => ctx.store.loaders.nodeById.load(g.nodeId),
      }),
      job: t.field({
        type: JobRef,
        description: 'The job this GPU belongs to',
        resolve: async (g, _a, ctx) => {
          const job = await ctx.store.loaders.jobById.load(g.jobId);
          if (!job) throw new DomainError('NOT_FOUND', `job ${g.jobId} is gone`);
          return job;
        },
      }),
      model: t.string({ nullable: true, description: "The platform's GPU model name (e.g. H100); null where it does not say", resolve: (g) => g.model }),
      memoryTotalBytes: t.float({ nullable: true, description: 'GPU memory, bytes; null where the platform does not say', resolve: (g) => g.memoryTotalBytes }),
      utilization: t.field({
        type: MetricSeriesRef,
        nullable: true,
        description: 'GPU_UTILIZATION of this GPU (RATIO 0..1); null where the platform has no per-GPU series (see Provider.perGpuSeries)',
        args,
        resolve: async (g, args, ctx, info) => reportStale(ctx, info, await gpuSeries(ctx, g, 'GPU_UTILIZATION', args)),
      }),
      memoryUsed: t.field({
        type: MetricSeriesRef,
        nullable: true,
        description: 'GPU_MEMORY_USED of this GPU (BYTES); null where the platform has no per-GPU series',
        args,
        resolve: async (g, args, ctx, info) => reportStale(ctx, info, await gpuSeries(ctx, g, 'GPU_MEMORY_USED', args)),
      }),
      memoryUtilization: t.field({
        type: MetricSeriesRef,
        nullable: true,
        description: 'GPU_MEMORY_UTILIZATION of this GPU (RATIO 0..1); null where the platform has no per-GPU series',
        args,
        resolve: async (g, args, ctx, info) => reportStale(ctx, info, await gpuSeries(ctx, g, 'GPU_MEMORY_UTILIZATION', args)),
      }),
    };
  },
});
