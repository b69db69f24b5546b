// Primus-Lens simulator: the payloads routes answer with (list rows, pods, Grafana-style graphs, series).
import {
  deviceGpuUtilizationPercent,
  gpuAllocationHours,
  isActiveAt,
  latestPods,
  nodeGpuUtilizationPercent,
  deviceGpuPowerWatts,
  podCpuCores,
  podMemoryBytes,
  podFsBytesPerSecond,
  nodeRdmaBytesPerSecond,
  trainingPoints,
  workloadNodes,
  type SimPod,
  type SimWorkload,
  type TrainingSource,
} from './fleet.js';
import { STATUS_COLOR, toSec } from './requests.js';
import type { LensRequests } from './requests.js';

/** Builders of the payloads the routes answer with. */
export function lensPayloads(ctx: LensRequests) {
  const { now } = ctx;
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
  return { visibleTrainingPoints, listItem, podView, graph, rangeSeries, unifiedSeries };
}
export type LensContext = LensRequests & ReturnType<typeof lensPayloads>;
