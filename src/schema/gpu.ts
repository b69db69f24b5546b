import { DomainError } from '../domain/errors.js';
import type { SystemMetric } from '../domain/types.js';
import type { GpuRow } from '../store/index.js';
import type { SeriesArgs } from './args.js';
import type { Context } from './context.js';
import { AggregationEnum } from './enums.js';
import { MetricSeriesRef } from './metric-series.js';
import { GpuRef, JobRef, NodeRef } from './refs.js';
import { systemSeries } from './series-fields.js';

/** A GPU's own series; null where the platform reports only node aggregates (never invented). */
async function gpuSeries(ctx: Context, gpu: GpuRow, name: SystemMetric, args: SeriesArgs) {
  const job = await ctx.store.loaders.jobById.load(gpu.jobId);
  if (!job) return null;
  const [series] = await systemSeries(ctx, job, { ...args, names: [name], scope: 'GPU' }, (row) => row.gpuId === gpu.id);
  return series ?? null;
}

GpuRef.implement({
  description: 'One GPU of a job. Its series exist only where the platform reports per-GPU numbers',
  fields: (t) => {
    const windowArgs = {
      from: t.arg({ type: 'DateTime', required: false }),
      to: t.arg({ type: 'DateTime', required: false }),
      maxPoints: t.arg.int({ required: false }),
      aggregation: t.arg({ type: AggregationEnum, required: false }),
    };
    return {
      id: t.exposeID('id'),
      index: t.exposeInt('idx', { description: 'The rank / device index within its node' }),
      node: t.field({ type: NodeRef, nullable: true, resolve: (g, _a, ctx) => ctx.store.loaders.nodeById.load(g.nodeId) }),
      job: t.field({
        type: JobRef,
        resolve: async (g, _a, ctx) => {
          const job = await ctx.store.loaders.jobById.load(g.jobId);
          if (!job) throw new DomainError('NOT_FOUND', `job ${g.jobId} is gone`);
          return job;
        },
      }),
      model: t.string({ nullable: true, resolve: (g) => g.model }),
      memoryTotalBytes: t.float({ nullable: true, resolve: (g) => g.memoryTotalBytes }),
      utilization: t.field({
        type: MetricSeriesRef,
        nullable: true,
        description: 'GPU_UTILIZATION of this GPU (RATIO)',
        args: windowArgs,
        resolve: (g, args, ctx) => gpuSeries(ctx, g, 'GPU_UTILIZATION', args),
      }),
      memoryUsed: t.field({
        type: MetricSeriesRef,
        nullable: true,
        description: 'GPU_MEMORY_USED of this GPU (BYTES)',
        args: windowArgs,
        resolve: (g, args, ctx) => gpuSeries(ctx, g, 'GPU_MEMORY_USED', args),
      }),
      memoryUtilization: t.field({
        type: MetricSeriesRef,
        nullable: true,
        description: 'GPU_MEMORY_UTILIZATION of this GPU (RATIO)',
        args: windowArgs,
        resolve: (g, args, ctx) => gpuSeries(ctx, g, 'GPU_MEMORY_UTILIZATION', args),
      }),
    };
  },
});
