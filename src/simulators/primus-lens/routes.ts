// Primus-Lens simulator: the gin routes, in three groups (workloads, metrics and iteration times,
// nodes, pods, training metrics and clusters).
import type { RouteDef } from '../kit.js';
import {
  CLUSTERS,
  GPUS_PER_NODE,
  deviceGpuUtilizationPercent,
  gpuAllocationHours,
  isActiveAt,
  iterationTimestampMs,
  loggedIterations,
  nodeGpuMemoryUtilizationPercent,
  nodeGpuPowerWatts,
  nodeGpuUtilizationPercent,
  workloadDevicesOnNode,
  workloadNodes,
  type TrainingSource,
  currentIteration,
  trainingValue,
} from './fleet.js';
import { UNIFIED_METRICS, LensError, toSec, rfc3339 } from './requests.js';
import type { LensContext } from './payloads.js';

/** Workload lists, metadata, detail, hierarchy and the workload metrics route. */
export function workloadRoutes(ctx: LensContext) {
  const { now, fleet, wrap, clusterOf, requireWorkload, intParam, secondsRange, listItem, podView, graph, rangeSeries } = ctx;
  return [
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
  ];
}

/** The training-metrics routes (sources, available, data), iteration times, and a node's GPU metrics. */
export function metricRoutes(ctx: LensContext) {
  const {
    now,
    fleet,
    wrap,
    wrapTraining,
    clusterOf,
    workloadByUid,
    msRange,
    secondsRange,
    sourceFilter,
    metricFilter,
    goMapOrder,
    visibleTrainingPoints,
    graph,
    rangeSeries,
  } = ctx;
  return [
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
  ];
}

/** Workload diagnostics' pods, a pod's GPU history, the unified training metrics, and clusters. */
export function podAndClusterRoutes(ctx: LensContext) {
  const { now, fleet, wrap, knownCluster, requireWorkload, intParam, goMapOrder, unifiedSeries, opts } = ctx;
  return [
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
}
