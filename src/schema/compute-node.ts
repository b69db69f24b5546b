// ComputeNode: one machine of a job (a Baseten node, a ModelArts task, a PAI-DLC pod, a Lens pod, a
// Runicorn host). Named so to leave `Node` to Relay's interface, which a supergraph's other
// subgraphs use too; its ids (`<provider>:node:<job>#<node>`) are unchanged.
import { DomainError } from '../domain/errors.js';
import { UNKNOWN_JOB_SHAPE } from '../store/index.js';
import { MetricSeriesRef, systemSeriesArgs } from './metric-series.js';
import { ComputeNodeRef, GpuRef, JobRef, NodeInterfaceRef } from './refs.js';
import { systemSeries } from './series-fields.js';
import { reportStale } from './staleness.js';

ComputeNodeRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'A compute node of a job: a Baseten node, a ModelArts task, a PAI-DLC pod, a Lens pod, a Runicorn host',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Global id, `<providerId>:node:<job external id>#<node name>`; stable across restarts' }),
    name: t.exposeString('name', { description: "The platform's name for the node, task, pod or host" }),
    job: t.field({
      type: JobRef,
      description: 'The job this node belongs to',
      resolve: async (n, _a, ctx) => {
        const job = await ctx.store.loaders.jobById.load(n.jobId);
        if (!job) throw new DomainError('NOT_FOUND', `job ${n.jobId} is gone`);
        return job;
      },
    }),
    gpus: t.field({
      type: [GpuRef],
      // The sizes the query-cost estimate gives a job the store does not know (store/job-shapes.ts).
      directives: { listSize: { assumedSize: UNKNOWN_JOB_SHAPE.gpusPerNode } },
      description: "This node's GPUs (or NPUs) by index; empty where the platform does not say",
      resolve: async (n, _a, ctx) => (await ctx.store.loaders.gpusOfJob.load(n.jobId)).filter((g) => g.nodeId === n.id),
    }),
    metrics: t.field({
      type: [MetricSeriesRef],
      nullable: true,
      directives: { cost: { weight: 10 }, listSize: { assumedSize: UNKNOWN_JOB_SHAPE.systemSeries } },
      description:
        "This node's series: NODE scope, and GPU scope for its GPUs where the platform has them; null (with the error at this path) when the platform failed and nothing is cached",
      args: systemSeriesArgs(t.arg),
      resolve: async (n, args, ctx, info) => {
        const job = await ctx.store.loaders.jobById.load(n.jobId);
        if (!job) return [];
        return reportStale(ctx, info, await systemSeries(ctx, job, args, (row) => row.nodeId === n.id));
      },
    }),
  }),
});
