// What the collector (src/collect/) asks of the store: which jobs to keep, and "make this job's
// data current" through the same read-through cache queries and live feeds use. Whoever asks
// first in an interval fetches; the others find the cache fresh (the fetch records say so) or
// join the fetch under way, so one poll serves all of them.
import type { LogPage, SystemMetric } from '../domain/types.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { ReadThrough, Freshness, MetricsRequest } from './read-through.js';
import { groupBy, isTerminal, jobWindow } from './read-through.js';
import type { FetchRow, JobRow } from './repository.js';

/** Series per retention statement: a batch's delete stays a few milliseconds of index ranges per series. */
const RETENTION_BATCH = 200;

/**
 * Series per compaction transaction: a batch moves up to a week of their settled days (the first
 * run after an upgrade finds all of history), and writes into `points` wait for it
 * (point-chunks.ts): 20 series x 7 days of a sample a minute is 200,000 points.
 */
const COMPACT_BATCH = 20;

/**
 * How much of a compaction one call may do: `batches` left (each a transaction of up to
 * COMPACT_BATCH series and a bounded span of days), and whether a call stopped with days left.
 */
export interface CompactionSlice {
  batches: number;
  cut: boolean;
}

/**
 * Compaction batches from the first series on until none is left, the signal aborts, or `slice`
 * runs out (then `slice.cut`). Only a batch that moved something counts against the slice: the
 * probe that finds nothing left is free. Returns what the batches moved.
 */
async function compactInBatches(
  batch: (after: number) => Promise<{ last: number | null; done: boolean; moved: number }>,
  signal?: AbortSignal,
  slice?: CompactionSlice,
): Promise<number> {
  let after = 0;
  let moved = 0;
  while (!signal?.aborted) {
    if (slice && slice.batches <= 0) {
      slice.cut = true;
      break;
    }
    const step = await batch(after);
    if (slice && step.last !== null) slice.batches--;
    moved += step.moved;
    if (step.last === null) break;
    // The same series again while they have older days left (a batch moves a bounded span).
    if (step.done) after = step.last;
  }
  return moved;
}

/** How one job's collection went: whether it cost upstream calls, and the first failure. */
export interface CollectOutcome {
  fetched: boolean;
  error: { code: string; message: string } | null;
}

export interface CollectRunningOptions {
  metrics: readonly SystemMetric[];
  /** A fetch younger than this (by anyone) is current enough: nothing is fetched. */
  maxAgeMs: number;
  /** How far back the first collection of a running job reaches. */
  firstLookbackMs: number;
  /** Each fetch starts this far before the last one's reach, for points the platform reported late. */
  overlapMs: number;
  training: boolean;
  /**
   * Training metrics of a running job are fetched from its newest stored point less this (where the
   * platform answers a range, trainingSince): for points a platform took in late (a framework's
   * background sync). Default whole every time.
   */
  trainingOverlapMs?: number;
  progress: boolean;
  signal?: AbortSignal;
}

const scopeOf = (signal: AbortSignal | undefined): RequestScope | undefined => (signal ? { signal, tenant: null } : undefined);

function outcomeOf(results: readonly (Freshness | Error | undefined)[], now: Date): CollectOutcome {
  let fetched = false;
  let error: CollectOutcome['error'] = null;
  for (const r of results) {
    if (!r) continue;
    if (r instanceof Error) {
      error ??= { code: (r as { code?: string }).code ?? 'INTERNAL', message: r.message };
      continue;
    }
    if (r.error) error ??= r.error;
    if (r.fetchedAt && r.fetchedAt.getTime() === now.getTime() && !r.stale) fetched = true;
  }
  return { fetched, error };
}

/** How a provider's collection goes, as the collector reports it (the graph and /metrics read it). */
export interface CollectionStatus {
  enabled: boolean;
  /** This replica holds the provider's collector lease and collects. */
  leading: boolean;
  trackedJobs: number;
  runningJobs: number;
  lastSweepAt: Date | null;
  /** Seconds the least recently collected running job is behind its poll interval (0 = on time). */
  lagSeconds: number;
  callsLastMinute: number;
  budgetPerMinute: number;
  maxConcurrent: number;
  intervalSeconds: number;
  /** Jobs due in the last sweep that could not be collected (budget, time, or failures). */
  backlog: number;
  /** Finished jobs the platform dropped before they were fetched whole. */
  expired: number;
  lastError: { code: string; message: string; at: Date } | null;
}

export class CollectionStore {
  private readonly statuses = new Map<string, CollectionStatus>();

  constructor(private readonly rt: ReadThrough) {}

  /** The collector tells how its provider's collection goes. */
  report(providerId: string, status: CollectionStatus): void {
    this.statuses.set(providerId, status);
  }

  /** null: no collector runs in this server for the provider (COLLECT=off). */
  statusOf(providerId: string): CollectionStatus | null {
    return this.statuses.get(providerId) ?? null;
  }

  now(): Date {
    return this.rt.now();
  }

  /** A provider's unfinished jobs, its finished jobs still to fetch whole (ending after keptSince, oldest first), and those lost to retention. */
  targets(providerId: string, keptSince: Date | null) {
    return this.rt.repo.collectionTargets(providerId, keptSince);
  }

  /**
   * Drops the provider's raw metric points older than `before`, in batches of RETENTION_BATCH
   * series (Repository.dropRawPointsBatch); the rollups stay. `keepFinishedSince`: the series of
   * jobs that finished after it keep theirs (collect.finishedJobRawRetentionDays; null: none).
   * Returns the points deleted.
   */
  async dropRawPoints(providerId: string, before: Date, signal?: AbortSignal, keepFinishedSince: Date | null = null): Promise<number> {
    const keep = keepFinishedSince?.getTime() ?? null;
    let after = 0;
    let deleted = 0;
    while (!signal?.aborted) {
      const step = await this.rt.repo.dropRawPointsBatch(providerId, before.getTime(), after, RETENTION_BATCH, keep);
      deleted += step.deleted;
      if (step.last === null) break;
      after = step.last;
    }
    // Compacted days: hidden, whole month partitions dropped (Repository.dropRawChunks).
    if (!signal?.aborted) await this.rt.repo.dropRawChunks(providerId, before.getTime(), keep);
    // PGlite: the deleted rows' space back (Repository.vacuumDeadRows; autovacuum's on PostgreSQL).
    if (deleted > 0) await this.rt.repo.vacuumDeadRows(['points']);
    return deleted;
  }

  /**
   * Drops the provider's 1-minute (`minute`) or 1-hour (`hour`) rollup rows older than `before`
   * (taken down to its UTC hour), in batches of RETENTION_BATCH series
   * (Repository.dropMinuteRollupsBatch, dropHourRollupsBatch), and the rollup's compacted days
   * (Repository.dropRollupChunks: hidden by the series' minute_before, month partitions dropped
   * whole once all hidden) or months (Repository.dropHourRollupChunks: year partitions dropped
   * whole, else chunk rows deleted; hour_before set). Returns the rows and chunk rows deleted (the
   * 1-minute rollup's hidden days are none of them).
   */
  async dropRollups(providerId: string, which: 'minute' | 'hour', before: Date, signal?: AbortSignal): Promise<number> {
    let after = 0;
    let deleted = 0;
    while (!signal?.aborted) {
      const step =
        which === 'minute'
          ? await this.rt.repo.dropMinuteRollupsBatch(providerId, before.getTime(), after, RETENTION_BATCH)
          : await this.rt.repo.dropHourRollupsBatch(providerId, before.getTime(), after, RETENTION_BATCH);
      deleted += step.deleted;
      if (step.last === null) break;
      after = step.last;
    }
    // Compacted days of the 1-minute rollup: hidden, whole month partitions dropped (Repository.dropRollupChunks).
    if (which === 'minute' && !signal?.aborted) await this.rt.repo.dropRollupChunks(providerId, before.getTime());
    // Compacted months of the 1-hour rollup: whole year partitions dropped (Repository.dropHourRollupChunks).
    if (which === 'hour' && !signal?.aborted) deleted += (await this.rt.repo.dropHourRollupChunks(providerId, before.getTime())).deleted;
    if (deleted > 0) await this.rt.repo.vacuumDeadRows([which === 'minute' ? 'points_1m' : 'points_1h']);
    return deleted;
  }

  /**
   * Moves the provider's raw points of days wholly before `before` into point_chunks, in batches
   * of COMPACT_BATCH series, each its own transaction (Repository.compactRawPointsBatch). With a
   * `slice`, at most `slice.batches` batches (taken from it); `slice.cut` is set when it stopped
   * with days left, which a later call (from the start: compacted series have nothing left to
   * find) moves. Returns the points moved.
   */
  async compactRawPoints(providerId: string, before: Date, signal?: AbortSignal, slice?: CompactionSlice): Promise<number> {
    const batch = async (after: number) => {
      const step = await this.rt.repo.compactRawPointsBatch(providerId, before.getTime(), after, COMPACT_BATCH);
      return { ...step, moved: step.points };
    };
    const moved = await compactInBatches(batch, signal, slice);
    if (moved > 0) {
      await this.rt.repo.analyzeChunks();
      // PGlite: the moved rows' space back in `points` (Repository.vacuumDeadRows; autovacuum's on PostgreSQL).
      await this.rt.repo.vacuumDeadRows(['points']);
    }
    return moved;
  }

  /**
   * Moves the provider's 1-minute rollup rows of days wholly before `before` into
   * rollup_chunks_1m, then its 1-hour rollup rows of months wholly before it into
   * rollup_chunks_1h, in batches of COMPACT_BATCH series, each its own transaction
   * (Repository.compactRollupsBatch, compactHourRollupsBatch), within `slice` as compactRawPoints
   * (the 1-hour part gets what the 1-minute part left of it). Returns the rollup rows moved.
   */
  async compactRollups(providerId: string, before: Date, signal?: AbortSignal, slice?: CompactionSlice): Promise<number> {
    const minutes = async (after: number) => {
      const step = await this.rt.repo.compactRollupsBatch(providerId, before.getTime(), after, COMPACT_BATCH);
      return { ...step, moved: step.rows };
    };
    const moved = await compactInBatches(minutes, signal, slice);
    if (moved > 0) {
      await this.rt.repo.vacuumDeadRows(['points_1m']);
      await this.rt.repo.analyzeRollupChunks();
    }
    const hours = async (after: number) => {
      const step = await this.rt.repo.compactHourRollupsBatch(providerId, before.getTime(), after, COMPACT_BATCH);
      return { ...step, moved: step.rows };
    };
    const movedHours = await compactInBatches(hours, signal, slice);
    if (movedHours > 0) {
      await this.rt.repo.vacuumDeadRows(['points_1h']);
      await this.rt.repo.analyzeHourRollupChunks();
    }
    return moved + movedHours;
  }

  /** The provider's job list, fetched unless a sync (anyone's) is younger than maxAgeMs. */
  async syncList(providerId: string, maxAgeMs: number, signal?: AbortSignal): Promise<boolean> {
    const [sync] = await this.rt.repo.providerSyncs([providerId], 'jobs');
    const now = this.rt.now();
    if (sync?.syncedAt && !sync.errorCode && now.getTime() - sync.syncedAt.getTime() < maxAgeMs) return false;
    await this.rt.syncJobListNow(providerId, scopeOf(signal));
    return true;
  }

  /**
   * A group of running jobs' system metrics up to now (each from its last reach, or firstLookbackMs
   * back the first time), their training metrics and progress where the platform has them: one
   * batched read-through call per dataset for the whole group, so the group's statements are those
   * of one job (the read-through stores a batch in a fixed number of statements) and the upstream
   * calls those of each job. Each job's outcome is its own: one job's upstream failure does not
   * fail the others (a database failure fails the group, thrown).
   */
  async collectRunning(jobs: readonly JobRow[], opts: CollectRunningOptions): Promise<Map<string, CollectOutcome>> {
    const now = this.rt.now();
    const scope = scopeOf(opts.signal);
    const datasets = opts.metrics.map((m) => `metric:${m}`);
    // Read once for the group: each job's reach here, and what the metrics, training and progress
    // fills find cached (theirs as of the group's start: a record another fill writes meanwhile is
    // missed, and the job fetched once more than needed).
    const whole = [...(opts.training ? ['training'] : []), ...(opts.progress ? ['progress'] : [])];
    // Every metric the platform may answer, not only those asked: an answer covers what it holds
    // (Baseten's storage metrics beside the live ones asked), and its write needs each covered
    // metric's records. Read for the asked ones alone, the rest were unknown to the write, which
    // then read them all again in its transaction and kept the answers whole across both of its
    // transactions (HeldWrites.storeFetched, `known`): every steady group of Baseten's, until 2026-11-29.
    const answered = new Set(datasets);
    for (const job of jobs) for (const m of this.rt.providers.find(job.providerId)?.adapter.capabilities.systemMetrics ?? []) answered.add(`metric:${m}`);
    const read = await this.rt.repo.within(scope).fetchesOf(
      jobs.map((j) => j.id),
      [...answered, ...whole],
    );
    const fetches = read.filter((r) => r.dataset.startsWith('metric:'));
    const wholeFetches = read.filter((r) => !r.dataset.startsWith('metric:'));
    const rowsByJob = groupBy(fetches, (r) => r.jobId);
    const requests = jobs.map((job) => {
      const rows = rowsByJob.get(job.id) ?? [];
      const life = jobWindow(job, now);
      // The reach every metric has: the least of each metric's furthest fetched point in time.
      let reach: number | null = null;
      for (const d of datasets) {
        const ends = rows.filter((r) => r.dataset === d).map((r) => r.rangeTo.getTime());
        const end = ends.length ? Math.max(...ends) : null;
        if (end === null) {
          reach = null;
          break;
        }
        reach = reach === null ? end : Math.min(reach, end);
      }
      const fromMs = Math.max(life.from.getTime(), reach === null ? now.getTime() - opts.firstLookbackMs : reach - opts.overlapMs);
      const from = new Date(Math.min(fromMs, now.getTime()));
      // Fine enough that the finest step is asked (a query at any resolution then finds it covered).
      const maxPoints = Math.ceil((now.getTime() - from.getTime()) / (this.rt.policy.minStepSeconds * 1000)) + 1;
      return { job, from, to: now, metrics: opts.metrics, maxPoints };
    });
    const results = await this.wholeGroup(
      jobs,
      opts,
      scope,
      requests.length > 0 && opts.metrics.length > 0 ? { requests, maxAgeMs: opts.maxAgeMs, fetches } : null,
      wholeFetches,
    );
    return new Map(jobs.map((j) => [j.id, outcomeOf(results.get(j.id)!, now)]));
  }

  /**
   * A group of finished jobs fetched to their end, each marked complete (never again, across
   * restarts) when every part of it came back without error; one job's failure leaves only it to
   * fetch again.
   */
  async collectFinished(
    jobs: readonly JobRow[],
    opts: Omit<CollectRunningOptions, 'maxAgeMs' | 'firstLookbackMs' | 'overlapMs' | 'trainingOverlapMs'>,
  ): Promise<Map<string, CollectOutcome>> {
    const now = this.rt.now();
    const scope = scopeOf(opts.signal);
    const requests =
      opts.metrics.length > 0 ? jobs.filter((j) => isTerminal(j.status)).map((job) => ({ job, ...jobWindow(job, now), metrics: opts.metrics })) : [];
    const results = await this.wholeGroup(jobs, opts, scope, requests.length > 0 ? { requests, maxAgeMs: undefined } : null);
    const outcomes = new Map(jobs.map((j) => [j.id, outcomeOf(results.get(j.id)!, now)]));
    const complete = jobs.filter((j) => !outcomes.get(j.id)!.error).map((j) => j.id);
    if (complete.length > 0) await this.rt.repo.markCollected(complete, now);
    return outcomes;
  }

  /** Each job's answers of one batched call per dataset: its metrics requests, then training metrics and progress when asked. */
  private async wholeGroup(
    jobs: readonly JobRow[],
    opts: { training: boolean; progress: boolean; trainingOverlapMs?: number },
    scope: RequestScope | undefined,
    metrics: { requests: MetricsRequest[]; maxAgeMs: number | undefined; fetches?: readonly FetchRow[] } | null,
    wholeFetches?: readonly FetchRow[],
  ): Promise<Map<string, (Freshness | Error | undefined)[]>> {
    const results = new Map<string, (Freshness | Error | undefined)[]>(jobs.map((j) => [j.id, []]));
    if (metrics) {
      const answers = await this.rt.ensureMetrics(metrics.requests, { maxAgeMs: metrics.maxAgeMs, scope, fetches: metrics.fetches });
      for (const [i, a] of answers.entries()) results.get(metrics.requests[i]!.job.id)!.push(a);
    }
    if (opts.training) {
      const since = opts.trainingOverlapMs === undefined ? {} : { sinceStored: { overlapMs: opts.trainingOverlapMs } };
      for (const [id, a] of await this.rt.ensureTraining(jobs, scope, { ...since, fetches: wholeFetches })) results.get(id)?.push(a);
    }
    if (opts.progress) for (const [id, a] of await this.rt.ensureProgress(jobs, scope, { fetches: wholeFetches })) results.get(id)?.push(a);
    return results;
  }

  /**
   * A running job's log lines from `after` (or from `since` the first time) up to now, page by
   * page through the same path a `Job.logs` query takes; at most `maxPages` pages (each an upstream
   * call). Returns the cursor reached (the last line's) and whether the platform had more.
   */
  async collectLogs(
    job: JobRow,
    from: { after: string | null; since: Date },
    opts: { pageSize: number; maxPages: number; signal?: AbortSignal },
  ): Promise<{ cursor: string | null; lines: number; more: boolean }> {
    let cursor = from.after;
    let lines = 0;
    for (let i = 0; i < opts.maxPages; i++) {
      const page: LogPage = await this.rt.logs(job, { after: cursor, since: cursor ? null : from.since, limit: opts.pageSize }, scopeOf(opts.signal));
      lines += page.lines.length;
      if (page.lines.length > 0) cursor = page.lines[page.lines.length - 1]!.cursor;
      if (page.lines.length < opts.pageSize) return { cursor, lines, more: false };
    }
    return { cursor, lines, more: true };
  }

  collectedOf(jobIds: readonly string[]): Promise<Set<string>> {
    return this.rt.repo.collectedOf(jobIds);
  }

  /** Takes or renews a lease until ttlMs from now; false when another holder has it. */
  tryLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = this.rt.now();
    return this.rt.repo.tryLease(name, holder, now, new Date(now.getTime() + ttlMs));
  }

  releaseLease(name: string, holder: string): Promise<void> {
    return this.rt.repo.releaseLease(name, holder);
  }

  /** Told of every upstream call to any provider as it starts (the collector's per-minute budget counts them). */
  observeCalls(observer: (providerId: string) => void): void {
    this.rt.providers.observe(({ providerId }) => {
      observer(providerId);
      return () => {};
    });
  }
}
