import { UpstreamError } from '../../domain/errors.js';
import { metricDefinition, rawName } from '../../domain/metric-catalog.js';
import type { JobRecord, JobStatus, MetricUnit, NodeRecord, SeriesData, SeriesPoint, SystemMetric } from '../../domain/types.js';
import { epochSecondsToDate, finiteOrNull, percentToRatio, teraToBase } from '../../domain/units.js';
import { reportShapeMismatch } from '../shape-watch.js';
import type { JobDetailResult } from '../provider.js';
import { metricsGraphSchema, type UnifiedData, type LensPod, type MetricsGraph, type WorkloadDetail, type WorkloadListItem } from './wire.js';

/** The `source` of every series this adapter writes. */
export const SOURCE = 'primus-lens';

export const STATUS: Readonly<Record<string, JobStatus>> = {
  Running: 'RUNNING',
  Pending: 'PENDING',
  Done: 'SUCCEEDED',
  Failed: 'FAILED',
};

/**
 * `Deleted` says the Kubernetes object is gone, not how the run ended. Lens keeps the pods' last
 * phases, so the last known status is read from them: all Succeeded = SUCCEEDED, any Failed =
 * FAILED, still Running/Pending when deleted = STOPPED; rawStatus stays "Deleted".
 */
export function lastKnownStatus(pods: LensPod[]): JobStatus {
  const phases = latestPods(pods).map((p) => p.phase ?? '');
  if (phases.length === 0) return 'UNKNOWN';
  if (phases.some((p) => p === 'Failed')) return 'FAILED';
  if (phases.every((p) => p === 'Succeeded')) return 'SUCCEEDED';
  if (phases.some((p) => p === 'Running' || p === 'Pending')) return 'STOPPED';
  return 'UNKNOWN';
}

export const SYSTEM_METRICS: readonly SystemMetric[] = [
  'GPU_UTILIZATION',
  'GPU_MEMORY_UTILIZATION',
  'GPU_POWER',
  'CPU_USAGE',
  'MEMORY_USED',
  'DISK_READ_RATE',
  'DISK_WRITE_RATE',
  'RDMA_RECEIVE_RATE',
  'RDMA_TRANSMIT_RATE',
  'MODEL_FLOPS_PER_GPU',
];

/** Per-node graphs of /workloads/{uid}/metrics (keyed by display name, see the catalog). */
export const NODE_GRAPHS = new Set<SystemMetric>(['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION', 'GPU_POWER']);

/** Above any accelerator's dense peak (TFLOP/s): a "tflops" value this high is not per GPU. */
const MAX_TFLOPS_PER_GPU = 5000;

/**
 * The job's achieved model FLOP/s per GPU from the TrainingPerformance graph of
 * /workloads/{uid}/metrics: its series labelled "tflops" (the label Lens puts in
 * primus_lens_node_name). Null when the graph is absent (the workload logs no performance), so the
 * metric is not claimed as covered.
 */
export function trainingFlops(graphs: Record<string, unknown>, providerId: string, workloadUid: string, step: number): SeriesData | null {
  const rawName = lensRawName('MODEL_FLOPS_PER_GPU');
  if (!(rawName in graphs)) return null;
  const parsed = metricsGraphSchema.safeParse(graphs[rawName]);
  if (!parsed.success) throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `unexpected shape of "${rawName}" from workloads/{uid}/metrics`);
  const tflops = parsed.data.series.find((s) => s.labels.primus_lens_node_name === 'tflops');
  const points = tflops ? graphPoints(tflops, teraToBase) : [];
  const over = points.filter((p) => p.value !== null && p.value > MAX_TFLOPS_PER_GPU * 1e12).length;
  if (over > 0) {
    reportShapeMismatch({
      providerId,
      assumption: 'primus-lens.tflops-per-gpu',
      detail: `workload ${workloadUid}: ${over} TrainingPerformance tflops values above ${MAX_TFLOPS_PER_GPU} (a job total, not per GPU?)`,
    });
  }
  return {
    kind: 'system',
    name: 'MODEL_FLOPS_PER_GPU',
    rawName: `${rawName}/tflops`,
    unit: 'FLOPS',
    scope: 'JOB',
    nodeExternalId: null,
    gpuIndex: null,
    source: SOURCE,
    stage: null,
    keyedBy: 'time',
    meta: { rawUnit: 'TFLOP/s', aggregation: 'per GPU, as the training framework reports it (our reading: unconfirmed)', stepSeconds: step },
    points,
  };
}

/** Source of node-wide device series (older Lens): kept apart from the workload's own. */
export const NODE_WIDE_SOURCE = 'primus-lens:node-wide';

interface UnifiedSpec {
  /** Lens' names in its training-metrics catalog (Lens/modules/api/pkg/api/unified_training_metrics.go). */
  names: string[];
  /** device: one series per gpu_id; pod: per pod (and container), summed per node; node: per node. */
  level: 'device' | 'pod' | 'node';
  /** The catalog's unit for these names; anything else is reported as a shape mismatch. */
  rawUnit: string;
  convert: (v: unknown) => number | null;
}

/** What the unified route serves, per canonical metric. */
export const UNIFIED: Partial<Record<SystemMetric, UnifiedSpec>> = {
  GPU_UTILIZATION: { names: [rawName('GPU_UTILIZATION', 'PRIMUS_LENS', 'unified')], level: 'device', rawUnit: '%', convert: percentToRatio },
  GPU_POWER: { names: [rawName('GPU_POWER', 'PRIMUS_LENS', 'unified')], level: 'device', rawUnit: 'W', convert: finiteOrNull },
  CPU_USAGE: { names: [rawName('CPU_USAGE', 'PRIMUS_LENS', 'unified')], level: 'pod', rawUnit: 'cores', convert: finiteOrNull },
  MEMORY_USED: { names: [rawName('MEMORY_USED', 'PRIMUS_LENS', 'unified')], level: 'pod', rawUnit: 'bytes', convert: finiteOrNull },
  DISK_READ_RATE: { names: [rawName('DISK_READ_RATE', 'PRIMUS_LENS', 'unified')], level: 'pod', rawUnit: 'bytes/s', convert: finiteOrNull },
  DISK_WRITE_RATE: { names: [rawName('DISK_WRITE_RATE', 'PRIMUS_LENS', 'unified')], level: 'pod', rawUnit: 'bytes/s', convert: finiteOrNull },
  RDMA_RECEIVE_RATE: { names: [rawName('RDMA_RECEIVE_RATE', 'PRIMUS_LENS', 'unified')], level: 'node', rawUnit: 'bytes/s', convert: finiteOrNull },
  RDMA_TRANSMIT_RATE: { names: [rawName('RDMA_TRANSMIT_RATE', 'PRIMUS_LENS', 'unified')], level: 'node', rawUnit: 'bytes/s', convert: finiteOrNull },
};
export const DEVICE_IDS_METRIC = rawName('GPU_UTILIZATION', 'PRIMUS_LENS', 'unified');

export function lensRawName(metric: SystemMetric): string {
  return rawName(metric, 'PRIMUS_LENS', 'workload metrics');
}

/**
 * The GPU model of a workload: `gpu_allocation` is GPU-hours per model, so the model with the most
 * hours. Lens fills `{"AMD_Instinct_MI300X_OAM": 8}` when its allocation lookup fails; that
 * placeholder cannot be told apart from real data and is read like any other answer.
 */
export function dominantModel(allocation: Record<string, number>): string | null {
  let best: string | null = null;
  for (const [model, hours] of Object.entries(allocation)) if (best === null || hours > allocation[best]!) best = model;
  return best;
}

/** The latest pod per name: a restarted PyTorchJob pod keeps its name and gets a new uid. */
export function latestPods(pods: LensPod[]): LensPod[] {
  const byName = new Map<string, LensPod>();
  for (const pod of pods) {
    const seen = byName.get(pod.podName);
    if (!seen || (pod.createdAt ?? 0) >= (seen.createdAt ?? 0)) byName.set(pod.podName, pod);
  }
  return [...byName.values()];
}

/** GPUs the workload holds per node (pods not yet scheduled have no node and are left out). */
export function gpusPerNode(detail: WorkloadDetail): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of latestPods(detail.pods)) {
    if (!pod.nodeName) continue;
    out.set(pod.nodeName, (out.get(pod.nodeName) ?? 0) + (pod.gpuAllocated ?? 0));
  }
  return out;
}

export function mapStatus(raw: string): JobStatus {
  return STATUS[raw] ?? 'UNKNOWN';
}

/** What a workload's list row and its detail both say of it, as a job record. */
function workloadJob(
  w: { uid: string; namespace: string; name: string; gpu_allocation: Record<string, number> },
  startSeconds: unknown,
  status: JobStatus,
  rawStatus: string | null,
): JobRecord {
  const created = epochSecondsToDate(startSeconds);
  return {
    externalId: w.uid,
    projectExternalId: w.namespace,
    projectName: w.namespace,
    name: w.name,
    status,
    rawStatus,
    // Lens' start is when it first saw the workload; a Pending one has not started yet.
    createdAt: created,
    startedAt: status === 'PENDING' ? null : created,
    finishedAt: null,
    gpuType: dominantModel(w.gpu_allocation),
    gpuCount: null,
  };
}

export function jobFromListItem(item: WorkloadListItem): JobRecord {
  // end_at is the row's last update (non-zero while Running); the real end is only in the detail.
  return { ...workloadJob(item, item.start_at, mapStatus(item.status), item.status), gpuCount: item.gpu_allocated ?? null };
}

/**
 * A job from its detail and (when Lens still lists it) its list row: the status is the row's, or
 * the pods' last known one for a Deleted workload, UNKNOWN without a row.
 */
export function jobFromDetail(detail: WorkloadDetail, item: WorkloadListItem | null, nodes: NodeRecord[]): JobDetailResult {
  const status = item ? (item.status === 'Deleted' ? lastKnownStatus(detail.pods) : mapStatus(item.status)) : 'UNKNOWN';
  return {
    ...workloadJob(detail, detail.startTime, status, item?.status ?? null),
    finishedAt: epochSecondsToDate(detail.endTime),
    gpuCount: item?.gpu_allocated ?? nodes.reduce((n, node) => n + node.gpus.length, 0),
    nodes,
  };
}

/** A node's per-device GPU utilization graph (percent) as ratio points, from..to when given. */
export function deviceUtilizationPoints(device: MetricsGraph['series'][number], from?: number, to?: number): SeriesPoint[] {
  return graphPoints(device, percentToRatio, from, to);
}

/** A workload metrics graph's points in the canonical unit: a percent graph as ratios, anything else as given. */
export function workloadGraphPoints(graph: MetricsGraph['series'][number], unit: MetricUnit): SeriesPoint[] {
  return graphPoints(graph, unit === 'RATIO' ? percentToRatio : finiteOrNull);
}

export function graphPoints(graph: MetricsGraph['series'][number], convert: (v: unknown) => number | null, from?: number, to?: number): SeriesPoint[] {
  const points: SeriesPoint[] = [];
  for (const { timestamp, value } of graph.values) {
    const ms = timestamp * 1000;
    if ((from !== undefined && ms < from) || (to !== undefined && ms > to)) continue;
    points.push({ timestamp: epochSecondsToDate(timestamp), step: null, value: convert(value) });
  }
  return points.sort((a, b) => a.timestamp!.getTime() - b.timestamp!.getTime());
}

type UnifiedResult = UnifiedData['results'][number];

/**
 * One unified-route result as canonical series. Device series keep the node's gpu_id as the GPU
 * index (the same numbering the node's GPUs get); pod series are summed over the workload's pods
 * on each node (a pod label no pod of the workload has is left out and reported).
 */
export function unifiedToSeries(
  providerId: string,
  metric: SystemMetric,
  spec: UnifiedSpec,
  result: UnifiedResult,
  uid: string,
  podNode: Map<string, string | null>,
  devices: Map<string, Set<number>>,
  step: number,
): SeriesData[] {
  if (result.unit && result.unit !== spec.rawUnit) {
    reportShapeMismatch({ providerId, assumption: 'primus-lens.unified-metric-unit', detail: `${result.name} in ${result.unit}, read as ${spec.rawUnit}` });
    return [];
  }
  const base = {
    kind: 'system' as const,
    name: metric,
    rawName: result.name,
    unit: metricDefinition(metric).unit,
    source: SOURCE,
    stage: null,
    keyedBy: 'time' as const,
  };
  const meta = { rawUnit: spec.rawUnit, route: 'training-metrics/data', stepSeconds: step };
  const out: SeriesData[] = [];
  if (spec.level === 'device' || spec.level === 'node') {
    for (const s of result.series) {
      const node = s.labels.primus_lens_node_name;
      const owner = s.labels.workload_uid;
      if (!node || (owner !== undefined && owner !== uid)) {
        reportShapeMismatch({
          providerId,
          assumption: 'primus-lens.unified-series-labels',
          detail: `${result.name}: a series without primus_lens_node_name or of workload ${owner}`,
        });
        continue;
      }
      if (spec.level === 'node') {
        out.push({
          ...base,
          scope: 'NODE',
          nodeExternalId: node,
          gpuIndex: null,
          meta: { ...meta, aggregation: 'per node' },
          points: graphPoints(s, spec.convert),
        });
        continue;
      }
      if (!/^\d+$/.test(s.labels.gpu_id ?? '')) continue;
      const gpu = Number(s.labels.gpu_id);
      devices.set(node, (devices.get(node) ?? new Set()).add(gpu));
      out.push({
        ...base,
        scope: 'GPU',
        nodeExternalId: node,
        gpuIndex: gpu,
        meta: { ...meta, gpuIndex: "the node's gpu_id", pod: s.labels.pod_name ?? null },
        points: graphPoints(s, spec.convert),
      });
    }
    return out;
  }
  const perNode = new Map<string, Map<number, number | null>>();
  const pods = new Map<string, Set<string>>();
  for (const s of result.series) {
    const pod = s.labels.pod ?? '';
    const node = podNode.get(pod);
    if (!node) {
      reportShapeMismatch({
        providerId,
        assumption: 'primus-lens.unified-pod-label',
        detail: `${result.name}: pod "${pod}" is not one of the workload's pods`,
      });
      continue;
    }
    pods.set(node, (pods.get(node) ?? new Set()).add(pod));
    const sums = perNode.get(node) ?? new Map<number, number | null>();
    perNode.set(node, sums);
    for (const { timestamp, value } of s.values) {
      const v = spec.convert(value);
      const prev = sums.get(timestamp);
      sums.set(timestamp, v === null || prev === null ? null : (prev ?? 0) + v);
    }
  }
  for (const [node, sums] of perNode) {
    out.push({
      ...base,
      scope: 'NODE',
      nodeExternalId: node,
      gpuIndex: null,
      meta: { ...meta, aggregation: "sum over the workload's pods (and containers) on this node", pods: [...(pods.get(node) ?? [])].sort() },
      points: [...sums].sort((a, b) => a[0] - b[0]).map(([t, value]) => ({ timestamp: epochSecondsToDate(t), step: null, value })),
    });
  }
  return out;
}
