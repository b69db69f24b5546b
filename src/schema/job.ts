import type { LogGap, LogLineRecord, LogPage } from '../domain/types.js';
import { DomainError } from '../domain/errors.js';
import type { Freshness, ProgressRow } from '../store/index.js';
import { checkPageSize } from './args.js';
import { builder } from './builder.js';
import { AcceleratorKindEnum, AggregationEnum, JobStatusEnum, MetricScopeEnum, SystemMetricEnum } from './enums.js';
import { JobConnectionRef, resolveJobConnection } from './job-connection.js';
import { JobFilterRef } from './job-filter.js';
import { FreshnessRef, MetricSeriesRef } from './metric-series.js';
import { ProviderRef } from './provider.js';
import { GpuRef, JobRef, NodeRef, ProjectRef } from './refs.js';
import { systemSeries, trainingSeries } from './series-fields.js';

const JobProgressRef = builder.objectRef<{ row: ProgressRow; freshness: Freshness }>('JobProgress');
JobProgressRef.implement({
  description: 'Training progress: from iteration times (Primus-Lens) or steps over time (Runicorn)',
  fields: (t) => ({
    iteration: t.float({ nullable: true, resolve: (p) => p.row.iteration }),
    targetIteration: t.float({ nullable: true, resolve: (p) => p.row.targetIteration }),
    fraction: t.float({
      nullable: true,
      description: 'iteration / targetIteration, 0..1',
      resolve: ({ row }) => (row.iteration !== null && row.targetIteration ? Math.min(1, row.iteration / row.targetIteration) : null),
    }),
    rate: t.float({ nullable: true, description: 'Iterations per second, recently', resolve: (p) => p.row.rate }),
    etaSeconds: t.float({ nullable: true, description: 'Seconds left at the current rate', resolve: ({ row }) => etaSeconds(row) }),
    eta: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the target iteration is expected at the current rate',
      resolve: ({ row }) => {
        const s = etaSeconds(row);
        return s === null || !row.updatedAt ? null : new Date(row.updatedAt.getTime() + s * 1000);
      },
    }),
    updatedAt: t.field({ type: 'DateTime', nullable: true, description: 'When the latest iteration was recorded', resolve: (p) => p.row.updatedAt }),
    freshness: t.field({ type: FreshnessRef, resolve: (p) => p.freshness }),
  }),
});

function etaSeconds(row: ProgressRow): number | null {
  if (row.iteration === null || !row.targetIteration || !row.rate || row.rate <= 0) return null;
  return Math.max(0, (row.targetIteration - row.iteration) / row.rate);
}

export const LogLineRef = builder.objectRef<LogLineRecord>(
  'LogLine',
);
LogLineRef.implement({
  fields: (t) => ({
    timestamp: t.field({ type: 'DateTime', nullable: true, resolve: (l) => l.timestamp }),
    message: t.exposeString('message'),
    node: t.string({ nullable: true, description: 'The node, replica or pod that wrote the line', resolve: (l) => l.node }),
    level: t.string({ nullable: true, resolve: (l) => l.level }),
    cursor: t.exposeString('cursor', { description: 'Pass as `after` to continue strictly after this line' }),
  }),
});

const LogGapRef = builder.objectRef<LogGap>('LogGap');
LogGapRef.implement({
  description: 'Lines the platform holds but did not deliver, at one place in the log',
  fields: (t) => ({
    after: t.string({ nullable: true, description: 'The cursor of the line before the missing ones; null = before the first line', resolve: (g) => g.after }),
    lines: t.int({ description: 'How many lines are missing there (count, >= 1)', resolve: (g) => g.lines }),
    reason: t.exposeString('reason', { description: 'Why they are missing and where they can still be read' }),
  }),
});

const LogPageRef = builder.objectRef<LogPage>('LogPage');
LogPageRef.implement({
  fields: (t) => ({
    lines: t.field({ type: [LogLineRef], resolve: (p) => p.lines }),
    gaps: t.field({
      type: [LogGapRef],
      description: "Lines inside this page's range that exist upstream but could not be read (e.g. the Runicorn viewer's 10,000-line replay cap); empty = none",
      resolve: (p) => p.gaps ?? [],
    }),
    nextCursor: t.string({ nullable: true, description: 'Pass as `after` for the following lines', resolve: (p) => p.nextCursor }),
  }),
});

JobRef.implement({
  description: 'A training job on one platform',
  fields: (t) => ({
    id: t.exposeID('id'),
    externalId: t.exposeString('externalId', { description: "The platform's own id for the job" }),
    name: t.exposeString('name'),
    status: t.field({ type: JobStatusEnum, resolve: (j) => j.status as never }),
    rawStatus: t.string({ nullable: true, description: "The platform's own status string", resolve: (j) => j.rawStatus }),
    provider: t.field({
      type: ProviderRef,
      resolve: (j, _a, ctx) => ctx.store.providers.require(j.providerId),
    }),
    project: t.field({
      type: ProjectRef,
      resolve: async (j, _a, ctx) => {
        const p = await ctx.store.loaders.projectById.load(j.projectId);
        if (!p) throw new DomainError('NOT_FOUND', `project ${j.projectId} is not cached`);
        return p;
      },
    }),
    createdAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.createdAt }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.finishedAt }),
    gpuType: t.string({
      nullable: true,
      description: 'The accelerator model (a GPU or NPU model, see acceleratorKind); null when the platform does not say',
      resolve: (j) => j.gpuType,
    }),
    gpuCount: t.int({
      nullable: true,
      description:
        'Accelerators of the whole job, all nodes: GPUs, or NPUs when acceleratorKind is NPU (count, >= 0); null until the platform says',
      resolve: (j) => j.gpuCount,
    }),
    acceleratorKind: t.field({
      type: AcceleratorKindEnum,
      nullable: true,
      description: 'What gpuCount, gpus and the utilization series count: GPU, NPU or NONE; null when the platform does not say',
      resolve: (j) => j.acceleratorKind as never,
    }),
    failureReason: t.string({
      nullable: true,
      description:
        "Why the job failed or was stopped, in the platform's words (Baseten error_message, PAI-DLC ReasonCode: ReasonMessage, ModelArts status reason); null when it gave none; at most a few KB",
      resolve: (j) => j.failureReason,
    }),
    consoleUrl: t.string({
      nullable: true,
      description: "The job's page in the platform's own web console (absolute URL); null where none can be built",
      resolve: (j) => j.consoleUrl,
    }),
    restartCount: t.int({
      nullable: true,
      description:
        'Restarts the platform reports (count, >= 0): PAI-DLC pod incarnations, ModelArts running records; null when it does not say',
      resolve: (j) => j.restartCount,
    }),
    nodes: t.field({
      type: [NodeRef],
      resolve: async (j, _a, ctx) => {
        await ctx.store.loaders.topology.load(j);
        return ctx.store.loaders.nodesOfJob.load(j.id);
      },
    }),
    gpus: t.field({
      type: [GpuRef],
      resolve: async (j, _a, ctx) => {
        await ctx.store.loaders.topology.load(j);
        return ctx.store.loaders.gpusOfJob.load(j.id);
      },
    }),
    topologyFreshness: t.field({
      type: FreshnessRef,
      description: 'How current nodes and gpus are',
      resolve: (j, _a, ctx) => ctx.store.loaders.topology.load(j),
    }),
    metrics: t.field({
      type: [MetricSeriesRef],
      description: 'System metrics of the job at every scope it has (JOB, NODE, GPU), or only `scope`',
      args: {
        names: t.arg({ type: [SystemMetricEnum], required: false }),
        scope: t.arg({ type: MetricScopeEnum, required: false }),
        from: t.arg({ type: 'DateTime', required: false, description: 'Default: the job start' }),
        to: t.arg({ type: 'DateTime', required: false, description: 'Default: the job end, or now' }),
        maxPoints: t.arg.int({ required: false }),
        aggregation: t.arg({ type: AggregationEnum, required: false }),
      },
      resolve: (j, args, ctx) => systemSeries(ctx, j, args),
    }),
    trainingMetrics: t.field({
      type: [MetricSeriesRef],
      description: 'Training metrics (loss, accuracy, ...) keyed by step, where the platform has them',
      args: {
        names: t.arg.stringList({ required: false }),
        from: t.arg({ type: 'DateTime', required: false }),
        to: t.arg({ type: 'DateTime', required: false }),
        maxPoints: t.arg.int({ required: false }),
        aggregation: t.arg({ type: AggregationEnum, required: false }),
      },
      resolve: (j, args, ctx) => trainingSeries(ctx, j, args),
    }),
    progress: t.field({
      type: JobProgressRef,
      nullable: true,
      resolve: async (j, _a, ctx) => {
        const freshness = await ctx.store.loaders.progressReady.load(j);
        const row = await ctx.store.loaders.progressOfJob.load(j.id);
        return row ? { row, freshness } : null;
      },
    }),
    logs: t.field({
      type: LogPageRef,
      nullable: true,
      description: 'Log lines oldest first, read from the platform (not cached)',
      args: {
        first: t.arg.int({ required: false }),
        after: t.arg.string({ required: false }),
        since: t.arg({ type: 'DateTime', required: false }),
      },
      resolve: (j, args, ctx) => {
        const limit = checkPageSize(args.first, ctx.limits.defaultLogLines, ctx.limits.maxLogLines);
        return ctx.store.logs(j, { after: args.after ?? null, since: args.since ?? null, limit });
      },
    }),
  }),
});

builder.queryFields((t) => ({
  job: t.field({
    type: JobRef,
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const job = await ctx.store.loaders.jobById.load(String(args.id));
      if (!job) throw new DomainError('NOT_FOUND', `no job with id "${String(args.id).slice(0, 200)}"`);
      return job;
    },
  }),
  jobs: t.field({
    type: JobConnectionRef,
    args: {
      filter: t.arg({ type: JobFilterRef, required: false }),
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
    },
    resolve: (_r, args, ctx) => resolveJobConnection(ctx, args),
  }),
}));
