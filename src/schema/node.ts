import { DomainError } from '../domain/errors.js';
import { AggregationEnum, MetricScopeEnum, SystemMetricEnum } from './enums.js';
import { MetricSeriesRef } from './metric-series.js';
import { GpuRef, JobRef, NodeRef } from './refs.js';
import { systemSeries } from './series-fields.js';

NodeRef.implement({
  description: 'A compute node of a job: a Baseten node, a ModelArts task, a PAI-DLC pod, a Lens pod, a Runicorn host',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    job: t.field({
      type: JobRef,
      resolve: async (n, _a, ctx) => {
        const job = await ctx.store.loaders.jobById.load(n.jobId);
        if (!job) throw new DomainError('NOT_FOUND', `job ${n.jobId} is gone`);
        return job;
      },
    }),
    gpus: t.field({
      type: [GpuRef],
      resolve: async (n, _a, ctx) => (await ctx.store.loaders.gpusOfJob.load(n.jobId)).filter((g) => g.nodeId === n.id),
    }),
    metrics: t.field({
      type: [MetricSeriesRef],
      description: "This node's series: NODE scope, and GPU scope for its GPUs where the platform has them",
      args: {
        names: t.arg({ type: [SystemMetricEnum], required: false }),
        scope: t.arg({ type: MetricScopeEnum, required: false }),
        from: t.arg({ type: 'DateTime', required: false }),
        to: t.arg({ type: 'DateTime', required: false }),
        maxPoints: t.arg.int({ required: false }),
        aggregation: t.arg({ type: AggregationEnum, required: false }),
      },
      resolve: async (n, args, ctx) => {
        const job = await ctx.store.loaders.jobById.load(n.jobId);
        if (!job) return [];
        return systemSeries(ctx, job, args, (row) => row.nodeId === n.id);
      },
    }),
  }),
});
