// The store's one door. Resolvers (through the request context) and the live hub see only this:
// request-scoped loaders, job pages and counts, projects, fleet questions, logs, a read-only view
// of the configured providers, and the refreshes the live pollers run. Behind it, the read-through
// cache, the repository's SQL and the provider set stay private to store/ (and server/ wiring).
import { DomainError } from '../domain/errors.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { LogPage, LogRequest, ProviderKind, SystemMetric } from '../domain/types.js';
import type { ProviderHealth, ProviderSet } from '../providers/provider-set.js';
import { CollectionStore, type CollectionStatus } from './collection.js';
import { FleetStore, prepareFleet, type FleetJobWindow, type GpuHoursRow, type IdleRunRow, type NodeBilled, type PreparedFleet } from './fleet.js';
import type { JobFilter } from './job-filter.js';
import { createLoaders, type Loaders, type SharedReads } from './loaders.js';
import { LedgerReads } from './ledger-reads.js';
import { FindingsStore } from './findings.js';
import { AlertsStore } from './alerts.js';
import { isTerminal, type Freshness, type ReadThrough, type StatusListener, type StepRule } from './read-through.js';
import type { JobCursor, JobOrder } from './job-filter.js';
import type {
  AccelSeriesQuery,
  AccelSeriesRow,
  ComparisonQuery,
  ComparisonRow,
  GpuRow,
  JobRow,
  LatestReadingsQuery,
  JobPageColumns,
  JobPageRow,
  NodeRow,
  PointRow,
  ProjectRow,
  SeriesRow,
} from './repository.js';

export { cacheOnlyConditions, DEFAULT_JOB_ORDER, jobMatches, type JobCursor, type JobFilter, type JobOrder, type JobOrderKey } from './job-filter.js';
export { MAX_GAP_STEPS, type GpuHoursRow, type IdleRunRow, type NodeBilled, type PreparedFleet } from './fleet.js';
export { isTerminal, jobWindow, type Freshness, type StatusListener, type StepRule, type TopologyHint, type Window } from './read-through.js';
export type { Loaders, ShapedPoints } from './loaders.js';
export type { LedgerReads } from './ledger-reads.js';
export type { LedgerWindow } from './ledger.js';
export type { WasteStep } from './ledger-order.js';
import type { JobShapes } from './job-shapes.js';
export { UNKNOWN_JOB_SHAPE, type JobShape, type JobShapes, type ShapeMeasure } from './job-shapes.js';
export type { CollectionStatus, CollectionStore, CollectOutcome, CollectRunningOptions } from './collection.js';
export type {
  AccelSeriesQuery,
  AccelSeriesRow,
  ComparisonQuery,
  ComparisonRow,
  GpuRow,
  JobRow,
  JobSummaryRow,
  JobPageColumns,
  JobPageRow,
  OrderedJobListRow,
  OrderedJobRow,
  NodeRow,
  PointRow,
  ProgressRow,
  ProjectRow,
  SeriesRow,
  SummaryRow,
} from './repository.js';
export type { ProviderHealth } from '../providers/provider-set.js';
export { clientFacingError } from './unavailable.js';
export {
  FINDING_KINDS,
  FINDING_SEVERITIES,
  FINDINGS_TOPIC,
  findingFromJson,
  findingToJson,
  type FindingEventJson,
  type FindingJson,
  FindingsStore,
  type FindingCandidate,
  type FindingCursor,
  type FindingKind,
  type FindingQuery,
  type FindingRow,
  type FindingSeverity,
  type FindingThresholds,
  type ThresholdRule,
} from './findings.js';
export {
  AlertsStore,
  NOTIFICATION_STATES,
  type AckRow,
  type AlertJob,
  type DueNotification,
  type NotificationRow,
  type NotificationState,
  type NotificationUpdate,
  type OutboxItem,
  type SilenceMatchers,
  type SilenceRow,
  type Transition,
} from './alerts.js';
/** The reconnect backoff the live poll lock shares with the cache's own connections. */
export { reconnectBackoffSeconds } from './db.js';
export type { PoolHealth } from './pool-watch.js';
/** What /metrics reads of the cache: its lookups' hits and misses, and the writes still queued. */
export type CacheObserver = Pick<ReadThrough, 'observeLookups' | 'pendingWrites'>;

/** What a platform can answer, as the graph and the pollers need to know it. */
export interface ProviderCapabilities {
  /** The system metrics this platform can report at all. */
  systemMetrics: readonly SystemMetric[];
  /** True when the platform has real per-GPU series; false = node aggregates only. */
  perGpuSeries: boolean;
  trainingMetrics: boolean;
  progress: boolean;
  logs: boolean;
  /** The finest spacing of a system series' points, in seconds (absent: 1 s, the finest any API takes). */
  sampleSeconds?: number;
}

/** A configured platform instance, read-only: no adapter, no upstream calls. */
export interface ProviderView {
  readonly id: string;
  readonly kind: ProviderKind;
  readonly name: string;
  readonly simulated: boolean;
  /** From the providers file; null = the platform's default poll interval. */
  readonly pollIntervalSeconds: number | null;
  readonly capabilities: ProviderCapabilities;
  /** How calls to it have gone lately, as seen by this server. */
  health(): ProviderHealth;
  /** How its continuous collection goes (src/collect/); null when no collector runs here. */
  collection(): CollectionStatus | null;
}

/** The providers one request (or the whole server) may see. */
export class ProviderDirectory {
  constructor(
    private readonly views: ReadonlyMap<string, ProviderView>,
    private readonly visible: ReadonlySet<string> | null = null,
  ) {}

  all(): ProviderView[] {
    return [...this.views.values()].filter((p) => this.shows(p.id));
  }

  ids(): string[] {
    return this.all().map((p) => p.id);
  }

  find(id: string): ProviderView | undefined {
    return this.shows(id) ? this.views.get(id) : undefined;
  }

  /** The provider of a cached row; a row of a provider since removed from the config (or outside a token's scope) is NOT_FOUND. */
  require(id: string): ProviderView {
    const p = this.find(id);
    if (!p) throw new DomainError('NOT_FOUND', `provider "${id}" is no longer configured`);
    return p;
  }

  /** The same providers narrowed to `ids` (a token's scope). */
  narrowed(ids: Iterable<string>): ProviderDirectory {
    const keep = new Set(ids);
    return new ProviderDirectory(this.views, new Set([...keep].filter((id) => this.shows(id))));
  }

  private shows(id: string): boolean {
    return this.visible === null || this.visible.has(id);
  }
}

/** Per live event (a payload object every subscriber of a feed receives), the reads its subscribers share; gone with the event. */
const eventReads = new WeakMap<object, Map<string, Promise<unknown>>>();

/** The points stored for some of a job's system metrics in a window, with the nodes and GPUs they belong to. */
export interface StoredSample {
  series: SeriesRow[];
  nodes: NodeRow[];
  gpus: GpuRow[];
  points: PointRow[];
}

/** The store as one request sees it: fresh loaders (a per-request cache) and the provider view it may see. */
export class RequestStore {
  private current: Loaders | null = null;
  /** The operation this store reads for (enter); undefined for a live event's reads, which are background work. */
  private scope: RequestScope | undefined = undefined;

  constructor(
    private readonly rt: ReadThrough,
    readonly providers: ProviderDirectory,
    private readonly makeLoaders: (scope: RequestScope | undefined) => Loaders,
    private readonly shared: SharedReads = { memo: null },
    /** The unnarrowed store a narrowed one wraps (null when not narrowed). */
    private readonly base: RequestStore | null = null,
  ) {}

  /** Jobs a page read before the loaders were made, primed into jobById when they are. */
  private primes: readonly JobRow[][] = [];

  /** This request's DataLoaders, made at first use (a subscription gets new ones for each event). */
  get loaders(): Loaders {
    if (this.current) return this.current;
    const loaders = this.makeLoaders(this.scope);
    this.current = loaders;
    for (const rows of this.primes) for (const j of rows) loaders.jobById.prime(j.id, j);
    this.primes = [];
    return loaders;
  }

  /**
   * Jobs this request read (a page): later lookups of them by id in the same request are
   * answered with these rows. Kept aside until the loaders are made: a job list that looks
   * nothing up by id (the common page) makes no loaders at all.
   */
  primeJobs(rows: JobRow[]): void {
    if (this.current) {
      for (const j of rows) this.current.jobById.prime(j.id, j);
      return;
    }
    this.primes = [...this.primes, rows];
  }

  /**
   * A subscription's context outlives one answer: each live event is read with new loaders, and
   * its cache reads are shared with every other subscriber handling the same event (the same
   * payload object), so N subscribers cost one set of statements, not N.
   */
  startEvent(event: object): void {
    let memo = eventReads.get(event);
    if (!memo) eventReads.set(event, (memo = new Map()));
    this.shared.memo = memo;
    this.dropLoaders();
  }

  /**
   * The event's answer is out: its loaders and shared reads are let go, so a subscription holds
   * nothing of an event between events. (Clearing a DataLoader is not enough: it keeps its last
   * batch, and with it the rows that batch answered.)
   */
  endEvent(): void {
    this.shared.memo = null;
    this.dropLoaders();
  }

  private dropLoaders(): void {
    this.current = null;
    this.primes = [];
    this.base?.dropLoaders();
  }

  /**
   * The operation starts: what it reads from here on is done for `scope` (its tenant's share of
   * each platform; its statements and upstream calls stop when it is abandoned).
   */
  enter(scope: RequestScope): void {
    this.scope = scope;
    this.base?.enter(scope);
  }

  /** The repository as this operation reads it. */
  private get repo() {
    return this.rt.repo.within(this.scope);
  }

  now(): Date {
    return this.rt.now();
  }

  /** The step a default question of `maxPoints` asks of a window (ReadThrough.stepRule): the WASTE order uses it as Job.cost does. */
  stepRule(maxPoints: number): StepRule {
    return this.rt.stepRule(maxPoints);
  }

  /** The same request narrowed to a token's scope: fewer providers, loaders (made by `narrow` over this store's) that hide what is outside it. */
  narrowed(providers: ProviderDirectory, narrow: (inner: Loaders) => Loaders): RequestStore {
    return new RequestStore(this.rt, providers, () => narrow(this.loaders), this.shared, this);
  }

  /** Refreshes the providers' job lists where stale; the freshness of each (a failure leaves its cache as is). */
  syncJobLists(providerIds: readonly string[]): Promise<Map<string, Freshness>> {
    return this.rt.syncJobLists(providerIds, this.scope);
  }

  /**
   * One page of cached jobs (limit + 1 rows: the extra one says there is more) in `order` (default
   * newest first) after `cursor`, or going backward the nearest ones before it (nearest first).
   */
  jobsPage<C extends JobPageColumns = 'all'>(
    filter: JobFilter,
    limit: number,
    cursor: JobCursor | null,
    direction: 'forward' | 'backward' = 'forward',
    order?: JobOrder,
    columns?: C,
  ): Promise<JobPageRow<C>[]> {
    return this.repo.jobsPage({ filter, limit, cursor, direction, order, columns });
  }

  /**
   * The same page in one statement with the providers' list records, when every list is fresh
   * (what syncJobLists would then answer, with the page); null when a list is due: sync, then read.
   */
  jobsPageIfListsFresh<C extends JobPageColumns = 'all'>(
    providerIds: readonly string[],
    filter: JobFilter,
    limit: number,
    cursor: JobCursor | null,
    direction: 'forward' | 'backward' = 'forward',
    order?: JobOrder,
    columns?: C,
  ): Promise<{ rows: JobPageRow<C>[]; freshness: Map<string, Freshness> } | null> {
    return this.rt.jobsPageIfListsFresh(providerIds, () => this.repo.jobsPageWithListSyncs(providerIds, { filter, limit, cursor, direction, order, columns }));
  }

  jobsCount(filter: JobFilter): Promise<number> {
    return this.repo.jobsCount(filter);
  }

  /**
   * Several jobs' cached metrics on one shared grid, in one statement (Repository.comparePoints),
   * once the cache writes under way have committed: answers go out before their writes, and this
   * question reads only the cache.
   */
  async comparePoints(q: ComparisonQuery): Promise<ComparisonRow[]> {
    await this.rt.writesSettled();
    return this.repo.comparePoints(q);
  }

  /** Cached projects of the given providers. */
  projectsOf(providerIds: readonly string[]): Promise<ProjectRow[]> {
    return this.repo.projectsOf(providerIds);
  }

  /** A page of a job's log lines, straight from its platform (UNSUPPORTED where it has no log API). */
  logs(job: JobRow, request: LogRequest): Promise<LogPage> {
    return this.rt.logs(job, request, this.scope);
  }

  private ledgerReads: LedgerReads | null = null;

  /** The ledger's measurements (src/store/ledger.ts): jobs batched per window, one measurement per batch. */
  get ledger(): LedgerReads {
    return (this.ledgerReads ??= new LedgerReads(this.rt, () => this.scope));
  }

  /** Findings (src/store/findings.ts): pages, counts and each job's. */
  get findings(): FindingsStore {
    return new FindingsStore(this.rt.repo.db);
  }

  /** Alert delivery's notifications, silences and acknowledgements (src/store/alerts.ts). */
  get alerts(): AlertsStore {
    return new AlertsStore(this.rt.repo.db);
  }

  /** Fleet questions (src/store/fleet.ts); made when asked, as few requests ask them. */
  get fleet(): FleetReads {
    return new FleetReads(this.rt, this.scope);
  }
}

export class FleetReads {
  constructor(
    private readonly rt: ReadThrough,
    private readonly scope: RequestScope | undefined,
  ) {}

  /** Makes sure the GPU utilization of every matching job is cached for [from, to] (src/store/fleet.ts). */
  prepare(filter: JobFilter, from: Date, to: Date, maxPoints: number, nodeBilled: NodeBilled = []): Promise<PreparedFleet> {
    return prepareFleet(this.rt, filter, from, to, maxPoints, this.scope, nodeBilled);
  }

  idleRuns(windows: readonly FleetJobWindow[], threshold: number, forAtLeastSeconds: number, first: number): Promise<IdleRunRow[]> {
    return new FleetStore(this.rt.repo.db, this.scope).idleRuns(windows, threshold, forAtLeastSeconds, first);
  }

  gpuHours(windows: readonly FleetJobWindow[], topJobs: number, nodeBilled: NodeBilled = []): Promise<GpuHoursRow[]> {
    return new FleetStore(this.rt.repo.db, this.scope).gpuHours(windows, topJobs, nodeBilled);
  }
}

/** An explicit signal of background work (a poller's), as the scope its reads and calls run for. */
function background(signal: AbortSignal | undefined): RequestScope | undefined {
  return signal ? { signal, tenant: null } : undefined;
}

/** The store as the server holds it: makes request stores, and runs the refreshes the live pollers need. */
export class Store {
  readonly providers: ProviderDirectory;
  /** What the collector reads and writes (src/store/collection.ts). */
  readonly collection: CollectionStore;
  /** What the findings evaluator reads and writes (src/store/findings.ts). */
  readonly findings: FindingsStore;
  /** What alert delivery reads and writes (src/store/alerts.ts). */
  readonly alerts: AlertsStore;

  constructor(private readonly rt: ReadThrough) {
    const collection = (this.collection = new CollectionStore(rt));
    this.findings = new FindingsStore(rt.repo.db);
    this.alerts = new AlertsStore(rt.repo.db);
    this.providers = new ProviderDirectory(new Map(rt.providers.all().map((p) => [p.id, providerView(rt.providers, p.id, collection)])));
  }

  /** A store for one request (one GraphQL operation): its loaders cache nothing beyond it. */
  forRequest(): RequestStore {
    const shared: SharedReads = { memo: null };
    return new RequestStore(this.rt, this.providers, (scope) => createLoaders(this.rt, shared, scope), shared);
  }

  now(): Date {
    return this.rt.now();
  }

  /** What the store knows of each job's size (nodes, GPUs, series): the query-cost estimate's bounds. */
  shapes(): JobShapes {
    return this.rt.repo.shapes();
  }

  /** The job's status and nodes as the platform has them now, written through; NOT_FOUND when gone. */
  refreshJob(jobId: string, signal?: AbortSignal): Promise<JobRow> {
    return this.rt.refreshJob(jobId, background(signal));
  }

  /**
   * The job as cached when a list sync or detail fetch (anyone's) is younger than maxAgeMs and it
   * was running then; otherwise refreshJob.
   */
  async currentJob(jobId: string, maxAgeMs: number, signal?: AbortSignal): Promise<JobRow> {
    const [cached] = await this.rt.repo.jobsByIds([jobId]);
    const now = this.rt.now().getTime();
    const seen = Math.max(cached?.seenAt.getTime() ?? -Infinity, cached?.detailFetchedAt?.getTime() ?? -Infinity);
    if (cached && !isTerminal(cached.status) && now - seen < maxAgeMs) return cached;
    return this.refreshJob(jobId, signal);
  }

  /**
   * Fetches the metrics of [from, to] now whatever the cache TTL says (and learns nodes that
   * metrics reveal), or, given maxAgeMs, unless a fetch (anyone's) younger than that covers them;
   * throws the failure.
   */
  async refreshMetrics(job: JobRow, from: Date, to: Date, metrics: readonly SystemMetric[], maxAgeMs?: number): Promise<void> {
    const [freshness] = await this.rt.ensureMetrics([{ job, from, to, metrics }], maxAgeMs === undefined ? { forceTopology: true } : { maxAgeMs });
    if (freshness instanceof Error) throw freshness;
    if (freshness?.error) throw new DomainError(freshness.error.code as never, freshness.error.message);
  }

  /**
   * How many cache writes have settled, or null while one is under way: two reads with the same
   * version saw the same cache.
   */
  cacheVersion(): number | null {
    return this.rt.pendingWrites() > 0 ? null : this.rt.settledWrites();
  }

  /** Every stored point of the given metrics of a job in [from, to], each as itself (no downsampling). */
  async storedSample(job: JobRow, metrics: readonly SystemMetric[], from: Date, to: Date): Promise<StoredSample> {
    // Queries answer before their cache writes commit; a sample (and what its subscribers then read
    // of its series) must hold what such an answer held, so the writes under way commit first.
    // Without it a sample could carry a query's series id with fewer points than the query gave.
    await this.rt.writesSettled();
    const repo = this.rt.repo;
    const wanted = new Set<string>(metrics);
    const [allSeries, nodes, gpus] = await Promise.all([repo.seriesOfJobs([job.id], 'system'), repo.nodesOfJobs([job.id]), repo.gpusOfJobs([job.id])]);
    const series = allSeries.filter((s) => wanted.has(s.name));
    // maxPoints far above any poll window's count: every stored point comes back as itself.
    const points = await repo.pointsOf(
      series.map((s) => ({ seriesId: s.id, keyedBy: 'time' as const, from, to })),
      1_000_000,
      'LAST',
    );
    return { series, nodes, gpus, points };
  }

  logs(job: JobRow, request: LogRequest, signal?: AbortSignal): Promise<LogPage> {
    return this.rt.logs(job, request, background(signal));
  }

  /** Fetches and writes a provider's job list now (sharing a sync under way); throws the upstream error. */
  async syncJobList(providerId: string, signal?: AbortSignal): Promise<void> {
    await this.rt.syncJobListNow(providerId, background(signal));
  }

  /**
   * The latest reading of each accelerator series of every running job of these providers (and
   * projects, null = all), one statement; readings older than `since` are only counted.
   */
  latestReadings(q: LatestReadingsQuery) {
    return this.rt.repo.latestReadings(q);
  }

  /**
   * What each node of these jobs holds: its accelerators (GPUs or NPUs) as the job's topology lists
   * them, in the platform's node order; two statements for any number of jobs.
   */
  async nodeAccelerators(jobIds: readonly string[]): Promise<{ jobId: string; node: string; accelerators: number; model: string | null }[]> {
    const [nodes, gpus] = await Promise.all([this.rt.repo.nodesOfJobs(jobIds), this.rt.repo.gpusOfJobs(jobIds)]);
    const held = new Map<string, { n: number; model: string | null }>();
    for (const g of gpus) {
      const h = held.get(g.nodeId) ?? { n: 0, model: g.model };
      h.n++;
      held.set(g.nodeId, h);
    }
    return nodes.map((n) => ({ jobId: n.jobId, node: n.name, accelerators: held.get(n.id)?.n ?? 0, model: held.get(n.id)?.model ?? null }));
  }

  /**
   * The Prometheus query API's two reads, a constant two statements whatever the fan-out: the
   * accelerator series (any job status) with points in a window, with their point counts (what
   * reading them costs, known before reading), then the points of the chosen ones. Both wait for
   * the cache writes under way, so a query sees what an answer already given held.
   */
  async accelSeriesInWindow(q: AccelSeriesQuery): Promise<AccelSeriesRow[]> {
    await this.rt.writesSettled();
    return this.rt.repo.accelSeriesInWindow(q);
  }

  rawPointsInWindow(seriesIds: readonly number[], from: Date, to: Date): Promise<{ seriesId: number; ts: number[]; values: number[] }[]> {
    return this.rt.repo.rawPointsInWindow(seriesIds, from, to);
  }

  /** The Prometheus query API's one read of points: see Repository.promPointsInWindow (it stops past `maxPoints`). */
  promPointsInWindow(seriesIds: readonly number[], from: number, to: number, maxPoints: number) {
    return this.rt.repo.promPointsInWindow(seriesIds, from, to, maxPoints);
  }

  /** Told of each job status change (and new job) once, whichever refresh wrote it. */
  onStatusChange(listener: StatusListener): void {
    this.rt.onStatusChange(listener);
  }
}

function providerView(set: ProviderSet, id: string, collection: CollectionStore): ProviderView {
  const p = set.find(id)!;
  const caps = p.adapter.capabilities;
  return {
    id: p.id,
    kind: p.kind,
    name: p.name,
    simulated: p.simulated,
    pollIntervalSeconds: p.pollIntervalSeconds,
    capabilities: {
      systemMetrics: caps.systemMetrics,
      perGpuSeries: caps.perGpuSeries,
      trainingMetrics: caps.trainingMetrics,
      progress: caps.progress,
      logs: Boolean(p.adapter.fetchLogs) && caps.logs,
      sampleSeconds: caps.sampleSeconds,
    },
    health: () => set.healthOf(id),
    collection: () => collection.statusOf(id),
  };
}
