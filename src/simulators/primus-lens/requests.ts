// Primus-Lens simulator: what every route handler shares: the options read once, the {meta, data,
// tracing} envelope and its error forms, cluster resolution, and query parsing as gin binds it.
import { startOfUtcDay, hashSeed, seededRandom, type RouteDef, type SimRequest, type SimResponse } from '../kit.js';
import { CLUSTERS, buildFleet, type SimWorkload, type TrainingSource } from './fleet.js';
import type { PrimusLensSimulatorOptions } from './server.js';

/** The unified route's catalog, as Lens defines it (a subset: the metrics this project reads and a few more). */
export const UNIFIED_METRICS = [
  { name: 'gpu_utilization_by_node', display_name: 'GPU Utilization (Node Avg)', category: 'gpu', unit: '%', agg_level: 'node' },
  { name: 'gpu_power_by_node', display_name: 'GPU Power (Node Avg)', category: 'gpu', unit: 'W', agg_level: 'node' },
  { name: 'gpu_utilization_by_device', display_name: 'GPU Utilization (Per Device)', category: 'gpu', unit: '%', agg_level: 'device' },
  { name: 'gpu_power_by_device', display_name: 'GPU Power (Per Device)', category: 'gpu', unit: 'W', agg_level: 'device' },
  { name: 'pod_cpu_usage', display_name: 'Pod CPU Usage', category: 'pod', unit: 'cores', agg_level: 'node' },
  { name: 'pod_memory_usage', display_name: 'Pod Memory Usage', category: 'pod', unit: 'bytes', agg_level: 'node' },
  { name: 'pod_write_bytes', display_name: 'Pod Write Bytes/s', category: 'pod', unit: 'bytes/s', agg_level: 'node' },
  { name: 'pod_read_bytes', display_name: 'Pod Read Bytes/s', category: 'pod', unit: 'bytes/s', agg_level: 'node' },
  { name: 'rdma_tx_bandwidth_by_node', display_name: 'RDMA TX Bandwidth (Node)', category: 'rdma', unit: 'bytes/s', agg_level: 'node' },
  { name: 'rdma_rx_bandwidth_by_node', display_name: 'RDMA RX Bandwidth (Node)', category: 'rdma', unit: 'bytes/s', agg_level: 'node' },
].map((m) => ({ ...m, description: m.display_name, promql: '' }));
export const TRAINING_ROUTES = new Set(['metricsSources', 'metricsAvailable', 'metricsData', 'iterationTimes']);
export const STATUS_COLOR: Record<string, string> = { Running: 'green', Pending: 'yellow', Done: 'blue', Failed: 'red', Deleted: 'gray' };
export const PROMETHEUS_MAX_POINTS = 11_000;

export class LensError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export const toSec = (ms: number) => Math.floor(ms / 1000);
export const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The options as every route reads them, the envelope, and cluster resolution. */
function lensBase(opts: PrimusLensSimulatorOptions) {
  const now = opts.now ?? Date.now;
  const fleet = buildFleet(opts.seed ?? 1, opts.anchorMs ?? startOfUtcDay(now()), opts.replicas ?? 1);
  const prefix = opts.prefix ?? '/v1';
  const legacy = opts.mode === 'legacy';
  const auth = opts.auth ?? { mode: 'none' };
  const defaultCluster = opts.defaultCluster ?? CLUSTERS[0];
  const withoutAddon = new Set(opts.clustersWithoutAddon ?? []);

  const envelope = (data: unknown): SimResponse => ({ status: 200, body: { meta: { code: 2000, message: 'OK' }, data, tracing: null } });
  const envelopeError = (code: number, message: string): SimResponse => ({
    status: 200,
    body: { meta: { code, message }, data: null, tracing: null },
  });

  // Lens' handle-error middleware: typed errors keep their code, anything else is 5000 "Unknown error".
  const wrap =
    (handler: (req: SimRequest) => unknown): RouteDef['handler'] =>
    (req) => {
      try {
        return envelope(handler(req));
      } catch (err) {
        if (err instanceof LensError) return envelopeError(err.code, err.message);
        return envelopeError(5000, 'Unknown error');
      }
    };

  // Before PR #315 the training-metrics handlers wrote gin.H{"error": ...} with 400 or 500.
  const wrapTraining =
    (handler: (req: SimRequest) => unknown): RouteDef['handler'] =>
    (req) => {
      if (!legacy) return wrap(handler)(req);
      try {
        return { status: 200, body: handler(req) };
      } catch (err) {
        const status = err instanceof LensError && err.code === 4001 ? 400 : 500;
        return { status, body: { error: err instanceof LensError ? err.message : 'internal server error' } };
      }
    };

  // ---- cluster resolution -------------------------------------------------------------------

  const knownCluster = (name: string) => (CLUSTERS as readonly string[]).includes(name);
  // The sheet says an unknown cluster name "is an error" without naming the code; 4001 (bad
  // parameter) is the reading chosen here, so a misconfigured client is not told "not found".
  const clusterOf = (req: SimRequest): string => {
    const c = req.query.get('cluster');
    if (c === null || c === '') return defaultCluster;
    if (!knownCluster(c)) throw new LensError(4001, `cluster "${c}" not found`);
    return c;
  };

  /** Routes taking a workload UID: the given cluster as-is, else default first, then every other. */
  const workloadByUid = (req: SimRequest): SimWorkload | null => {
    const uid = req.params.uid!;
    const given = req.query.get('cluster');
    if (given) {
      if (!knownCluster(given)) throw new LensError(4001, `cluster "${given}" not found`);
      return fleet.workloads.find((w) => w.uid === uid && w.cluster === given) ?? null;
    }
    // Legacy builds did not search other clusters: default cluster only.
    const order = legacy ? [defaultCluster] : [defaultCluster, ...CLUSTERS.filter((c) => c !== defaultCluster)];
    for (const c of order) {
      const hit = fleet.workloads.find((w) => w.uid === uid && w.cluster === c);
      if (hit) return hit;
    }
    if (legacy) return null;
    throw new LensError(4004, `workload ${uid} not found in any cluster`);
  };

  const requireWorkload = (req: SimRequest): SimWorkload => {
    const w = workloadByUid(req);
    if (!w) throw new LensError(4004, 'workload not found');
    return w;
  };

  return {
    opts,
    now,
    fleet,
    prefix,
    legacy,
    auth,
    defaultCluster,
    withoutAddon,
    envelope,
    envelopeError,
    wrap,
    wrapTraining,
    knownCluster,
    clusterOf,
    workloadByUid,
    requireWorkload,
  };
}
type LensBase = ReturnType<typeof lensBase>;

/** gin's query binding as the routes read it. */
export function lensQueries(ctx: LensBase) {
  const { now } = ctx;
  let requestSerial = 0;

  // ---- query parsing ----------------------------------------------------------------------

  const intParam = (req: SimRequest, key: string, fallback: number): number => {
    const raw = req.query.get(key);
    if (raw === null || raw === '') return fallback;
    // gin's query binding fails on non-integers; that error is untyped, so it becomes 5000.
    if (!/^-?\d+$/.test(raw)) throw new Error(`binding ${key}`);
    return Number(raw);
  };

  const msRange = (req: SimRequest): { start: number; end: number } | null => {
    const s = req.query.get('start');
    const e = req.query.get('end');
    if (s !== null && s !== '' && !/^-?\d+$/.test(s)) throw new LensError(4001, 'invalid start time format');
    if (e !== null && e !== '' && !/^-?\d+$/.test(e)) throw new LensError(4001, 'invalid end time format');
    if (!s || !e) return null; // the range applies only when both are given
    return { start: Number(s), end: Number(e) };
  };

  const secondsRange = (req: SimRequest) => {
    const nowSec = toSec(now());
    const end = intParam(req, 'end', nowSec);
    const start = intParam(req, 'start', end - 3600);
    const step = Math.max(1, intParam(req, 'step', 60));
    if ((end - start) / step > PROMETHEUS_MAX_POINTS) {
      throw new LensError(5000, 'exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)');
    }
    return { start, end, step };
  };

  const sourceFilter = (req: SimRequest): TrainingSource | null => {
    const s = req.query.get('data_source');
    return s ? (s as TrainingSource) : null;
  };

  /** `metrics`: a comma list, `all`, or Grafana's `{a,b}`; null = every metric. */
  const metricFilter = (req: SimRequest): Set<string> | null => {
    const raw = req.query.get('metrics');
    if (!raw) return null;
    const names = raw
      .replace(/^\{(.*)\}$/, '$1')
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
    return names.length === 0 || names.includes('all') ? null : new Set(names);
  };

  /** Go map iteration: the order differs from one answer to the next. */
  const goMapOrder = <T>(items: T[]): T[] => {
    const rnd = seededRandom(hashSeed(`order:${++requestSerial}`));
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  };
  return { intParam, msRange, secondsRange, sourceFilter, metricFilter, goMapOrder };
}

/** What every route handler shares. */
export function lensRequests(opts: PrimusLensSimulatorOptions) {
  const base = lensBase(opts);
  return { ...base, ...lensQueries(base) };
}
export type LensRequests = ReturnType<typeof lensRequests>;
