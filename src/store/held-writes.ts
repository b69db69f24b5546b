// Fetched metrics on their way into the cache: a batch's topology and series rows first
// (`described`), then its points with their fetch records (`committed`). Until they commit, the
// points are held here (answers can be shaped from them) and the fetch records count as cached
// for this replica.
import { seriesWithColumns, type NodeRecord, type SeriesData } from '../domain/types.js';
import type { SystemMetricsResult } from '../providers/provider.js';
import { groupBy, type FillContext } from './fill-context.js';
import { pointBatch, pointBatchByKey, withSeriesIds, columnsOf } from './point-batch.js';
import { isTerminal } from './policy.js';
import type { FetchRow, JobRow, SeriesIdentity } from './repo-types.js';
import { heldOf, type HeldPoints } from './shaping.js';
import type { PointBatch, PointRun } from './sql-util.js';

/** Start sources a stored metric point can improve on (Repository.startFromFirstPoints). */
const START_FROM_POINTS = new Set(['CREATION', 'FIRST_METRIC']);
const NO_POINTS: HeldPoints = { length: 0, key: new Float64Array(0), ts: new Float64Array(0), step: new Float64Array(0), value: new Float64Array(0) };

export class HeldWrites {
  /** Fetched series whose points are still being written, by series id. */
  private readonly held = new Map<number, HeldSeries>();
  /** Fetch records not committed yet, by job: they already count as cached for this replica. */
  readonly heldFetches = new Map<string, { row: FetchRow; written: Written }[]>();
  /** Fetches being stored, by fetch key: a concurrent request for the same fetch waits on the same write. */
  readonly storing = new Map<string, Written>();
  /** Each fetch's points as a batch by series key (draftOf), for as long as its result lives. */
  private readonly drafts = new WeakMap<SystemMetricsResult, FetchDraft>();
  /** Writes ever started per job, to tell whether another began while one was held. */
  private readonly writeEpoch = new Map<string, number>();
  /** Cache writes under way (the points and fetch records of answered fetches). */
  readonly writes = new Set<Promise<void>>();
  private writesSettledCount = 0;

  constructor(private readonly c: FillContext) {}

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
  draftOf(job: JobRow, res: SystemMetricsResult): FetchDraft {
    let draft = this.drafts.get(res);
    if (!draft) this.drafts.set(res, (draft = pointBatchByKey(job.providerId, [{ job, series: res.series }])));
    return draft;
  }

  /**
   * The points a provider's fetches store, as batches, and each series' held view of them by id:
   * the fetches' own drafts (draftOf), unless a finer fetch took points out of one (its entry's
   * series changed) or two fetches hold the same series (its later point must win across them),
   * where one batch is built anew from the entries. A part without its fetch (`whole` null) was
   * found to need neither when it was stored (storeFetched).
   */
  private pointBatchesOf(
    providerId: string,
    group: readonly StoredPart[],
    committed: ReadonlyMap<string, readonly FetchRow[]>,
    ids: ReadonlyMap<string, number>,
  ): { batches: PointBatch[]; held: Map<number, HeldPoints> } {
    const held = new Map<number, HeldPoints>();
    const entries = group.map((p) => (p.whole ? { job: p.job, series: this.withoutFinerCovered(p.whole, committed.get(p.job.id) ?? []) } : null));
    if (entries.every((e, i) => e === null || e.series === group[i]!.whole!.res.series)) {
      const drafts = group.map((p) => p.draft);
      if (disjoint(drafts)) {
        for (const d of drafts) for (const [id, run] of withSeriesIds(d.runs, ids)) held.set(id, heldOf(d.batch, run));
        return { batches: drafts.map((d) => d.batch), held };
      }
    }
    const { batch, runs } = pointBatch(
      providerId,
      entries.map((e) => e!),
      ids,
    );
    for (const [id, run] of runs) held.set(id, heldOf(batch, run));
    return { batches: [batch], held };
  }

  /**
   * Stores what a batch of metrics fetches returned. Topology and series rows first, in one
   * transaction (`described`: the loaders can find nodes, GPUs and series ids); then the points
   * with their fetch records in one transaction (`committed`), so a range is never marked fetched
   * without its points, and a crash before it commits only means the next request fetches again.
   * Until then the points are held here, and the fetch records count for this replica.
   *
   * `known`: the fetch records (committed and held) of the fetches' jobs as the fill read them
   * when it planned. What the write needs of the committed ones is whether a finer fetch covers
   * some of its points and which datasets were cached before (whether held points are all a
   * series has); where every fetch's datasets were known then and none was finer, the answer
   * cannot have changed since (a record is never removed but by one that covers it at the same or
   * a finer step, and nothing is fetched finer than the policy's floor, which these were), and
   * they are not read again in the write's transaction.
   */
  storeFetched(
    fetched: { job: JobRow; from: Date; to: Date; step: number; res: SystemMetricsResult }[],
    now: Date,
    start: Promise<unknown>,
    known?: ReadonlyMap<string, readonly FetchRow[]>,
  ): Written {
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
    // Jobs whose start is only their creation take their first stored point's time instead. (A
    // loop: a closure over `fetched` would keep it as long as the write's.)
    const startJobIds: string[] = [];
    for (const f of fetched) if (START_FROM_POINTS.has(f.job.startedAtSource ?? '') && !startJobIds.includes(f.job.id)) startJobIds.push(f.job.id);
    const datasets = [...new Set(fetchRows.map((r) => r.dataset))];
    const knownEnough =
      known !== undefined &&
      fetched.every((f) => {
        const rows = known.get(f.job.id) ?? [];
        return (
          f.step <= this.c.policy.minStepSeconds &&
          !rows.some((r) => r.stepSeconds < f.step) &&
          f.res.covered.every((m) => rows.some((r) => r.dataset === `metric:${m}`))
        );
      });
    // Where the committed records are known (knownEnough) and the drafts hold distinct series,
    // the write needs of each answer only its nodes, its series without their points and its
    // draft: the answers are let go as soon as this returns, before either transaction, so that
    // they die young. Held across both transactions (as before, and still where a finer fetch may
    // take points out, or a batch must be built anew) they outlived the young generation and were
    // promoted, which with a bounded old generation (V8_HEAP_GROWING_PERCENT) made full
    // collections (docs/collection.md).
    const drafts = fetched.map((f) => this.draftOf(f.job, f.res));
    const light = knownEnough && disjoint(drafts);
    let byProvider: Map<string, StoredPart[]> | null = groupBy(
      fetched.map(
        (f, i): StoredPart => ({
          job: f.job,
          nodes: f.res.nodes ?? null,
          series: light ? f.res.series.map(withoutPoints) : f.res.series,
          draft: drafts[i]!,
          whole: light ? null : f,
        }),
      ),
      (p) => p.job.providerId,
    );
    const described = this.c.repo.transaction(async (repo) => {
      const ids = new Map<string, Map<string, number>>();
      for (const [pid, group] of byProvider!) {
        const withNodes = group.filter((p) => p.nodes && p.nodes.length > 0);
        if (withNodes.length)
          await repo.writeTopology(
            pid,
            withNodes.map((p) => ({ job: p.job, nodes: p.nodes! })),
            now,
          );
        ids.set(
          pid,
          await repo.writeSeriesRows(
            pid,
            // Known (knownEnough): every dataset of each fetch has a committed record, so its job's series rows are stored.
            group.map((p) => ({ job: p.job, series: p.series, identities: p.draft.identities, stored: knownEnough })),
          ),
        );
      }
      if (knownEnough) return { ids, cached: known };
      const cached = await repo.fetchesOf(jobIds, datasets);
      return { ids, cached: groupBy(cached, (r) => r.jobId) };
    });
    const prepared = described.then(({ ids, cached: committedByJob }) => {
      const groups = byProvider!;
      byProvider = null;
      // Hold the points: alone (the series had nothing cached) they are the answer as written.
      const mine: [number, HeldSeries][] = [];
      const batches: PointBatch[] = [];
      let expectNew = true;
      for (const [pid, group] of groups) {
        const idsOfProvider = ids.get(pid)!;
        const { batches: built, held } = this.pointBatchesOf(pid, group, committedByJob, idsOfProvider);
        batches.push(...built);
        for (const p of group) {
          const cachedBefore = new Set((committedByJob.get(p.job.id) ?? []).map((r) => r.dataset));
          const { identities } = p.draft;
          for (let i = 0; i < p.series.length; i++) {
            const s = p.series[i]!;
            const id = idsOfProvider.get(identities[i]!.key)!;
            const previous = this.held.get(id);
            const exclusive =
              !previous && !busy.has(p.job.id) && this.writeEpoch.get(p.job.id) === epochs.get(p.job.id) && !cachedBefore.has(`metric:${s.name}`);
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
      // Every series of the write: its points where held alone, null where they merge with others.
      const held = new Map(mine.map(([id, h]) => [id, h.exclusive ? h.points : null]));
      return { batches, expectNew, heldHere, release, held };
    });
    const committed = prepared.then(async ({ batches, expectNew, heldHere, release }) => {
      try {
        await start;
        await afterTheAnswer();
        await this.c.repo.transaction(async (repo) => {
          await repo.writePointBatches(batches, { expectNew });
          // The fetch records, the fetch errors they clear and the starts from the first points: one statement.
          await repo.recordFetched(
            fetchRows.map(({ id: _id, ...r }) => r),
            startJobIds,
          );
        });
      } finally {
        for (const [id, h] of heldHere) if (this.held.get(id) === h) this.held.delete(id);
        for (const [id, e] of epochs) if (this.writeEpoch.get(id) === e && !this.heldFetches.has(id)) this.writeEpoch.delete(id);
        release();
      }
      // Committed: where no autovacuum runs (PGlite), a large write refreshes the planner's statistics.
      await this.c.repo.maintainStatistics(batches.reduce((n, b) => n + b.length, 0)).catch((err) => {
        this.c.writeFailed(err);
      });
    });
    const written: Written = { described: prepared.then((p) => p.held), committed };
    // Only answers given before the write wait on `described`; a failure of it fails `committed`
    // too, which is always awaited and reported. Unobserved, it would end the process.
    written.described.catch(() => {});
    for (const row of fetchRows) this.heldFetches.set(row.jobId, [...(this.heldFetches.get(row.jobId) ?? []), { row, written }]);
    const tracked = committed
      .catch((err) => {
        this.c.writeFailed(err);
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
}

/** A batch of fetches being stored: `described` once its topology and series are, `committed` once its points are. */
export interface Written {
  /**
   * Resolves to each series the write holds (by id): its points where they are held alone (sorted
   * by key: the answer as it will be written), null where they merge with points stored or held
   * for it already (an answer reads SQL once they commit).
   */
  described: Promise<ReadonlyMap<number, HeldPoints | null>>;
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

/** One fetch as a write stores it (HeldWrites.storeFetched). */
interface StoredPart {
  job: JobRow;
  nodes: NodeRecord[] | null;
  /** The answer's series, in its order; without their points where the answer was let go (`whole` null). */
  series: SeriesData[];
  draft: FetchDraft;
  /** The fetch itself, where its points may still be needed: a finer fetch may cover some, or a batch be built anew. */
  whole: { job: JobRow; step: number; res: SystemMetricsResult } | null;
}

/** Whether the drafts hold distinct series (their batches can be written side by side as they are). */
function disjoint(drafts: readonly FetchDraft[]): boolean {
  return drafts.reduce((n, d) => n + d.runs.size, 0) === new Set(drafts.flatMap((d) => [...d.runs.keys()])).size;
}

/** A series' description alone (what its row is written from), not its points: no spread, which would make `points` of columns. */
function withoutPoints(s: SeriesData): SeriesData {
  return {
    kind: s.kind,
    name: s.name,
    rawName: s.rawName,
    unit: s.unit,
    scope: s.scope,
    nodeExternalId: s.nodeExternalId,
    gpuIndex: s.gpuIndex,
    source: s.source,
    stage: s.stage,
    keyedBy: s.keyedBy,
    meta: s.meta,
    points: [],
  };
}
