// Query.fleet: questions across every platform at once (idle GPUs, GPU-hours allocated vs used,
// jobs ranked by waste), answered in SQL over the cached GPU utilization (src/store/fleet.ts)
// after the read-through store has fetched what the window needs.
import { DomainError } from '../domain/errors.js';
import { nodeBilledProviders } from '../domain/ledger.js';
import { MAX_GAP_STEPS, type GpuHoursRow, type IdleRunRow, type JobRow, type PreparedFleet } from '../store/index.js';
import { checkPageSize, checkSeriesArgs } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { AcceleratorKindEnum, MetricScopeEnum } from './enums.js';
import { JobFilterRef, resolveJobFilter } from './job-filter.js';
import { ProviderRef } from './provider.js';
import { ComputeNodeRef, GpuRef, JobRef, NodeInterfaceRef, ProjectRef, SourceErrorRef, type SourceErrorShape } from './refs.js';
import { type FleetArgs, fleetId, fleetUtilizationId, gpuHoursId, ID_DOCS, idleGpuId, idleIntervalId } from './value-ids.js';

const SEMANTICS =
  `Each job counts for its part of [from, to] inside its life (start to end, or now); PENDING jobs hold no GPUs and are left out. ` +
  `Accelerators are GPUs and NPUs alike (Ascend NPUs on ModelArts count with their NPU utilization; acceleratorKind says which). ` +
  `GPU utilization is read per GPU where the platform reports per-GPU series; where it reports only a node aggregate ` +
  `(ModelArts, PAI-DLC), the node's series stands for all of the node's GPUs (aggregate: true), and a job-level series ` +
  `stands for all of the job's GPUs. A point's value holds until the next point when that gap is at most ${MAX_GAP_STEPS}x ` +
  `the series' step (the median spacing of its points in the window), otherwise (and after the last point) for one step; ` +
  `null points hold nothing; only points inside the window count. Time no point holds is "no data": it is allocated, ` +
  `neither used nor idle, and lowers coverage.`;

export interface FleetShape {
  prepared: Promise<PreparedFleet>;
  /** What was asked: the fleet's id is derived from it. */
  args: FleetArgs;
  /** The fleet's id, once computed (or as Query.node was asked it). */
  id?: string;
  /** GPU-hour rows, once asked (gpuHoursOf). */
  gpuHours?: Promise<GpuHoursRow[]>;
}

/** The fleet's id, computed once per answer: every row's id is derived from it. */
export const idOfFleet = (f: FleetShape): string => (f.id ??= fleetId(f.args));

export interface IdleGpuShape {
  fleet: FleetShape;
  /** idleGpus' arguments, part of the id: another threshold makes other rows. */
  threshold: number;
  forAtLeast: number;
  job: JobRow;
  runs: IdleRunRow[];
  id?: string;
}

export const idOfIdleGpu = (g: IdleGpuShape): string =>
  (g.id ??= idleGpuId(idOfFleet(g.fleet), {
    threshold: g.threshold,
    forAtLeast: g.forAtLeast,
    jobId: g.job.id,
    scope: g.runs[0]!.scope,
    nodeId: g.runs[0]!.nodeId,
    gpuId: g.runs[0]!.gpuId,
  }));

export interface IdleIntervalShape {
  gpu: IdleGpuShape;
  run: IdleRunRow;
  id?: string;
}

const IdleIntervalRef = builder.objectRef<IdleIntervalShape>('IdleInterval');
IdleIntervalRef.implement({
  description: 'A stretch in which utilization stayed under the threshold, with data all along',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.IdleInterval, resolve: (v) => v.id ?? idleIntervalId(idOfIdleGpu(v.gpu), v.run.from) }),
    from: t.field({ type: 'DateTime', description: 'Start of the stretch', resolve: ({ run }) => run.from }),
    to: t.field({ type: 'DateTime', description: 'End of the stretch', resolve: ({ run }) => run.to }),
    duration: t.field({ type: 'Duration', description: 'How long the stretch lasted (to - from)', resolve: ({ run }) => seconds(run) }),
    gpuHours: t.float({ description: 'GPU-hours: duration in hours x the GPUs the series stands for', resolve: ({ run }) => (seconds(run) / 3600) * run.gpus }),
    avgUtilization: t.float({ description: 'Ratio 0..1: time-weighted mean utilization in the stretch', resolve: ({ run }) => run.avgUtilization }),
    maxUtilization: t.float({ description: 'Ratio 0..1: the highest point in the stretch (under the threshold)', resolve: ({ run }) => run.maxUtilization }),
  }),
});

const IdleGpuRef = builder.objectRef<IdleGpuShape>('IdleGpu');
IdleGpuRef.implement({
  description: `A GPU, or a node or job aggregate standing for several GPUs, that stayed under the threshold for long enough. ${SEMANTICS}`,
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.IdleGpu, resolve: (g) => idOfIdleGpu(g) }),
    job: t.field({ type: JobRef, description: 'The job the GPU (or aggregate) belongs to', resolve: (g) => g.job }),
    provider: t.field({ type: ProviderRef, description: "The job's platform", resolve: (g, _a, ctx) => providerOf(ctx, g.job) }),
    scope: t.field({ type: MetricScopeEnum, description: 'GPU, or NODE / JOB for an aggregate series', resolve: (g) => g.runs[0]!.scope }),
    aggregate: t.boolean({
      description: 'True when the platform has no per-GPU series and this is a node (or job) aggregate counted for all its GPUs',
      resolve: (g) => g.runs[0]!.scope !== 'GPU',
    }),
    gpuCount: t.float({
      description:
        "GPUs the series stands for: 1 for a GPU; the node's GPUs for a node aggregate (the job's GPU count split evenly over its nodes when the topology is unknown)",
      resolve: (g) => g.runs[0]!.gpus,
    }),
    node: t.field({
      type: ComputeNodeRef,
      nullable: true,
      description: 'The node of a GPU or node series; null for a job aggregate',
      resolve: (g, _a, ctx) => (g.runs[0]!.nodeId ? ctx.store.loaders.nodeById.load(g.runs[0]!.nodeId) : null),
    }),
    gpu: t.field({
      type: GpuRef,
      nullable: true,
      description: 'The GPU of a per-GPU series; null for an aggregate',
      resolve: (g, _a, ctx) => (g.runs[0]!.gpuId ? ctx.store.loaders.gpuById.load(g.runs[0]!.gpuId) : null),
    }),
    acceleratorKind: t.field({
      type: AcceleratorKindEnum,
      nullable: true,
      description: "GPU or NPU: the kind of the job's accelerators this row counts; null when the platform does not say",
      resolve: (g) => g.job.acceleratorKind as never,
    }),
    model: t.string({
      nullable: true,
      description: "The GPU's (or NPU's) model, or the job's accelerator type for an aggregate",
      resolve: async (g, _a, ctx) => {
        const gpu = g.runs[0]!.gpuId ? await ctx.store.loaders.gpuById.load(g.runs[0]!.gpuId) : null;
        return gpu?.model ?? g.job.gpuType;
      },
    }),
    intervals: t.field({ type: [IdleIntervalRef], description: 'Oldest first', resolve: (g) => g.runs.map((run) => ({ gpu: g, run })) }),
    idleDuration: t.field({ type: 'Duration', description: 'The idle stretches together', resolve: (g) => g.runs.reduce((a, r) => a + seconds(r), 0) }),
    idleGpuHours: t.float({
      description: 'GPU-hours: the idle stretches x the GPUs the series stands for',
      resolve: (g) => g.runs.reduce((a, r) => a + (seconds(r) / 3600) * r.gpus, 0),
    }),
  }),
});

/**
 * GPU-hours of one group (the whole fleet, a platform, a project, a GPU model or a job): one type
 * for every roll-up, whose group field says which group it is.
 */
export interface GpuHoursShape {
  fleet: FleetShape;
  row: GpuHoursRow;
  providerId?: string;
  projectId?: string;
  model?: string;
  /** The owner in byOwner ("" for jobs whose platform names none). */
  owner?: string;
  /** The label in byLabel: its key, and the value of this group (null: jobs without the label, or with it and no value). */
  label?: { key: string; value: string | null; present: boolean };
  job?: JobRow;
  id?: string;
}

export const GpuHoursRef = builder.objectRef<GpuHoursShape>('GpuHours');
GpuHoursRef.implement({
  description:
    'GPU-hours allocated vs used for one group of jobs in the window: the whole fleet (no group field set), one platform (provider), one project, one GPU model or one job',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.GpuHours, resolve: (v) => v.id ?? gpuHoursId(idOfFleet(v.fleet), v.row) }),
    provider: t.field({
      type: ProviderRef,
      nullable: true,
      description: 'The platform, in Fleet.utilization.byProvider; null in other roll-ups',
      resolve: (u, _a, ctx) => (u.providerId ? providerOf(ctx, { providerId: u.providerId }) : null),
    }),
    project: t.field({
      type: ProjectRef,
      nullable: true,
      description: 'The project, in Fleet.utilization.byProject; null in other roll-ups',
      resolve: (u, _a, ctx) => (u.projectId ? ctx.store.loaders.projectById.load(u.projectId) : null),
    }),
    gpuModel: t.string({
      nullable: true,
      description:
        'The platform\'s GPU type name ("unknown" where it does not say; platforms name the same model differently), in Fleet.utilization.byGpuModel; null in other roll-ups',
      resolve: (u) => u.model ?? null,
    }),
    owner: t.string({
      nullable: true,
      description:
        'Who launched the jobs (Job.owner as the platform spells it), in Fleet.utilization.byOwner, where "" groups the jobs whose platform names no owner; null in other roll-ups',
      resolve: (u) => u.owner ?? null,
    }),
    job: t.field({ type: JobRef, nullable: true, description: 'The job, in Fleet.jobs; null in other roll-ups', resolve: (u) => u.job ?? null }),
    jobCount: t.int({ description: 'Jobs counted in this group (a count)', resolve: ({ row }) => row.jobs }),
    allocatedGpuHours: t.float({ description: 'GPU-hours held: GPUs x hours in the window', resolve: ({ row }) => row.allocatedGpuHours }),
    coveredGpuHours: t.float({ description: 'GPU-hours: the part of allocatedGpuHours with utilization data', resolve: ({ row }) => row.coveredGpuHours }),
    usedGpuHours: t.float({ description: 'GPU-hours: the sum of utilization x hours x GPUs over the covered time', resolve: ({ row }) => row.usedGpuHours }),
    wasteGpuHours: t.float({
      description: 'GPU-hours: allocatedGpuHours - usedGpuHours; time without data counts as waste (unmeasured use is not shown as use)',
      resolve: ({ row }) => row.allocatedGpuHours - row.usedGpuHours,
    }),
    coverage: t.float({
      nullable: true,
      description: 'Ratio 0..1: coveredGpuHours / allocatedGpuHours, how much of the window had data; null when nothing was allocated',
      resolve: ({ row }) => (row.allocatedGpuHours > 0 ? row.coveredGpuHours / row.allocatedGpuHours : null),
    }),
    utilization: t.float({
      nullable: true,
      description: 'Ratio 0..1: usedGpuHours / coveredGpuHours, mean utilization where measured; null without data',
      resolve: ({ row }) => (row.coveredGpuHours > 0 ? row.usedGpuHours / row.coveredGpuHours : null),
    }),
    efficiency: t.float({
      nullable: true,
      description: 'Ratio 0..1: usedGpuHours / allocatedGpuHours, use of what was paid for (no data counts as unused); null when nothing was allocated',
      resolve: ({ row }) => (row.allocatedGpuHours > 0 ? row.usedGpuHours / row.allocatedGpuHours : null),
    }),
  }),
});

export interface FleetUtilizationShape {
  fleet: FleetShape;
  rows: GpuHoursRow[];
  id?: string;
}

export const FleetUtilizationRef = builder.objectRef<FleetUtilizationShape>('FleetUtilization');
FleetUtilizationRef.implement({
  description: `GPU-hours allocated vs used, rolled up. Jobs with no known GPUs and no GPU series are left out, except CPU-only jobs the price table bills per node-hour (ledger.prices perNodeHour): they count with 0 GPU-hours, so the groups' cost includes them. ${SEMANTICS}`,
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.FleetUtilization, resolve: (v) => v.id ?? fleetUtilizationId(idOfFleet(v.fleet)) }),
    total: t.field({
      type: GpuHoursRef,
      description: 'Every matching job together',
      resolve: ({ fleet, rows }) => totalRow(fleet, rows),
    }),
    byProvider: t.field({
      type: [GpuHoursRef],
      description: 'One per platform with matching jobs (provider set)',
      resolve: ({ fleet, rows }) => byKind(rows, 'provider').map((row) => gpuHoursRow(fleet, row)),
    }),
    byProject: t.field({
      type: [GpuHoursRef],
      description: 'One per project with matching jobs (project set)',
      resolve: ({ fleet, rows }) => byKind(rows, 'project').map((row) => gpuHoursRow(fleet, row)),
    }),
    byOwner: t.field({
      type: [GpuHoursRef],
      description: 'One per owner (Job.owner as the platform spells it; owner "" for jobs whose platform names none) with matching jobs (owner set)',
      resolve: ({ fleet, rows }) => byKind(rows, 'owner').map((row) => gpuHoursRow(fleet, row)),
    }),
    byGpuModel: t.field({
      type: [GpuHoursRef],
      description: 'One per GPU type name as the platforms give it (gpuModel set)',
      resolve: ({ fleet, rows }) => byKind(rows, 'model').map((row) => gpuHoursRow(fleet, row)),
    }),
  }),
});

/** The fleet's total row (all zero when no job counted). */
export function totalRow(fleet: FleetShape, rows: readonly GpuHoursRow[]): GpuHoursShape {
  return {
    fleet,
    row: rows.find((r) => r.kind === 'total') ?? { kind: 'total', key: null, jobs: 0, allocatedGpuHours: 0, coveredGpuHours: 0, usedGpuHours: 0 },
  };
}

/** A roll-up row with its group field set from its kind and key (a job row needs the job: see Fleet.jobs). */
export function gpuHoursRow(fleet: FleetShape, row: GpuHoursRow, job?: JobRow): GpuHoursShape {
  switch (row.kind) {
    case 'provider':
      return { fleet, row, providerId: row.key! };
    case 'project':
      return { fleet, row, projectId: row.key! };
    case 'model':
      return { fleet, row, model: row.key! };
    case 'owner':
      return { fleet, row, owner: row.key! };
    case 'label': {
      const [key, value, present] = JSON.parse(row.key!) as [string, string | null, boolean];
      return { fleet, row, label: { key, value, present } };
    }
    case 'job':
      return { fleet, row, job };
    default:
      return { fleet, row };
  }
}

export const FleetRef = builder.objectRef<FleetShape>('Fleet');
FleetRef.implement({
  description: `GPU questions across every matching job of every platform in one window. ${SEMANTICS}`,
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.Fleet, resolve: (f) => idOfFleet(f) }),
    from: t.field({ type: 'DateTime', description: 'The window start, as asked', resolve: (f) => f.args.from }),
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
      resolve: (f, args, ctx) =>
        idleGpusOf(ctx, f, args.threshold, args.forAtLeast, checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize)),
    }),
    utilization: t.field({
      type: FleetUtilizationRef,
      description: 'GPU-hours allocated vs used, in total and by platform, project, owner and GPU model',
      resolve: async (f, _a, ctx) => ({ fleet: f, rows: await gpuHoursOf(f, ctx) }),
    }),
    jobs: t.field({
      type: [GpuHoursRef],
      description: 'Jobs ranked by waste (allocated minus used GPU-hours), most first',
      args: { first: t.arg.int({ required: false, description: 'Default and cap: the page size limits' }) },
      resolve: async (f, args, ctx) => {
        const first = checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize);
        const prepared = await f.prepared;
        const jobs = new Map(prepared.jobs.map((j) => [j.id, j]));
        return byKind(await gpuHoursOf(f, ctx), 'job')
          .slice(0, first)
          .map((row) => gpuHoursRow(f, row, jobs.get(row.key!)!));
      },
    }),
    problems: t.field({
      type: [SourceErrorRef],
      description:
        'One per job whose utilization could not be refreshed for this answer (job set): counted from the cache when stale, otherwise left without data; and (code UNKNOWN_END) one per finished job whose platform does not say when it ended, left out of every figure',
      resolve: (f) => problemsOf(f),
    }),
  }),
});

builder.queryFields((t) => ({
  fleet: t.field({
    type: FleetRef,
    // Reads every matching job's window of GPU series: the costliest question of the graph.
    directives: { cost: { weight: 100 } },
    description: 'GPU questions across every platform: idle GPUs, GPU-hours allocated vs used, jobs ranked by waste',
    args: {
      filter: t.arg({ type: JobFilterRef, required: false, description: 'Which jobs count; default: all jobs the caller may see' }),
      from: t.arg({
        type: 'DateTime',
        required: true,
        description: 'Window start (inclusive); [from, to] spans at most 366 days (the series bound), else BAD_INPUT',
      }),
      to: t.arg({ type: 'DateTime', required: true, description: 'Window end, capped at now; must be after `from`, at most 366 days after it' }),
    },
    resolve: (_r, args, ctx) => askFleet(ctx, { filter: args.filter ?? null, from: args.from, to: args.to }),
  }),
}));

/** Query.fleet: checks the question, then prepares its data once for every field that needs it. */
export function askFleet(ctx: Context, args: FleetArgs): FleetShape {
  if (args.from >= args.to) {
    throw new DomainError('BAD_INPUT', `"from" (${args.from.toISOString()}) must be before "to" (${args.to.toISOString()})`, { argument: 'from' });
  }
  // The same bound as a series window: a century of fleet would read every point ever cached.
  checkSeriesArgs({ from: args.from, to: args.to }, ctx.limits);
  const filter = resolveJobFilter(ctx, args.filter);
  const prepared = (async () => {
    await ctx.store.syncJobLists(filter.providerIds);
    if (filter.providerIds.length === 0) return { from: args.from, to: args.to, jobs: [], windows: [], problems: [] };
    return ctx.store.fleet.prepare(filter.jobs, args.from, args.to, ctx.limits.defaultMaxPoints, nodeBilledProviders(ctx.ledger?.prices ?? []));
  })();
  // Fields that never await it must not leave a rejection unhandled.
  prepared.catch(() => {});
  return { prepared, args };
}

/** Fleet.idleGpus: the `first` series with the most idle GPU-hours, each with its idle stretches. */
export async function idleGpusOf(ctx: Context, f: FleetShape, threshold: number, forAtLeast: number, first: number): Promise<IdleGpuShape[]> {
  if (!(threshold > 0 && threshold <= 1)) {
    throw new DomainError('BAD_INPUT', `"threshold" must be a ratio in (0, 1], got ${threshold}`, { argument: 'threshold' });
  }
  if (!(forAtLeast >= 0)) throw new DomainError('BAD_INPUT', '"forAtLeast" must not be negative', { argument: 'forAtLeast' });
  const prepared = await f.prepared;
  const runs = await ctx.store.fleet.idleRuns(prepared.windows, threshold, forAtLeast, first);
  const jobs = new Map(prepared.jobs.map((j) => [j.id, j]));
  const bySeries = new Map<number, IdleRunRow[]>();
  for (const r of runs) bySeries.set(r.seriesId, [...(bySeries.get(r.seriesId) ?? []), r]);
  return [...bySeries.values()].map((list) => ({ fleet: f, threshold, forAtLeast, job: jobs.get(list[0]!.jobId)!, runs: list }));
}

/** Fleet.problems: one SourceError per job the answer could not count (or counted stale). */
export async function problemsOf(f: FleetShape): Promise<SourceErrorShape[]> {
  return (await f.prepared).problems.map((p) => ({ ...p, providerId: p.job.providerId, ownerId: idOfFleet(f) }));
}

function seconds(run: IdleRunRow): number {
  return (run.to.getTime() - run.from.getTime()) / 1000;
}

function byKind(rows: readonly GpuHoursRow[], kind: GpuHoursRow['kind']): GpuHoursRow[] {
  return rows.filter((r) => r.kind === kind);
}

function providerOf(ctx: Context, job: { providerId: string }) {
  return ctx.store.providers.require(job.providerId);
}

// utilization, jobs and the ledger's group figures share one statement: the roll-ups come with
// every job's row (most waste first), asked once per answer and kept on it.
export function gpuHoursOf(f: FleetShape, ctx: Context): Promise<GpuHoursRow[]> {
  // Every job's row (not only a page's): the ledger's figures of the groups are sums over them.
  f.gpuHours ??= f.prepared.then((p) =>
    ctx.store.fleet.gpuHours(p.windows, Math.max(ctx.limits.maxPageSize, p.windows.length), nodeBilledProviders(ctx.ledger?.prices ?? [])),
  );
  return f.gpuHours;
}
