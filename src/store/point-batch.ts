// Fetched series' points as one batch of columns (what a points write copies), and the identity
// each series has in the cache. No SQL here.
import { DomainError } from '../domain/errors.js';
import { gpuGlobalId, nodeGlobalId } from '../domain/ids.js';
import type { PointColumns, SeriesData } from '../domain/types.js';
import type { JobRow, SeriesIdentity } from './repo-types.js';
import type { PointBatch, PointRun } from './sql-util.js';

export function seriesKey(jobId: string, s: Pick<SeriesData, 'kind' | 'name' | 'source' | 'stage'>, nodeId: string | null, gpuId: string | null) {
  return [jobId, s.kind, s.name, s.source, s.stage ?? '', nodeId ?? '', gpuId ?? ''].join('|');
}

export function seriesIdentity(providerId: string, job: Pick<JobRow, 'id' | 'externalId'>, s: SeriesData): SeriesIdentity {
  const nodeId = s.nodeExternalId ? nodeGlobalId(providerId, job.externalId, s.nodeExternalId) : null;
  const gpuId = s.nodeExternalId && s.gpuIndex !== null ? gpuGlobalId(providerId, job.externalId, s.nodeExternalId, s.gpuIndex) : null;
  return { key: seriesKey(job.id, s, nodeId, gpuId), nodeId, gpuId };
}

/**
 * The points of fetched series as one batch of columns: each series' points in one run, sorted by
 * key, one per key (a later point of the same key wins, across the entries too); points without
 * a key (no time, or no step for a step-keyed series) are left out. Points come in key order
 * almost always: only a series whose keys do not rise is sorted. No object per point: a cold
 * dashboard's batch holds millions, and the answer is shaped from these runs while they are written.
 */
export function pointBatch(
  providerId: string,
  entries: { job: JobRow; series: SeriesData[] }[],
  ids: ReadonlyMap<string, number>,
): { batch: PointBatch; runs: Map<number, PointRun> } {
  const { batch, runs } = pointBatchByKey(providerId, entries);
  return { batch, runs: withSeriesIds(runs, ids) };
}

/**
 * Gives a batch's runs (by series key, from pointBatchByKey) their series ids, by series key
 * (writeSeriesRows' answer); returns them by id.
 */
export function withSeriesIds(runs: ReadonlyMap<string, PointRun>, ids: ReadonlyMap<string, number>): Map<number, PointRun> {
  const byId = new Map<number, PointRun>();
  for (const [key, run] of runs) {
    const id = ids.get(key);
    if (id === undefined) throw new DomainError('INTERNAL', `no series row for ${key}`);
    run.seriesId = id;
    byId.set(id, run);
  }
  return byId;
}

/**
 * pointBatch before the series have ids: the runs by series key, each with seriesId 0 until
 * withSeriesIds. What a fetch's points need of the cache's answer is only their series' ids, so
 * the batch can be built as the fetch arrives, while the others are awaited.
 */
export function pointBatchByKey(
  providerId: string,
  entries: { job: JobRow; series: SeriesData[] }[],
): { batch: PointBatch; runs: Map<string, PointRun>; identities: SeriesIdentity[] } {
  const parts = new Map<string, { c: PointColumns; byStep: boolean }[]>();
  // Each series' identity, in the entries' order: writeSeriesRows and the caller need them too.
  const identities: SeriesIdentity[] = [];
  let total = 0;
  for (const { job, series } of entries) {
    for (const s of series) {
      const identity = seriesIdentity(providerId, job, s);
      identities.push(identity);
      const key = identity.key;
      const c = columnsOf(s);
      total += c.length;
      const list = parts.get(key);
      if (list) list.push({ c, byStep: s.keyedBy === 'step' });
      else parts.set(key, [{ c, byStep: s.keyedBy === 'step' }]);
    }
  }
  const key = new Float64Array(total);
  const ts = new Float64Array(total);
  const step = new Float64Array(total);
  const value = new Float64Array(total);
  const runs = new Map<string, PointRun>();
  let n = 0;
  const put = (c: PointColumns, i: number, k: number) => {
    key[n] = k;
    ts[n] = c.ts[i]!;
    step[n] = c.step ? c.step[i]! : Number.NaN;
    value[n] = c.value[i]!;
    n++;
  };
  for (const [identity, list] of parts) {
    const start = n;
    let rising = list.length === 1;
    if (rising) {
      const { c, byStep } = list[0]!;
      const keys = byStep ? c.step : c.ts;
      let last = -Infinity;
      for (let i = 0; keys && i < c.length; i++) {
        const k = keys[i]!;
        if (Number.isNaN(k)) continue;
        if (k <= last) {
          rising = false;
          n = start;
          break;
        }
        last = k;
        put(c, i, k);
      }
    }
    if (!rising) {
      // Every keyed point in arrival order, sorted by key (stable): the last of equal keys wins.
      const order: { k: number; c: PointColumns; i: number }[] = [];
      for (const { c, byStep } of list) {
        const keys = byStep ? c.step : c.ts;
        for (let i = 0; keys && i < c.length; i++) if (!Number.isNaN(keys[i]!)) order.push({ k: keys[i]!, c, i });
      }
      order.sort((x, y) => x.k - y.k);
      for (let j = 0; j < order.length; j++) {
        const o = order[j]!;
        if (j + 1 < order.length && order[j + 1]!.k === o.k) continue;
        put(o.c, o.i, o.k);
      }
    }
    runs.set(identity, { seriesId: 0, start, end: n });
  }
  const batch: PointBatch = {
    length: n,
    key: key.subarray(0, n),
    ts: ts.subarray(0, n),
    step: step.subarray(0, n),
    value: value.subarray(0, n),
    runs: [...runs.values()],
  };
  return { batch, runs, identities };
}

/** A series' points as columns: the adapter's own, or made from its SeriesPoints. */
export function columnsOf(s: SeriesData): PointColumns {
  if (s.columns) return s.columns;
  const n = s.points.length;
  const ts = new Float64Array(n);
  const step = new Float64Array(n);
  const value = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const p = s.points[i]!;
    ts[i] = p.timestamp ? p.timestamp.getTime() : Number.NaN;
    step[i] = p.step ?? Number.NaN;
    value[i] = p.value ?? Number.NaN;
  }
  return { length: n, ts, step, value };
}
