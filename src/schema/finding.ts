// Findings (src/findings/ evaluates them, src/store/findings.ts keeps them): Job.findings,
// Query.findings across the fleet, and Subscription.findings with each firing and resolution.
import DataLoader from 'dataloader';
import { DomainError } from '../domain/errors.js';
import { valueId } from '../domain/value-ids.js';
import { BoundedChannel } from '../live/buffer.js';
import {
  FINDINGS_TOPIC,
  findingFromJson,
  type FindingCursor,
  type FindingEventJson,
  type FindingQuery,
  type FindingRow,
  type Loaders,
} from '../store/index.js';
import { checkPageSize } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { MetricScopeEnum, SystemMetricEnum } from './enums.js';
import { PageInfoRef } from './job-connection.js';
import { ProviderRef } from './provider.js';
import { ComputeNodeRef, GpuRef, JobRef, NodeInterfaceRef } from './refs.js';

/** Findings in one page: at most this many (`first`'s limit), 50 when not given. */
const MAX_PAGE = 500;
const DEFAULT_PAGE = 50;
/** Finding events a subscriber that does not read keeps queued; the oldest are dropped beyond it. */
const SUBSCRIPTION_BUFFER = 256;

export const FindingKindEnum = builder.enumType('FindingKind', {
  description: 'What a finding says of a job (docs/findings.md defines each and its default thresholds)',
  values: {
    STALLED: {
      value: 'STALLED',
      description:
        'A running job whose step has not advanced for max(stallStepMinutes (default 10), stallStepFactor (default 5) x its median time per step), or whose accelerators have all been below stallUtilization (default 5%) for stallMinutes (default 15)',
    },
    STRAGGLER: {
      value: 'STRAGGLER',
      description:
        "A GPU (or, where the platform reports per node only, a node) whose utilization stayed below stragglerFraction (default 0.3) of the job's median for stragglerMinutes (default 10) while that median was at least stragglerBusyUtilization (default 50%)",
    },
    IDLE_ALLOCATION: {
      value: 'IDLE_ALLOCATION',
      description:
        'Accelerators held by a running job and below idleUtilization (default 5%) for idleMinutes (default 30); one finding per job, its evidence lists them',
    },
    NO_DATA: {
      value: 'NO_DATA',
      description: 'A running job whose platform, asked for metrics within noDataMinutes (default 15), has reported no point for that long',
    },
    FAILED: { value: 'FAILED', description: 'A job that failed, with the failure reason; resolves failedHoldHours (default 24) after the failure' },
    RESTARTED: {
      value: 'RESTARTED',
      description:
        'A running job whose platform counts restarts (ModelArts, PAI-DLC); one per restart count, resolving restartHoldMinutes (default 60) after it was seen',
    },
  },
});

export const FindingSeverityEnum = builder.enumType('FindingSeverity', {
  description: 'How urgent a finding is: STALLED and FAILED are CRITICAL, STRAGGLER, IDLE_ALLOCATION and NO_DATA WARNING, RESTARTED INFO',
  values: {
    INFO: { value: 'INFO', description: 'Worth knowing, nothing to do (RESTARTED)' },
    WARNING: { value: 'WARNING', description: 'Costs money or time, the job goes on (STRAGGLER, IDLE_ALLOCATION, NO_DATA)' },
    CRITICAL: { value: 'CRITICAL', description: 'The job does not progress (STALLED, FAILED)' },
  },
});

export const FindingStateEnum = builder.enumType('FindingState', {
  description: 'Whether a finding still holds',
  values: {
    FIRING: { value: 'FIRING', description: 'The condition held at the latest evaluation' },
    RESOLVED: { value: 'RESOLVED', description: 'The condition stopped holding (or its hold ended) at endedAt; a resolved finding never fires again' },
  },
});

export interface FindingSeriesView {
  /** The evidence's id (set when answered). */
  ownerId?: string;
  id?: string;
  seriesId: number;
  metric: string;
  scope: string;
  nodeId: string | null;
  gpuId: string | null;
  count: number;
  avg: number | null;
  max: number | null;
}

/** A finding as the graph holds it: its stored number is `n`, `id` is the graph's (set by Query.node). */
export type FindingView = Omit<FindingRow, 'id'> & { n: number; id?: string };
export function findingView(r: FindingRow): FindingView {
  const { id: n, ...rest } = r;
  return { ...rest, n };
}

export interface EvidenceShape {
  finding: FindingView;
  e: Record<string, unknown>;
  id?: string;
}

/** A finding's id: a value of its job (`<provider>:finding:<number>:<job id>`), stable. */
export const findingId = (f: FindingView) => f.id ?? valueId('finding', f.jobId, String(f.n));
const evidenceId = (f: FindingView) => valueId('findingevidence', findingId(f));

/** The evidence of a finding, as Finding.evidence answers it. */
export const evidenceOf = (f: FindingView): EvidenceShape => ({ finding: f, e: f.evidence });

/** The series of an evidence, as FindingEvidence.series answers them. */
export function seriesOfEvidence(x: EvidenceShape): FindingSeriesView[] {
  const ownerId = evidenceId(x.finding);
  return Array.isArray(x.e.series) ? (x.e.series as FindingSeriesView[]).map((s) => ({ ...s, ownerId })) : [];
}

/** A finding by its number, when it belongs to the job (a Node id lookup: the job was checked visible). */
export async function findingOfJob(ctx: Context, jobId: string, n: number): Promise<FindingView | null> {
  const [row] = await ctx.store.findings.byIds([n]);
  return row && row.jobId === jobId ? findingView(row) : null;
}

export const FindingRef = builder.objectRef<FindingView>('Finding');
const FindingEvidenceRef = builder.objectRef<EvidenceShape>('FindingEvidence');
const FindingSeriesRef = builder.objectRef<FindingSeriesView>('FindingSeriesEvidence');

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const date = (v: unknown): Date | null => (typeof v === 'string' || v instanceof Date ? new Date(v) : null);

FindingSeriesRef.implement({
  interfaces: [NodeInterfaceRef],
  description:
    "One stored series a finding compared, with the numbers compared: over the evidence's window, what Job.metrics(names: [metric], from, to) answers in that series' summary",
  fields: (t) => ({
    id: t.id({
      description: 'Global id (a Node id): `<provider>:findingseries:<stored series number>:<evidence id>`; stable',
      resolve: (s) => s.id ?? valueId('findingseries', s.ownerId!, String(s.seriesId)),
    }),
    metric: t.field({ type: SystemMetricEnum, description: 'The canonical metric (GPU_UTILIZATION or NPU_UTILIZATION)', resolve: (s) => s.metric as never }),
    scope: t.field({
      type: MetricScopeEnum,
      description: 'GPU where the platform reports per GPU, else NODE (honest granularity), else JOB',
      resolve: (s) => s.scope as never,
    }),
    node: t.field({
      type: ComputeNodeRef,
      nullable: true,
      description: 'The node of the series; null for a job-scope series',
      resolve: (s, _a, ctx) => (s.nodeId ? ctx.store.loaders.nodeById.load(s.nodeId) : null),
    }),
    gpu: t.field({
      type: GpuRef,
      nullable: true,
      description: 'The GPU of the series; null for a node- or job-scope series',
      resolve: (s, _a, ctx) => (s.gpuId ? ctx.store.loaders.gpuById.load(s.gpuId) : null),
    }),
    count: t.int({ description: 'Points with a value in the window (a count; MetricSummary.count)', resolve: (s) => s.count }),
    avg: t.float({
      nullable: true,
      description: 'Average utilization in the window, ratio 0..1 (MetricSummary.avg); null without points',
      resolve: (s) => num(s.avg),
    }),
    max: t.float({
      nullable: true,
      description: 'Highest utilization in the window, ratio 0..1 (MetricSummary.max); null without points',
      resolve: (s) => num(s.max),
    }),
  }),
});

FindingEvidenceRef.implement({
  interfaces: [NodeInterfaceRef],
  description:
    'What shows a finding, as of its latest evaluation: the window, the series and the numbers compared; fields that do not apply to its kind are null',
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `<provider>:findingevidence:<finding id>`; stable', resolve: (x) => x.id ?? evidenceId(x.finding) }),
    reason: t.string({
      nullable: true,
      description: 'STALLED only: ACCELERATORS_IDLE (every accelerator below the threshold) or NO_PROGRESS (no new step)',
      resolve: (x) => (typeof x.e.reason === 'string' ? x.e.reason : null),
    }),
    from: t.field({ type: 'DateTime', nullable: true, description: 'Start of the window looked at (inclusive)', resolve: (x) => date(x.e.from) }),
    to: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'End of the window looked at (inclusive): the evaluation instant',
      resolve: (x) => date(x.e.to),
    }),
    threshold: t.float({
      nullable: true,
      description: 'STALLED (ACCELERATORS_IDLE), IDLE_ALLOCATION: the utilization every reading stayed below, ratio 0..1',
      resolve: (x) => num(x.e.threshold),
    }),
    observedMax: t.float({
      nullable: true,
      description: 'The highest utilization among the series found below their limit in the window, ratio 0..1',
      resolve: (x) => num(x.e.observedMax),
    }),
    jobMedian: t.float({
      nullable: true,
      description: "STRAGGLER: the median of the job's series' average utilization in the window, ratio 0..1",
      resolve: (x) => num(x.e.jobMedian),
    }),
    fraction: t.float({
      nullable: true,
      description: 'STRAGGLER: the fraction of the median a straggler stays below (default 0.3)',
      resolve: (x) => num(x.e.fraction),
    }),
    limit: t.float({ nullable: true, description: 'STRAGGLER: fraction x jobMedian, ratio 0..1', resolve: (x) => num(x.e.limit) }),
    idleAccelerators: t.int({
      nullable: true,
      description: 'IDLE_ALLOCATION: how many accelerator series (GPUs, or nodes where the platform reports per node) were idle',
      resolve: (x) => num(x.e.idleAccelerators),
    }),
    lastStep: t.float({ nullable: true, description: 'STALLED (NO_PROGRESS): the newest step the platform reported', resolve: (x) => num(x.e.lastStep) }),
    lastStepAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'STALLED (NO_PROGRESS): when that step was first reported',
      resolve: (x) => date(x.e.lastStepAt),
    }),
    medianSecondsPerStep: t.float({
      nullable: true,
      description: 'STALLED (NO_PROGRESS): the median time per step over the 64 newest points of each training series, in seconds',
      resolve: (x) => num(x.e.medianSecondsPerStep),
    }),
    limitSeconds: t.float({
      nullable: true,
      description: 'STALLED (NO_PROGRESS), NO_DATA: how long without a step (or a point) makes the finding, in seconds',
      resolve: (x) => num(x.e.limitSeconds),
    }),
    lastPointAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'NO_DATA: the newest stored point; null when none',
      resolve: (x) => date(x.e.lastPointAt),
    }),
    askedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'NO_DATA, STALLED (NO_PROGRESS): when the platform was last asked',
      resolve: (x) => date(x.e.askedAt),
    }),
    failureReason: t.string({
      nullable: true,
      description: "FAILED, RESTARTED: the platform's failure reason",
      resolve: (x) => (typeof x.e.failureReason === 'string' ? x.e.failureReason : null),
    }),
    restartCount: t.int({ nullable: true, description: "RESTARTED: the platform's restart count", resolve: (x) => num(x.e.restartCount) }),
    series: t.field({
      type: [FindingSeriesRef],
      description: 'The series compared (at most the job’s accelerator series); empty for FAILED, RESTARTED, NO_DATA and STALLED (NO_PROGRESS)',
      resolve: seriesOfEvidence,
    }),
  }),
});

FindingRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'A condition seen in a job from the outside (stored series, progress, status), no code in the training loop; fires once and resolves once',
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `<provider>:finding:<number>:<job id>`; stable', resolve: findingId }),
    kind: t.field({ type: FindingKindEnum, description: 'What was found', resolve: (f) => f.kind }),
    severity: t.field({ type: FindingSeverityEnum, description: 'How urgent it is', resolve: (f) => f.severity }),
    state: t.field({ type: FindingStateEnum, description: 'FIRING while it holds, RESOLVED after', resolve: (f) => (f.endedAt ? 'RESOLVED' : 'FIRING') }),
    summary: t.string({ description: 'One line for a person (a notification, a list)', resolve: (f) => f.summary }),
    job: t.field({
      type: JobRef,
      nullable: true,
      description: 'The job; null only when it is no longer cached',
      resolve: (f, _a, ctx) => ctx.store.loaders.jobById.load(f.jobId),
    }),
    provider: t.field({
      type: ProviderRef,
      nullable: true,
      description: "The job's provider; null when no longer configured",
      resolve: (f, _a, ctx) => ctx.store.providers.find(f.providerId) ?? null,
    }),
    node: t.field({
      type: ComputeNodeRef,
      nullable: true,
      description: 'STRAGGLER: the node (per-node platforms) or the GPU’s node; null for job-wide findings',
      resolve: (f, _a, ctx) => (f.nodeId ? ctx.store.loaders.nodeById.load(f.nodeId) : null),
    }),
    gpu: t.field({
      type: GpuRef,
      nullable: true,
      description: 'STRAGGLER on a platform with per-GPU series: the GPU (its index is the rank on the node); null otherwise',
      resolve: (f, _a, ctx) => (f.gpuId ? ctx.store.loaders.gpuById.load(f.gpuId) : null),
    }),
    startedAt: t.field({
      type: 'DateTime',
      description: 'When the condition began: the start of the window that first showed it',
      resolve: (f) => f.startedAt,
    }),
    endedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it stopped holding (the evaluation that no longer saw it); null while firing',
      resolve: (f) => f.endedAt,
    }),
    lastSeenAt: t.field({ type: 'DateTime', description: 'The latest evaluation that saw it', resolve: (f) => f.lastSeenAt }),
    evidence: t.field({ type: FindingEvidenceRef, description: 'What shows it, as of lastSeenAt', resolve: evidenceOf }),
  }),
});

const FindingFilterRef = builder.inputType('FindingFilter', {
  description: 'Which findings; every condition given must hold (default: every finding the caller may see)',
  fields: (t) => ({
    providerIds: t.idList({ required: false, description: 'Only these providers (at most 100 ids)' }),
    projectId: t.id({ required: false, description: 'Only this project' }),
    jobIds: t.idList({ required: false, description: 'Only these jobs (at most 100 ids)' }),
    kinds: t.field({ type: [FindingKindEnum], required: false, description: 'Only these kinds' }),
    severities: t.field({ type: [FindingSeverityEnum], required: false, description: 'Only these severities' }),
    states: t.field({ type: [FindingStateEnum], required: false, description: 'Only findings in these states (default both)' }),
    since: t.field({ type: 'DateTime', required: false, description: 'Only findings still firing at or after this instant' }),
  }),
});

interface FilterArg {
  providerIds?: (string | number)[] | null;
  projectId?: string | number | null;
  jobIds?: (string | number)[] | null;
  kinds?: FindingRow['kind'][] | null;
  severities?: FindingRow['severity'][] | null;
  states?: ('FIRING' | 'RESOLVED')[] | null;
  since?: Date | null;
}

function findingQuery(ctx: Context, f: FilterArg | null | undefined): FindingQuery {
  for (const key of ['providerIds', 'jobIds'] as const) {
    if ((f?.[key]?.length ?? 0) > 100) throw new DomainError('BAD_INPUT', `"filter.${key}" takes at most 100 ids`, { argument: `filter.${key}` });
  }
  const visible = ctx.store.providers.ids();
  const providerIds = f?.providerIds ? visible.filter((id) => f.providerIds!.map(String).includes(id)) : visible;
  const states = f?.states ?? null;
  return {
    providerIds,
    projectId: f?.projectId ? String(f.projectId) : null,
    jobIds: f?.jobIds ? f.jobIds.map(String) : null,
    kinds: f?.kinds ?? null,
    severities: f?.severities ?? null,
    firing: states && states.length === 1 ? states[0] === 'FIRING' : null,
    since: f?.since ?? null,
  };
}

/** Whether a finding (of a bus event) is one the query selects. */
function matches(q: FindingQuery, f: FindingRow): boolean {
  return (
    q.providerIds.includes(f.providerId) &&
    (!q.projectId || q.projectId === f.projectId) &&
    (!q.jobIds || q.jobIds.includes(f.jobId)) &&
    (!q.kinds || q.kinds.includes(f.kind)) &&
    (!q.severities || q.severities.includes(f.severity)) &&
    (q.firing === null || q.firing === undefined || q.firing === !f.endedAt)
  );
}

const encodeCursor = (f: FindingView) => Buffer.from(`finding:${f.startedAt.getTime()}:${f.n}`).toString('base64url');
function decodeCursor(s: string | null | undefined, argument: 'after' | 'before'): FindingCursor | null {
  if (!s) return null;
  const m = /^finding:(\d+):(\d+)$/.exec(Buffer.from(s, 'base64url').toString());
  if (!m) throw new DomainError('BAD_INPUT', `"${argument}" is not a cursor of this list`, { argument });
  return { startedAt: new Date(Number(m[1])), id: Number(m[2]) };
}

interface FindingConnectionShape {
  rows: FindingView[];
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  query: FindingQuery;
}

const FindingEdgeRef = builder.objectRef<FindingView>('FindingEdge');
FindingEdgeRef.implement({
  description: 'A finding in a page',
  fields: (t) => ({
    cursor: t.string({ description: 'Pass as `after` for the findings after this one', resolve: encodeCursor }),
    node: t.field({ type: FindingRef, description: 'The finding', resolve: (f) => f }),
  }),
});

const FindingConnectionRef = builder.objectRef<FindingConnectionShape>('FindingConnection');
FindingConnectionRef.implement({
  description: 'A page of findings, newest first (by startedAt, then id)',
  fields: (t) => ({
    edges: t.field({ type: [FindingEdgeRef], description: 'The findings of the page', resolve: (c) => c.rows }),
    pageInfo: t.field({
      type: PageInfoRef,
      description: 'Where the page sits',
      resolve: (c) => ({
        hasNextPage: c.hasNextPage,
        hasPreviousPage: c.hasPreviousPage,
        startCursor: c.rows[0] ? encodeCursor(c.rows[0]) : null,
        endCursor: c.rows.length ? encodeCursor(c.rows[c.rows.length - 1]!) : null,
      }),
    }),
    totalCount: t.int({
      description: 'Findings matching the filter (a count; one more statement)',
      resolve: (c, _a, ctx) => ctx.store.findings.count(c.query),
    }),
  }),
});

/** Job.findings' loader: every asked job's findings in one statement, per request (or per live event). */
const jobFindings = new WeakMap<Loaders, DataLoader<string, FindingRow[]>>();
function findingsOfJob(ctx: Context, jobId: string): Promise<FindingRow[]> {
  const loaders = ctx.store.loaders;
  let loader = jobFindings.get(loaders);
  if (!loader) {
    loader = new DataLoader(async (ids: readonly string[]) => {
      const rows = await ctx.store.findings.ofJobs(ids, {});
      return ids.map((id) => rows.filter((r) => r.jobId === id));
    });
    jobFindings.set(loaders, loader);
  }
  return loader.load(jobId);
}

builder.objectFields(JobRef, (t) => ({
  findings: t.field({
    type: [FindingRef],
    directives: { cost: { weight: 2 }, listSize: { assumedSize: 5 } },
    description: "The job's findings, newest first (firing and resolved, as kept in the store; no limit: a job has few)",
    args: {
      states: t.arg({ type: [FindingStateEnum], required: false, description: 'Only findings in these states; default both' }),
    },
    resolve: async (j, args, ctx) => {
      const rows = await findingsOfJob(ctx, j.id);
      const states = args.states;
      return (states ? rows.filter((r) => states.includes(r.endedAt ? 'RESOLVED' : 'FIRING')) : rows).map(findingView);
    },
  }),
}));

builder.queryFields((t) => ({
  findings: t.field({
    type: FindingConnectionRef,
    directives: { cost: { weight: 5 } },
    description: 'Findings across every platform the caller may see, newest first (Relay connection: first/after forward, last/before backward)',
    args: {
      filter: t.arg({ type: FindingFilterRef, required: false, description: 'Which findings; default all' }),
      first: t.arg.int({ required: false, description: `Findings per page going forward: default ${DEFAULT_PAGE}, at most ${MAX_PAGE}` }),
      after: t.arg.string({ required: false, description: "A cursor from this list's edges: the findings after (older than) it" }),
      last: t.arg.int({ required: false, description: `Findings per page going backward (with before, or the oldest): at most ${MAX_PAGE}; not with first` }),
      before: t.arg.string({ required: false, description: "A cursor from this list's edges: the findings before (newer than) it; not with after" }),
    },
    resolve: async (_r, args, ctx) => {
      if ((args.first != null || args.after) && (args.last != null || args.before)) {
        throw new DomainError('BAD_INPUT', 'page forward (first/after) or backward (last/before), not both', { argument: 'last' });
      }
      const backward = args.last != null || Boolean(args.before);
      const n = backward ? checkPageSize(args.last, DEFAULT_PAGE, MAX_PAGE, 'last') : checkPageSize(args.first, DEFAULT_PAGE, MAX_PAGE);
      const cursor = decodeCursor(backward ? args.before : args.after, backward ? 'before' : 'after');
      const query = findingQuery(ctx, args.filter as FilterArg | null);
      const rows = n === 0 ? [] : await ctx.store.findings.page(query, n, cursor, backward ? 'backward' : 'forward');
      const page = rows.slice(0, n).map(findingView);
      if (backward) page.reverse();
      return { rows: page, hasNextPage: backward ? cursor !== null : rows.length > n, hasPreviousPage: backward ? rows.length > n : cursor !== null, query };
    },
  }),
}));

builder.subscriptionFields((t) => ({
  findings: t.field({
    type: FindingRef,
    description:
      'Each finding as it fires (state FIRING) and as it resolves (state RESOLVED), among those the filter selects: the same Finding the query answers; from every replica with Redis',
    args: { filter: t.arg({ type: FindingFilterRef, required: false, description: 'Which findings to hear about; default all the caller may see' }) },
    subscribe: (_root, args, ctx) => {
      if (!ctx.live) throw new DomainError('UNSUPPORTED', 'live subscriptions are not enabled on this server');
      const query = findingQuery(ctx, args.filter as FilterArg | null);
      let off = () => {};
      const channel = new BoundedChannel<FindingView>({ capacity: SUBSCRIPTION_BUFFER, onClose: () => off() });
      off = ctx.live.bus.on(FINDINGS_TOPIC, (payload) => {
        const p = payload as FindingEventJson;
        if (p?.type !== 'finding') return;
        const f = findingFromJson(p.finding);
        if (matches(query, f)) channel.push(findingView(f));
      });
      return channel;
    },
    resolve: (f: FindingView) => f,
  }),
}));
