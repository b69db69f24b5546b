// Query.fleet: questions across every platform at once (idle GPUs, GPU-hours allocated vs used,
// jobs ranked by waste), answered in SQL over the cached GPU utilization (src/store/fleet.ts)
// after the read-through store has fetched what the window needs.
import type { ObjectFieldBuilder } from '@pothos/core';
import { DomainError } from '../domain/errors.js';
import { MAX_GAP_STEPS, type GpuHoursRow, type IdleRunRow, type JobRow, type PreparedFleet } from '../store/index.js';
import { checkPageSize } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { MetricScopeEnum } from './enums.js';
import { JobFilterRef, resolveJobFilter } from './job-filter.js';
import { ProviderRef } from './provider.js';
import { GpuRef, JobRef, NodeRef, ProjectRef } from './refs.js';

const SEMANTICS =
  `Each job counts for its part of [from, to] inside its life (start to end, or now); PENDING jobs hold no GPUs and are left out. ` +
  `GPU utilization is read per GPU where the platform reports per-GPU series; where it reports only a node aggregate ` +
  `(ModelArts, PAI-DLC), the node's series stands for all of the node's GPUs (aggregate: true), and a job-level series ` +
  `stands for all of the job's GPUs. A point's value holds until the next point when that gap is at most ${MAX_GAP_STEPS}x ` +
  `the series' step (the median spacing of its points in the window), otherwise (and after the last point) for one step; ` +
  `null points hold nothing; only points inside the window count. Time no point holds is "no data": it is allocated, ` +
  `neither used nor idle, and lowers coverage.`;

interface FleetShape {
  prepared: Promise<PreparedFleet>;
  askedFrom: Date;
  /** The roll-ups, read once for whichever of `utilization` and `jobs` asks first. */
  gpuHours?: Promise<GpuHoursRow[]>;
}

interface IdleGpuShape {
  job: JobRow;
  runs: IdleRunRow[];
}

interface UsageShape {
  row: GpuHoursRow;
}

const IdleIntervalRef = builder.objectRef<{ run: IdleRunRow }>('IdleInterval');
IdleIntervalRef.implement({
  description: 'A stretch in which utilization stayed under the threshold, with data all along',
  fields: (t) => ({
    from: t.field({ type: 'DateTime', resolve: ({ run }) => run.from }),
    to: t.field({ type: 'DateTime', resolve: ({ run }) => run.to }),
    seconds: t.float({ resolve: ({ run }) => seconds(run) }),
    gpuHours: t.float({ description: 'seconds / 3600 x the GPUs the series stands for', resolve: ({ run }) => (seconds(run) / 3600) * run.gpus }),
    avgUtilization: t.float({ description: 'Time-weighted mean utilization in the stretch, 0..1', resolve: ({ run }) => run.avgUtilization }),
    maxUtilization: t.float({ resolve: ({ run }) => run.maxUtilization }),
  }),
});

const IdleGpuRef = builder.objectRef<IdleGpuShape>('IdleGpu');
IdleGpuRef.implement({
  description: `A GPU, or a node or job aggregate standing for several GPUs, that stayed under the threshold for long enough. ${SEMANTICS}`,
  fields: (t) => ({
    job: t.field({ type: JobRef, resolve: (g) => g.job }),
    provider: t.field({ type: ProviderRef, resolve: (g, _a, ctx) => ctx.store.providers.require(g.job.providerId) }),
    scope: t.field({ type: MetricScopeEnum, description: 'GPU, or NODE / JOB for an aggregate series', resolve: (g) => g.runs[0]!.scope }),
    aggregate: t.boolean({
      description: 'True when the platform has no per-GPU series and this is a node (or job) aggregate counted for all its GPUs',
      resolve: (g) => g.runs[0]!.scope !== 'GPU',
    }),
    gpuCount: t.float({
      description: 'GPUs the series stands for: 1 for a GPU; the node\'s GPUs for a node aggregate (the job\'s GPU count split evenly over its nodes when the topology is unknown)',
      resolve: (g) => g.runs[0]!.gpus,
    }),
    node: t.field({
      type: NodeRef,
      nullable: true,
      resolve: (g, _a, ctx) => (g.runs[0]!.nodeId ? ctx.store.loaders.nodeById.load(g.runs[0]!.nodeId) : null),
    }),
    gpu: t.field({
      type: GpuRef,
      nullable: true,
      resolve: (g, _a, ctx) => (g.runs[0]!.gpuId ? ctx.store.loaders.gpuById.load(g.runs[0]!.gpuId) : null),
    }),
    model: t.string({
      nullable: true,
      description: "The GPU's model, or the job's GPU type for an aggregate",
      resolve: async (g, _a, ctx) => {
        const gpu = g.runs[0]!.gpuId ? await ctx.store.loaders.gpuById.load(g.runs[0]!.gpuId) : null;
        return gpu?.model ?? g.job.gpuType;
      },
    }),
    intervals: t.field({ type: [IdleIntervalRef], description: 'Oldest first', resolve: (g) => g.runs.map((run) => ({ run })) }),
    idleSeconds: t.float({ resolve: (g) => g.runs.reduce((a, r) => a + seconds(r), 0) }),
    idleGpuHours: t.float({ resolve: (g) => g.runs.reduce((a, r) => a + (seconds(r) / 3600) * r.gpus, 0) }),
  }),
});

type Types = typeof builder.$inferSchemaTypes;

/** The GPU-hour figures every roll-up shares, defined once for each of its types. */
function usageFields<T extends UsageShape>(t: ObjectFieldBuilder<Types, T>) {
  return {
    jobCount: t.int({ resolve: ({ row }) => row.jobs }),
    allocatedGpuHours: t.float({ description: 'GPUs held x time in the window', resolve: ({ row }) => row.allocatedGpuHours }),
    coveredGpuHours: t.float({ description: 'The part of allocatedGpuHours with utilization data', resolve: ({ row }) => row.coveredGpuHours }),
    usedGpuHours: t.float({ description: 'Sum of utilization x time x GPUs over the covered time', resolve: ({ row }) => row.usedGpuHours }),
    wasteGpuHours: t.float({
      description: 'allocatedGpuHours - usedGpuHours: time without data counts as waste (unmeasured use is not shown as use)',
      resolve: ({ row }) => row.allocatedGpuHours - row.usedGpuHours,
    }),
    coverage: t.float({
      nullable: true,
      description: 'coveredGpuHours / allocatedGpuHours, 0..1: how much of the window had data',
      resolve: ({ row }) => (row.allocatedGpuHours > 0 ? row.coveredGpuHours / row.allocatedGpuHours : null),
    }),
    utilization: t.float({
      nullable: true,
      description: 'usedGpuHours / coveredGpuHours: mean utilization where measured',
      resolve: ({ row }) => (row.coveredGpuHours > 0 ? row.usedGpuHours / row.coveredGpuHours : null),
    }),
    efficiency: t.float({
      nullable: true,
      description: 'usedGpuHours / allocatedGpuHours: use of what was paid for (no data counts as unused)',
      resolve: ({ row }) => (row.allocatedGpuHours > 0 ? row.usedGpuHours / row.allocatedGpuHours : null),
    }),
  };
}

const JobUsageRef = builder.objectRef<UsageShape & { job: JobRow }>('JobGpuHours');
JobUsageRef.implement({
  description: "One job's GPU-hours in the window",
  fields: (t) => ({ job: t.field({ type: JobRef, resolve: (u) => u.job }), ...usageFields(t) }),
});

const ProviderUsageRef = builder.objectRef<UsageShape & { providerId: string }>('ProviderGpuHours');
ProviderUsageRef.implement({
  fields: (t) => ({
    provider: t.field({ type: ProviderRef, resolve: (u, _a, ctx) => ctx.store.providers.require(u.providerId) }),
    ...usageFields(t),
  }),
});

const ProjectUsageRef = builder.objectRef<UsageShape & { projectId: string }>('ProjectGpuHours');
ProjectUsageRef.implement({
  fields: (t) => ({
    project: t.field({
      type: ProjectRef,
      resolve: async (u, _a, ctx) => {
        const p = await ctx.store.loaders.projectById.load(u.projectId);
        if (!p) throw new DomainError('NOT_FOUND', `project ${u.projectId} is not cached`);
        return p;
      },
    }),
    ...usageFields(t),
  }),
});

const ModelUsageRef = builder.objectRef<UsageShape & { model: string }>('GpuModelGpuHours');
ModelUsageRef.implement({
  description: "GPU-hours by the platform's GPU type name (platforms name the same model differently)",
  fields: (t) => ({ model: t.string({ description: '"unknown" where the platform does not say', resolve: (u) => u.model }), ...usageFields(t) }),
});

const TotalUsageRef = builder.objectRef<UsageShape>('FleetGpuHours');
TotalUsageRef.implement({ fields: (t) => usageFields(t) });

const FleetUtilizationRef = builder.objectRef<{ rows: GpuHoursRow[] }>('FleetUtilization');
FleetUtilizationRef.implement({
  description: `GPU-hours allocated vs used, rolled up. Jobs with no known GPUs and no GPU series are left out. ${SEMANTICS}`,
  fields: (t) => ({
    total: t.field({
      type: TotalUsageRef,
      resolve: ({ rows }) => ({ row: rows.find((r) => r.kind === 'total') ?? { kind: 'total', key: null, jobs: 0, allocatedGpuHours: 0, coveredGpuHours: 0, usedGpuHours: 0 } }),
    }),
    byProvider: t.field({ type: [ProviderUsageRef], resolve: ({ rows }) => byKind(rows, 'provider').map((row) => ({ row, providerId: row.key! })) }),
    byProject: t.field({ type: [ProjectUsageRef], resolve: ({ rows }) => byKind(rows, 'project').map((row) => ({ row, projectId: row.key! })) }),
    byGpuModel: t.field({ type: [ModelUsageRef], resolve: ({ rows }) => byKind(rows, 'model').map((row) => ({ row, model: row.key! })) }),
  }),
});

const FleetProblemRef = builder.objectRef<PreparedFleet['problems'][number]>('FleetProblem');
FleetProblemRef.implement({
  description: "A job whose utilization could not be refreshed: it is counted from the cache (stale) or has no data",
  fields: (t) => ({
    job: t.field({ type: JobRef, resolve: (p) => p.job }),
    stale: t.exposeBoolean('stale', { description: 'True when older cached data was used; false when there was none' }),
    code: t.exposeString('code'),
    message: t.exposeString('message'),
  }),
});

const FleetRef = builder.objectRef<FleetShape>('Fleet');
FleetRef.implement({
  description: `GPU questions across every matching job of every platform in one window. ${SEMANTICS}`,
  fields: (t) => ({
    from: t.field({ type: 'DateTime', resolve: (f) => f.askedFrom }),
    to: t.field({ type: 'DateTime', description: 'The window end, capped at now', resolve: async (f) => (await f.prepared).to }),
    jobCount: t.int({ description: 'Matching jobs that held GPUs in the window (not PENDING)', resolve: async (f) => (await f.prepared).windows.length }),
    idleGpus: t.field({
      type: [IdleGpuRef],
      description: 'GPUs (or aggregates) with idle stretches, most idle GPU-hours first',
      args: {
        threshold: t.arg.float({ required: true, defaultValue: 0.1, description: 'Idle means utilization strictly under this ratio (0..1)' }),
        forAtLeast: t.arg({ type: 'Duration', required: true, defaultValue: 1800, description: 'Shortest idle stretch reported' }),
        first: t.arg.int({ required: false, description: 'At most this many GPUs (default and cap: the page size limits)' }),
      },
      resolve: async (f, args, ctx) => {
        if (!(args.threshold > 0 && args.threshold <= 1)) {
          throw new DomainError('BAD_INPUT', `"threshold" must be a ratio in (0, 1], got ${args.threshold}`, { argument: 'threshold' });
        }
        if (!(args.forAtLeast >= 0)) throw new DomainError('BAD_INPUT', '"forAtLeast" must not be negative', { argument: 'forAtLeast' });
        const first = checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize);
        const prepared = await f.prepared;
        const runs = await ctx.store.fleet.idleRuns(prepared.windows, args.threshold, args.forAtLeast, first);
        const jobs = new Map(prepared.jobs.map((j) => [j.id, j]));
        const bySeries = new Map<number, IdleRunRow[]>();
        for (const r of runs) bySeries.set(r.seriesId, [...(bySeries.get(r.seriesId) ?? []), r]);
        return [...bySeries.values()].map((list) => ({ job: jobs.get(list[0]!.jobId)!, runs: list }));
      },
    }),
    utilization: t.field({
      type: FleetUtilizationRef,
      resolve: async (f, _a, ctx) => ({ rows: await gpuHoursOf(f, ctx) }),
    }),
    jobs: t.field({
      type: [JobUsageRef],
      description: 'Jobs ranked by waste (allocated minus used GPU-hours), most first',
      args: { first: t.arg.int({ required: false, description: 'Default and cap: the page size limits' }) },
      resolve: async (f, args, ctx) => {
        const first = checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize);
        const prepared = await f.prepared;
        const jobs = new Map(prepared.jobs.map((j) => [j.id, j]));
        return byKind(await gpuHoursOf(f, ctx), 'job')
          .slice(0, first)
          .map((row) => ({ row, job: jobs.get(row.key!)! }));
      },
    }),
    problems: t.field({
      type: [FleetProblemRef],
      description: 'Jobs whose utilization could not be refreshed for this answer',
      resolve: async (f) => (await f.prepared).problems,
    }),
  }),
});

builder.queryFields((t) => ({
  fleet: t.field({
    type: FleetRef,
    description: 'GPU questions across every platform: idle GPUs, GPU-hours allocated vs used, jobs ranked by waste',
    args: {
      filter: t.arg({ type: JobFilterRef, required: false }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
    },
    resolve: (_r, args, ctx) => {
      if (args.from >= args.to) {
        throw new DomainError('BAD_INPUT', `"from" (${args.from.toISOString()}) must be before "to" (${args.to.toISOString()})`, { argument: 'from' });
      }
      const filter = resolveJobFilter(ctx, args.filter);
      const prepared = (async () => {
        await ctx.store.syncJobLists(filter.providerIds);
        if (filter.providerIds.length === 0) return { from: args.from, to: args.to, jobs: [], windows: [], problems: [] };
        return ctx.store.fleet.prepare(filter.jobs, args.from, args.to, ctx.limits.defaultMaxPoints);
      })();
      // Fields that never await it must not leave a rejection unhandled.
      prepared.catch(() => {});
      return { prepared, askedFrom: args.from };
    },
  }),
}));

function seconds(run: IdleRunRow): number {
  return (run.to.getTime() - run.from.getTime()) / 1000;
}

function byKind(rows: readonly GpuHoursRow[], kind: GpuHoursRow['kind']): GpuHoursRow[] {
  return rows.filter((r) => r.kind === kind);
}

// utilization and jobs share one statement: the roll-ups come with the top jobs (up to the page cap).
function gpuHoursOf(f: FleetShape, ctx: Context): Promise<GpuHoursRow[]> {
  f.gpuHours ??= f.prepared.then((p) => ctx.store.fleet.gpuHours(p.windows, ctx.limits.maxPageSize));
  return f.gpuHours;
}
