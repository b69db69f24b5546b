// The system-metrics fill of the read-through cache: which requested metrics and windows are
// cached (fetch records, held or committed), one merged upstream call per job for the rest, and
// the fetched batches stored in waves by arrival (held-writes.ts stores each).
import { DomainError } from '../domain/errors.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { SystemMetric } from '../domain/types.js';
import type { SystemMetricsResult } from '../providers/provider.js';
import { groupBy, jobRef, type FillContext } from './fill-context.js';
import type { HeldWrites, Written } from './held-writes.js';
import { asError, covers, FRESH_NOW, stepFor, staleOr, toErrorInfo, type Freshness, type MetricsRequest, type TopologyHint } from './policy.js';
import type { FetchRow, JobRow } from './repo-types.js';
import type { Repository } from './repository.js';
import type { HeldPoints } from './shaping.js';

export class MetricsFill {
  constructor(
    private readonly c: FillContext,
    private readonly writes: HeldWrites,
  ) {}

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
    const done = new FillRun(this.c, this.writes, requests, opts, answer).run().then(
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
}

/** Per job, the metrics over the window a fill fetches, at the finest step its requests ask. */
interface PlannedFetch {
  job: JobRow;
  from: Date;
  to: Date;
  metrics: Set<SystemMetric>;
  step: number;
}

type Fetched = { w: PlannedFetch; key: string; res: SystemMetricsResult | null; error: unknown };

/** One ensureMetricsEach batch: what is cached already, what is fetched, and the fetched stored and answered in waves. */
class FillRun {
  private readonly now: Date;
  private wanted: SystemMetric[][] = [];
  private rowsByJob = new Map<string, FetchRow[]>();
  private heldWrites: Written[] = [];
  private readonly plan = new Map<string, PlannedFetch>();
  private answers: (Freshness | null)[] = [];
  /** Upstream failures by job. */
  private readonly failed = new Map<string, unknown>();
  private heldDescribed: Promise<void> = Promise.resolve();
  private fetchedRequests = new Map<string, number[]>();
  private readonly described: Promise<unknown>[] = [];
  private everyWaveDescribed!: () => void;
  private readonly writeGate = new Promise<void>((resolve) => (this.everyWaveDescribed = resolve));
  private previousWrite: Promise<unknown> = this.writeGate;

  constructor(
    private readonly c: FillContext,
    private readonly writes: HeldWrites,
    private readonly requests: readonly MetricsRequest[],
    private readonly opts: MetricsOptions,
    private readonly answer: (i: number, v: Freshness | Error) => void,
  ) {
    this.now = c.now();
  }

  async run(): Promise<void> {
    const { requests, now } = this;
    await this.planFetches();
    const hits = this.answers.filter((a) => a !== null).length;
    this.c.lookedUp('metrics', hits, this.answers.length - hits);
    // Every answer waits for the writes of these jobs under way to be described (or committed).
    this.heldDescribed = this.settled(this.heldWrites);
    const cachedAnswered = this.heldDescribed.then(() => {
      this.answers.forEach((a, i) => {
        if (a) this.answer(i, a);
      });
    });
    // Awaited below, after the fetches: marked handled meanwhile.
    cachedAnswered.catch(() => {});
    if (this.plan.size === 0) {
      await cachedAnswered;
      return;
    }
    this.fetchedRequests = groupBy(
      requests.flatMap((_r, i) => (this.answers[i] ? [] : [i])),
      (i) => requests[i]!.job.id,
    );
    await Promise.all(await this.fetchInWaves([...this.plan.values()]));
    await cachedAnswered;
    // Every request is answered by now: a failure to record the fetch errors is told to the
    // write-failure observers (a caller that took the answers alone would not see it).
    await this.recordFetchErrorsOf(
      [...this.failed].flatMap(([jobId, error]) =>
        [...this.plan.get(jobId)!.metrics].map((m) => ({ jobId, dataset: `metric:${m}`, failedAt: now, ...toErrorInfo(error) })),
      ),
    );
  }

  /** Works out, per job, which metrics over which window must be fetched; the requests cached already get their answer (`answers`). */
  private async planFetches(): Promise<void> {
    const { requests, opts, now, c } = this;
    const datasets = new Set<string>();
    this.wanted = requests.map((r) => {
      const caps = c.providers.find(r.job.providerId)?.adapter.capabilities.systemMetrics ?? [];
      const metrics = r.metrics.filter((m) => caps.includes(m));
      for (const m of metrics) datasets.add(`metric:${m}`);
      return metrics;
    });
    const wanted = this.wanted;
    const jobIds = [...new Set(requests.map((r) => r.job.id))];
    const committed = opts.fetches ?? (await c.repo.within(opts.scope).fetchesOf(jobIds, [...datasets]));
    const held = jobIds.flatMap((id) => this.writes.heldFetches.get(id) ?? []).filter((h) => datasets.has(h.row.dataset));
    const rowsByJob = (this.rowsByJob = groupBy([...held.map((h) => h.row), ...committed], (r) => r.jobId));
    // What another request fetched and is storing counts as cached once it is described (or
    // written, for callers that read points back in SQL).
    this.heldWrites = [...new Set(held.map((h) => h.written))];
    this.answers = requests.map((r, i) => {
      const step = stepFor(c.policy, r, r.maxPoints);
      const jobRows = rowsByJob.get(r.job.id) ?? [];
      const covered = (row: FetchRow) => covers(c.policy, row, r, step, now, opts.maxAgeMs);
      const missing = wanted[i]!.filter((m) => !jobRows.some((row) => row.dataset === `metric:${m}` && covered(row)));
      if (missing.length === 0 && !opts.forceTopology) {
        // As of the oldest of the metrics' newest covering fetches.
        const asOf = wanted[i]!.map((m) =>
          Math.max(...jobRows.filter((row) => row.dataset === `metric:${m}` && covered(row)).map((row) => row.fetchedAt.getTime())),
        );
        return FRESH_NOW(asOf.length ? new Date(Math.min(...asOf)) : now);
      }
      const entry = this.plan.get(r.job.id) ?? { job: r.job, from: r.from, to: r.to, metrics: new Set<SystemMetric>(), step };
      if (r.from < entry.from) entry.from = r.from;
      if (r.to > entry.to) entry.to = r.to;
      entry.step = Math.min(entry.step, step);
      for (const m of opts.forceTopology ? wanted[i]! : missing) entry.metrics.add(m);
      this.plan.set(r.job.id, entry);
      return null;
    });
  }

  /** Waits for these writes as far as this fill's callers wait: described (collecting their held points), or committed. */
  private async settled(writes: readonly Written[]): Promise<void> {
    if (!this.opts.answerBeforeWrite) {
      await Promise.all(writes.map((w) => w.committed));
      return;
    }
    for (const held of await Promise.all(writes.map((w) => w.described))) if (this.opts.collect) collectHeld(this.opts.collect, held);
  }

  private freshnessOf(i: number): Freshness | Error {
    const r = this.requests[i]!;
    const error = this.failed.get(r.job.id);
    if (error === undefined) return FRESH_NOW(this.now);
    const previous = (this.rowsByJob.get(r.job.id) ?? []).filter((row) => this.wanted[i]!.some((m) => row.dataset === `metric:${m}`));
    // Nothing cached to fall back on: the field fails with the upstream error rather than an empty lie.
    return staleOr(previous[0]?.fetchedAt ?? null, error);
  }

  /** Fetches every planned job, storing each wave of arrivals as it completes; returns the waves' answers. */
  private async fetchInWaves(work: PlannedFetch[]): Promise<Promise<void>[]> {
    const { opts } = this;
    const projects = await this.c.projectExternalIds(
      work.map((w) => w.job),
      opts.scope,
    );
    const ends = waveEnds(work.length, opts.answerBeforeWrite ? METRICS_WAVES : 1);
    const arrived: Fetched[] = [];
    const waves: Promise<void>[] = [];
    await Promise.all(
      work.map(async (w) => {
        const key = `metrics:${w.job.id}:${w.from.getTime()}:${w.to.getTime()}:${w.step}:${[...w.metrics].sort().join(',')}`;
        let fetched: Fetched;
        try {
          const res = await this.c.fills.once(key, w.job.providerId, opts.scope, (shared) =>
            this.c.providers.call(
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
          this.writes.draftOf(w.job, res);
          fetched = { w, key, res, error: null };
        } catch (error) {
          fetched = { w, key, res: null, error };
        }
        arrived.push(fetched);
        if (arrived.length !== ends[waves.length]) return;
        const first = waves.length === 0 ? 0 : ends[waves.length - 1]!;
        const wave = this.storeWave(arrived.slice(first), waves.length === ends.length - 1);
        // Awaited once every fetch has arrived: marked handled meanwhile.
        wave.catch(() => {});
        waves.push(wave);
      }),
    );
    return waves;
  }

  /** Starts storing a wave (its write queued behind the earlier waves'), then answers its requests once it is described. */
  private storeWave(wave: readonly Fetched[], last: boolean): Promise<void> {
    const waits: Written[] = [];
    const storing = this.writes.storing;
    try {
      for (const r of wave) if (!r.res) this.failed.set(r.w.job.id, r.error);
      // A fetch shared with a concurrent request is stored once, by whichever batch got it first.
      const succeeded = wave.filter((r) => r.res);
      for (const r of succeeded) if (storing.has(r.key)) waits.push(storing.get(r.key)!);
      const mine = succeeded.filter((r) => !storing.has(r.key));
      if (mine.length) {
        const after = () => this.writeGate;
        const written = this.writes.storeFetched(
          mine.map((r) => ({ job: r.w.job, from: r.w.from, to: r.w.to, step: r.w.step, res: r.res! })),
          this.now,
          this.previousWrite.then(after, after),
          this.rowsByJob,
        );
        this.previousWrite = written.committed;
        for (const r of mine) storing.set(r.key, written);
        void written.committed
          .catch(() => {})
          .finally(() => {
            for (const r of mine) if (storing.get(r.key) === written) storing.delete(r.key);
          });
        this.described.push(written.described);
        waits.push(written);
      }
      // The answers are the write's now (its point batches): this run keeps only which jobs they
      // were, so that they die young (HeldWrites.storeFetched).
      for (const r of wave) r.res = null;
    } finally {
      // Opened before anything here waits: a caller waiting for the commit waits on this gate.
      if (last) void Promise.allSettled(this.described).then(() => this.everyWaveDescribed());
    }
    return this.answerWave(wave, waits);
  }

  private async answerWave(wave: readonly Fetched[], waits: readonly Written[]): Promise<void> {
    try {
      await this.settled([...new Set(waits)]);
      await this.heldDescribed;
      for (const r of wave) for (const i of this.fetchedRequests.get(r.w.job.id) ?? []) this.answer(i, this.freshnessOf(i));
    } catch (err) {
      // Callers that wait for the write see it fail as a whole, as a write of one wave would.
      if (!this.opts.answerBeforeWrite) throw err;
      // Answered before the write: a wave whose topology could not be stored fails alone, its
      // requests with the error, the other waves with their answers.
      for (const r of wave) for (const i of this.fetchedRequests.get(r.w.job.id) ?? []) this.answer(i, asError(err));
    }
  }

  private async recordFetchErrorsOf(rows: Parameters<Repository['recordFetchErrors']>[0]): Promise<void> {
    try {
      await this.c.repo.recordFetchErrors(rows);
    } catch (err) {
      this.c.writeFailed(err);
      throw err;
    }
  }
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
  /** Given the points held alone for the series answered before their write: the request shapes them (collectHeld). */
  collect?: HeldForRequest;
  /** The operation asking (undefined: background work). */
  scope?: RequestScope;
  /**
   * The committed fetch records of the requests' jobs and metrics, read by the caller just before
   * (the collector reads them for each job's reach): not read again.
   */
  fetches?: readonly FetchRow[];
}

export interface TopologyOptions extends Pick<MetricsOptions, 'answerBeforeWrite' | 'collect' | 'scope'> {
  /** What the query will ask of each job's series: where a metrics fetch teaches the nodes, it is that fetch. */
  hints?: ReadonlyMap<string, TopologyHint>;
}

/**
 * The series a request's answers are shaped from in memory (their points held alone), and those
 * it must read from SQL once their writes commit (null): a series another request's write held
 * alone, which a write of this request then adds to, answers with both. Null wins whichever write
 * was described first, so points held alone never hide a later write's of the same series.
 */
export type HeldForRequest = Map<number, HeldPoints | null>;

/** Takes one write's held series into the request's (HeldForRequest). */
export function collectHeld(into: HeldForRequest, held: ReadonlyMap<number, HeldPoints | null>): void {
  for (const [id, points] of held) if (points === null || into.get(id) !== null) into.set(id, points);
}
