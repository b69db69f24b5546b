// The continuous collector: per provider, one sweep per interval that syncs the job list, brings
// every running job's data up to now and fetches finished jobs whole (oldest first, before the
// platform's retention ends), all through the store's door: it asks the read-through cache to
// make a job current, and whatever a query or a live feed fetched in the interval already counts.
// One replica collects a provider (a lease in the store, renewed every third of an interval, on
// its own timer, so a long sweep keeps it); a replica that finds it taken (or cannot renew it
// before it runs out) aborts what it has under way at once, and another takes it once it expires.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { clientFacingError, type CollectionStatus, type JobRow, type ProviderView, type Store } from '../store/index.js';
import { LeasedLoop } from '../lease/index.js';
import { LIVE_METRICS } from '../live/feeds.js';
import { pollIntervalMs } from '../live/intervals.js';
import type { LiveTimers } from '../live/hub.js';
import { CallBudget } from './budget.js';
import type { CollectSettings } from './settings.js';

/**
 * A lease lasts one interval from its last renewal, renewed every third of it; followers try every
 * quarter interval. A holder killed just after renewing leaves it free one interval later, taken
 * at most a quarter after that: the survivor sweeps within 1.25 intervals of the kill (the issue
 * asks two), with two renewals that may be late before a live holder loses it.
 */
const LEASE_INTERVALS = 1;
/** How often the lease holder drops points past their retention (rawRetentionDays, minute/hourRollupRetentionDays). */
const RETENTION_EVERY_MS = 3_600_000;
const RENEWALS_PER_LEASE = 3;
const FOLLOWER_TRY_INTERVALS = 0.25;
/** A list sync this much younger than an interval counts as this interval's; a job's fetch counts as a sweep's when made since (1 - this) of an interval before the sweep began (a sweep's own start drifts a little). */
const FRESH_FRACTION = 0.9;
/** Log lines per page and pages per job and sweep (the live log feed's page; a job far behind catches up over sweeps). */
const LOG_PAGE = 500;
/**
 * How far before a running job's newest stored training point each sweep's training fetch starts
 * (where the platform answers a range): points a framework's background sync (wandb) hands the
 * platform minutes after they were logged are still found; those of the overlap are written again
 * unchanged (keyed by step).
 */
export const TRAINING_OVERLAP_MS = 10 * 60_000;
/**
 * How far before its last reach a running job's metrics fetch starts: an interval, for samples the
 * platform publishes after their timestamp (CloudMonitor and AOM take a minute or two), but no
 * more than this. At an interval of an hour the whole last hour was fetched and merged again,
 * doubling every sweep's points for samples that had been published for most of an hour.
 */
export const METRICS_OVERLAP_MAX_MS = 5 * 60_000;
const LOG_PAGES_PER_SWEEP = 4;

export interface CollectorEvents {
  /**
   * A provider's sweep ended (or its lease try did): tests wait on it. `dueAt` is when the step was
   * scheduled to start and `endedAt` when it ended (collector clock, ms); `swept` is false for a
   * follower's lease try. bench/collect.ts reads a sweep's lag as endedAt - dueAt.
   */
  sweep: [providerId: string, timing: { dueAt: number; endedAt: number; swept: boolean }];
}

export interface CollectorDeps {
  store: Store;
  logger: Logger;
  timers: LiveTimers;
  settings: (provider: ProviderView) => CollectSettings;
  /** Jobs whose live feed this replica polls: the feed is their collection (it polls on its own schedule). */
  watched?: () => ReadonlySet<string>;
  /** Distinguishes this replica's leases from another's; default a random id. */
  holder?: string;
  /**
   * Collections (a group of jobs, or a job list sync) under way at once across every provider, at
   * most: each holds a database connection while it reads and writes (its statements run one after
   * another), so the collector takes a bounded share of the pool and requests keep the rest
   * (src/server/runtime.ts gives half the pool). Default unbounded (each provider's maxConcurrent).
   */
  maxConcurrentTotal?: number;
}

interface SweepPlan {
  job: JobRow;
  kind: 'running' | 'finished';
}

class ProviderCollector {
  readonly budget: CallBudget;
  private readonly loop: LeasedLoop<void>;
  private lastListAt = -Infinity;
  /** When this replica last dropped the provider's raw points past their retention (rawRetentionDays). */
  private lastRetentionAt = -Infinity;
  /** When this replica last compacted the provider's settled raw points (compactAfterDays). */
  private lastCompactionAt = -Infinity;
  /** When each running job was last made current (by this collector or found fresh). */
  private readonly current = new Map<string, number>();
  /** Where each running job's collected logs reached (the last line's cursor; null = none yet). */
  private readonly logCursors = new Map<string, string | null>();
  /** Calls one job's collection makes (PAI-DLC: one per metric): what each reserves. */
  private readonly callsPerJob: number;
  private listCalls = 2;
  private status: CollectionStatus;
  private readonly startedAt: number;
  /** Sweeps this replica ran for the provider (tests read it). */
  sweeps = 0;

  constructor(
    readonly provider: ProviderView,
    readonly settings: CollectSettings,
    private readonly owner: Collector,
  ) {
    this.budget = new CallBudget(settings.callsPerMinute, settings.maxConcurrent, () => owner.timers.now());
    const intervalMs = this.intervalMs;
    this.loop = new LeasedLoop<void>({
      name: `collect:${provider.id}`,
      holder: owner.holder,
      store: owner.store.collection,
      timers: owner.timers,
      intervalMs,
      leaseMs: intervalMs * LEASE_INTERVALS,
      followerTryMs: intervalMs * FOLLOWER_TRY_INTERVALS,
      renewEveryMs: (intervalMs * LEASE_INTERVALS) / RENEWALS_PER_LEASE,
      // Every collection of a sweep (maxConcurrent at once) listens on it: its reads, its upstream calls.
      signalListeners: 16 * settings.maxConcurrent,
      work: (signal) => {
        this.sweeps++;
        return this.sweep(signal);
      },
      onError: (err, during) => this.publish({ lastError: this.failed(err, during === 'lease' ? 'lease' : 'sweep') }),
      onLost: (why) => {
        this.owner.logger.warn({ provider: this.provider.id, why }, 'collect: lost the lease; another replica collects now');
        this.publish();
      },
      onStep: (step) => {
        // lastError tells how the latest step went (a monitor alerts on it being set): a follower's
        // clean lease try clears what an earlier one left (a sweep's own clears it when clean).
        if (!step.worked && step.lease !== 'failed') this.publish({ lastError: null });
        this.owner.events.emit('sweep', this.provider.id, { dueAt: step.dueAt, endedAt: step.endedAt, swept: step.worked });
      },
    });
    this.startedAt = owner.timers.now();
    // PAI-DLC answers one metric per call; the others all metrics of a job in one.
    this.callsPerJob =
      (provider.kind === 'PAI_DLC' ? this.metrics.length : 1) + (this.wantsTraining ? 1 : 0) + (this.wantsProgress ? 1 : 0) + (this.wantsLogs ? 1 : 0);
    this.status = {
      enabled: true,
      leading: false,
      trackedJobs: 0,
      runningJobs: 0,
      lastSweepAt: null,
      lagSeconds: 0,
      callsLastMinute: 0,
      budgetPerMinute: settings.callsPerMinute,
      maxConcurrent: settings.maxConcurrent,
      intervalSeconds: this.intervalMs / 1000,
      backlog: 0,
      expired: 0,
      lastError: null,
    };
    this.publish();
  }

  get intervalMs(): number {
    return Math.round((this.settings.intervalSeconds ?? pollIntervalMs(this.provider) / 1000) * 1000);
  }

  private get metrics() {
    return this.provider.capabilities.systemMetrics.filter((m) => LIVE_METRICS.has(m));
  }

  private get wantsTraining() {
    return this.settings.training && this.provider.capabilities.trainingMetrics;
  }

  private get wantsProgress() {
    return this.settings.training && this.provider.capabilities.progress;
  }

  private get wantsLogs() {
    return this.settings.logs && this.provider.capabilities.logs;
  }

  start() {
    this.loop.start();
  }

  private publish(patch: Partial<CollectionStatus> = {}) {
    this.status = { ...this.status, ...patch, leading: this.loop.leading, callsLastMinute: this.budget.used() };
    this.owner.store.collection.report(this.provider.id, this.status);
  }

  snapshot(): CollectionStatus {
    this.publish();
    return this.status;
  }

  /** A sweep is under way or due at once. */
  get busy(): boolean {
    return this.loop.busy();
  }

  private failed(err: unknown, context: string): NonNullable<CollectionStatus['lastError']> {
    const known = clientFacingError(err);
    if (!known) this.owner.logger.error({ err, provider: this.provider.id }, `collect: ${context} failed`);
    return { code: known?.code ?? 'INTERNAL', message: known?.message ?? 'unexpected failure while collecting', at: this.owner.store.now() };
  }

  private async sweep(signal: AbortSignal) {
    const store = this.owner.store;
    const collection = store.collection;
    const interval = this.intervalMs;
    const listInterval = (this.settings.listIntervalSeconds ?? interval / 1000) * 1000;
    const nowMs = () => this.owner.timers.now();
    const sweepStart = nowMs();
    const watched = this.owner.watched?.() ?? new Set<string>();
    // Held back: the watched jobs' live feeds poll on their own each interval, and a tenth of the
    // budget stays free for what no sweep foresees (a query, a new subscriber's first poll).
    const keep = () => Math.ceil(this.budget.perMinute / 10) + Math.ceil(watched.size * this.callsPerJob * Math.max(1, 60_000 / interval));
    let lastError: CollectionStatus['lastError'] = null;
    const noteError = (e: { code: string; message: string }) => (lastError = { ...e, at: store.now() });

    if (nowMs() - this.lastListAt >= listInterval * FRESH_FRACTION) {
      if (this.budget.tryTake(this.listCalls, keep())) await this.syncList({ signal, listInterval, noteError });
    }
    if (signal.aborted) return;

    const retention = this.settings.retentionDays;
    const keptSince = retention === null ? null : new Date(store.now().getTime() - retention * 86_400_000);
    const { unfinished, finished, expired } = await collection.targets(this.provider.id, keptSince);
    const running = unfinished.filter((j) => j.status === 'RUNNING');
    const runningIds = new Set(running.map((j) => j.id));
    for (const id of [...this.current.keys()]) if (!runningIds.has(id)) this.current.delete(id);
    for (const id of [...this.logCursors.keys()]) if (!runningIds.has(id)) this.logCursors.delete(id);
    // Watched first (their feeds poll them: nothing to do here but count them current), then the
    // running jobs least recently made current, then finished jobs oldest first (nearest their end of retention).
    const others = running.filter((j) => !watched.has(j.id)).sort((a, b) => (this.current.get(a.id) ?? -1) - (this.current.get(b.id) ?? -1));
    for (const j of running) if (watched.has(j.id)) this.current.set(j.id, nowMs());
    const plan: SweepPlan[] = [...others.map((job) => ({ job, kind: 'running' as const })), ...finished.map((job) => ({ job, kind: 'finished' as const }))];

    // Jobs are collected in groups, each group through one batched call of the store per dataset:
    // its statements are those of one job (the profile at 300 jobs: about 20 statements per job and
    // sweep were most of the collector's CPU), its upstream calls still one set per job. A group is
    // as many of the next jobs of one kind as the budget and the jobs at once (maxConcurrent) allow.
    // A group is one collection of the slots every provider shares (the collector's share of the
    // database pool): its statements run one after another, on one connection at a time.
    const groupMost = Math.max(1, this.settings.maxConcurrent);
    let next = 0;
    let notDone = 0;
    const worker = async () => {
      while (next < plan.length && !signal.aborted) {
        const kind = plan[next]!.kind;
        let most = 0;
        while (most < groupMost && next + most < plan.length && plan[next + most]!.kind === kind) most++;
        const cost = this.callsPerJob;
        // Room stays for the watched jobs' feeds and the next sweep's job list.
        const taken = this.budget.takeUpTo(cost, most, keep() + this.listCalls);
        if (taken === 0) return;
        const group = plan.slice(next, next + taken).map((item) => item.job);
        next += taken;
        const release = await this.owner.slot();
        try {
          const outcomes =
            kind === 'running'
              ? await collection.collectRunning(group, {
                  metrics: this.metrics,
                  // This interval's: fetched (by anyone) since a little before this sweep began. An age
                  // of 0.9 interval skipped a job whenever this sweep reached it sooner than the last
                  // one had (a slow first sweep, a loaded machine): collected every other interval.
                  maxAgeMs: nowMs() - sweepStart + interval * (1 - FRESH_FRACTION),
                  firstLookbackMs: this.settings.firstLookbackSeconds * 1000,
                  overlapMs: Math.min(interval, METRICS_OVERLAP_MAX_MS),
                  training: this.wantsTraining,
                  trainingOverlapMs: TRAINING_OVERLAP_MS,
                  progress: this.wantsProgress,
                  signal,
                })
              : await collection.collectFinished(group, { metrics: this.metrics, training: this.wantsTraining, progress: this.wantsProgress, signal });
          // Each job's outcome is its own: a job whose call failed is in the backlog, the group's others are collected.
          const current: JobRow[] = [];
          for (const job of group) {
            const outcome = outcomes.get(job.id)!;
            if (outcome.error) {
              notDone++;
              noteError(outcome.error);
            } else if (kind === 'running') {
              this.current.set(job.id, nowMs());
              current.push(job);
            }
          }
          // Logs behind (or failed) leave the job in the backlog though its metrics are current. Read
          // page by page for each job at once, each job a collection of its own (its pages' reads
          // hold a connection), as before groups: the group's slot is let go first.
          release();
          if (this.wantsLogs) {
            const logs = current.map(async (job) => {
              const releaseLogs = await this.owner.slot();
              try {
                return await this.collectLogs(job, interval, signal);
              } finally {
                releaseLogs();
              }
            });
            for (const logsError of await Promise.all(logs)) {
              if (!logsError) continue;
              notDone++;
              noteError(logsError);
            }
          }
        } catch (err) {
          // What fails a whole group is the store's (a statement, an abort), not one job's platform.
          notDone += group.length;
          const known = clientFacingError(err);
          noteError({ code: known?.code ?? 'INTERNAL', message: known?.message ?? 'unexpected failure while collecting' });
          if (!known) this.owner.logger.error({ err, jobs: group.map((j) => j.id) }, 'collect: a group of jobs failed');
        } finally {
          release(); // once: a no-op when let go before the logs
          // Not learnt from the calls counted meanwhile: with several jobs (and feeds) under way at
          // once they are not this group's alone, and an inflated estimate leaves the budget unused.
          this.budget.give(cost * taken, taken);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.settings.maxConcurrent) }, worker));
    const skipped = plan.length - next;
    const backlog = skipped + notDone;
    if (skipped > 0) {
      this.owner.logger.warn(
        { provider: this.provider.id, backlog: skipped, budgetPerMinute: this.budget.perMinute },
        'collect: the call budget ran out before every due job was collected',
      );
    }
    const { rawRetentionDays: rawDays, minuteRollupRetentionDays: minuteDays, hourRollupRetentionDays: hourDays } = this.settings;
    if ((rawDays !== null || minuteDays !== null || hourDays !== null) && !signal.aborted && nowMs() - this.lastRetentionAt >= RETENTION_EVERY_MS) {
      // The lease holder's chore, after the sweep's collections: at most hourly, raw points past
      // their age go (the rollups stay; a finished job's are kept finishedJobRawRetentionDays
      // after its end), then the 1-minute and the 1-hour rollup rows past theirs. A failure is
      // the sweep's error and is tried next sweep.
      const now = store.now().getTime();
      const ago = (days: number) => new Date(now - days * 86_400_000);
      const keepDays = this.settings.finishedJobRawRetentionDays;
      const done = await this.pointsChore('retention', 'points past their retention could not be dropped', noteError, async () => {
        if (rawDays !== null) await store.collection.dropRawPoints(this.provider.id, ago(rawDays), signal, keepDays === null ? null : ago(keepDays));
        if (minuteDays !== null && !signal.aborted) await store.collection.dropRollups(this.provider.id, 'minute', ago(minuteDays), signal);
        if (hourDays !== null && !signal.aborted) await store.collection.dropRollups(this.provider.id, 'hour', ago(hourDays), signal);
      });
      if (done) this.lastRetentionAt = nowMs();
    }
    if (this.settings.compactAfterDays !== null && !signal.aborted && nowMs() - this.lastCompactionAt >= RETENTION_EVERY_MS) {
      // After retention (nothing is compacted that is about to go), at most hourly once done.
      const before = new Date(store.now().getTime() - this.settings.compactAfterDays * 86_400_000);
      // The raw points' settled days, then the 1-minute rollup's (the same age), each in its own
      // transactions (rollup-chunks.ts).
      const slice = { batches: this.settings.compactBatchesPerSweep, cut: false };
      const done = await this.pointsChore('compaction', 'settled raw points could not be compacted', noteError, async () => {
        await store.collection.compactRawPoints(this.provider.id, before, signal, slice);
        await store.collection.compactRollups(this.provider.id, before, signal, slice);
      });
      // A slice that stopped with days left goes on after the next sweep, not an hour later: an
      // upgraded database's whole history is moved in slices between sweeps, none of them long.
      if (done && !slice.cut) this.lastCompactionAt = nowMs();
    }
    const now = nowMs();
    const oldest = running.reduce((min, j) => Math.min(min, this.current.get(j.id) ?? -Infinity), Infinity);
    const lagMs = running.length === 0 ? 0 : oldest === -Infinity ? now - this.startedAt : now - oldest - interval;
    this.publish({
      trackedJobs: running.length + finished.length,
      runningJobs: running.length,
      lastSweepAt: store.now(),
      lagSeconds: Math.max(0, Math.round(lagMs / 1000)),
      backlog,
      expired,
      lastError,
    });
  }

  /** The sweep's job list read, its calls already taken from the budget (listCalls). */
  private async syncList(ctx: { signal: AbortSignal; listInterval: number; noteError: (e: { code: string; message: string }) => void }) {
    const { signal, listInterval, noteError } = ctx;
    const collection = this.owner.store.collection;
    const nowMs = () => this.owner.timers.now();
    const before = this.budget.used();
    const release = await this.owner.slot();
    try {
      await collection.syncList(this.provider.id, listInterval * FRESH_FRACTION, signal);
      this.lastListAt = nowMs();
    } catch (err) {
      const known = clientFacingError(err);
      noteError({ code: known?.code ?? 'INTERNAL', message: known?.message ?? 'the job list could not be read' });
    } finally {
      release();
      this.listCalls = Math.max(1, this.listCalls, this.budget.used() - before);
      this.budget.give(this.listCalls);
    }
  }

  /**
   * One of the lease holder's hourly chores on the provider's stored points (retention,
   * compaction), run in a slot: a failure is the sweep's error (`failed` its message where the
   * error is not one a client may see) and the chore is tried again next sweep.
   */
  private async pointsChore(
    what: string,
    failed: string,
    noteError: (e: { code: string; message: string }) => void,
    run: () => Promise<unknown>,
  ): Promise<boolean> {
    const release = await this.owner.slot();
    try {
      await run();
      return true;
    } catch (err) {
      const known = clientFacingError(err);
      noteError({ code: known?.code ?? 'INTERNAL', message: known?.message ?? failed });
      if (!known) this.owner.logger.error({ err, provider: this.provider.id }, `collect: ${what} failed`);
      return false;
    } finally {
      release();
    }
  }

  /**
   * A running job's logs up to now through the store's door (a `Job.logs` query's path); the first
   * time from its start. Every page is an upstream call the budget counts as it starts.
   */
  private async collectLogs(job: JobRow, interval: number, signal: AbortSignal): Promise<{ code: string; message: string } | null> {
    const store = this.owner.store;
    const after = this.logCursors.get(job.id) ?? null;
    const since = job.startedAt ?? new Date(store.now().getTime() - this.settings.firstLookbackSeconds * 1000);
    try {
      const reached = await store.collection.collectLogs(job, { after, since }, { pageSize: LOG_PAGE, maxPages: LOG_PAGES_PER_SWEEP, signal });
      this.logCursors.set(job.id, reached.cursor);
      // Not caught up: counted as not done this interval (reported in the backlog), resumed next sweep.
      return reached.more
        ? {
            code: 'LOGS_BEHIND',
            message: `logs of ${job.id} are more than ${LOG_PAGE * LOG_PAGES_PER_SWEEP} lines behind; collection resumes next sweep (every ${interval / 1000} s)`,
          }
        : null;
    } catch (err) {
      const known = clientFacingError(err);
      return { code: known?.code ?? 'INTERNAL', message: known?.message ?? 'the logs could not be read' };
    }
  }

  /** Stops sweeping at once (the call under way is aborted) and gives up the lease. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}

/** The collectors of every provider that has collection enabled, on one replica. */
export class Collector {
  readonly events = new EventEmitter<CollectorEvents>();
  readonly holder: string;
  readonly store: Store;
  readonly logger: Logger;
  readonly timers: LiveTimers;
  readonly watched: (() => ReadonlySet<string>) | undefined;
  private readonly byProvider = new Map<string, ProviderCollector>();
  private readonly maxTotal: number;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(deps: CollectorDeps) {
    this.store = deps.store;
    this.logger = deps.logger;
    this.timers = deps.timers;
    this.watched = deps.watched;
    this.holder = deps.holder ?? randomUUID();
    this.maxTotal = Math.max(1, deps.maxConcurrentTotal ?? Number.POSITIVE_INFINITY);
    for (const p of deps.store.providers.all()) {
      const settings = deps.settings(p);
      if (settings.enabled) this.byProvider.set(p.id, new ProviderCollector(p, settings, this));
    }
    deps.store.collection.observeCalls((providerId) => this.byProvider.get(providerId)?.budget.record());
  }

  /** Waits for one of the collections all providers share (maxConcurrentTotal); resolves with its release. */
  async slot(): Promise<() => void> {
    if (this.inFlight >= this.maxTotal) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // Handed straight to the next waiter: the count stays, so none can jump the queue.
      const next = this.waiting.shift();
      if (next) next();
      else this.inFlight--;
    };
  }

  start(): this {
    for (const c of this.byProvider.values()) c.start();
    return this;
  }

  /** Each provider's collection as it stands (what /metrics exports). */
  statuses(): Map<string, CollectionStatus> {
    return new Map([...this.byProvider].map(([id, c]) => [id, c.snapshot()]));
  }

  /** Sweeps run so far by provider (tests prove who collects). */
  sweeps(): Record<string, number> {
    return Object.fromEntries([...this.byProvider].map(([id, c]) => [id, c.sweeps]));
  }

  /** True while a sweep is under way or due at once (tests that move the clock wait for it to be false). */
  busy(): boolean {
    return [...this.byProvider.values()].some((c) => c.busy);
  }

  /** The collections all providers share: under way, waiting for one, and the most at once (tests read it). */
  slots(): { inUse: number; waiting: number; max: number } {
    return { inUse: this.inFlight, waiting: this.waiting.length, max: this.maxTotal };
  }

  /** Providers whose lease this replica holds. */
  leading(): string[] {
    return [...this.byProvider].filter(([, c]) => c.snapshot().leading).map(([id]) => id);
  }

  async close(): Promise<void> {
    await Promise.all([...this.byProvider.values()].map((c) => c.stop()));
  }
}
