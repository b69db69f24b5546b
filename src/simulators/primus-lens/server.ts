// A Primus-Lens API server as the fact sheet describes it: the gin routes under `/v1` (or
// `/lens/v1` behind the Primus gateway / SaFE proxy), the {meta, data, tracing} envelope with
// handler errors as HTTP 200 + meta.code, the legacy bare form of the four training-metrics
// routes, cluster resolution, and the three auth setups (none, Lens cookie middleware, SaFE Bearer).
import http from 'node:http';
import {
  startOfUtcDay,
  hashSeed,
  seededRandom,
  startSimulator,
  type Fault,
  type RouteDef,
  type SimRequest,
  type SimResponse,
  type SimulatorHandle,
} from '../kit.js';
import {
  CLUSTERS,
  GPUS_PER_NODE,
  buildFleet,
  deviceGpuUtilizationPercent,
  gpuAllocationHours,
  isActiveAt,
  latestPods,
  iterationTimestampMs,
  loggedIterations,
  nodeGpuMemoryUtilizationPercent,
  nodeGpuPowerWatts,
  nodeGpuUtilizationPercent,
  workloadDevicesOnNode,
  deviceGpuPowerWatts,
  podCpuCores,
  podMemoryBytes,
  podFsBytesPerSecond,
  nodeRdmaBytesPerSecond,
  trainingPoints,
  workloadNodes,
  type SimFleet,
  type SimPod,
  type SimWorkload,
  type TrainingSource,
  currentIteration,
  trainingValue,
} from './fleet.js';

export type LensAuth = { mode: 'none' } | { mode: 'cookie'; token: string } | { mode: 'bearer'; token: string };

export interface PrimusLensSimulatorOptions {
  seed?: number;
  now?: () => number;
  /** All workload times derive from it; default the start of the current UTC day. */
  anchorMs?: number;
  port?: number;
  /** `/v1` for the Lens API server itself, `/lens/v1` behind the gateway or the SaFE proxy. */
  prefix?: '/v1' | '/lens/v1';
  /** `legacy`: the four training-metrics routes answer as before PR #315 (bare payload, {"error"}). */
  mode?: 'current' | 'legacy';
  /** false: a Lens without the unified /training-metrics routes (the dispatcher answers 404). Default true. */
  unifiedTrainingMetrics?: boolean;
  /**
   * `cookie`: Lens' auth middleware (a Cookie header whose `Token` cookie SaFE would verify).
   * `bearer`: the SaFE lens-compat proxy (Bearer API key or Token cookie; `cluster` required everywhere).
   */
  auth?: LensAuth;
  defaultCluster?: string;
  /** Behind the SaFE proxy: clusters where the robust addon is missing (Primus.00050). */
  clustersWithoutAddon?: string[];
  /** Repeats the fleet this many times (default 1) to make paging observable. */
  replicas?: number;
}

export interface PrimusLensSimulator extends SimulatorHandle {
  fleet: SimFleet;
  prefix: string;
  /** What a client configures as its base: the URL before `/v1`. */
  baseUrl: string;
}

/** The unified route's catalog, as Lens defines it (a subset: the metrics this project reads and a few more). */
const UNIFIED_METRICS = [
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
const TRAINING_ROUTES = new Set(['metricsSources', 'metricsAvailable', 'metricsData', 'iterationTimes']);
const STATUS_COLOR: Record<string, string> = { Running: 'green', Pending: 'yellow', Done: 'blue', Failed: 'red', Deleted: 'gray' };
const PROMETHEUS_MAX_POINTS = 11_000;

class LensError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const toSec = (ms: number) => Math.floor(ms / 1000);
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export async function startPrimusLensSimulator(opts: PrimusLensSimulatorOptions = {}): Promise<PrimusLensSimulator> {
  const now = opts.now ?? Date.now;
  const fleet = buildFleet(opts.seed ?? 1, opts.anchorMs ?? startOfUtcDay(now()), opts.replicas ?? 1);
  const prefix = opts.prefix ?? '/v1';
  const legacy = opts.mode === 'legacy';
  const auth = opts.auth ?? { mode: 'none' };
  const defaultCluster = opts.defaultCluster ?? CLUSTERS[0];
  const withoutAddon = new Set(opts.clustersWithoutAddon ?? []);
  let requestSerial = 0;

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

  // ---- payload builders -------------------------------------------------------------------

  const visibleTrainingPoints = (w: SimWorkload, source: TrainingSource | null) =>
    (source ? [source] : w.sources).flatMap((s) => trainingPoints(w, s, now())).filter((p) => !Number.isNaN(p.value));

  const listItem = (w: SimWorkload) => {
    const nowMs = now();
    const running = w.status === 'Running';
    const nodes = workloadNodes(w);
    const sampleSec = toSec(Math.min(w.endMs ?? nowMs, nowMs));
    const util = nodes.length && isActiveAt(w, sampleSec * 1000, nowMs) ? nodes.map((n) => nodeGpuUtilizationPercent(w, n, sampleSec)) : [];
    const avg = util.length ? Math.round((util.reduce((a, b) => a + b, 0) / util.length) * 10) / 10 : 0;
    return {
      kind: w.kind,
      name: w.name,
      namespace: w.namespace,
      uid: w.uid,
      gpu_allocated: latestPods(w).reduce((n, p) => n + p.gpuAllocated, 0),
      gpu_allocation: gpuAllocationHours(w, nowMs),
      status: w.status,
      status_color: STATUS_COLOR[w.status],
      start_at: toSec(w.startMs),
      // The DB row's updated_at: non-zero (and moving) even while the workload runs.
      end_at: running || w.status === 'Pending' ? toSec(nowMs) - 7 : toSec(w.endMs!) + 180,
      source: 'k8s',
      instant_gpu_utilization: running ? avg : null,
      avg_gpu_utilization: avg,
      p50_gpu_utilization: avg,
      p90_gpu_utilization: util.length ? Math.max(...util) : 0,
      p95_gpu_utilization: util.length ? Math.max(...util) : 0,
    };
  };

  const podView = (p: SimPod) => ({
    podUid: p.podUid,
    podNamespace: p.namespace,
    podName: p.podName,
    nodeName: p.nodeName,
    phase: p.phase,
    running: p.phase === 'Running' && p.endedAtMs === null,
    ...(p.ip ? { ip: p.ip } : {}),
    gpuAllocated: p.gpuAllocated,
    createdAt: toSec(p.createdAtMs),
    updatedAt: toSec(p.endedAtMs ?? now()),
  });

  const graph = (serial: number, unit: string, series: { labels: Record<string, string>; values: { timestamp: number; value: number }[] }[]) => ({
    serial,
    series,
    config: { y_axis_unit: unit },
  });

  const rangeSeries = (range: { start: number; end: number; step: number }, include: (tSec: number) => boolean, value: (tSec: number) => number) => {
    const values: { timestamp: number; value: number }[] = [];
    const nowSec = toSec(now());
    for (let t = range.start; t <= Math.min(range.end, nowSec); t += range.step) if (include(t)) values.push({ timestamp: t, value: value(t) });
    return values;
  };

  /** The unified route's series of one metric for a workload, labelled as Lens' PromQL leaves them. */
  const unifiedSeries = (name: string, w: SimWorkload, range: { start: number; end: number; step: number }, active: (t: number) => boolean) => {
    const pods = latestPods(w).filter((p) => p.nodeName !== '');
    const perDevice = (value: (node: string, gpuId: number, t: number) => number) =>
      pods.flatMap((p) =>
        Array.from({ length: p.gpuAllocated }, (_, i) => p.firstDevice + i).map((gpuId) => ({
          labels: {
            gpu_id: String(gpuId),
            primus_lens_node_name: p.nodeName,
            pod_name: p.podName,
            pod_uid: p.podUid,
            workload_name: w.name,
            workload_uid: w.uid,
          },
          values: rangeSeries(range, active, (t) => value(p.nodeName, gpuId, t)),
        })),
      );
    const perPod = (value: (pod: string, t: number) => number, container = false) =>
      pods.map((p) => ({
        labels: { pod: p.podName, ...(container ? { container: 'trainer' } : {}) },
        values: rangeSeries(range, active, (t) => value(p.podName, t)),
      }));
    const perNode = (value: (node: string, t: number) => number) =>
      workloadNodes(w).map((node) => ({ labels: { primus_lens_node_name: node }, values: rangeSeries(range, active, (t) => value(node, t)) }));
    let series: { labels: Record<string, string>; values: { timestamp: number; value: number }[] }[];
    switch (name) {
      case 'gpu_utilization_by_device':
        series = perDevice((node, g, t) => deviceGpuUtilizationPercent(w, node, g, t));
        break;
      case 'gpu_power_by_device':
        series = perDevice((node, g, t) => deviceGpuPowerWatts(w, node, g, t));
        break;
      case 'pod_cpu_usage':
        series = perPod((pod, t) => podCpuCores(w, pod, t));
        break;
      case 'pod_memory_usage':
        series = perPod((pod, t) => podMemoryBytes(w, pod, t));
        break;
      case 'pod_read_bytes':
        series = perPod((pod, t) => podFsBytesPerSecond(w, pod, 'read', t), true);
        break;
      case 'pod_write_bytes':
        series = perPod((pod, t) => podFsBytesPerSecond(w, pod, 'write', t), true);
        break;
      case 'rdma_rx_bandwidth_by_node':
        series = perNode((node, t) => nodeRdmaBytesPerSecond(w, node, 'rx', t));
        break;
      case 'rdma_tx_bandwidth_by_node':
        series = perNode((node, t) => nodeRdmaBytesPerSecond(w, node, 'tx', t));
        break;
      default:
        series = []; // listed in the catalog, not simulated
    }
    // Prometheus drops series without samples in the range.
    return series.filter((x) => x.values.length > 0);
  };

  // ---- routes -----------------------------------------------------------------------------

  const routes: RouteDef[] = [
    {
      method: 'GET',
      path: '/workloads',
      name: 'workloads',
      handler: wrap((req) => {
        const cluster = clusterOf(req);
        const pageNum = intParam(req, 'page_num', 1);
        const pageSize = intParam(req, 'page_size', 10);
        const name = req.query.get('name');
        const kind = req.query.get('kind');
        const namespace = req.query.get('namespace');
        const status = req.query.get('status');
        const orderBy = req.query.get('order_by') === 'end_at' ? 'end_at' : 'start_at';
        const items = fleet.workloads
          .filter((w) => w.cluster === cluster)
          .filter((w) => !name || w.name.includes(name))
          .filter((w) => !kind || w.kind === kind)
          .filter((w) => !namespace || w.namespace === namespace)
          .filter((w) => !status || w.status === status)
          .map(listItem)
          .sort((a, b) => b[orderBy] - a[orderBy] || a.uid.localeCompare(b.uid));
        const from = Math.max(0, (pageNum - 1) * pageSize);
        return { data: items.slice(from, from + pageSize), total: items.length };
      }),
    },
    {
      method: 'GET',
      path: '/workloadMetadata',
      name: 'workloadMetadata',
      handler: wrap((req) => {
        const cluster = clusterOf(req);
        const mine = fleet.workloads.filter((w) => w.cluster === cluster);
        return { namespaces: [...new Set(mine.map((w) => w.namespace))].sort(), kinds: [...new Set(mine.map((w) => w.kind))].sort() };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid',
      name: 'workload',
      handler: wrap((req) => {
        const w = requireWorkload(req);
        const pods = w.pods.map(podView);
        return {
          apiVersion: w.apiVersion,
          kind: w.kind,
          name: w.name,
          namespace: w.namespace,
          uid: w.uid,
          gpu_allocation: gpuAllocationHours(w, now()),
          pods,
          activePods: pods.filter((p) => p.running),
          startTime: toSec(w.startMs),
          endTime: w.endMs === null ? 0 : toSec(w.endMs),
          source: 'k8s',
        };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid/hierarchy',
      name: 'hierarchy',
      handler: wrap((req) => {
        const w = requireWorkload(req);
        return { kind: w.kind, name: w.name, namespace: w.namespace, uid: w.uid, children: [] };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid/metrics',
      name: 'workloadMetrics',
      handler: wrap((req) => {
        const w = requireWorkload(req);
        const range = secondsRange(req);
        const active = (t: number) => isActiveAt(w, t * 1000, now());
        const perNode = (value: (node: string, t: number) => number) =>
          workloadNodes(w)
            .map((node) => ({ labels: { primus_lens_node_name: node }, values: rangeSeries(range, active, (t) => value(node, t)) }))
            .filter((s) => s.values.length > 0);
        return {
          'GPU Utilization': graph(
            1,
            '%',
            perNode((n, t) => nodeGpuUtilizationPercent(w, n, t)),
          ),
          'GPU Memory Utilization': graph(
            2,
            '%',
            perNode((n, t) => nodeGpuMemoryUtilizationPercent(w, n, t)),
          ),
          'GPU Power': graph(
            3,
            'W',
            perNode((n, t) => nodeGpuPowerWatts(w, n, t)),
          ),
          // Lens returns this graph for every workload, with no series where the log source does
          // not report performance; "tflops" and "iteration" sit in the node-name label of its two series.
          TrainingPerformance: graph(
            4,
            ' ',
            w.sources.includes('log')
              ? [
                  {
                    labels: { primus_lens_node_name: 'tflops' },
                    values: rangeSeries(
                      range,
                      (t) => active(t) && currentIteration(w, t * 1000) > 0,
                      (t) => trainingValue(w, 'log', 'tflops', currentIteration(w, t * 1000)),
                    ),
                  },
                  {
                    labels: { primus_lens_node_name: 'iteration' },
                    values: rangeSeries(
                      range,
                      (t) => active(t) && currentIteration(w, t * 1000) > 0,
                      (t) => currentIteration(w, t * 1000),
                    ),
                  },
                ].filter((x) => x.values.length > 0)
              : [],
          ),
        };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid/metrics/sources',
      name: 'metricsSources',
      handler: wrapTraining((req) => {
        const w = workloadByUid(req);
        const sources = w
          ? w.sources.map((s) => ({ name: s, count: loggedIterations(w, now()).filter((it) => iterationTimestampMs(w, it, s) <= now()).length }))
          : [];
        return {
          workload_uid: req.params.uid,
          data_sources: goMapOrder(sources.filter((s) => s.count > 0)),
          total_count: sources.filter((s) => s.count > 0).length,
        };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid/metrics/available',
      name: 'metricsAvailable',
      handler: wrapTraining((req) => {
        const w = workloadByUid(req);
        const points = w ? visibleTrainingPoints(w, sourceFilter(req)) : [];
        const byName = new Map<string, { sources: Set<string>; count: number }>();
        for (const p of points) {
          const e = byName.get(p.metric) ?? { sources: new Set<string>(), count: 0 };
          e.sources.add(p.source);
          e.count += 1;
          byName.set(p.metric, e);
        }
        const metrics = [...byName].map(([name, e]) => ({ name, data_source: [...e.sources], count: e.count }));
        return { workload_uid: req.params.uid, metrics: goMapOrder(metrics), total_count: metrics.length };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid/metrics/data',
      name: 'metricsData',
      handler: wrapTraining((req) => {
        const range = msRange(req);
        const w = workloadByUid(req);
        const source = sourceFilter(req);
        const names = metricFilter(req);
        const data = (w ? visibleTrainingPoints(w, source) : [])
          .filter((p) => !names || names.has(p.metric))
          .filter((p) => !range || (p.timestampMs >= range.start && p.timestampMs <= range.end))
          .map((p) => ({ metric_name: p.metric, value: p.value, timestamp: p.timestampMs, iteration: p.iteration, data_source: p.source }));
        return { workload_uid: req.params.uid, ...(source ? { data_source: source } : {}), data: goMapOrder(data), total_count: data.length };
      }),
    },
    {
      method: 'GET',
      path: '/workloads/:uid/metrics/iteration-times',
      name: 'iterationTimes',
      handler: wrapTraining((req) => {
        const range = msRange(req);
        const w = workloadByUid(req);
        const source = sourceFilter(req);
        // One point per iteration, the earliest timestamp over the sources asked for.
        const earliest = new Map<number, { ts: number; source: TrainingSource }>();
        if (w) {
          for (const s of source ? [source] : w.sources) {
            if (!w.sources.includes(s)) continue;
            for (const it of loggedIterations(w, now())) {
              const ts = iterationTimestampMs(w, it, s);
              const prev = earliest.get(it);
              if (ts <= now() && (!prev || ts < prev.ts)) earliest.set(it, { ts, source: s });
            }
          }
        }
        const data = [...earliest]
          .filter(([, e]) => !range || (e.ts >= range.start && e.ts <= range.end))
          .flatMap(([it, e]) => {
            const base = { timestamp: e.ts, iteration: it, data_source: e.source };
            const points = [{ metric_name: 'iteration', value: it, ...base }];
            if (w?.targetIteration) points.push({ metric_name: 'target_iteration', value: w.targetIteration, ...base });
            return points;
          });
        return { workload_uid: req.params.uid, ...(source ? { data_source: source } : {}), data: goMapOrder(data), total_count: data.length };
      }),
    },
    {
      method: 'GET',
      path: '/nodes/:name/gpuMetrics',
      name: 'nodeGpuMetrics',
      handler: wrap((req) => {
        const cluster = clusterOf(req);
        const node = req.params.name!;
        const range = secondsRange(req);
        const residents = fleet.workloads.filter((w) => w.cluster === cluster && workloadNodes(w).includes(node));
        if (residents.length === 0) return { gpu_utilization: graph(0, '%', []), gpu_allocation_rate: graph(0, '%', []) };
        const holderAt = (gpuId: number, t: number) =>
          residents.find((w) => isActiveAt(w, t * 1000, now()) && workloadDevicesOnNode(w, node).includes(gpuId)) ?? null;
        const devices = Array.from({ length: GPUS_PER_NODE }, (_, gpuId) => ({
          labels: { gpu_id: String(gpuId) },
          values: rangeSeries(
            range,
            () => true,
            (t) => {
              const w = holderAt(gpuId, t);
              return w ? deviceGpuUtilizationPercent(w, node, gpuId, t) : 0;
            },
          ),
        }));
        const allocation = {
          labels: { primus_lens_node_name: node },
          values: rangeSeries(
            range,
            () => true,
            (t) => {
              const held = Array.from({ length: GPUS_PER_NODE }, (_, g) => holderAt(g, t)).filter(Boolean).length;
              return (100 * held) / GPUS_PER_NODE;
            },
          ),
        };
        return { gpu_utilization: graph(0, '%', devices), gpu_allocation_rate: graph(0, '%', [allocation]) };
      }),
    },
    {
      method: 'GET',
      path: '/workload-diag/:uid/pods',
      name: 'diagPods',
      handler: wrap((req) => {
        const w = requireWorkload(req);
        return {
          pods: w.pods.map((p) => ({
            uid: p.podUid,
            name: p.podName,
            namespace: p.namespace,
            node_name: p.nodeName,
            ip: p.ip ?? '',
            gpu_allocated: p.gpuAllocated,
            gpu_model: p.gpuModel,
            phase: p.phase,
            running: p.phase === 'Running' && p.endedAtMs === null,
            container_image: p.image,
            restart_count: p.restartCount,
            ...(p.nodeName ? { running_periods: [{ start_at: rfc3339(p.createdAtMs), ...(p.endedAtMs ? { end_at: rfc3339(p.endedAtMs) } : {}) }] } : {}),
          })),
        };
      }),
    },
    {
      method: 'GET',
      path: '/pods/:podUid/gpu-history',
      name: 'podGpuHistory',
      handler: wrap((req) => {
        const cluster = req.query.get('cluster');
        if (!cluster) throw new LensError(4001, 'cluster is required');
        if (!knownCluster(cluster)) throw new LensError(4001, `cluster "${cluster}" not found`);
        const owner = fleet.workloads.find((w) => w.cluster === cluster && w.pods.some((p) => p.podUid === req.params.podUid));
        const pod = owner?.pods.find((p) => p.podUid === req.params.podUid);
        if (!owner || !pod) throw new LensError(4004, 'pod not found');
        const granularity = req.query.get('granularity') ?? 'hourly';
        const bucketMs = { minute: 60_000, hourly: 3_600_000, daily: 86_400_000 }[granularity];
        if (!bucketMs) throw new LensError(4001, `invalid granularity ${granularity}`);
        const endMs = req.query.get('end_time') ? Date.parse(req.query.get('end_time')!) : now();
        const startMs = req.query.get('start_time') ? Date.parse(req.query.get('start_time')!) : endMs - intParam(req, 'hours', 24) * 3_600_000;
        if (Number.isNaN(startMs) || Number.isNaN(endMs)) throw new LensError(4001, 'invalid time format, expected RFC3339');
        const points = [];
        for (let t = Math.ceil(startMs / bucketMs) * bucketMs; t <= endMs; t += bucketMs) {
          if (t < pod.createdAtMs || t > Math.min(pod.endedAtMs ?? now(), now())) continue;
          const devices = Array.from({ length: pod.gpuAllocated }, (_, g) => deviceGpuUtilizationPercent(owner, pod.nodeName, g, toSec(t)));
          points.push({
            timestamp: rfc3339(t),
            gpu_utilization: Math.round((devices.reduce((a, b) => a + b, 0) / devices.length) * 10) / 10,
            memory_used_mb: Math.round(nodeGpuMemoryUtilizationPercent(owner, pod.nodeName, toSec(t)) * 1966.08),
            power_watts: nodeGpuPowerWatts(owner, pod.nodeName, toSec(t)),
            temperature_celsius: 55 + Math.round(devices[0]! / 5),
          });
        }
        return { pod_uid: pod.podUid, pod_name: pod.podName, granularity, data_points: points };
      }),
    },
    ...(opts.unifiedTrainingMetrics === false
      ? []
      : ([
          {
            method: 'GET',
            path: '/training-metrics',
            name: 'trainingMetricsList',
            handler: wrap((req) => {
              const category = req.query.get('category') || null;
              const agg = req.query.get('agg_level') || null;
              const metrics = UNIFIED_METRICS.filter((m) => (!category || m.category === category) && (!agg || m.agg_level === agg));
              return { metrics, total_count: metrics.length, categories: [...new Set(metrics.map((m) => m.category))] };
            }),
          },
          {
            method: 'GET',
            path: '/training-metrics/data',
            name: 'trainingMetricsData',
            handler: wrap((req) => {
              const uid = req.query.get('workload_uid') ?? '';
              const names = req.query.get('metrics') ?? '';
              if (!uid) throw new LensError(4001, 'workload_uid is required');
              if (!names) throw new LensError(4001, 'metrics is required');
              const rawStart = req.query.get('start');
              const rawEnd = req.query.get('end');
              if (!rawStart || !rawEnd) throw new LensError(4001, 'start and end timestamps are required');
              if (!/^-?\d+$/.test(rawStart)) throw new LensError(4001, 'invalid start timestamp');
              if (!/^-?\d+$/.test(rawEnd)) throw new LensError(4001, 'invalid end timestamp');
              const rawStep = req.query.get('step');
              if (rawStep !== null && rawStep !== '' && !(/^\d+$/.test(rawStep) && Number(rawStep) > 0))
                throw new LensError(4001, 'invalid step value, must be positive integer');
              const defs =
                names === 'all'
                  ? UNIFIED_METRICS
                  : names
                      .split(',')
                      .map((n) => n.trim())
                      .filter(Boolean)
                      .map((n) => {
                        const def = UNIFIED_METRICS.find((m) => m.name === n);
                        if (!def) throw new LensError(4001, `unknown metric: ${n}. Use the training_metrics_list endpoint to discover available metrics.`);
                        return def;
                      });
              if (defs.length === 0) throw new LensError(4001, 'no valid metrics specified');
              const range = { start: Number(rawStart), end: Number(rawEnd), step: rawStep ? Number(rawStep) : 60 };
              // An unknown UID has no samples in Prometheus: every metric answers empty series.
              const w = fleet.workloads.find((x) => x.uid === uid) ?? null;
              const active = (t: number) => (w ? isActiveAt(w, t * 1000, now()) : false);
              const results = defs.map((def) => {
                const series = w ? unifiedSeries(def.name, w, range, active) : [];
                return {
                  name: def.name,
                  display_name: def.display_name,
                  category: def.category,
                  unit: def.unit,
                  agg_level: def.agg_level,
                  series: goMapOrder(series),
                };
              });
              return { workload_uid: uid, start: range.start, end: range.end, step: range.step, results, total_count: results.length };
            }),
          },
        ] satisfies RouteDef[])),
    {
      method: 'GET',
      path: '/gpu-aggregation/clusters',
      name: 'clusters',
      handler: wrap(() => [...CLUSTERS]),
    },
  ];

  // ---- auth and proxy checks ----------------------------------------------------------------

  const cookieToken = (req: SimRequest): string | null => {
    const raw = req.headers.cookie;
    if (!raw) return null;
    for (const part of raw.split(';')) {
      const [k, ...v] = part.trim().split('=');
      if (k === 'Token') return v.join('=');
    }
    return null;
  };

  const safeError = (status: number, errorCode: string, errorMessage: string): SimResponse => ({ status, body: { errorCode, errorMessage } });

  const authenticate = (req: SimRequest): SimResponse | null => {
    if (auth.mode === 'cookie') {
      if (!req.headers.cookie) return { status: 401, body: { code: 401, message: 'authentication required' } };
      if (cookieToken(req) !== auth.token) return { status: 401, body: { code: 401, message: 'authentication failed' } };
      return null;
    }
    if (auth.mode === 'bearer') {
      const header = req.headers.authorization;
      const bearer = header?.startsWith('Bearer ') ? header.slice(7) : null;
      const presented = bearer ?? cookieToken(req);
      if (!presented) return safeError(401, 'Primus.00009', 'token not present');
      if (presented !== auth.token) return safeError(401, 'Primus.00009', 'token is invalid');
      const cluster = req.query.get('cluster');
      if (!cluster) return safeError(400, 'Primus.00002', 'cluster query parameter is required for lens-compat requests');
      if (withoutAddon.has(cluster)) {
        return safeError(404, 'Primus.00050', `primus-robust addon is not installed on cluster "${cluster}"; metrics and logs endpoints are unavailable`);
      }
    }
    return null;
  };

  // ---- faults, in the shapes this deployment would produce ----------------------------------

  const renderFault = (fault: Fault, req: SimRequest): SimResponse => {
    const legacyRoute = legacy && TRAINING_ROUTES.has(req.route);
    switch (fault.kind) {
      case 'rate_limit': {
        // Lens has no limiter of its own; a 429 comes from the gateway in front of it.
        const retryAfter = fault.retryAfterSeconds ?? 1;
        return {
          status: 429,
          headers: { 'retry-after': String(retryAfter), 'content-type': 'text/html' },
          rawText:
            '<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n',
        };
      }
      case 'status': {
        const code = fault.status ?? 503;
        // A status of 1000 and above is a Lens meta.code: the handler error arrives as HTTP 200.
        if (code >= 1000) {
          if (legacyRoute) return { status: code >= 5000 ? 500 : 400, body: { error: `simulated error ${code}` } };
          // An injected 5xxx is a typed internal error; "Unknown error" is only for untyped failures (bad parameters).
          return envelopeError(code, code === 4004 ? 'workload not found' : code >= 5000 ? 'internal error' : 'simulated error');
        }
        if (code === 502 || code === 503 || code === 504) {
          return {
            status: code,
            headers: { 'content-type': 'text/plain' },
            rawText: 'upstream connect error or disconnect/reset before headers. reset reason: connection termination',
          };
        }
        return { status: code, body: { error: http.STATUS_CODES[code] ?? 'error' } };
      }
      case 'malformed':
        return { status: 200, headers: { 'content-type': 'application/json' }, rawText: '{"meta":{"code":2000,"message":"OK"},"data":{"data":[{"kind":"PyTor' };
      case 'empty':
        return { status: 200, headers: { 'content-type': 'application/json' }, rawText: '' };
      case 'auth':
        return auth.mode === 'bearer'
          ? safeError(401, 'Primus.00009', 'token is invalid')
          : { status: 401, body: { code: 401, message: 'authentication failed' } };
      default:
        return envelopeError(5000, 'Unknown error');
    }
  };

  const handle = await startSimulator(
    {
      name: 'primus-lens',
      routes: routes.map((r) => ({ ...r, path: `${prefix}${r.path}` })),
      renderFault,
      authenticate,
      notFound: (req) => ({ status: 404, body: { error: `endpoint not found: ${req.method} ${req.url.pathname.slice(prefix.length) || '/'}` } }),
    },
    opts.port ?? 0,
  );
  return Object.assign(handle, { fleet, prefix, baseUrl: `${handle.url}${prefix.slice(0, -'/v1'.length)}` });
}
