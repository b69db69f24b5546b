import type { LogGap, LogLineRecord, LogPage, StartSource } from '../domain/types.js';
import { DomainError } from '../domain/errors.js';
import { type Freshness, type JobRow, type ProgressRow, UNKNOWN_JOB_SHAPE } from '../store/index.js';
import { checkPageSize } from './args.js';
import { builder } from './builder.js';
import { reportStale } from './staleness.js';
import { AcceleratorKindEnum, JobStatusEnum, LogLevelEnum, logLevelOf, StartSourceEnum } from './enums.js';
import { JobConnectionRef, jobConnectionArgs, resolveJobConnection } from './job-connection.js';
import type { Context } from './context.js';
import { FreshnessRef, freshnessView, MetricSeriesRef, systemSeriesArgs, windowArgs } from './metric-series.js';
import { ProviderRef } from './provider.js';
import { ComputeNodeRef, GpuRef, JobRef, NodeInterfaceRef, ProjectRef } from './refs.js';
import { systemSeries, topologyHint, trainingSeries } from './series-fields.js';
import { ID_DOCS, type LinePosition, linePositions, logGapId, logLineId, type LogPageArgs, logPageId, progressId } from './value-ids.js';

/** A job's progress; its id is derived from the job's. */
export interface ProgressView {
  row: ProgressRow;
  freshness: Freshness;
  jobId: string;
  /** Set when Query.node answered it: the id asked. */
  id?: string;
}

/** A log line and where it sits in its job's log (its id is derived from both). */
export interface LogLineView extends LogLineRecord {
  jobId: string;
  position: LinePosition;
  id?: string;
}

export interface LogGapView extends LogGap {
  jobId: string;
  id?: string;
}

/** A page of a job's log and the arguments that read it. */
export interface LogPageView extends LogPage {
  jobId: string;
  request: LogPageArgs;
  id?: string;
}

/** Job.progress: null where the platform reports none. */
export async function progressOf(ctx: Context, job: JobRow): Promise<ProgressView | null> {
  const freshness = await ctx.store.loaders.progressReady.load(job);
  const row = await ctx.store.loaders.progressOfJob.load(job.id);
  return row ? { row, freshness, jobId: job.id } : null;
}

/** Job.logs: a page read from the platform. */
export async function logPageOf(ctx: Context, job: JobRow, request: LogPageArgs): Promise<LogPageView> {
  return { ...(await ctx.store.logs(job, request)), jobId: job.id, request };
}

const JobProgressRef = builder.objectRef<ProgressView>('JobProgress');
JobProgressRef.implement({
  description: 'Training progress: from iteration times (Primus-Lens) or steps over time (Runicorn)',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.JobProgress, resolve: (p) => p.id ?? progressId(p.jobId) }),
    iteration: t.int({
      nullable: true,
      description: 'The latest iteration (step) recorded, a count from 0; null until the platform reports one',
      resolve: (p) => wholeCount(p.row.iteration),
    }),
    targetIteration: t.int({
      nullable: true,
      description: 'The iteration the run is configured to reach (a count); null where the platform does not say',
      resolve: (p) => wholeCount(p.row.targetIteration),
    }),
    fraction: t.float({
      nullable: true,
      description: 'iteration / targetIteration, 0..1',
      resolve: ({ row }) => (row.iteration !== null && row.targetIteration ? Math.min(1, row.iteration / row.targetIteration) : null),
    }),
    rate: t.float({ nullable: true, description: 'Iterations per second over the recent iterations; null until two are known', resolve: (p) => p.row.rate }),
    remaining: t.field({
      type: 'Duration',
      nullable: true,
      description: 'Time left until the target iteration at the current rate; null without a target or a rate',
      resolve: ({ row }) => etaSeconds(row),
    }),
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
    freshness: t.field({
      type: FreshnessRef,
      description: 'How current this progress is',
      resolve: (p) => freshnessView(p.freshness, p.id ?? progressId(p.jobId)),
    }),
  }),
});

/** Iterations are whole counts; a platform's fractional or out-of-range number is not passed off as one. */
function wholeCount(n: number | null): number | null {
  return n !== null && Number.isInteger(n) && Math.abs(n) <= 2_147_483_647 ? n : null;
}

function etaSeconds(row: ProgressRow): number | null {
  if (row.iteration === null || !row.targetIteration || !row.rate || row.rate <= 0) return null;
  return Math.max(0, (row.targetIteration - row.iteration) / row.rate);
}

export const LogLineRef = builder.objectRef<LogLineView>('LogLine');
LogLineRef.implement({
  description: 'One log line of a job, as the platform wrote it',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.LogLine, resolve: (l) => l.id ?? logLineId(l.jobId, l.position) }),
    timestamp: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the line was written; null where the platform gives no time (PAI-DLC, Runicorn)',
      resolve: (l) => l.timestamp,
    }),
    message: t.exposeString('message', { description: 'The line as written, without its trailing newline (secrets the server knows are redacted)' }),
    node: t.string({ nullable: true, description: 'The node, replica or pod that wrote the line', resolve: (l) => l.node }),
    level: t.field({
      type: LogLevelEnum,
      nullable: true,
      description: 'The severity, where the platform labels one with a known name; null otherwise (see rawLevel)',
      resolve: (l) => logLevelOf(l.level),
    }),
    rawLevel: t.string({ nullable: true, description: "The platform's own level name, as written (null where it has none)", resolve: (l) => l.level }),
    cursor: t.exposeString('cursor', { description: 'Pass as `after` to continue strictly after this line' }),
  }),
});

const LogGapRef = builder.objectRef<LogGapView>('LogGap');
LogGapRef.implement({
  description: 'Lines the platform holds but did not deliver, at one place in the log',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.LogGap, resolve: (g) => g.id ?? logGapId(g.jobId, g.after) }),
    after: t.string({ nullable: true, description: 'The cursor of the line before the missing ones; null = before the first line', resolve: (g) => g.after }),
    lines: t.int({ description: 'How many lines are missing there (count, >= 1)', resolve: (g) => g.lines }),
    reason: t.exposeString('reason', { description: 'Why they are missing and where they can still be read' }),
  }),
});

const LogPageRef = builder.objectRef<LogPageView>('LogPage');
LogPageRef.implement({
  description: 'A page of log lines, oldest first, with the cursor for the next page',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.LogPage, resolve: (p) => p.id ?? logPageId(p.jobId, p.request) }),
    lines: t.field({
      type: [LogLineRef],
      description: 'Oldest first, at most `first` lines',
      resolve: (p) => {
        const positions = linePositions(p.lines, p.request.after, p.request.since);
        return p.lines.map((l, i) => ({ ...l, jobId: p.jobId, position: positions[i]! }));
      },
    }),
    gaps: t.field({
      type: [LogGapRef],
      description: "Lines inside this page's range that exist upstream but could not be read (e.g. the Runicorn viewer's 10,000-line replay cap); empty = none",
      resolve: (p) => (p.gaps ?? []).map((g) => ({ ...g, jobId: p.jobId })),
    }),
    nextCursor: t.string({ nullable: true, description: 'Pass as `after` for the following lines', resolve: (p) => p.nextCursor }),
  }),
});

JobRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'A training job on one platform',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Global id, `<providerId>:job:<platform job id>`; stable across restarts' }),
    externalId: t.exposeString('externalId', { description: "The platform's own id for the job" }),
    name: t.exposeString('name', { description: "The job's name on the platform" }),
    status: t.field({
      type: JobStatusEnum,
      description: "The platform's status mapped to the common set (rawStatus keeps the original)",
      resolve: (j) => j.status as never,
    }),
    rawStatus: t.string({ nullable: true, description: "The platform's own status string", resolve: (j) => j.rawStatus }),
    provider: t.field({
      type: ProviderRef,
      description: 'The platform the job runs on',
      resolve: (j, _a, ctx) => ctx.store.providers.require(j.providerId),
    }),
    project: t.field({
      type: ProjectRef,
      description: 'The project (workspace, namespace, path) the job belongs to',
      resolve: async (j, _a, ctx) => {
        const p = await ctx.store.loaders.projectById.load(j.projectId);
        if (!p) throw new DomainError('NOT_FOUND', `project ${j.projectId} is not cached`);
        return p;
      },
    }),
    createdAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the job was submitted; null where the platform does not say',
      resolve: (j) => j.createdAt,
    }),
    startedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the job started running; null until it does. startedAtSource says where the time comes from',
      resolve: (j) => j.startedAt,
    }),
    startedAtSource: t.field({
      type: StartSourceEnum,
      nullable: true,
      description: "Where startedAt comes from: the platform's start, the job's creation, or its first stored metric point; null while startedAt is null",
      resolve: (j) => (j.startedAt ? ((j.startedAtSource as StartSource | null) ?? 'PLATFORM') : null),
    }),
    finishedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the job ended (any terminal status); null while it runs',
      resolve: (j) => j.finishedAt,
    }),
    gpuType: t.string({
      nullable: true,
      description: 'The accelerator model (a GPU or NPU model, see acceleratorKind); null when the platform does not say',
      resolve: (j) => j.gpuType,
    }),
    gpuCount: t.int({
      nullable: true,
      description:
        'Accelerators of the whole job, all nodes: GPUs, or NPUs when acceleratorKind is NPU (count, >= 0); as soon as its nodes are known, the accelerators they report (in one answer, the same as its nodes and gpus list); null until the platform says',
      resolve: (j, _a, ctx) => ctx.store.loaders.topology.gpuCount(j),
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
      description: 'Restarts the platform reports (count, >= 0): PAI-DLC pod incarnations, ModelArts running records; null when it does not say',
      resolve: (j) => j.restartCount,
    }),
    nodes: t.field({
      type: [ComputeNodeRef],
      nullable: true,
      // The sizes the query-cost estimate gives a job the store does not know (store/job-shapes.ts).
      directives: { cost: { weight: 5 }, listSize: { assumedSize: UNKNOWN_JOB_SHAPE.nodes } },
      description:
        "The job's compute nodes (tasks, pods, hosts), in the platform's order; null (with the error at this path) when the platform's topology call failed and nothing is cached",
      resolve: async (j, _a, ctx, info) => {
        ctx.store.loaders.topology.hint(j.id, topologyHint(ctx, j, info));
        await ctx.store.loaders.topology.load(j);
        return ctx.store.loaders.nodesOfJob.load(j.id);
      },
    }),
    gpus: t.field({
      type: [GpuRef],
      nullable: true,
      directives: { cost: { weight: 5 }, listSize: { assumedSize: UNKNOWN_JOB_SHAPE.gpus } },
      description:
        "The job's GPUs (or NPUs) across its nodes; null (with the error at this path) when the platform's topology call failed and nothing is cached",
      resolve: async (j, _a, ctx, info) => {
        ctx.store.loaders.topology.hint(j.id, topologyHint(ctx, j, info));
        await ctx.store.loaders.topology.load(j);
        return ctx.store.loaders.gpusOfJob.load(j.id);
      },
    }),
    topologyFreshness: t.field({
      type: FreshnessRef,
      description: 'How current nodes and gpus are',
      resolve: async (j, _a, ctx, info) => reportStale(ctx, info, freshnessView(await ctx.store.loaders.topology.load(j), j.id)),
    }),
    metrics: t.field({
      type: [MetricSeriesRef],
      nullable: true,
      directives: { cost: { weight: 10 }, listSize: { assumedSize: UNKNOWN_JOB_SHAPE.systemSeries } },
      description:
        'System metrics of the job at every scope it has (JOB, NODE, GPU), or only `scope`; null (with the error at this path) when the platform failed and nothing is cached, otherwise a failed refresh shows as freshness.stale',
      args: systemSeriesArgs(t.arg),
      resolve: async (j, args, ctx, info) => reportStale(ctx, info, await systemSeries(ctx, j, args)),
    }),
    trainingMetrics: t.field({
      type: [MetricSeriesRef],
      nullable: true,
      directives: { cost: { weight: 10 }, listSize: { assumedSize: UNKNOWN_JOB_SHAPE.trainingSeries } },
      description:
        'Training metrics (loss, accuracy, ...) keyed by step, where the platform has them; null (with the error at this path) when the platform failed and nothing is cached, otherwise a failed refresh shows as freshness.stale',
      args: {
        names: t.arg.stringList({ required: false, description: 'Only these metric names (as the platform logs them, e.g. "loss"); default: all' }),
        ...windowArgs(t.arg, { from: 'the first point', to: 'the latest point' }),
      },
      resolve: async (j, args, ctx, info) => reportStale(ctx, info, await trainingSeries(ctx, j, args)),
    }),
    progress: t.field({
      type: JobProgressRef,
      nullable: true,
      description:
        'Training progress where the platform reports iterations (Primus-Lens, Runicorn); null elsewhere, or (with the error at this path) when the platform failed and nothing is cached',
      resolve: async (j, _a, ctx, info) => reportStale(ctx, info, await progressOf(ctx, j)),
    }),
    logs: t.field({
      type: LogPageRef,
      nullable: true,
      directives: { cost: { weight: 10 } },
      description: 'Log lines oldest first, read from the platform (not cached); null (with the error at this path) when the platform failed',
      args: {
        first: t.arg.int({ required: false, description: 'Lines per page, 0..the server cap (default 200, cap 1000 unless configured)' }),
        after: t.arg.string({ required: false, description: 'A cursor (LogLine.cursor or LogPage.nextCursor): continue strictly after it' }),
        since: t.arg({ type: 'DateTime', required: false, description: 'Without `after`: start at this time; default: the oldest line the platform keeps' }),
      },
      resolve: (j, args, ctx) => {
        const limit = checkPageSize(args.first, ctx.limits.defaultLogLines, ctx.limits.maxLogLines);
        return logPageOf(ctx, j, { after: args.after ?? null, since: args.since ?? null, limit });
      },
    }),
  }),
});

builder.queryFields((t) => ({
  job: t.field({
    type: JobRef,
    nullable: true,
    description: 'One job by its id; a NOT_FOUND error when there is none',
    args: { id: t.arg.id({ required: true, description: 'A Job id (`<providerId>:job:<platform job id>`)' }) },
    resolve: async (_r, args, ctx) => {
      const job = await ctx.store.loaders.jobById.load(String(args.id));
      if (!job) throw new DomainError('NOT_FOUND', `no job with id "${String(args.id).slice(0, 200)}"`);
      return job;
    },
  }),
  jobs: t.field({
    type: JobConnectionRef,
    description: 'Jobs of every configured platform as a Relay connection, newest first',
    directives: { listSize: { assumedSize: 50, slicingArguments: ['first', 'last'], sizedFields: ['edges', 'nodes'], requireOneSlicingArgument: false } },
    args: jobConnectionArgs(t.arg),
    resolve: async (_r, args, ctx, info) => reportStale(ctx, info, await resolveJobConnection(ctx, args, info)),
  }),
}));
