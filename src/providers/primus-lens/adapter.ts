// The Primus-Lens (AMD) adapter. Lens has no projects: a workload's Kubernetes namespace is the
// tenancy unit its UI filters by, so Project = namespace (within the configured cluster, or
// Lens' default cluster when none is set). Job = top-level workload (uid); Node = a node its pods
// ran on; training metrics and progress come from the four seed-003 routes.
import { requireSecret, type PrimusLensConfig, type SecretSource } from '../../config/index.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import { metricDefinition } from '../../domain/metric-catalog.js';
import type {
  GpuRecord,
  JobPage,
  JobRecord,
  JobRef,
  JobStatus,
  MetricFetchRequest,
  NodeRecord,
  ProgressRecord,
  ProjectRecord,
  SeriesData,
  SeriesPoint,
  SystemMetric,
  TrainingFetchRequest,
} from '../../domain/types.js';
import { epochMillisToDate, epochSecondsToDate, finiteOrNull, percentToRatio } from '../../domain/units.js';
import type { JobDetailResult, ProviderAdapter, SystemMetricsResult } from '../provider.js';
import { reportShapeMismatch } from '../shape-watch.js';
import { LensClient, isLensNotFound } from './client.js';
import {
  availableMetricsSchema,
  dataSourcesSchema,
  diagPodsSchema,
  metricsDataSchema,
  metricsGraphSchema,
  nodeGpuMetricsSchema,
  workloadDetailSchema,
  workloadListSchema,
  workloadMetadataSchema,
  workloadMetricsSchema,
  unifiedDataSchema,
  type UnifiedData,
  type LensPod,
  type MetricsGraph,
  type TrainingPoint,
  type WorkloadDetail,
  type WorkloadListItem,
} from './wire.js';

const PAGE_SIZE = 100;
const SOURCE = 'primus-lens';
const PROMETHEUS_MAX_POINTS = 11_000;
/** How far back fetchProgress first looks for iteration times (a bounded answer for long runs). */
const PROGRESS_WINDOW_MS = 30 * 60_000;
const CLOCK_SKEW_MARGIN_MS = 24 * 3_600_000;
/** The stretch of iteration times the rate is measured over. */
const RATE_WINDOW_MS = 10 * 60_000;
/** Lens' iteration-times route reports these; the metrics routes never list them. */
const PROGRESS_METRICS = new Set(['iteration', 'target_iteration']);

const STATUS: Record<string, JobStatus> = {
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
function lastKnownStatus(pods: LensPod[]): JobStatus {
  const phases = latestPods(pods).map((p) => p.phase ?? '');
  if (phases.length === 0) return 'UNKNOWN';
  if (phases.some((p) => p === 'Failed')) return 'FAILED';
  if (phases.every((p) => p === 'Succeeded')) return 'SUCCEEDED';
  if (phases.some((p) => p === 'Running' || p === 'Pending')) return 'STOPPED';
  return 'UNKNOWN';
}

const SYSTEM_METRICS: readonly SystemMetric[] = [
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
const NODE_GRAPHS = new Set<SystemMetric>(['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION', 'GPU_POWER']);

/** Above any accelerator's dense peak (TFLOP/s): a "tflops" value this high is not per GPU. */
const MAX_TFLOPS_PER_GPU = 5000;

/**
 * The job's achieved model FLOP/s per GPU from the TrainingPerformance graph of
 * /workloads/{uid}/metrics: its series labelled "tflops" (the label Lens puts in
 * primus_lens_node_name). Null when the graph is absent (the workload logs no performance), so the
 * metric is not claimed as covered.
 */
function trainingFlops(graphs: Record<string, unknown>, providerId: string, workloadUid: string, step: number): SeriesData | null {
  const rawName = lensRawName('MODEL_FLOPS_PER_GPU');
  if (!(rawName in graphs)) return null;
  const parsed = metricsGraphSchema.safeParse(graphs[rawName]);
  if (!parsed.success) throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `unexpected shape of "${rawName}" from workloads/{uid}/metrics`);
  const tflops = parsed.data.series.find((s) => s.labels.primus_lens_node_name === 'tflops');
  const points = tflops ? graphPoints(tflops, (v) => (typeof v === 'number' && Number.isFinite(v) ? v * 1e12 : null)) : [];
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
const NODE_WIDE_SOURCE = 'primus-lens:node-wide';

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
const UNIFIED: Partial<Record<SystemMetric, UnifiedSpec>> = {
  GPU_UTILIZATION: { names: ['gpu_utilization_by_device'], level: 'device', rawUnit: '%', convert: percentToRatio },
  GPU_POWER: { names: ['gpu_power_by_device'], level: 'device', rawUnit: 'W', convert: finiteOrNull },
  CPU_USAGE: { names: ['pod_cpu_usage'], level: 'pod', rawUnit: 'cores', convert: finiteOrNull },
  MEMORY_USED: { names: ['pod_memory_usage'], level: 'pod', rawUnit: 'bytes', convert: finiteOrNull },
  DISK_READ_RATE: { names: ['pod_read_bytes'], level: 'pod', rawUnit: 'bytes/s', convert: finiteOrNull },
  DISK_WRITE_RATE: { names: ['pod_write_bytes'], level: 'pod', rawUnit: 'bytes/s', convert: finiteOrNull },
  RDMA_RECEIVE_RATE: { names: ['rdma_rx_bandwidth_by_node'], level: 'node', rawUnit: 'bytes/s', convert: finiteOrNull },
  RDMA_TRANSMIT_RATE: { names: ['rdma_tx_bandwidth_by_node'], level: 'node', rawUnit: 'bytes/s', convert: finiteOrNull },
};
const DEVICE_IDS_METRIC = 'gpu_utilization_by_device';

function lensRawName(metric: SystemMetric): string {
  const raw = metricDefinition(metric).raw.PRIMUS_LENS;
  if (!raw) throw new Error(`${metric} has no Primus-Lens name in the catalog`);
  return raw.name;
}

/**
 * The GPU model of a workload: `gpu_allocation` is GPU-hours per model, so the model with the most
 * hours. Lens fills `{"AMD_Instinct_MI300X_OAM": 8}` when its allocation lookup fails; that
 * placeholder cannot be told apart from real data and is read like any other answer.
 */
function dominantModel(allocation: Record<string, number>): string | null {
  let best: string | null = null;
  for (const [model, hours] of Object.entries(allocation)) if (best === null || hours > allocation[best]!) best = model;
  return best;
}

/** The latest pod per name: a restarted PyTorchJob pod keeps its name and gets a new uid. */
function latestPods(pods: LensPod[]): LensPod[] {
  const byName = new Map<string, LensPod>();
  for (const pod of pods) {
    const seen = byName.get(pod.podName);
    if (!seen || (pod.createdAt ?? 0) >= (seen.createdAt ?? 0)) byName.set(pod.podName, pod);
  }
  return [...byName.values()];
}

/** GPUs the workload holds per node (pods not yet scheduled have no node and are left out). */
function gpusPerNode(detail: WorkloadDetail): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of latestPods(detail.pods)) {
    if (!pod.nodeName) continue;
    out.set(pod.nodeName, (out.get(pod.nodeName) ?? 0) + (pod.gpuAllocated ?? 0));
  }
  return out;
}

function mapStatus(raw: string): JobStatus {
  return STATUS[raw] ?? 'UNKNOWN';
}

function jobFromListItem(item: WorkloadListItem): JobRecord {
  const status = mapStatus(item.status);
  const created = epochSecondsToDate(item.start_at);
  return {
    externalId: item.uid,
    projectExternalId: item.namespace,
    projectName: item.namespace,
    name: item.name,
    status,
    rawStatus: item.status,
    // start_at is when Lens first saw the workload; a Pending one has not started yet.
    createdAt: created,
    startedAt: status === 'PENDING' ? null : created,
    // end_at is the row's last update (non-zero while Running); the real end is only in the detail.
    finishedAt: null,
    gpuType: dominantModel(item.gpu_allocation),
    gpuCount: item.gpu_allocated ?? null,
  };
}

function graphPoints(graph: MetricsGraph['series'][number], convert: (v: unknown) => number | null, from?: number, to?: number): SeriesPoint[] {
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
function unifiedToSeries(
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

export function createPrimusLensAdapter(config: PrimusLensConfig, secrets: SecretSource): ProviderAdapter {
  const providerId = config.id;
  const headers: Record<string, string> = {};
  // The SaFE proxy takes `Authorization: Bearer ak-…`; Lens' own middleware wants a Cookie header.
  if (config.tokenEnv) headers.authorization = `Bearer ${requireSecret(secrets, config.tokenEnv, providerId)}`;
  if (config.cookieEnv) headers.cookie = requireSecret(secrets, config.cookieEnv, providerId);
  const client = new LensClient({
    providerId,
    baseUrl: config.baseUrl,
    cluster: config.cluster,
    headers,
    timeoutMs: (config.timeoutSeconds ?? 30) * 1000,
  });

  const deletedStatuses = new Map<string, JobStatus>();
  async function deletedStatus(uid: string, signal: AbortSignal): Promise<JobStatus> {
    const known = deletedStatuses.get(uid);
    if (known) return known;
    let status: JobStatus = 'UNKNOWN';
    try {
      status = lastKnownStatus((await getDetail(uid, signal)).pods);
    } catch (err) {
      if (!isLensNotFound(err)) throw err;
    }
    deletedStatuses.set(uid, status);
    if (deletedStatuses.size > 10_000) deletedStatuses.delete(deletedStatuses.keys().next().value!);
    return status;
  }

  const getDetail = (uid: string, signal: AbortSignal) => client.get(`/workloads/${encodeURIComponent(uid)}`, {}, workloadDetailSchema, signal);

  /** The list item of a workload: the detail has no status, so it is looked up by namespace and name. */
  async function findListItem(detail: WorkloadDetail, signal: AbortSignal): Promise<WorkloadListItem | null> {
    const page = await client.get(
      '/workloads',
      { namespace: detail.namespace, name: detail.name, page_num: 1, page_size: PAGE_SIZE },
      workloadListSchema,
      signal,
    );
    return page.data.find((item) => item.uid === detail.uid) ?? null;
  }

  /** GPU model per node: one model for the workload, or (mixed models) each pod's from workload-diag. */
  async function modelsPerNode(detail: WorkloadDetail, nodes: string[], signal: AbortSignal): Promise<Map<string, string | null>> {
    const models = Object.keys(detail.gpu_allocation);
    if (models.length <= 1 || nodes.length === 0) return new Map(nodes.map((n) => [n, models[0] ?? null]));
    const diag = await client.get(`/workload-diag/${encodeURIComponent(detail.uid)}/pods`, {}, diagPodsSchema, signal);
    const seen = new Map<string, Set<string>>();
    for (const pod of diag.pods) {
      if (!pod.node_name || !pod.gpu_model) continue;
      seen.set(pod.node_name, (seen.get(pod.node_name) ?? new Set()).add(pod.gpu_model));
    }
    return new Map(nodes.map((n) => [n, seen.get(n)?.size === 1 ? [...seen.get(n)!][0]! : null]));
  }

  /**
   * The workload's nodes and GPUs. GPUs are numbered by the node's gpu_id wherever the unified
   * route names the devices (`devices`; undefined = look them up over the workload's last ten
   * minutes), so GPUs and their series share one numbering; a Lens without that route names
   * only counts, and then the GPUs are ordinals 0..n-1.
   */
  async function nodesOf(detail: WorkloadDetail, signal: AbortSignal, devices?: Map<string, Set<number>> | null): Promise<NodeRecord[]> {
    const perNode = gpusPerNode(detail);
    if (devices === undefined && perNode.size > 0) {
      const end = detail.endTime ? detail.endTime : Math.floor(Date.now() / 1000);
      const answer = await unifiedData(detail.uid, [DEVICE_IDS_METRIC], { start: end - 600, end, step: 60 }, signal);
      devices = null;
      if (answer) {
        const found = new Map<string, Set<number>>();
        for (const s of answer.results.find((r) => r.name === DEVICE_IDS_METRIC)?.series ?? []) {
          const node = s.labels.primus_lens_node_name;
          if (node && /^\d+$/.test(s.labels.gpu_id ?? '')) found.set(node, (found.get(node) ?? new Set()).add(Number(s.labels.gpu_id)));
        }
        if (found.size > 0) devices = found;
      }
    }
    const models = await modelsPerNode(detail, [...perNode.keys()], signal);
    return [...perNode].map(([node, count]) => {
      const ids = devices?.get(node);
      const indices = ids && ids.size > 0 ? [...ids].sort((a, b) => a - b) : Array.from({ length: count }, (_, i) => i);
      return {
        externalId: node,
        name: node,
        gpus: indices.map((index): GpuRecord => ({ index, model: models.get(node) ?? null, memoryTotalBytes: null })),
      };
    });
  }

  /**
   * Workload-scoped data from the unified route (/training-metrics/data): per-device GPU series
   * (workload_gpu_utilization{workload_uid}, labelled with the node's gpu_id) and the pods' CPU,
   * memory, filesystem and the nodes' RDMA throughput. null = this Lens has no such route (older
   * builds: the dispatcher's 404, or 4001 for a metric its catalog lacks).
   */
  async function unifiedData(uid: string, names: string[], range: { start: number; end: number; step: number }, signal: AbortSignal) {
    try {
      return await client.get('/training-metrics/data', { workload_uid: uid, metrics: names.join(','), ...range }, unifiedDataSchema, signal);
    } catch (err) {
      const e = err as { code?: string; details?: { upstreamCode?: string } };
      const routeMissing = e.code === 'UPSTREAM_NOT_FOUND' && e.details?.upstreamCode === undefined;
      if (routeMissing || e.details?.upstreamCode === '4001') return null;
      throw err;
    }
  }

  /** Node-wide per-device series (every workload on the node), for a Lens without the unified route. */
  async function nodeWideGpuSeries(
    job: JobRef,
    detail: WorkloadDetail,
    range: { start: number; end: number; step: number },
    signal: AbortSignal,
  ): Promise<SeriesData[]> {
    const from = (job.startedAt ?? epochSecondsToDate(detail.startTime))?.getTime();
    const to = (job.finishedAt ?? epochSecondsToDate(detail.endTime || null))?.getTime();
    const nodes = [...gpusPerNode(detail).keys()];
    const answers = await Promise.all(nodes.map((node) => client.get(`/nodes/${encodeURIComponent(node)}/gpuMetrics`, range, nodeGpuMetricsSchema, signal)));
    return nodes.flatMap((node, i) =>
      (answers[i]!.gpu_utilization?.series ?? [])
        .filter((s) => /^\d+$/.test(s.labels.gpu_id ?? ''))
        .map(
          (device): SeriesData => ({
            kind: 'system',
            name: 'GPU_UTILIZATION',
            rawName: 'gpu_utilization',
            unit: 'RATIO',
            scope: 'GPU',
            nodeExternalId: node,
            gpuIndex: Number(device.labels.gpu_id),
            // Its own source: these series are the node's, never the workload's own GPUs.
            source: NODE_WIDE_SOURCE,
            stage: null,
            keyedBy: 'time',
            meta: {
              rawUnit: '%',
              route: 'nodes/{name}/gpuMetrics',
              nodeWide: true,
              note: "node-wide: the device as the node reports it, whichever workload held it; this Lens has no workload-scoped per-device data (/training-metrics/data), so none of these is credited to the workload. gpuIndex is the node's gpu_id; points outside the workload's lifetime are dropped",
            },
            points: graphPoints(device, percentToRatio, from, to),
          }),
        ),
    );
  }

  async function iterationTimes(uid: string, range: { start: number; end: number } | null, signal: AbortSignal): Promise<TrainingPoint[]> {
    const query = range ? { start: range.start, end: range.end } : {};
    const answer = await client.get(`/workloads/${encodeURIComponent(uid)}/metrics/iteration-times`, query, metricsDataSchema, signal);
    return answer.data;
  }

  return {
    id: providerId,
    kind: 'PRIMUS_LENS',
    capabilities: {
      systemMetrics: SYSTEM_METRICS,
      perGpuSeries: true,
      trainingMetrics: true,
      progress: true,
      logs: false,
    },

    async listProjects(signal): Promise<ProjectRecord[]> {
      let namespaces: string[];
      try {
        namespaces = (await client.get('/workloadMetadata', {}, workloadMetadataSchema, signal)).namespaces;
      } catch (err) {
        // Refusals that would stop the workloads call too (auth, rate limit, time-out) are not a
        // missing or failing route: they fail this call as they are.
        const code = (err as { code?: string }).code;
        if (signal.aborted || code === 'UPSTREAM_AUTH' || code === 'UPSTREAM_RATE_LIMITED' || code === 'UPSTREAM_TIMEOUT') throw err;
        // Older Lens builds fail here; the workloads name their namespaces too (and every job
        // carries its projectName), so the job list never depends on this route.
        reportShapeMismatch({
          providerId,
          assumption: 'primus-lens.workload-metadata-route',
          detail: `/workloadMetadata failed (${(err as Error).message}); projects taken from the workloads' namespaces`,
        });
        const seen = new Set<string>();
        for (let pageNum = 1; pageNum <= 1000; pageNum++) {
          const page = await client.get('/workloads', { page_num: pageNum, page_size: PAGE_SIZE }, workloadListSchema, signal);
          for (const item of page.data) seen.add(item.namespace);
          if (pageNum * PAGE_SIZE >= page.total || page.data.length === 0) break;
        }
        namespaces = [...seen].sort();
      }
      return namespaces.map((ns) => ({ externalId: ns, name: ns, createdAt: null }));
    },

    async listJobs(cursor, signal): Promise<JobPage> {
      const pageNum = cursor === null ? 1 : Number(cursor);
      if (!Number.isInteger(pageNum) || pageNum < 1) throw new DomainError('BAD_INPUT', `"${cursor}" is not a Primus-Lens page cursor`);
      // Newest first: a workload created while paging pushes older ones down, so an item can be
      // seen twice across pages but never skipped.
      const page = await client.get('/workloads', { page_num: pageNum, page_size: PAGE_SIZE, order_by: 'start_at' }, workloadListSchema, signal);
      const jobs = page.data.map(jobFromListItem);
      // A deleted workload's last known status comes from its detail, once (it no longer changes).
      await Promise.all(
        jobs.map(async (job) => {
          if (job.rawStatus !== 'Deleted') return;
          job.status = await deletedStatus(job.externalId, signal);
        }),
      );
      return {
        jobs,
        nextCursor: pageNum * PAGE_SIZE < page.total && page.data.length > 0 ? String(pageNum + 1) : null,
      };
    },

    async getJob(ref, signal): Promise<JobDetailResult | null> {
      let detail: WorkloadDetail;
      try {
        detail = await getDetail(ref.externalId, signal);
      } catch (err) {
        if (isLensNotFound(err)) return null;
        throw err;
      }
      const [item, nodes] = await Promise.all([findListItem(detail, signal), nodesOf(detail, signal)]);
      const status = item ? (item.status === 'Deleted' ? lastKnownStatus(detail.pods) : mapStatus(item.status)) : 'UNKNOWN';
      const created = epochSecondsToDate(detail.startTime);
      return {
        externalId: detail.uid,
        projectExternalId: detail.namespace,
        projectName: detail.namespace,
        name: detail.name,
        status,
        rawStatus: item?.status ?? null,
        createdAt: created,
        startedAt: status === 'PENDING' ? null : created,
        finishedAt: epochSecondsToDate(detail.endTime),
        gpuType: dominantModel(detail.gpu_allocation),
        gpuCount: item?.gpu_allocated ?? nodes.reduce((n, node) => n + node.gpus.length, 0),
        nodes,
      };
    },

    async fetchSystemMetrics(job, request: MetricFetchRequest, signal): Promise<SystemMetricsResult> {
      const wanted = request.metrics.filter((m) => SYSTEM_METRICS.includes(m));
      if (wanted.length === 0) return { series: [], covered: [], from: request.from, to: request.to };
      const start = Math.floor(request.from.getTime() / 1000);
      const end = Math.ceil(request.to.getTime() / 1000);
      // Prometheus refuses more than 11,000 points per series; widen the step rather than fail.
      const step = Math.max(1, Math.round(request.stepSeconds), Math.ceil((end - start) / PROMETHEUS_MAX_POINTS));
      const range = { start, end, step };
      const uid = encodeURIComponent(job.externalId);

      const wantedUnified = wanted.flatMap((m) => UNIFIED[m]?.names ?? []);
      // The device list comes along whenever the route is asked at all, so GPUs keep one numbering.
      const unifiedNames = wantedUnified.length > 0 ? [...new Set([...wantedUnified, DEVICE_IDS_METRIC])] : [];
      const [graphs, detail, unified] = await Promise.all([
        wanted.some((m) => NODE_GRAPHS.has(m) || m === 'MODEL_FLOPS_PER_GPU')
          ? client.get(`/workloads/${uid}/metrics`, range, workloadMetricsSchema, signal)
          : Promise.resolve({} as Record<string, unknown>),
        getDetail(job.externalId, signal),
        unifiedNames.length > 0 ? unifiedData(job.externalId, unifiedNames, range, signal) : Promise.resolve(null),
      ]);

      const series: SeriesData[] = [];
      const covered: SystemMetric[] = [];
      for (const metric of wanted.filter((m) => NODE_GRAPHS.has(m))) {
        const rawName = lensRawName(metric);
        if (!(rawName in graphs)) continue;
        const parsed = metricsGraphSchema.safeParse(graphs[rawName]);
        if (!parsed.success) {
          throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `unexpected shape of "${rawName}" from workloads/{uid}/metrics`);
        }
        covered.push(metric);
        const unit = metricDefinition(metric).unit;
        for (const s of parsed.data.series) {
          const node = s.labels.primus_lens_node_name;
          if (!node) continue;
          series.push({
            kind: 'system',
            name: metric,
            rawName,
            unit,
            scope: 'NODE',
            nodeExternalId: node,
            gpuIndex: null,
            source: SOURCE,
            stage: null,
            keyedBy: 'time',
            meta: {
              rawUnit: parsed.data.config?.y_axis_unit ?? (unit === 'WATTS' ? 'W' : '%'),
              aggregation: "per node, mean over the workload's GPUs on it",
              stepSeconds: step,
            },
            points: graphPoints(s, unit === 'RATIO' ? percentToRatio : finiteOrNull),
          });
        }
      }

      if (wanted.includes('MODEL_FLOPS_PER_GPU')) {
        const flops = trainingFlops(graphs, providerId, job.externalId, step);
        if (flops) {
          covered.push('MODEL_FLOPS_PER_GPU');
          if (flops.points.length > 0) series.push(flops);
        }
      }

      const podNode = new Map<string, string | null>(latestPods(detail.pods).map((p) => [p.podName, p.nodeName ?? null]));
      const devices = new Map<string, Set<number>>();
      if (unified) {
        const results = new Map(unified.results.map((r) => [r.name, r]));
        for (const metric of wanted) {
          const spec = UNIFIED[metric];
          if (!spec) continue;
          const found = spec.names.map((n) => results.get(n)).filter((r) => r !== undefined);
          // Lens answers a failed query with empty series: data is claimed only where some came back.
          if (found.some((r) => r.series.length > 0) && !covered.includes(metric)) covered.push(metric);
          for (const r of found) series.push(...unifiedToSeries(providerId, metric, spec, r, job.externalId, podNode, devices, step));
        }
        if (!wanted.includes('GPU_UTILIZATION')) {
          const ids = results.get(DEVICE_IDS_METRIC);
          if (ids) unifiedToSeries(providerId, 'GPU_UTILIZATION', UNIFIED.GPU_UTILIZATION!, ids, job.externalId, podNode, devices, step);
        }
      } else if (wanted.includes('GPU_UTILIZATION')) {
        series.push(...(await nodeWideGpuSeries(job, detail, range, signal)));
      }
      // The nodes' GPUs in the series' numbering; a Lens without the unified route only has counts.
      const nodes = devices.size > 0 ? await nodesOf(detail, signal, devices) : unified === null ? await nodesOf(detail, signal, null) : undefined;
      return { series, covered, from: request.from, to: request.to, ...(nodes ? { nodes } : {}) };
    },

    async fetchTrainingMetrics(job, request: TrainingFetchRequest, signal): Promise<SeriesData[]> {
      const uid = encodeURIComponent(job.externalId);
      const sources = await client.get(`/workloads/${uid}/metrics/sources`, {}, dataSourcesSchema, signal);
      if (sources.data_sources.length === 0) return [];
      const available = await client.get(`/workloads/${uid}/metrics/available`, {}, availableMetricsSchema, signal);
      const requested = request.names ? new Set(request.names) : null;
      const names = available.metrics.map((m) => m.name).filter((n) => !PROGRESS_METRICS.has(n) && (!requested || requested.has(n)));
      if (names.length === 0) return [];

      const from = request.from?.getTime();
      const to = request.to?.getTime();
      // Lens applies a range only when both ends are given; a one-sided range is applied here.
      const bothEnds = from !== undefined && to !== undefined;
      const answer = await client.get(
        `/workloads/${uid}/metrics/data`,
        { metrics: [...new Set(names)].join(','), ...(bothEnds ? { start: from, end: to } : {}) },
        metricsDataSchema,
        signal,
      );

      const groups = new Map<string, { name: string; source: string; points: TrainingPoint[] }>();
      for (const p of answer.data) {
        if ((from !== undefined && p.timestamp < from) || (to !== undefined && p.timestamp > to)) continue;
        if (requested && !requested.has(p.metric_name)) continue;
        const source = p.data_source ?? answer.data_source ?? 'unknown';
        const key = `${p.metric_name}\u0000${source}`;
        const group = groups.get(key) ?? { name: p.metric_name, source, points: [] };
        group.points.push(p);
        groups.set(key, group);
      }

      return [...groups.values()].map(({ name, source, points }): SeriesData => {
        // Lens builds the answer from Go maps: order by iteration; a step logged twice (a resumed
        // run) keeps its latest value.
        const byIteration = new Map<number, TrainingPoint>();
        for (const p of [...points].sort((a, b) => a.iteration - b.iteration || a.timestamp - b.timestamp)) byIteration.set(p.iteration, p);
        const dropped = points.length - byIteration.size;
        return {
          kind: 'training',
          name,
          rawName: name,
          unit: 'NONE',
          scope: 'JOB',
          nodeExternalId: null,
          gpuIndex: null,
          source,
          stage: null,
          keyedBy: 'step',
          meta: dropped > 0 ? { duplicateIterationsDropped: dropped } : {},
          points: [...byIteration.values()].map((p) => ({ timestamp: epochMillisToDate(p.timestamp), step: p.iteration, value: finiteOrNull(p.value) })),
        };
      });
    },

    async fetchProgress(job, signal): Promise<ProgressRecord | null> {
      const end = job.finishedAt?.getTime() ?? Date.now();
      // Lens applies a range only with both ends; the far end is generous so that a server clock
      // ahead of ours cannot hide the latest iterations.
      let points = await iterationTimes(job.externalId, { start: end - PROGRESS_WINDOW_MS, end: end + CLOCK_SKEW_MARGIN_MS }, signal);
      // Nothing logged lately (a stalled or long-finished run): read the whole history once.
      if (!points.some((p) => p.metric_name === 'iteration')) points = await iterationTimes(job.externalId, null, signal);

      // One timeline over all sources: Lens already keeps one point per iteration (the earliest).
      const byIteration = new Map<number, number>();
      for (const p of points) {
        if (p.metric_name !== 'iteration') continue;
        const seen = byIteration.get(p.iteration);
        if (seen === undefined || p.timestamp < seen) byIteration.set(p.iteration, p.timestamp);
      }
      const timeline = [...byIteration].sort((a, b) => a[0] - b[0]);
      const latest = timeline.at(-1);
      if (!latest) return null;

      const targets = points.filter((p) => p.metric_name === 'target_iteration').sort((a, b) => a.timestamp - b.timestamp);
      const recent = timeline.filter(([, ts]) => ts >= latest[1] - RATE_WINDOW_MS);
      const window = recent.length >= 2 ? recent : timeline.slice(-2);
      const first = window[0]!;
      const seconds = (latest[1] - first[1]) / 1000;
      return {
        iteration: latest[0],
        targetIteration: finiteOrNull(targets.at(-1)?.value),
        rate: window.length >= 2 && seconds > 0 ? (latest[0] - first[0]) / seconds : null,
        updatedAt: epochMillisToDate(latest[1]),
      };
    },
  };
}
