// The read-through cache: decides what is fresh, fetches only what is missing or stale from the
// provider adapters (batched per job, one call per job at most), writes it, and reports freshness.
// Finished jobs' fetched ranges are final and never refetched; running jobs' expire after a TTL.
// When upstream fails, cached data is served as stale with the error; with no cache, it throws.
import { SharedWork, type RequestScope } from '../domain/request-scope.js';
import { DomainError, UpstreamError } from '../domain/errors.js';
import { jobGlobalId, parseGlobalId, type ParsedId } from '../domain/ids.js';
import {
  TERMINAL_STATUSES,
  type JobRecord,
  type JobRef,
  type JobStatus,
  type LogPage,
  type LogRequest,
  type ProjectRecord,
  seriesWithColumns,
  type SeriesData,
  type SystemMetric,
} from '../domain/types.js';
import type { ProviderAdapter, SystemMetricsResult } from '../providers/provider.js';
import type { ProviderSet } from '../providers/provider-set.js';
import {
  columnsOf,
  pointBatch,
  pointBatchByKey,
  withSeriesIds,
  type SeriesIdentity,
  type FetchRow,
  type JobRow,
  type ProviderSyncRow,
  type Repository,
} from './repository.js';
import { DEFAULT_LOOKUP_BUDGET, LookupBuckets, type LookupBudget } from './lookup-budget.js';
import { heldOf, type HeldPoints } from './shaping.js';
import type { PointBatch, PointRun } from './sql-util.js';

/** Start sources a stored metric point can improve on (Repository.startFromFirstPoints). */
const START_FROM_POINTS = new Set(['CREATION', 'FIRST_METRIC']);
const NO_POINTS: HeldPoints = { length: 0, key: new Float64Array(0), ts: new Float64Array(0), step: new Float64Array(0), value: new Float64Array(0) };

export interface CachePolicy {
  /** How long a provider's job list is fresh. */
  listTtlMs: number;
  /** How long a running job's detail (status, nodes) is fresh. */
  detailTtlMs: number;
  /** How long a running job's metrics, training metrics and progress are fresh. */
  metricsTtlMs: number;
  /** Upstream resolution bounds: a fetch asks for maxPoints per series, clamped to these. */
  minUpstreamPointsPerSeries: number;
  maxUpstreamPointsPerSeries: number;
  /** The finest step ever asked of upstream, in seconds. */
  minStepSeconds: number;
  /** Each API token's budget of upstream lookups of ids the cache has never seen (store/lookup-budget.ts). */
  unknownIdLookups: LookupBudget;
}

export const DEFAULT_CACHE_POLICY: CachePolicy = {
  listTtlMs: 30_000,
  detailTtlMs: 15_000,
  metricsTtlMs: 30_000,
  minUpstreamPointsPerSeries: 120,
  maxUpstreamPointsPerSeries: 2000,
  minStepSeconds: 15,
  unknownIdLookups: DEFAULT_LOOKUP_BUDGET,
};

export interface Freshness {
  /** When the data answered was fetched from upstream (null: never). */
  fetchedAt: Date | null;
  /** True when a refresh was due but failed, so an older copy is served. */
  stale: boolean;
  error: { code: string; message: string } | null;
}

export interface MetricsRequest {
  job: JobRow;
  from: Date;
  to: Date;
  metrics: readonly SystemMetric[];
  /** The points per series the asker will show; sets the upstream resolution. */
  maxPoints?: number;
}

/** The series a query will ask of a job, seen ahead while its nodes are resolved. */
export interface TopologyHint {
  window: Window;
  metrics: readonly SystemMetric[];
  maxPoints: number;
}

export interface Window {
  from: Date;
  to: Date;
}

const FRESH_NOW = (at: Date): Freshness => ({ fetchedAt: at, stale: false, error: null });

export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status as JobStatus);
}

export function jobRef(job: JobRow, projectExternalId: string): JobRef {
  return {
    externalId: job.externalId,
    projectExternalId,
    status: job.status as JobStatus,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
  };
}

/** The job's life, the default window of every series question; [from, to] is clipped to it. */
/** How the upstream step of a window is chosen (ReadThrough.stepRule). */
export interface StepRule {
  minStepSeconds: number;
  /** Points asked per series: the window is divided by this many. */
  points: number;
}

export function jobWindow(job: JobRow, now: Date, from?: Date | null, to?: Date | null): Window {
  // A start learned from the job's own first point would shrink the window the first fetch asked
  // (from the creation) and, with it, the resolution a default question asks: refetched for nothing.
  const start = (job.startedAtSource === 'FIRST_METRIC' ? job.createdAt : null) ?? job.startedAt ?? job.createdAt ?? new Date(now.getTime() - 3600_000);
  const end = job.finishedAt ?? now;
  const f = from && from > start ? from : start;
  const t = to && to < end ? to : end;
  return { from: f, to: t < f ? f : t };
}

function toErrorInfo(err: unknown): { code: string; message: string } {
  if (err instanceof DomainError) return { code: err.code, message: err.message };
  return { code: 'INTERNAL', message: 'unexpected failure while fetching from upstream' };
}

/** Told how many of a batch's lookups the cache answered (hits) and how many went upstream (misses). */
export type CacheLookupObserver = (dataset: 'metrics' | 'training' | 'progress', hits: number, misses: number) => void;

/** A job whose status changed (previousStatus) or that appeared since the last list (previousStatus null). */
export type StatusListener = (change: { job: JobRow; previousStatus: string | null }) => void;

/** How long an id the platform called unknown is answered null without asking again. */
export const NEGATIVE_LOOKUP_TTL_MS = 60_000;
/** Unknown ids remembered at most (oldest forgotten first): 2,000 made-up ids must not grow memory without bound. */
const NEGATIVE_LOOKUP_MAX = 10_000;

/** Lookups by id per list sync for unfinished jobs the list no longer holds. */
const MAX_UNLISTED_CHECKS = 20;

export class ReadThrough {
  private readonly inflight = new Map<string, SharedWork<unknown>>();
  /** Job ids upstream said do not exist, with when that stops being believed (ms). */
  private readonly unknownJobs = new Map<string, number>();
  /** Per API token, the upstream lookups of never-seen ids it may still make. */
  private readonly lookupBudget: LookupBuckets;
  private readonly lookupObservers: CacheLookupObserver[] = [];
  private readonly statusListeners: StatusListener[] = [];
  private readonly writeFailureObservers: ((err: unknown) => void)[] = [];
  /** Fetched series whose points are still being written, by series id. */
  private readonly held = new Map<number, HeldSeries>();
  /** Fetch records not committed yet, by job: they already count as cached for this replica. */
  private readonly heldFetches = new Map<string, { row: FetchRow; written: Written }[]>();
  /** Fetches being stored, by fetch key: a concurrent request for the same fetch waits on the same write. */
  private readonly storing = new Map<string, Written>();
  /** Each fetch's points as a batch by series key (draftOf), for as long as its result lives. */
  private readonly drafts = new WeakMap<SystemMetricsResult, FetchDraft>();
  /** Writes ever started per job, to tell whether another began while one was held. */
  private readonly writeEpoch = new Map<string, number>();
  /** Cache writes under way (the points and fetch records of answered fetches). */
  private readonly writes = new Set<Promise<void>>();
  private writesSettledCount = 0;

  constructor(
    readonly repo: Repository,
    readonly providers: ProviderSet,
    readonly policy: CachePolicy = DEFAULT_CACHE_POLICY,
    private readonly clock: () => number = Date.now,
  ) {
    this.lookupBudget = new LookupBuckets(policy.unknownIdLookups);
  }

  now(): Date {
    return new Date(this.clock());
  }

  observeLookups(observer: CacheLookupObserver): void {
    this.lookupObservers.push(observer);
  }

  private lookedUp(dataset: 'metrics' | 'training' | 'progress', hits: number, misses: number) {
    for (const observe of this.lookupObservers) observe(dataset, hits, misses);
  }

  /** Told when a cache write that follows an answer fails (the next request fetches again). */
  observeWriteFailures(observer: (err: unknown) => void): void {
    this.writeFailureObservers.push(observer);
  }

  /** Waits, at most timeoutMs, for the refreshes under way to be fetched and written (shutdown, tests, bench). */
  async settle(timeoutMs = 600_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const all = async () => {
      while (this.inflight.size > 0 || this.writes.size > 0) await Promise.allSettled([...[...this.inflight.values()].map((w) => w.promise), ...this.writes]);
    };
    await Promise.race([all(), bound]);
    clearTimeout(timer);
  }

  /** How many cache writes have settled (committed or failed) since start: what was read may have changed since. */
  settledWrites(): number {
    return this.writesSettledCount;
  }

  /** Cache writes under way: answers go out before their writes commit (a gauge for operators and tests). */
  pendingWrites(): number {
    return this.writes.size;
  }

  /** Waits for the cache writes under way (answers go out before their writes commit) to commit or fail. */
  async writesSettled(): Promise<void> {
    while (this.writes.size > 0) await Promise.allSettled([...this.writes]);
  }

  /**
   * The points of a series fetched but not yet written, when they are all the cache will hold for
   * it once written (the series had no cached points before): answers can be shaped from them.
   * `pending` instead when the written points will merge with older ones: wait, then read SQL.
   */
  heldPoints(seriesId: number): { points: HeldPoints } | { pending: Promise<void> } | null {
    const h = this.held.get(seriesId);
    if (!h) return null;
    return h.exclusive ? { points: h.points } : { pending: h.written };
  }

  /** Concurrent identical refreshes share one upstream call. */
  /** Requests waiting on upstream fills under way (each counted once per fill it waits on). */
  fillWaiters(): number {
    let n = 0;
    for (const w of this.inflight.values()) n += w.waiting;
    return n;
  }

  /**
   * One upstream fill per key, shared by every caller meanwhile. It is cancelled (its upstream
   * call aborted) when every request waiting on it has been abandoned, and a later caller then
   * starts a new one; a background caller (live poller) keeps it going.
   */
  private once<T>(key: string, providerId: string, scope: RequestScope | undefined, work: (shared: RequestScope) => Promise<T>): Promise<T> {
    const late = () =>
      new UpstreamError('UPSTREAM_TIMEOUT', providerId, 'no answer before the request deadline; the fetch goes on and fills the cache, ask again', {
        retryAfterSeconds: 1,
      });
    const existing = this.inflight.get(key) as SharedWork<T> | undefined;
    if (existing && !existing.cancelled) return existing.join(scope, late);
    const shared = new SharedWork(scope, work);
    this.inflight.set(key, shared);
    void shared.promise
      .catch(() => {})
      .finally(() => {
        if (this.inflight.get(key) === shared) this.inflight.delete(key);
      });
    return shared.join(scope, late);
  }

  // ---- provider-wide job lists --------------------------------------------------------------

  /** A provider's job list as its sync record says: fresh (within the list TTL, last sync without error) or due. */
  private listFresh(s: ProviderSyncRow | undefined, now: Date): s is ProviderSyncRow & { syncedAt: Date } {
    return Boolean(s?.syncedAt && now.getTime() - s.syncedAt.getTime() < this.policy.listTtlMs && !s.errorCode);
  }

  /**
   * A job page read in the same statement as the providers' list records, when every list is
   * fresh: what syncJobLists and a page read answer then, in one statement instead of two. null
   * when a list is due (or the page is empty, so the records did not come back): the caller then
   * syncs and reads the page as before.
   */
  async jobsPageIfListsFresh<T>(
    providerIds: readonly string[],
    read: () => Promise<{ rows: T[]; syncs: ProviderSyncRow[] | null } | null>,
  ): Promise<{ rows: T[]; freshness: Map<string, Freshness> } | null> {
    if (providerIds.length === 0) return null;
    const page = await read();
    if (!page?.syncs) return null;
    const now = this.now();
    const syncs = new Map(page.syncs.map((s) => [s.providerId, s]));
    const freshness = new Map<string, Freshness>();
    for (const pid of providerIds) {
      const s = syncs.get(pid);
      if (!this.listFresh(s, now)) return null;
      freshness.set(pid, FRESH_NOW(s.syncedAt));
    }
    return { rows: page.rows, freshness };
  }

  /** Refreshes the job lists of the given providers where stale; failures leave the cache as is. */
  async syncJobLists(providerIds: readonly string[], scope?: RequestScope): Promise<Map<string, Freshness>> {
    const now = this.now();
    const syncs = new Map((await this.repo.within(scope).providerSyncs(providerIds, 'jobs')).map((s) => [s.providerId, s]));
    const out = new Map<string, Freshness>();
    await Promise.all(
      providerIds.map(async (pid) => {
        const s = syncs.get(pid);
        if (this.listFresh(s, now)) {
          out.set(pid, FRESH_NOW(s.syncedAt));
          return;
        }
        try {
          out.set(pid, FRESH_NOW(await this.syncJobListNow(pid, scope)));
        } catch (err) {
          out.set(pid, { fetchedAt: s?.syncedAt ?? null, stale: true, error: toErrorInfo(err) });
        }
      }),
    );
    return out;
  }

  /**
   * Fetches a provider's whole job list now and writes it; returns when it was fetched, or throws
   * the upstream error (recorded for the next reader). Concurrent syncs of one provider (a query's
   * and the live status poller's) share one upstream call. Status changes of known jobs, and jobs
   * new since an earlier sync, are claimed atomically and told to the status listeners.
   */
  syncJobListNow(providerId: string, scope?: RequestScope): Promise<Date> {
    return this.once(`jobs:${providerId}`, providerId, scope, async (shared) => {
      const at = this.now();
      try {
        const [previous] = await this.repo.within(shared).providerSyncs([providerId], 'jobs');
        const { projects, jobs } = await fetchCatalog(this.providers, providerId, shared);
        // Before the first list ever cached, every job would look new: that is a baseline, not news.
        await this.writeJobsAnnouncing(providerId, jobs, Boolean(previous?.syncedAt), async () => {
          const inserted = await this.repo.upsertCatalog(providerId, projects, jobs, at);
          // An id once unknown that the list now holds is a job: no longer answered null.
          for (const j of jobs) this.unknownJobs.delete(jobGlobalId(providerId, j.externalId));
          await this.repo.recordProviderSync({ providerId, dataset: 'jobs', syncedAt: at, attemptedAt: at, errorCode: null, errorMessage: null });
          return inserted;
        });
        await this.settleUnlisted(providerId, new Set(jobs.map((j) => j.externalId)), at, shared);
        return at;
      } catch (err) {
        const info = toErrorInfo(err);
        await this.repo.recordProviderSync({ providerId, dataset: 'jobs', syncedAt: null, attemptedAt: at, errorCode: info.code, errorMessage: info.message });
        throw err;
      }
    });
  }

  /**
   * Unfinished cached jobs a complete list no longer holds: each is looked up by id (a platform may
   * list only recent jobs), and the ones it does not find are gone (UNKNOWN, their last status in
   * rawStatus), so no job shows as running forever after it vanished (a deleted run folder, a
   * demo restarted with new runs). At most MAX_UNLISTED_CHECKS lookups per sync; the rest wait.
   */
  private async settleUnlisted(providerId: string, listed: ReadonlySet<string>, at: Date, scope: RequestScope) {
    const unlisted = (await this.repo.unfinishedJobsOf(providerId)).filter((j) => !listed.has(j.externalId)).slice(0, MAX_UNLISTED_CHECKS);
    if (unlisted.length === 0) return;
    const projects = await this.projectExternalIds(unlisted);
    const gone: JobRow[] = [];
    await Promise.all(
      unlisted.map(async (job) => {
        try {
          const detail = await this.providers.call(
            providerId,
            (a, sig) => a.getJob({ externalId: job.externalId, projectExternalId: projects.get(job.projectId) ?? '' }, sig),
            scope,
          );
          if (!detail) gone.push(job);
        } catch {
          // Not known either way: the next sync asks again.
        }
      }),
    );
    await this.announceGone(gone, at);
  }

  private async announceGone(jobs: readonly JobRow[], at: Date) {
    const changed = await this.repo.markGone(jobs, at);
    if (changed.size === 0 || this.statusListeners.length === 0) return;
    for (const row of await this.repo.jobsByIds([...changed.keys()])) {
      for (const listener of this.statusListeners) listener({ job: row, previousStatus: changed.get(row.id) ?? null });
    }
  }

  /** Told of every job whose status changed (previousStatus set) or that appeared (null), once per change. */
  onStatusChange(listener: StatusListener): void {
    this.statusListeners.push(listener);
  }

  /**
   * Writes job records (through `write`) and tells the status listeners which changed. The claim is
   * one UPDATE re-checked on the latest row version, so of two concurrent writers of the same change
   * (two pollers, two replicas) exactly one announces it.
   */
  private async writeJobsAnnouncing(providerId: string, jobs: readonly JobRecord[], announceNew: boolean, write: () => Promise<Set<string>>) {
    const ids = jobs.map((j) => jobGlobalId(providerId, j.externalId));
    const known = new Set((await this.repo.jobsByIds(ids)).map((j) => j.id));
    const changed = await this.repo.claimStatusChanges(jobs.map((j, i) => ({ id: ids[i]!, status: j.status })).filter((c) => known.has(c.id)));
    // New: inserted by this very write (a concurrent writer of the same new job updated it instead).
    const inserted = await write();
    const toAnnounce = [...changed.keys(), ...(announceNew ? ids.filter((id) => !known.has(id) && inserted.has(id)) : [])];
    if (toAnnounce.length === 0 || this.statusListeners.length === 0) return;
    for (const row of await this.repo.jobsByIds(toAnnounce)) {
      for (const listener of this.statusListeners) listener({ job: row, previousStatus: changed.get(row.id) ?? null });
    }
  }

  /**
   * The job as the platform has it now (status, nodes), written to the store whatever the TTL says;
   * throws NOT_FOUND when it is gone. Shares its upstream call with a topology refresh under way.
   */
  async refreshJob(jobId: string, scope?: RequestScope): Promise<JobRow> {
    const [cached] = await this.jobsByIds([parseGlobalId(jobId, 'job')], { scope });
    if (cached instanceof Error) throw cached;
    if (!cached) throw new DomainError('NOT_FOUND', `no job with id "${jobId}"`);
    const projects = await this.projectExternalIds([cached], scope);
    const detail = await this.once(`detail:${cached.id}`, cached.providerId, scope, (shared) =>
      this.providers.call(
        cached.providerId,
        (a, sig) => a.getJob({ externalId: cached.externalId, projectExternalId: projects.get(cached.projectId) ?? '' }, sig),
        shared,
      ),
    );
    if (!detail) {
      await this.announceGone([cached], this.now());
      throw new DomainError('NOT_FOUND', `job ${jobId} no longer exists upstream`);
    }
    const at = this.now();
    await this.writeJobsAnnouncing(cached.providerId, [detail], false, () => this.repo.upsertJobs(cached.providerId, [detail], at, true));
    if (detail.nodes) await this.repo.writeTopology(cached.providerId, [{ job: cached, nodes: detail.nodes }], at);
    const [row] = await this.repo.jobsByIds([jobId]);
    return row ?? cached;
  }

  // ---- single jobs --------------------------------------------------------------------------

  /**
   * Jobs by id, fetched from upstream when not cached yet (a job created since the last list
   * sync). Unknown ids come back as null; upstream failures for uncached jobs are thrown per id.
   */
  async jobsByIds(ids: readonly ParsedId[], opts: { upstream?: boolean; scope?: RequestScope } = {}): Promise<(JobRow | null | Error)[]> {
    const fullIds = ids.map((p) => jobGlobalId(p.providerId, p.key));
    const cached = new Map((await this.repo.within(opts.scope).jobsByIds(fullIds)).map((j) => [j.id, j]));
    if (opts.upstream === false) return fullIds.map((id) => cached.get(id) ?? null);
    const nowMs = this.clock();
    const unseen = ids.filter((p, i) => !cached.has(fullIds[i]!) && this.providers.find(p.providerId) && !this.knownUnknown(fullIds[i]!, nowMs));
    const errors = new Map<string, Error>();
    // Each lookup of an id never seen draws from the token's budget, unless it joins one under way
    // (the same id asked by another request): made-up ids cannot drive the platform's calls.
    const missing: ParsedId[] = [];
    const refused = new Map<string, { p: ParsedId; retryAfterSeconds: number }>();
    for (const p of new Map(unseen.map((u) => [jobGlobalId(u.providerId, u.key), u])).values()) {
      if (this.inflight.has(`job:${p.providerId}:${p.key}`)) {
        missing.push(p);
        continue;
      }
      const taken = this.lookupBudget.take(opts.scope?.tenant ?? null, nowMs);
      if (taken.ok) missing.push(p);
      else refused.set(jobGlobalId(p.providerId, p.key), { p, retryAfterSeconds: taken.retryAfterSeconds });
    }
    if (refused.size > 0) {
      // An id is not forged merely because this store never listed its provider (a new database, a
      // server asked by id before its first sync): before refusing, a provider never listed is
      // listed once, and only the ids its list does not hold either are the made-up ones the
      // budget is for. Once a list exists, an id outside it is charged as before.
      const pids = [...new Set([...refused.values()].map((r) => r.p.providerId))];
      const listed = new Set((await this.repo.within(opts.scope).providerSyncs(pids, 'jobs')).filter((x) => x.syncedAt).map((x) => x.providerId));
      const neverListed = pids.filter((pid) => !listed.has(pid));
      if (neverListed.length > 0) await this.syncJobLists(neverListed, opts.scope);
      for (const j of await this.repo.within(opts.scope).jobsByIds([...refused.keys()])) {
        cached.set(j.id, j);
        refused.delete(j.id);
      }
      for (const [id, r] of refused)
        errors.set(
          id,
          new DomainError('RATE_LIMITED', `too many lookups of unknown ids for this token; try again in ${r.retryAfterSeconds} s`, {
            retryAfterSeconds: r.retryAfterSeconds,
          }),
        );
    }
    if (missing.length > 0) {
      const at = this.now();
      const found = await Promise.all(
        missing.map(async (p) => {
          try {
            const detail = await this.once(`job:${p.providerId}:${p.key}`, p.providerId, opts.scope, (shared) =>
              this.providers.call(p.providerId, (a, signal) => a.getJob({ externalId: p.key, projectExternalId: '' }, signal), shared),
            );
            return { p, detail };
          } catch (err) {
            errors.set(jobGlobalId(p.providerId, p.key), err as Error);
            return { p, detail: null };
          }
        }),
      );
      for (const f of found) {
        const id = jobGlobalId(f.p.providerId, f.p.key);
        if (f.detail === null && !errors.has(id)) this.rememberUnknown(id, nowMs);
      }
      const byProvider = new Map<string, typeof found>();
      for (const f of found) if (f.detail) byProvider.set(f.p.providerId, [...(byProvider.get(f.p.providerId) ?? []), f]);
      // A job first seen here (not by a list sync) is news as much as one a sync finds: it is
      // announced here, once, or the status poller would find it already known and never tell.
      const synced = new Set((await this.repo.providerSyncs([...byProvider.keys()], 'jobs')).filter((s) => s.syncedAt).map((s) => s.providerId));
      for (const [pid, list] of byProvider) {
        const records = list.map((f) => f.detail!);
        await this.writeJobsAnnouncing(pid, records, synced.has(pid), () => this.repo.upsertCatalog(pid, [], records, at));
      }
      if (byProvider.size > 0) {
        for (const j of await this.repo.jobsByIds([...byProvider.values()].flat().map((f) => jobGlobalId(f.p.providerId, f.p.key)))) {
          cached.set(j.id, j);
        }
      }
    }
    await this.refreshStaleUnfinished(cached, opts.scope);
    return fullIds.map((id) => cached.get(id) ?? errors.get(id) ?? null);
  }

  /**
   * A job cached as unfinished that no list sync has seen for a list TTL, and whose detail is older
   * than the detail TTL, may have finished since: its detail is read before it is answered, so a
   * job asked by id does not keep saying RUNNING until some list query runs. A failed read keeps
   * the cached row (the field is not failed for it).
   */
  private async refreshStaleUnfinished(cached: Map<string, JobRow>, scope: RequestScope | undefined): Promise<void> {
    const nowMs = this.clock();
    const stale = [...cached.values()].filter(
      (j) =>
        !isTerminal(j.status) &&
        !(j.status === 'UNKNOWN' && j.rawStatus?.startsWith('gone:')) &&
        this.providers.find(j.providerId) &&
        nowMs - j.seenAt.getTime() >= this.policy.listTtlMs &&
        (!j.detailFetchedAt || nowMs - j.detailFetchedAt.getTime() >= this.policy.detailTtlMs),
    );
    if (stale.length === 0) return;
    const projects = await this.projectExternalIds(stale, scope);
    const at = this.now();
    const fresh = await Promise.all(
      stale.map(async (job) => {
        try {
          const detail = await this.once(`detail:${job.id}`, job.providerId, scope, (shared) =>
            this.providers.call(
              job.providerId,
              (a, signal) => a.getJob({ externalId: job.externalId, projectExternalId: projects.get(job.projectId) ?? '' }, signal),
              shared,
            ),
          );
          return { job, detail };
        } catch {
          return { job, detail: undefined };
        }
      }),
    );
    const gone = fresh.filter((f) => f.detail === null).map((f) => f.job);
    if (gone.length > 0) await this.announceGone(gone, at);
    for (const [pid, group] of groupBy(
      fresh.filter((f) => f.detail),
      (f) => f.job.providerId,
    )) {
      const records = group.map((f) => f.detail!);
      await this.writeJobsAnnouncing(pid, records, false, () => this.repo.upsertJobs(pid, records, at, true));
    }
    for (const j of await this.repo.jobsByIds(stale.map((j) => j.id))) cached.set(j.id, j);
  }

  private knownUnknown(id: string, nowMs: number): boolean {
    const until = this.unknownJobs.get(id);
    if (until === undefined) return false;
    if (until > nowMs) return true;
    this.unknownJobs.delete(id);
    return false;
  }

  private rememberUnknown(id: string, nowMs: number) {
    this.unknownJobs.delete(id);
    this.unknownJobs.set(id, nowMs + NEGATIVE_LOOKUP_TTL_MS);
    if (this.unknownJobs.size > NEGATIVE_LOOKUP_MAX) this.unknownJobs.delete(this.unknownJobs.keys().next().value!);
  }

  /**
   * Makes sure the jobs' nodes and GPUs are known and, for running jobs, recent. Where only
   * metrics reveal nodes, the metrics call that teaches them is the one the query will need
   * anyway (`hints`: its window, metrics and resolution), so one call gives both; and the job
   * detail is not asked again when the job list just brought it.
   */
  async ensureTopology(jobs: readonly JobRow[], opts: TopologyOptions = {}): Promise<Map<string, Freshness | Error>> {
    const { each, done } = await this.ensureTopologyEach(jobs, opts);
    const out = new Map<string, Freshness | Error>();
    for (const [id, freshness] of each) out.set(id, await freshness);
    await done;
    return out;
  }

  /**
   * ensureTopology, job by job: a job learned from a metrics fetch settles (with an Error, never a
   * rejection) once its fetch is described (ensureMetricsEach's waves), the others once the call
   * returns; `done` once the whole batch is.
   */
  async ensureTopologyEach(
    jobs: readonly JobRow[],
    opts: TopologyOptions = {},
  ): Promise<{ each: Map<string, Freshness | Error | Promise<Freshness | Error>>; done: Promise<void> }> {
    const now = this.now();
    const out = new Map<string, Freshness | Error | Promise<Freshness | Error>>();
    const dueAll = jobs.filter((j) => {
      // A finished job's topology is final once learned after it finished (from its detail or its metrics).
      const learnedAfterEnd = (at: Date | null) => at !== null && (!j.finishedAt || at >= j.finishedAt);
      const fresh =
        j.topologyFetchedAt &&
        ((isTerminal(j.status) && (learnedAfterEnd(j.detailFetchedAt) || learnedAfterEnd(j.topologyFetchedAt))) ||
          now.getTime() - j.topologyFetchedAt.getTime() < this.policy.detailTtlMs);
      if (fresh) out.set(j.id, FRESH_NOW(j.topologyFetchedAt!));
      return !fresh;
    });
    if (dueAll.length === 0) return { each: out, done: Promise.resolve() };
    const metricsNeeded: MetricsRequest[] = [];
    const fromMetrics = (job: JobRow) => {
      const adapter = this.providers.find(job.providerId)!.adapter;
      const hint = opts.hints?.get(job.id);
      metricsNeeded.push(
        hint
          ? { job, from: hint.window.from, to: hint.window.to, metrics: hint.metrics, maxPoints: hint.maxPoints }
          : { job, ...jobWindow(job, now), metrics: adapter.capabilities.systemMetrics },
      );
    };
    // The detail would add nothing the list did not just say (status), and no nodes: skip it.
    const due = dueAll.filter((j) => {
      const caps = this.providers.find(j.providerId)?.adapter.capabilities;
      const listedRecently = now.getTime() - j.seenAt.getTime() < this.policy.detailTtlMs;
      if (caps?.nodesOnlyInMetrics && listedRecently) {
        fromMetrics(j);
        return false;
      }
      return true;
    });
    const projects = await this.projectExternalIds(due, opts.scope);
    const results = await Promise.all(
      due.map(async (job) => {
        try {
          const detail = await this.once(`detail:${job.id}`, job.providerId, opts.scope, (shared) =>
            this.providers.call(
              job.providerId,
              (a, signal) => a.getJob({ externalId: job.externalId, projectExternalId: projects.get(job.projectId) ?? '' }, signal),
              shared,
            ),
          );
          return { job, detail, error: null };
        } catch (err) {
          return { job, detail: null, error: err };
        }
      }),
    );
    for (const [pid, group] of groupBy(results, (r) => r.job.providerId)) {
      const ok = group.filter((r) => r.detail);
      if (ok.length)
        await this.repo.upsertJobs(
          pid,
          ok.map((r) => r.detail!),
          now,
          true,
        );
      const withNodes = ok.filter((r) => r.detail!.nodes !== null);
      if (withNodes.length)
        await this.repo.writeTopology(
          pid,
          withNodes.map((r) => ({ job: r.job, nodes: r.detail!.nodes! })),
          now,
        );
      for (const r of withNodes) out.set(r.job.id, FRESH_NOW(now));
      // Platforms that reveal nodes only in metrics (Baseten) learn them from a metrics fetch.
      for (const r of ok.filter((x) => x.detail!.nodes === null)) {
        fromMetrics({ ...r.job, status: r.detail!.status, finishedAt: r.detail!.finishedAt, startedAt: r.detail!.startedAt ?? r.job.startedAt });
      }
      for (const r of group.filter((x) => !x.detail)) {
        if (r.error === null) out.set(r.job.id, new DomainError('NOT_FOUND', `job ${r.job.id} no longer exists upstream`));
        else if (!r.job.topologyFetchedAt) out.set(r.job.id, asError(r.error));
        else out.set(r.job.id, { fetchedAt: r.job.topologyFetchedAt, stale: true, error: toErrorInfo(r.error) });
      }
    }
    if (metricsNeeded.length === 0) return { each: out, done: Promise.resolve() };
    const fresh = this.ensureMetricsEach(metricsNeeded, {
      forceTopology: true,
      answerBeforeWrite: opts.answerBeforeWrite,
      collect: opts.collect,
      scope: opts.scope,
    });
    metricsNeeded.forEach((m, i) => {
      out.set(m.job.id, fresh.each[i]!);
    });
    return { each: out, done: fresh.done };
  }

  // ---- system metrics -----------------------------------------------------------------------

  /** The upstream step for a window: fine enough for the points asked, never finer than the platform's floor. */
  stepFor(window: Window, maxPoints = this.policy.minUpstreamPointsPerSeries): number {
    const seconds = (window.to.getTime() - window.from.getTime()) / 1000;
    const rule = this.stepRule(maxPoints);
    return Math.max(rule.minStepSeconds, Math.ceil(seconds / rule.points));
  }

  /** stepFor's rule for any window: step = max(minStepSeconds, ceil(window seconds / points)); for SQL that works it out per job. */
  stepRule(maxPoints = this.policy.minUpstreamPointsPerSeries): StepRule {
    const points = Math.min(this.policy.maxUpstreamPointsPerSeries, Math.max(this.policy.minUpstreamPointsPerSeries, maxPoints));
    return { minStepSeconds: this.policy.minStepSeconds, points };
  }

  private covers(row: FetchRow, window: Window, step: number, now: Date, maxAgeMs = this.policy.metricsTtlMs): boolean {
    if (row.rangeFrom > window.from || row.stepSeconds > step) return false;
    const fresh = row.final || now.getTime() - row.fetchedAt.getTime() < maxAgeMs;
    if (!fresh) return false;
    // A fetch that reached "now" at its time answers any later `to` while it is fresh.
    return row.rangeTo >= window.to || (!row.final && row.rangeTo.getTime() >= row.fetchedAt.getTime() - 1000);
  }

  /**
   * Ensures the requested metrics are cached for each request's window. Requests for the same job
   * merge into one upstream call; all writes of the batch take a fixed number of statements.
   */
  async ensureMetrics(requests: readonly MetricsRequest[], opts: MetricsOptions = {}): Promise<(Freshness | Error)[]> {
    const { each, done } = this.ensureMetricsEach(requests, opts);
    const out = await Promise.all(each);
    await done;
    return out;
  }

  /**
   * ensureMetrics, request by request: each request's promise settles (with an Error, never a
   * rejection) once its own answer is known, `done` once every fetch of the batch is stored as far
   * as its callers wait for (described or committed) and the failures are recorded.
   *
   * Answered before the write (answerBeforeWrite), the fetches are stored in METRICS_WAVES waves
   * by arrival (a wave: the next quarter of the fetches to arrive), each wave's requests answered
   * as soon as it is described: the jobs whose bodies came first are executed while the others
   * still arrive, instead of all after the last one (a cold dashboard's time after its last body
   * was 1.2-1.3 s of 6.7 s: describing, executing and serialising everything). A wave is a fixed
   * number of statements, so a batch still costs the same number whatever its size (from
   * METRICS_WAVES jobs up). The points are written once every wave is described, one wave after
   * another: a COPY while bodies still arrive would take a core from the platform's answers.
   */
  ensureMetricsEach(requests: readonly MetricsRequest[], opts: MetricsOptions = {}): { each: Promise<Freshness | Error>[]; done: Promise<void> } {
    const settle: ((v: Freshness | Error) => void)[] = [];
    const each = requests.map(() => new Promise<Freshness | Error>((resolve) => settle.push(resolve)));
    const answered = requests.map(() => false);
    const answer = (i: number, v: Freshness | Error) => {
      if (answered[i]) return;
      answered[i] = true;
      settle[i]!(v);
    };
    const answerRest = (v: () => Error) => {
      for (let i = 0; i < requests.length; i++) if (!answered[i]) answer(i, v());
    };
    const done = this.fillMetrics(requests, opts, answer).then(
      () => answerRest(() => new DomainError('INTERNAL', 'a metrics request was left unanswered')),
      (err) => {
        answerRest(() => asError(err));
        throw err;
      },
    );
    // Awaited by ensureMetrics. A caller that takes `each` alone has its answers by then, and the
    // one failure that can come later (recording the fetch errors) is told to the write-failure
    // observers: marked handled, as an unobserved rejection would end the process.
    done.catch(() => {});
    return { each, done };
  }

  private async fillMetrics(requests: readonly MetricsRequest[], opts: MetricsOptions, answer: (i: number, v: Freshness | Error) => void): Promise<void> {
    const now = this.now();
    const datasets = new Set<string>();
    const wanted = requests.map((r) => {
      const caps = this.providers.find(r.job.providerId)?.adapter.capabilities.systemMetrics ?? [];
      const metrics = r.metrics.filter((m) => caps.includes(m));
      for (const m of metrics) datasets.add(`metric:${m}`);
      return metrics;
    });
    const jobIds = [...new Set(requests.map((r) => r.job.id))];
    const committed = await this.repo.within(opts.scope).fetchesOf(jobIds, [...datasets]);
    const held = jobIds.flatMap((id) => this.heldFetches.get(id) ?? []).filter((h) => datasets.has(h.row.dataset));
    const rowsByJob = groupBy([...held.map((h) => h.row), ...committed], (r) => r.jobId);
    // What another request fetched and is storing counts as cached once it is described (or
    // written, for callers that read points back in SQL).
    const heldWrites = [...new Set(held.map((h) => h.written))];
    const settled = async (writes: readonly Written[]) => {
      if (!opts.answerBeforeWrite) {
        await Promise.all(writes.map((w) => w.committed));
        return;
      }
      for (const alone of await Promise.all(writes.map((w) => w.described))) {
        if (opts.collect) for (const [id, points] of alone) opts.collect.set(id, points);
      }
    };
    const untilHeld = () => settled(heldWrites);

    // Work out, per job, which metrics over which window must be fetched.
    const plan = new Map<string, { job: JobRow; from: Date; to: Date; metrics: Set<SystemMetric>; step: number }>();
    const answers: (Freshness | null)[] = requests.map((r, i) => {
      const step = this.stepFor(r, r.maxPoints);
      const jobRows = rowsByJob.get(r.job.id) ?? [];
      const covered = (row: FetchRow) => this.covers(row, r, step, now, opts.maxAgeMs);
      const missing = wanted[i]!.filter((m) => !jobRows.some((row) => row.dataset === `metric:${m}` && covered(row)));
      if (missing.length === 0 && !opts.forceTopology) {
        // As of the oldest of the metrics' newest covering fetches.
        const asOf = wanted[i]!.map((m) =>
          Math.max(...jobRows.filter((row) => row.dataset === `metric:${m}` && covered(row)).map((row) => row.fetchedAt.getTime())),
        );
        return FRESH_NOW(asOf.length ? new Date(Math.min(...asOf)) : now);
      }
      const entry = plan.get(r.job.id) ?? { job: r.job, from: r.from, to: r.to, metrics: new Set<SystemMetric>(), step };
      if (r.from < entry.from) entry.from = r.from;
      if (r.to > entry.to) entry.to = r.to;
      entry.step = Math.min(entry.step, step);
      for (const m of opts.forceTopology ? wanted[i]! : missing) entry.metrics.add(m);
      plan.set(r.job.id, entry);
      return null;
    });
    const hits = answers.filter((a) => a !== null).length;
    this.lookedUp('metrics', hits, answers.length - hits);
    // Every answer waits for the writes of these jobs under way to be described (or committed).
    const heldDescribed = untilHeld();
    const cachedAnswered = heldDescribed.then(() => {
      answers.forEach((a, i) => {
        if (a) answer(i, a);
      });
    });
    // Awaited below, after the fetches: marked handled meanwhile.
    cachedAnswered.catch(() => {});
    if (plan.size === 0) {
      await cachedAnswered;
      return;
    }
    const fetchedRequests = groupBy(
      requests.flatMap((_r, i) => (answers[i] ? [] : [i])),
      (i) => requests[i]!.job.id,
    );

    const work = [...plan.values()];
    const projects = await this.projectExternalIds(
      work.map((w) => w.job),
      opts.scope,
    );
    type Fetched = { w: (typeof work)[number]; key: string; res: SystemMetricsResult | null; error: unknown };
    const failed = new Map<string, unknown>();
    const freshnessOf = (i: number): Freshness | Error => {
      const r = requests[i]!;
      const error = failed.get(r.job.id);
      if (error === undefined) return FRESH_NOW(now);
      const previous = (rowsByJob.get(r.job.id) ?? []).filter((row) => wanted[i]!.some((m) => row.dataset === `metric:${m}`));
      // Nothing cached to fall back on: the field fails with the upstream error rather than an empty lie.
      if (previous.length === 0) return asError(error);
      return { fetchedAt: previous[0]!.fetchedAt, stale: true, error: toErrorInfo(error) };
    };

    const ends = waveEnds(work.length, opts.answerBeforeWrite ? METRICS_WAVES : 1);
    const described: Promise<unknown>[] = [];
    let everyWaveDescribed!: () => void;
    const writeGate = new Promise<void>((resolve) => (everyWaveDescribed = resolve));
    let previousWrite: Promise<unknown> = writeGate;
    /** Starts storing a wave (its write queued behind the earlier waves'), then answers its requests once it is described. */
    const storeWave = (wave: readonly Fetched[], last: boolean): Promise<void> => {
      const waits: Written[] = [];
      try {
        for (const r of wave) if (!r.res) failed.set(r.w.job.id, r.error);
        // A fetch shared with a concurrent request is stored once, by whichever batch got it first.
        const succeeded = wave.filter((r) => r.res);
        for (const r of succeeded) if (this.storing.has(r.key)) waits.push(this.storing.get(r.key)!);
        const mine = succeeded.filter((r) => !this.storing.has(r.key));
        if (mine.length) {
          const after = () => writeGate;
          const written = this.storeFetched(
            mine.map((r) => ({ job: r.w.job, from: r.w.from, to: r.w.to, step: r.w.step, res: r.res! })),
            now,
            previousWrite.then(after, after),
          );
          previousWrite = written.committed;
          for (const r of mine) this.storing.set(r.key, written);
          void written.committed
            .catch(() => {})
            .finally(() => {
              for (const r of mine) if (this.storing.get(r.key) === written) this.storing.delete(r.key);
            });
          described.push(written.described);
          waits.push(written);
        }
      } finally {
        // Opened before anything here waits: a caller waiting for the commit waits on this gate.
        if (last) void Promise.allSettled(described).then(() => everyWaveDescribed());
      }
      const answerWave = async () => {
        try {
          await settled([...new Set(waits)]);
          await heldDescribed;
          for (const r of wave) for (const i of fetchedRequests.get(r.w.job.id) ?? []) answer(i, freshnessOf(i));
        } catch (err) {
          // Callers that wait for the write see it fail as a whole, as a write of one wave would.
          if (!opts.answerBeforeWrite) throw err;
          // Answered before the write: a wave whose topology could not be stored fails alone, its
          // requests with the error, the other waves with their answers.
          for (const r of wave) for (const i of fetchedRequests.get(r.w.job.id) ?? []) answer(i, asError(err));
        }
      };
      return answerWave();
    };

    const arrived: Fetched[] = [];
    const waves: Promise<void>[] = [];
    await Promise.all(
      work.map(async (w) => {
        const key = `metrics:${w.job.id}:${w.from.getTime()}:${w.to.getTime()}:${w.step}:${[...w.metrics].sort().join(',')}`;
        let fetched: Fetched;
        try {
          const res = await this.once(key, w.job.providerId, opts.scope, (shared) =>
            this.providers.call(
              w.job.providerId,
              (a, signal) =>
                a.fetchSystemMetrics(
                  jobRef(w.job, projects.get(w.job.projectId) ?? ''),
                  { from: w.from, to: w.to, metrics: [...w.metrics], stepSeconds: w.step },
                  signal,
                ),
              shared,
            ),
          );
          this.draftOf(w.job, res);
          fetched = { w, key, res, error: null };
        } catch (error) {
          fetched = { w, key, res: null, error };
        }
        arrived.push(fetched);
        if (arrived.length !== ends[waves.length]) return;
        const first = waves.length === 0 ? 0 : ends[waves.length - 1]!;
        const wave = storeWave(arrived.slice(first), waves.length === ends.length - 1);
        // Awaited once every fetch has arrived: marked handled meanwhile.
        wave.catch(() => {});
        waves.push(wave);
      }),
    );
    await Promise.all(waves);
    await cachedAnswered;
    // Every request is answered by now: a failure to record the fetch errors is told to the
    // write-failure observers (a caller that took the answers alone would not see it).
    await this.recordFetchErrorsOf(
      [...failed].flatMap(([jobId, error]) =>
        [...plan.get(jobId)!.metrics].map((m) => ({ jobId, dataset: `metric:${m}`, failedAt: now, ...toErrorInfo(error) })),
      ),
    );
  }

  private async recordFetchErrorsOf(rows: Parameters<Repository['recordFetchErrors']>[0]): Promise<void> {
    try {
      await this.repo.recordFetchErrors(rows);
    } catch (err) {
      for (const observe of this.writeFailureObservers) observe(err);
      throw err;
    }
  }

  /**
   * The fetched series without their points inside ranges a finer fetch already holds. A coarse
   * upstream step gives samples between the finer ones (the platform picks them at its step
   * instants): written beside them, one series would mix two resolutions, so a raw read shows
   * uneven spacing and a live sample disagrees with the history around it. The finer copy wins;
   * the coarse points still fill the rest of the window.
   */
  private withoutFinerCovered(f: { job: JobRow; step: number; res: SystemMetricsResult }, committed: readonly FetchRow[]) {
    const rows = [...committed, ...(this.heldFetches.get(f.job.id) ?? []).map((h) => h.row)].filter((r) => r.stepSeconds < f.step);
    if (rows.length === 0) return f.res.series;
    return f.res.series.map((s) => {
      const finer = rows.filter((r) => r.dataset === `metric:${s.name}`).map((r) => [r.rangeFrom.getTime(), r.rangeTo.getTime()] as const);
      if (finer.length === 0 || s.keyedBy === 'step') return s;
      const c = columnsOf(s);
      const keep: number[] = [];
      for (let i = 0; i < c.length; i++) {
        const t = c.ts[i]!;
        if (Number.isNaN(t) || !finer.some(([from, to]) => t >= from && t <= to)) keep.push(i);
      }
      if (keep.length === c.length) return s;
      const pick = (a: Float64Array) => Float64Array.from(keep, (i) => a[i]!);
      const { points: _points, ...rest } = s;
      return seriesWithColumns(rest, { length: keep.length, ts: pick(c.ts), step: c.step ? pick(c.step) : null, value: pick(c.value) });
    });
  }

  /**
   * A fetch's points as a batch by series key, built once, as the fetch arrives: a cold dashboard's
   * fetches arrive over seconds, and batching all their points after the last one came was most
   * of what its answer then waited for besides its own execution (pointBatch, 0.15 s of 1.5 s).
   */
  private draftOf(job: JobRow, res: SystemMetricsResult): FetchDraft {
    let draft = this.drafts.get(res);
    if (!draft) this.drafts.set(res, (draft = pointBatchByKey(job.providerId, [{ job, series: res.series }])));
    return draft;
  }

  /**
   * The points a provider's fetches store, as batches, and each series' held view of them by id:
   * the fetches' own drafts (draftOf), unless a finer fetch took points out of one (its entry's
   * series changed) or two fetches hold the same series (its later point must win across them),
   * where one batch is built anew from the entries.
   */
  private pointBatchesOf(
    providerId: string,
    group: readonly { job: JobRow; res: SystemMetricsResult }[],
    entries: { job: JobRow; series: SeriesData[] }[],
    ids: ReadonlyMap<string, number>,
  ): { batches: PointBatch[]; held: Map<number, HeldPoints> } {
    const held = new Map<number, HeldPoints>();
    if (entries.every((e, i) => e.series === group[i]!.res.series)) {
      const drafts = group.map((f) => this.draftOf(f.job, f.res));
      if (drafts.reduce((n, d) => n + d.runs.size, 0) === new Set(drafts.flatMap((d) => [...d.runs.keys()])).size) {
        for (const d of drafts) for (const [id, run] of withSeriesIds(d.runs, ids)) held.set(id, heldOf(d.batch, run));
        return { batches: drafts.map((d) => d.batch), held };
      }
    }
    const { batch, runs } = pointBatch(providerId, entries, ids);
    for (const [id, run] of runs) held.set(id, heldOf(batch, run));
    return { batches: [batch], held };
  }

  /**
   * Stores what a batch of metrics fetches returned. Topology and series rows first, in one
   * transaction (`described`: the loaders can find nodes, GPUs and series ids); then the points
   * with their fetch records in one transaction (`committed`), so a range is never marked fetched
   * without its points, and a crash before it commits only means the next request fetches again.
   * Until then the points are held here, and the fetch records count for this replica.
   */
  private storeFetched(fetched: { job: JobRow; from: Date; to: Date; step: number; res: SystemMetricsResult }[], now: Date, start: Promise<unknown>): Written {
    // Points held alone answer as the cache will only if nothing else is, or was, stored for the
    // series: no other write of the job under way or starting meanwhile, no fetch record committed.
    const jobIds = [...new Set(fetched.map((f) => f.job.id))];
    const busy = new Set(jobIds.filter((id) => this.heldFetches.has(id)));
    const epochs = new Map(jobIds.map((id) => [id, (this.writeEpoch.get(id) ?? 0) + 1]));
    for (const [id, e] of epochs) this.writeEpoch.set(id, e);
    const fetchRows: FetchRow[] = fetched.flatMap((f) =>
      f.res.covered.map((m) => ({
        id: 0,
        jobId: f.job.id,
        dataset: `metric:${m}`,
        // An answer is authoritative for what was asked, and for any wider window it reports.
        rangeFrom: f.res.from < f.from ? f.res.from : f.from,
        rangeTo: f.res.to > f.to ? f.res.to : f.to,
        fetchedAt: now,
        stepSeconds: f.step,
        final: isTerminal(f.job.status),
      })),
    );
    const byProvider = groupBy(fetched, (f) => f.job.providerId);
    const described = this.repo.transaction(async (repo) => {
      const ids = new Map<string, Map<string, number>>();
      for (const [pid, group] of byProvider) {
        const withNodes = group.filter((f) => f.res.nodes && f.res.nodes.length > 0);
        if (withNodes.length)
          await repo.writeTopology(
            pid,
            withNodes.map((f) => ({ job: f.job, nodes: f.res.nodes! })),
            now,
          );
        ids.set(
          pid,
          await repo.writeSeriesRows(
            pid,
            group.map((f) => ({ job: f.job, series: f.res.series, identities: this.draftOf(f.job, f.res).identities })),
          ),
        );
      }
      const cached = await repo.fetchesOf(jobIds, [...new Set(fetchRows.map((r) => r.dataset))]);
      return { ids, cached: groupBy(cached, (r) => r.jobId) };
    });
    const prepared = described.then(({ ids, cached: committedByJob }) => {
      // Hold the points: alone (the series had nothing cached) they are the answer as written.
      const mine: [number, HeldSeries][] = [];
      const batches: PointBatch[] = [];
      let expectNew = true;
      for (const [pid, group] of byProvider) {
        const entries = group.map((f) => ({ job: f.job, series: this.withoutFinerCovered(f, committedByJob.get(f.job.id) ?? []) }));
        const idsOfProvider = ids.get(pid)!;
        const { batches: built, held } = this.pointBatchesOf(pid, group, entries, idsOfProvider);
        batches.push(...built);
        for (const f of group) {
          const cachedBefore = new Set((committedByJob.get(f.job.id) ?? []).map((r) => r.dataset));
          const { identities } = this.draftOf(f.job, f.res);
          for (let i = 0; i < f.res.series.length; i++) {
            const s = f.res.series[i]!;
            const id = idsOfProvider.get(identities[i]!.key)!;
            const previous = this.held.get(id);
            const exclusive =
              !previous && !busy.has(f.job.id) && this.writeEpoch.get(f.job.id) === epochs.get(f.job.id) && !cachedBefore.has(`metric:${s.name}`);
            if (!exclusive) expectNew = false;
            const points = held.get(id) ?? NO_POINTS;
            mine.push([id, { points, exclusive, written: previous ? previous.written : Promise.resolve() }]);
          }
        }
      }
      let release!: () => void;
      const done = new Promise<void>((resolve) => (release = resolve));
      for (const [id, h] of mine) this.held.set(id, { ...h, written: Promise.all([h.written, done]).then(() => undefined) });
      const heldHere = mine.map(([id]) => [id, this.held.get(id)!] as const);
      const alone = new Map(mine.filter(([, h]) => h.exclusive).map(([id, h]) => [id, h.points]));
      return { batches, expectNew, heldHere, release, alone };
    });
    const committed = prepared.then(async ({ batches, expectNew, heldHere, release }) => {
      try {
        await start;
        await afterTheAnswer();
        await this.repo.transaction(async (repo) => {
          await repo.writePointBatches(batches, { expectNew });
          await repo.recordFetches(fetchRows.map(({ id: _id, ...r }) => r));
          await repo.clearFetchErrors(fetchRows.map((r) => ({ jobId: r.jobId, dataset: r.dataset })));
          // Jobs whose start is only their creation take their first stored point's time instead.
          await repo.startFromFirstPoints(jobIds.filter((id) => START_FROM_POINTS.has(fetched.find((f) => f.job.id === id)!.job.startedAtSource ?? '')));
        });
      } finally {
        for (const [id, h] of heldHere) if (this.held.get(id) === h) this.held.delete(id);
        for (const [id, e] of epochs) if (this.writeEpoch.get(id) === e && !this.heldFetches.has(id)) this.writeEpoch.delete(id);
        release();
      }
      // Committed: where no autovacuum runs (PGlite), a large write refreshes the planner's statistics.
      await this.repo.maintainStatistics(batches.reduce((n, b) => n + b.length, 0)).catch((err) => {
        for (const observe of this.writeFailureObservers) observe(err);
      });
    });
    const written: Written = { described: prepared.then((p) => p.alone), committed };
    // Only answers given before the write wait on `described`; a failure of it fails `committed`
    // too, which is always awaited and reported. Unobserved, it would end the process.
    written.described.catch(() => {});
    for (const row of fetchRows) this.heldFetches.set(row.jobId, [...(this.heldFetches.get(row.jobId) ?? []), { row, written }]);
    const tracked = committed
      .catch((err) => {
        for (const observe of this.writeFailureObservers) observe(err);
      })
      .finally(() => {
        for (const row of fetchRows) {
          const left = (this.heldFetches.get(row.jobId) ?? []).filter((x) => x.row !== row);
          if (left.length) this.heldFetches.set(row.jobId, left);
          else this.heldFetches.delete(row.jobId);
        }
        this.writes.delete(tracked);
        this.writesSettledCount++;
      });
    this.writes.add(tracked);
    return written;
  }

  // ---- training metrics and progress --------------------------------------------------------

  /**
   * Training metrics are fetched whole per job (platforms page them by step, not by the small
   * windows dashboards ask for), final once the job is, fresh for the metrics TTL while it runs.
   */
  async ensureTraining(jobs: readonly JobRow[], scope?: RequestScope): Promise<Map<string, Freshness | Error>> {
    return this.ensureWholeJobDataset(
      scope,
      jobs,
      'training',
      (a) => a.capabilities.trainingMetrics,
      async (ref, signal, adapter): Promise<SeriesData[]> => (await adapter.fetchTrainingMetrics?.(ref, { from: null, to: null, names: null }, signal)) ?? [],
      async (entries, repo) => {
        for (const [pid, group] of groupBy(entries, (e) => e.job.providerId)) {
          await repo.writeSeries(
            pid,
            group.map((e) => ({ job: e.job, series: e.data })),
          );
        }
        // In the same transaction: a search on summary values never sees points without their summary.
        await repo.refreshSummaries(entries.map((e) => e.job.id));
      },
    );
  }

  async ensureProgress(jobs: readonly JobRow[], scope?: RequestScope): Promise<Map<string, Freshness | Error>> {
    return this.ensureWholeJobDataset(
      scope,
      jobs,
      'progress',
      (a) => a.capabilities.progress,
      async (ref, signal, adapter) => (await adapter.fetchProgress?.(ref, signal)) ?? null,
      async (entries, repo) => {
        const fetchedAt = this.now();
        await repo.writeProgress(
          entries.map(({ job, data: p }) => ({
            jobId: job.id,
            iteration: p?.iteration ?? null,
            targetIteration: p?.targetIteration ?? null,
            rate: p?.rate ?? null,
            updatedAt: p?.updatedAt ?? null,
            fetchedAt,
          })),
        );
      },
    );
  }

  /** A dataset fetched whole per job; every job of the batch is fetched in parallel and written at once. */
  private async ensureWholeJobDataset<T>(
    scope: RequestScope | undefined,
    jobs: readonly JobRow[],
    dataset: 'training' | 'progress',
    supported: (adapter: ProviderAdapter) => boolean,
    fetch: (ref: JobRef, signal: AbortSignal, adapter: ProviderAdapter) => Promise<T>,
    write: (entries: { job: JobRow; data: T }[], repo: Repository) => Promise<void>,
  ): Promise<Map<string, Freshness | Error>> {
    const now = this.now();
    const out = new Map<string, Freshness | Error>();
    const relevant = jobs.filter((j) => {
      const adapter = this.providers.find(j.providerId)?.adapter;
      if (adapter && supported(adapter)) return true;
      out.set(j.id, { fetchedAt: null, stale: false, error: null });
      return false;
    });
    const rows = groupBy(
      await this.repo.within(scope).fetchesOf(
        relevant.map((j) => j.id),
        [dataset],
      ),
      (r) => r.jobId,
    );
    const due = relevant.filter((j) => {
      const latest = rows.get(j.id)?.[0];
      if (latest && (latest.final || now.getTime() - latest.fetchedAt.getTime() < this.policy.metricsTtlMs)) {
        out.set(j.id, FRESH_NOW(latest.fetchedAt));
        return false;
      }
      return true;
    });
    this.lookedUp(dataset, relevant.length - due.length, due.length);
    if (due.length === 0) return out;
    const projects = await this.projectExternalIds(due, scope);
    const fetched: { job: JobRow; data: T }[] = [];
    await Promise.all(
      due.map(async (job) => {
        try {
          const data = await this.once(`${dataset}:${job.id}`, job.providerId, scope, (shared) =>
            this.providers.call(job.providerId, (adapter, signal) => fetch(jobRef(job, projects.get(job.projectId) ?? ''), signal, adapter), shared),
          );
          fetched.push({ job, data });
          out.set(job.id, FRESH_NOW(now));
        } catch (err) {
          const latest = rows.get(job.id)?.[0];
          out.set(job.id, latest ? { fetchedAt: latest.fetchedAt, stale: true, error: toErrorInfo(err) } : asError(err));
        }
      }),
    );
    if (fetched.length > 0) {
      await this.repo.transaction(async (repo) => {
        await write(fetched, repo);
        await repo.recordFetches(
          fetched.map(({ job }) => {
            const w = jobWindow(job, now);
            return { jobId: job.id, dataset, rangeFrom: w.from, rangeTo: w.to, fetchedAt: now, stepSeconds: 0, final: isTerminal(job.status) };
          }),
        );
      });
    }
    return out;
  }

  // ---- logs ---------------------------------------------------------------------------------

  /** Log pages come straight from the platform: each page is a moving cursor, not a cacheable range. */
  async logs(job: JobRow, request: LogRequest, scope?: RequestScope): Promise<LogPage> {
    const provider = this.providers.find(job.providerId);
    if (!provider?.adapter.fetchLogs) {
      throw new DomainError('UNSUPPORTED', `${provider?.kind ?? 'this platform'} has no log API`);
    }
    const [project] = await this.repo.within(scope).projectsByIds([job.projectId]);
    return this.providers.call(job.providerId, (a, sig) => a.fetchLogs!(jobRef(job, project?.externalId ?? ''), request, sig), scope);
  }

  // ---- helpers ------------------------------------------------------------------------------

  private async projectExternalIds(jobs: readonly JobRow[], scope?: RequestScope): Promise<Map<string, string>> {
    const rows = await this.repo.within(scope).projectsByIds([...new Set(jobs.map((j) => j.projectId))]);
    return new Map(rows.map((p) => [p.id, p.externalId]));
  }
}

/** Every project and job a provider lists, all pages, in one upstream operation. */
async function fetchCatalog(providers: ProviderSet, providerId: string, scope: RequestScope): Promise<{ projects: ProjectRecord[]; jobs: JobRecord[] }> {
  return providers.call(
    providerId,
    async (adapter, sig) => {
      const projects = await adapter.listProjects(sig);
      const jobs: JobRecord[] = [];
      let cursor: string | null = null;
      // Bounded: a platform that never stops paging must not hang a request.
      for (let page = 0; page < 1000; page++) {
        const res = await adapter.listJobs(cursor, sig);
        jobs.push(...res.jobs);
        if (!res.nextCursor || res.nextCursor === cursor) break;
        cursor = res.nextCursor;
      }
      return { projects, jobs };
    },
    scope,
  );
}

/**
 * Waves a batch of metrics fetches answered before its write is stored in (ReadThrough.ensureMetricsEach).
 * Measured with `npx tsx bench/run.ts --cold-only --postgres` (50 jobs): see docs/performance.md.
 */
export const METRICS_WAVES = 4;

/** How many fetches have arrived when each wave is stored: the last is all of them; never an empty wave. */
export function waveEnds(fetches: number, waves: number): number[] {
  const ends: number[] = [];
  for (let k = 1; k <= waves; k++) {
    const end = Math.ceil((k * fetches) / waves);
    if (end > (ends.at(-1) ?? 0)) ends.push(end);
  }
  return ends;
}

export interface MetricsOptions {
  forceTopology?: boolean;
  /** How old a running job's fetch may be and still answer (default the policy's metricsTtlMs): a poller asks for its own interval. */
  maxAgeMs?: number;
  /**
   * Return once topology and series are stored, before the points are (they stay held in
   * memory for the loaders until their transaction commits). Default: return once written,
   * for callers that read the points back in SQL.
   */
  answerBeforeWrite?: boolean;
  /** Given the points held alone for the series answered before their write: the request shapes them. */
  collect?: Map<number, HeldPoints>;
  /** The operation asking (undefined: background work). */
  scope?: RequestScope;
}

export interface TopologyOptions extends Pick<MetricsOptions, 'answerBeforeWrite' | 'collect' | 'scope'> {
  /** What the query will ask of each job's series: where a metrics fetch teaches the nodes, it is that fetch. */
  hints?: ReadonlyMap<string, TopologyHint>;
}

/** A batch of fetches being stored: `described` once its topology and series are, `committed` once its points are. */
interface Written {
  /** Resolves to the points held alone (series id -> points sorted by key), the answer as it will be written. */
  described: Promise<ReadonlyMap<number, HeldPoints>>;
  committed: Promise<void>;
}

interface HeldSeries {
  /** The fetched points, sorted by key. */
  points: HeldPoints;
  /** True when these points are all the series will have once written. */
  exclusive: boolean;
  /** Settles when every write of this series under way has committed or failed. */
  written: Promise<void>;
}

/** A fetch's points as a batch by series key, and each of its series' identity in its order (ReadThrough.draftOf). */
interface FetchDraft {
  batch: PointBatch;
  runs: Map<string, PointRun>;
  identities: SeriesIdentity[];
}

/**
 * Waits a few turns of the event loop, so the answers shaped from held points go first as far as
 * their work runs as promise jobs. A write started at once held PGlite (one connection, statements
 * run in this thread) for the whole COPY while the answer's reads queued behind it. On PostgreSQL
 * the answer's reads are I/O: the turns pass while they are in flight, and the COPY may still
 * overlap the answer's execution (waiting for the answer itself would need an end-of-operation
 * signal from the server).
 */
async function afterTheAnswer(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new DomainError('INTERNAL', String(err));
}
