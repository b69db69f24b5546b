// The read-through cache: decides what is fresh, fetches only what is missing or stale from the
// provider adapters (batched per job, one call per job at most), writes it, and reports freshness.
// Finished jobs' fetched ranges are final and never refetched; running jobs' expire after a TTL.
// When upstream fails, cached data is served as stale with the error; with no cache, it throws.
// ReadThrough is the facade over its parts: policy.ts (what is fresh), job-lists.ts, jobs-by-id.ts,
// topology-fill.ts, metrics-fill.ts with held-writes.ts, whole-job-fill.ts, sharing fill-context.ts.
import type { RequestScope } from '../domain/request-scope.js';
import type { ParsedId } from '../domain/ids.js';
import type { LogPage, LogRequest } from '../domain/types.js';
import type { ProviderSet } from '../providers/provider-set.js';
import { FillContext, type CacheLookupObserver, type StatusListener } from './fill-context.js';
import { HeldWrites } from './held-writes.js';
import { JobLists } from './job-lists.js';
import { JobsById } from './jobs-by-id.js';
import { MetricsFill, type MetricsOptions, type TopologyOptions } from './metrics-fill.js';
import { DEFAULT_CACHE_POLICY, stepFor, stepRule, type CachePolicy, type Freshness, type MetricsRequest, type StepRule, type Window } from './policy.js';
import type { JobRow, ProviderSyncRow } from './repo-types.js';
import type { Repository } from './repository.js';
import type { HeldPoints } from './shaping.js';
import { TopologyFill } from './topology-fill.js';
import { WholeJobFill, type WholeJobOptions } from './whole-job-fill.js';

export { groupBy, jobRef, type CacheLookupObserver, type StatusListener } from './fill-context.js';
export { NEGATIVE_LOOKUP_TTL_MS } from './jobs-by-id.js';
export { METRICS_WAVES, waveEnds, type HeldForRequest, type MetricsOptions, type TopologyOptions } from './metrics-fill.js';
export {
  DEFAULT_CACHE_POLICY,
  isTerminal,
  jobWindow,
  type CachePolicy,
  type Freshness,
  type MetricsRequest,
  type StepRule,
  type TopologyHint,
  type Window,
} from './policy.js';

export class ReadThrough {
  private readonly c: FillContext;
  private readonly lists: JobLists;
  private readonly byId: JobsById;
  private readonly writes: HeldWrites;
  private readonly metrics: MetricsFill;
  private readonly topology: TopologyFill;
  private readonly wholeJob: WholeJobFill;

  constructor(
    readonly repo: Repository,
    readonly providers: ProviderSet,
    readonly policy: CachePolicy = DEFAULT_CACHE_POLICY,
    clock: () => number = Date.now,
  ) {
    this.c = new FillContext(repo, providers, policy, clock);
    this.lists = new JobLists(this.c);
    this.byId = new JobsById(this.c, this.lists);
    this.writes = new HeldWrites(this.c);
    this.metrics = new MetricsFill(this.c, this.writes);
    this.topology = new TopologyFill(this.c, this.metrics);
    this.wholeJob = new WholeJobFill(this.c);
  }

  now(): Date {
    return this.c.now();
  }

  observeLookups(observer: CacheLookupObserver): void {
    this.c.lookupObservers.push(observer);
  }

  /** Told when a cache write that follows an answer fails (the next request fetches again). */
  observeWriteFailures(observer: (err: unknown) => void): void {
    this.c.writeFailureObservers.push(observer);
  }

  /** Waits, at most timeoutMs, for the refreshes under way to be fetched and written (shutdown, tests, bench). */
  async settle(timeoutMs = 600_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const { fills } = this.c;
    const { writes } = this.writes;
    const all = async () => {
      while (fills.size > 0 || writes.size > 0) await Promise.allSettled([...fills.promises(), ...writes]);
    };
    await Promise.race([all(), bound]);
    clearTimeout(timer);
  }

  settledWrites(): number {
    return this.writes.settledWrites();
  }

  pendingWrites(): number {
    return this.writes.pendingWrites();
  }

  writesSettled(): Promise<void> {
    return this.writes.writesSettled();
  }

  heldPoints(seriesId: number): { points: HeldPoints } | { pending: Promise<void> } | null {
    return this.writes.heldPoints(seriesId);
  }

  /** Requests waiting on upstream fills under way (each counted once per fill it waits on). */
  fillWaiters(): number {
    return this.c.fills.waiters();
  }

  // ---- provider-wide job lists (job-lists.ts) ----------------------------------------------------

  jobsPageIfListsFresh<T>(
    providerIds: readonly string[],
    read: () => Promise<{ rows: T[]; syncs: ProviderSyncRow[] | null } | null>,
  ): Promise<{ rows: T[]; freshness: Map<string, Freshness> } | null> {
    return this.lists.jobsPageIfListsFresh(providerIds, read);
  }

  syncJobLists(providerIds: readonly string[], scope?: RequestScope): Promise<Map<string, Freshness>> {
    return this.lists.syncJobLists(providerIds, scope);
  }

  syncJobListNow(providerId: string, scope?: RequestScope): Promise<Date> {
    return this.lists.syncJobListNow(providerId, scope);
  }

  /** Told of every job whose status changed (previousStatus set) or that appeared (null), once per change. */
  onStatusChange(listener: StatusListener): void {
    this.c.statusListeners.push(listener);
  }

  // ---- single jobs (jobs-by-id.ts) and their topology (topology-fill.ts) -------------------------

  refreshJob(jobId: string, scope?: RequestScope): Promise<JobRow> {
    return this.byId.refreshJob(jobId, scope);
  }

  jobsByIds(ids: readonly ParsedId[], opts: { upstream?: boolean; scope?: RequestScope } = {}): Promise<(JobRow | null | Error)[]> {
    return this.byId.jobsByIds(ids, opts);
  }

  ensureTopology(jobs: readonly JobRow[], opts: TopologyOptions = {}): Promise<Map<string, Freshness | Error>> {
    return this.topology.ensureTopology(jobs, opts);
  }

  ensureTopologyEach(
    jobs: readonly JobRow[],
    opts: TopologyOptions = {},
  ): Promise<{ each: Map<string, Freshness | Error | Promise<Freshness | Error>>; done: Promise<void> }> {
    return this.topology.ensureTopologyEach(jobs, opts);
  }

  // ---- system metrics (metrics-fill.ts) ----------------------------------------------------------

  /** The upstream step for a window: fine enough for the points asked, never finer than the platform's floor. */
  stepFor(window: Window, maxPoints = this.policy.minUpstreamPointsPerSeries): number {
    return stepFor(this.policy, window, maxPoints);
  }

  /** stepFor's rule for any window: step = max(minStepSeconds, ceil(window seconds / points)); for SQL that works it out per job. */
  stepRule(maxPoints = this.policy.minUpstreamPointsPerSeries): StepRule {
    return stepRule(this.policy, maxPoints);
  }

  ensureMetrics(requests: readonly MetricsRequest[], opts: MetricsOptions = {}): Promise<(Freshness | Error)[]> {
    return this.metrics.ensureMetrics(requests, opts);
  }

  ensureMetricsEach(requests: readonly MetricsRequest[], opts: MetricsOptions = {}): { each: Promise<Freshness | Error>[]; done: Promise<void> } {
    return this.metrics.ensureMetricsEach(requests, opts);
  }

  // ---- training metrics, progress and logs (whole-job-fill.ts) -----------------------------------

  ensureTraining(
    jobs: readonly JobRow[],
    scope?: RequestScope,
    opts: WholeJobOptions & { sinceStored?: { overlapMs: number } } = {},
  ): Promise<Map<string, Freshness | Error>> {
    return this.wholeJob.ensureTraining(jobs, scope, opts);
  }

  ensureProgress(jobs: readonly JobRow[], scope?: RequestScope, opts: WholeJobOptions = {}): Promise<Map<string, Freshness | Error>> {
    return this.wholeJob.ensureProgress(jobs, scope, opts);
  }

  logs(job: JobRow, request: LogRequest, scope?: RequestScope): Promise<LogPage> {
    return this.wholeJob.logs(job, request, scope);
  }
}
