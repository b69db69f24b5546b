// Request-scoped DataLoaders: every resolver goes through these, so a query's fan-out (jobs x
// nodes x GPUs x series) collapses into a fixed number of SQL statements and at most one upstream
// metrics call per job. Batch functions return values (or an Error) in key order.
import DataLoader from 'dataloader';
import { parseGlobalId } from '../domain/ids.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { Aggregation, SystemMetric } from '../domain/types.js';
import { groupBy, type Freshness, type HeldForRequest, type ReadThrough, type TopologyHint, type Window } from './read-through.js';
import { shapeHeld, summarizeHeld, type HeldPoints } from './shaping.js';
import {
  SERIES_PER_STATEMENT,
  type GpuRow,
  type JobRow,
  type JobSummaryRow,
  type NodeRow,
  type PointRow,
  type ProgressRow,
  type ProjectRow,
  type Repository,
  type SeriesRow,
  type SeriesWindow,
  type SummaryRow,
} from './repository.js';

export interface PointsKey {
  seriesId: number;
  /** The series' job: its answer waits for this request's fetches of that job still under way (FetchesUnderWay). */
  jobId: string;
  keyedBy?: 'time' | 'step';
  from: Date | null;
  to: Date | null;
  maxPoints: number;
  aggregation: Aggregation;
}

/** A series' points as one read answered them, and the rollup's bucket width (seconds) when a rollup answered (null: raw points). */
export interface ShapedPoints {
  points: PointRow[];
  resolution: number | null;
}

export interface MetricsKey {
  job: JobRow;
  window: Window;
  metrics: readonly SystemMetric[];
  maxPoints: number;
}

const MAX_BATCH = 1000;

/**
 * Reads shared by every subscriber that handles the same live event: the first one's cache reads
 * answer the others (the same statements with the same arguments, while the event is handled).
 * null outside an event: each request reads for itself.
 */
export interface SharedReads {
  memo: Map<string, Promise<unknown>> | null;
}

function sharedRead<T>(shared: SharedReads, key: string, read: () => Promise<T>): Promise<T> {
  const memo = shared.memo;
  if (!memo) return read();
  let p = memo.get(key) as Promise<T> | undefined;
  if (!p) {
    p = read();
    memo.set(key, p);
    p.catch(() => memo.delete(key));
  }
  return p;
}

/** The repository's reads, answered from `shared.memo` when one is set (rows are never mutated by their readers). */
function sharedRepository(repo: Repository, shared: SharedReads): Repository {
  const READS = new Set(['nodesOfJobs', 'gpusOfJobs', 'nodesByIds', 'gpusByIds', 'progressOf', 'summariesOfJobs', 'seriesOfJobs', 'pointsOf', 'summariesOf']);
  return new Proxy(repo, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof prop !== 'string' || !READS.has(prop) || typeof value !== 'function') return value;
      // Outside a shared event there is nothing to share: the method itself, no per-read closure.
      if (!shared.memo) return value;
      return (...args: unknown[]) => sharedRead(shared, `${prop}|${JSON.stringify(args)}`, () => value.apply(target, args) as Promise<unknown>);
    },
  });
}

/** `scope`: the operation they read for (undefined: a live event's reads, background work). */
export function createLoaders(readThrough: ReadThrough, shared: SharedReads = { memo: null }, scope?: RequestScope) {
  const repo: Repository = sharedRepository(readThrough.repo.within(scope), shared);

  const { jobById, cachedJobById } = jobLoaders({ readThrough, shared, scope });

  const { projectById, nodesOfJob, gpusOfJob, nodeById, gpuById, progressOfJob, summariesOfJob, seriesOfJob } = rowLoaders(repo);

  // Points this request's fetches returned for series that had nothing cached: its answer is
  // shaped from them, written or not yet (the same answer either way). A series one of its writes
  // adds to (null) is read from SQL once that write commits (HeldForRequest).
  const heldForRequest: HeldForRequest = new Map();
  const underWay = new FetchesUnderWay();
  // What a query will ask of a job's series, told by the resolver that asks for its nodes.
  const topologyHints = new Map<string, TopologyHint>();
  // Each job is ready on its own: one whose metrics fetch teaches its nodes as soon as that fetch
  // is described (ReadThrough.ensureMetricsEach stores a batch in waves), so its part of the
  // answer is executed while later jobs' bodies still arrive.
  const topologyBatches = new DataLoader<JobRow, { ready: Promise<Freshness> }, string>(
    async (jobs) => {
      const { each, done } = await readThrough.ensureTopologyEach(jobs, { hints: topologyHints, answerBeforeWrite: true, collect: heldForRequest, scope });
      // Every job's answer settles before `done` can fail (the batch's fetch errors not recorded,
      // which the store tells its write-failure observers): the jobs' answers stand.
      done.catch(() => {});
      return jobs.map((j) => {
        const ready = Promise.resolve(each.get(j.id) ?? { fetchedAt: null, stale: false, error: null }).then((f) =>
          f instanceof Error ? Promise.reject(f) : f,
        );
        // Its loader's caller awaits it; handled meanwhile, as it may fail before that caller resumes.
        ready.catch(() => {});
        return { ready };
      });
    },
    { cacheKeyFn: (j) => j.id, maxBatchSize: MAX_BATCH },
  );

  const metricsBatches = new DataLoader<MetricsKey, Freshness, string>(
    (keys) =>
      readThrough.ensureMetrics(
        keys.map((k) => ({ job: k.job, from: k.window.from, to: k.window.to, metrics: k.metrics, maxPoints: k.maxPoints })),
        { answerBeforeWrite: true, collect: heldForRequest, scope },
      ),
    {
      cacheKeyFn: (k) => `${k.job.id}|${k.window.from.getTime()}|${k.window.to.getTime()}|${k.maxPoints}|${[...k.metrics].sort().join(',')}`,
      maxBatchSize: MAX_BATCH,
    },
  );

  const trainingReady = new DataLoader<JobRow, Freshness, string>(
    async (jobs) => {
      const res = await readThrough.ensureTraining(jobs, scope);
      return jobs.map((j) => res.get(j.id)!);
    },
    { cacheKeyFn: (j) => j.id, maxBatchSize: MAX_BATCH },
  );

  const progressReady = new DataLoader<JobRow, Freshness, string>(
    async (jobs) => {
      const res = await readThrough.ensureProgress(jobs, scope);
      return jobs.map((j) => res.get(j.id)!);
    },
    { cacheKeyFn: (j) => j.id, maxBatchSize: MAX_BATCH },
  );

  /** The job's series are cached for the window (as metricsBatches), the fetch counted under way meanwhile. */
  const metricsReady = { load: (k: MetricsKey): Promise<Freshness> => underWay.track(k.job.id, metricsBatches.load(k)) };

  const { points, summary } = pointLoaders({ repo, readThrough, heldForRequest, underWay });

  // Jobs whose topology this request asked for: their counts wait for it (gpuCount).
  const topologyAsked = new Set<string>();

  const topologyWithHints = {
    /** The job's topology is known (and recent): its freshness; rejects when it cannot be learned. */
    load: async (job: JobRow): Promise<Freshness> => {
      topologyAsked.add(job.id);
      return underWay.track(
        job.id,
        topologyBatches.load(job).then((b) => b.ready),
      );
    },
    /**
     * The job's accelerator count as this answer knows it: when the answer asks for the job's
     * topology (its nodes or GPUs), the GPUs that topology lists, so one answer never shows 2 x 2
     * GPUs beside a gpuCount of null; else the job row's (which the store keeps equal to the
     * topology it last learnt). The fields of one object are started in one synchronous pass, so
     * a turn later every sibling that asks for the topology has asked.
     */
    async gpuCount(job: JobRow): Promise<number | null> {
      if (!topologyAsked.has(job.id)) {
        await null;
        if (!topologyAsked.has(job.id)) return job.gpuCount;
      }
      try {
        await topologyWithHints.load(job);
      } catch {
        // The topology failed (its own field says so): the row's count is all this answer knows.
        return job.gpuCount;
      }
      const gpus = await gpusOfJob.load(job.id);
      return gpus.length > 0 ? gpus.length : job.gpuCount;
    },
    /** Tells the loader which series window the query will ask of the job (the first hint counts). */
    hint(jobId: string, hint: TopologyHint | null) {
      if (hint && !topologyHints.has(jobId)) topologyHints.set(jobId, hint);
    },
    // A subscription's context outlives one answer: forget what this answer was shaped from too.
    clearAll() {
      topologyHints.clear();
      topologyAsked.clear();
      heldForRequest.clear();
      topologyBatches.clearAll();
    },
  };

  return {
    jobById,
    cachedJobById,
    projectById,
    topology: topologyWithHints,
    nodesOfJob,
    gpusOfJob,
    nodeById,
    gpuById,
    metricsReady,
    trainingReady,
    progressReady,
    progressOfJob,
    summariesOfJob,
    seriesOfJob,
    points,
    summary,
  };
}

/** Jobs by id, through the read-through (a miss looked up upstream, or not). */
function jobLoaders(ctx: { readThrough: ReadThrough; shared: SharedReads; scope: RequestScope | undefined }) {
  const { readThrough, shared, scope } = ctx;
  const jobsByIdFrom = (upstream: boolean) =>
    new DataLoader<string, JobRow | null>(
      async (ids) => {
        const parsed = ids.map((id) => {
          try {
            return parseGlobalId(id, 'job');
          } catch (err) {
            return err as Error;
          }
        });
        const valid = parsed.filter((p): p is Exclude<typeof p, Error> => !(p instanceof Error));
        const rows = await sharedRead(shared, `jobsByIds|${upstream}|${JSON.stringify(valid)}`, () => readThrough.jobsByIds(valid, { upstream, scope }));
        let i = 0;
        return parsed.map((p) => (p instanceof Error ? p : rows[i++]!));
      },
      { maxBatchSize: MAX_BATCH },
    );
  /** Jobs by id; a cache miss is looked up upstream (a job created since the last list sync). */
  const jobById = jobsByIdFrom(true);
  /** Jobs by id from the cache only: a miss is null, at the cost of one cache lookup (access.ts). */
  const cachedJobById = jobsByIdFrom(false);

  return { jobById, cachedJobById };
}

/** The rows the store already holds, read in batches. */
function rowLoaders(repo: Repository) {
  const projectById = new DataLoader<string, ProjectRow | null>(
    async (ids) => {
      const rows = new Map((await repo.projectsByIds(ids)).map((p) => [p.id, p]));
      return ids.map((id) => rows.get(id) ?? null);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const nodesOfJob = new DataLoader<string, NodeRow[]>(
    async (jobIds) => {
      const rows = groupBy(await repo.nodesOfJobs(jobIds), (n) => n.jobId);
      return jobIds.map((id) => rows.get(id) ?? []);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const gpusOfJob = new DataLoader<string, GpuRow[]>(
    async (jobIds) => {
      const rows = groupBy(await repo.gpusOfJobs(jobIds), (g) => g.jobId);
      return jobIds.map((id) => rows.get(id) ?? []);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const nodeById = new DataLoader<string, NodeRow | null>(
    async (ids) => {
      const rows = new Map((await repo.nodesByIds(ids)).map((n) => [n.id, n]));
      return ids.map((id) => rows.get(id) ?? null);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const gpuById = new DataLoader<string, GpuRow | null>(
    async (ids) => {
      const rows = new Map((await repo.gpusByIds(ids)).map((g) => [g.id, g]));
      return ids.map((id) => rows.get(id) ?? null);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const progressOfJob = new DataLoader<string, ProgressRow | null>(
    async (jobIds) => {
      const rows = new Map((await repo.progressOf(jobIds)).map((p) => [p.jobId, p]));
      return jobIds.map((id) => rows.get(id) ?? null);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const summariesOfJob = new DataLoader<string, JobSummaryRow[]>(
    async (jobIds) => {
      const rows = groupBy(await repo.summariesOfJobs(jobIds), (r) => r.jobId);
      return jobIds.map((id) => rows.get(id) ?? []);
    },
    { maxBatchSize: MAX_BATCH },
  );

  const seriesOfJob = new DataLoader<{ jobId: string; kind: 'system' | 'training' }, SeriesRow[], string>(
    async (keys) => {
      const out = new Map<string, SeriesRow[]>();
      for (const [kind, group] of groupBy(keys, (k) => k.kind)) {
        const rows = groupBy(await repo.seriesOfJobs([...new Set(group.map((k) => k.jobId))], kind), (s) => s.jobId);
        for (const k of group) out.set(`${k.kind}|${k.jobId}`, rows.get(k.jobId) ?? []);
      }
      return keys.map((k) => out.get(`${k.kind}|${k.jobId}`) ?? []);
    },
    { cacheKeyFn: (k) => `${k.kind}|${k.jobId}`, maxBatchSize: MAX_BATCH },
  );

  return { projectById, nodesOfJob, gpusOfJob, nodeById, gpuById, progressOfJob, summariesOfJob, seriesOfJob };
}

/** Series points and summaries, from what this request holds in memory or else the database. */
function pointLoaders(ctx: { repo: Repository; readThrough: ReadThrough; heldForRequest: HeldForRequest; underWay: FetchesUnderWay }) {
  const { repo, readThrough, heldForRequest, underWay } = ctx;
  // A pair of (maxPoints, aggregation) is one statement; each series keeps its own window.
  // Series fetched a moment ago are shaped from the points still held in memory while their
  // write commits (the same answer: store/shaping.ts mirrors the SQL).
  const points = new DataLoader<PointsKey, ShapedPoints, string>(
    async (keys) => {
      const out = new Map<string, ShapedPoints>();
      // The series of an answer share their instants: one Date per instant, as the SQL read makes.
      const dates = new Map<number, Date>();
      const fromSql = await heldOrPending(keys, (k, held) => out.set(pointsKey(k), shapeHeld(k.seriesId, held, k, k.maxPoints, k.aggregation, dates)));
      for (const group of groupBy(fromSql, (k) => `${k.maxPoints}|${k.aggregation}`).values()) {
        const { points: rows, resolutions } = await repo.pointsAt(group, group[0]!.maxPoints, group[0]!.aggregation);
        // Two keys of one group may share a series with different windows: split by window.
        const bySeries = groupBy(rows, (p) => p.seriesId);
        const sameSeries = groupBy(group, (k) => k.seriesId);
        for (const k of group) {
          if (sameSeries.get(k.seriesId)!.length === 1)
            out.set(pointsKey(k), { points: bySeries.get(k.seriesId) ?? [], resolution: resolutions.get(k.seriesId) ?? null });
        }
        for (const k of group.filter((k) => sameSeries.get(k.seriesId)!.length > 1)) {
          const one = await repo.pointsAt([k], k.maxPoints, k.aggregation);
          out.set(pointsKey(k), { points: one.points, resolution: one.resolutions.get(k.seriesId) ?? null });
        }
      }
      return keys.map((k) => out.get(pointsKey(k)) ?? { points: [], resolution: null });
    },
    { cacheKeyFn: pointsKey, maxBatchSize: SERIES_PER_STATEMENT },
  );

  const summary = new DataLoader<SeriesWindow & { jobId: string }, SummaryRow | null, string>(
    async (keys) => {
      const out = new Map<number, SummaryRow | null>();
      const index = new Map(keys.map((k, i) => [k, i]));
      const fromSql = await heldOrPending(keys, (k, held) => out.set(index.get(k)!, summarizeHeld(k.seriesId, index.get(k)!, held, k)));
      if (fromSql.length) {
        const rows = await repo.summariesOf(fromSql);
        const byIndex = new Map(rows.map((r) => [r.index, r]));
        fromSql.forEach((k, i) => {
          out.set(index.get(k)!, byIndex.get(i) ?? null);
        });
      }
      return keys.map((_k, i) => out.get(i) ?? null);
    },
    { cacheKeyFn: (k) => `${k.seriesId}|${k.from?.getTime() ?? ''}|${k.to?.getTime() ?? ''}`, maxBatchSize: SERIES_PER_STATEMENT },
  );

  /** Answers the keys whose series are held alone in memory; returns the rest, once any write they wait on is done. */
  async function heldOrPending<K extends { seriesId: number; jobId: string }>(keys: readonly K[], answer: (k: K, held: HeldPoints) => void): Promise<K[]> {
    // Points one fetch of this request held alone answer only once its other fetches of the job
    // are described: a finer one (another field's maxPoints) adds to the same series, which is then
    // read from SQL, as the next request reads it (the two answers of a series agree).
    await underWay.settled(keys.filter((k) => heldForRequest.get(k.seriesId)).map((k) => k.jobId));
    const rest: K[] = [];
    const pending: Promise<void>[] = [];
    for (const k of keys) {
      const mine = heldForRequest.get(k.seriesId);
      if (mine) {
        answer(k, mine);
        continue;
      }
      const held = readThrough.heldPoints(k.seriesId);
      if (held && 'points' in held) answer(k, held.points);
      else {
        if (held) pending.push(held.pending);
        rest.push(k);
      }
    }
    await Promise.allSettled(pending);
    return rest;
  }

  return { points, summary };
}

/**
 * This request's fetches of each job still under way (topology and metrics loads): until they
 * are described, points a finished fetch held alone may not be all the series will hold.
 */
class FetchesUnderWay {
  private readonly byJob = new Map<string, Set<Promise<unknown>>>();

  track<T>(jobId: string, load: Promise<T>): Promise<T> {
    let set = this.byJob.get(jobId);
    if (!set) this.byJob.set(jobId, (set = new Set()));
    set.add(load);
    const done = () => {
      set.delete(load);
      if (set.size === 0 && this.byJob.get(jobId) === set) this.byJob.delete(jobId);
    };
    load.then(done, done);
    return load;
  }

  /** Resolves once no load of these jobs is under way, loads begun meanwhile included. */
  async settled(jobIds: readonly string[]): Promise<void> {
    for (;;) {
      const loads = [...new Set(jobIds)].flatMap((id) => [...(this.byJob.get(id) ?? [])]);
      if (loads.length === 0) return;
      await Promise.allSettled(loads);
    }
  }
}

function pointsKey(k: PointsKey): string {
  return `${k.seriesId}|${k.from?.getTime() ?? ''}|${k.to?.getTime() ?? ''}|${k.maxPoints}|${k.aggregation}`;
}

export type Loaders = ReturnType<typeof createLoaders>;
