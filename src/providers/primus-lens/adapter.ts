// The Primus-Lens (AMD) adapter. Lens has no projects: a workload's Kubernetes namespace is the
// tenancy unit its UI filters by, so Project = namespace (within the configured cluster, or
// Lens' default cluster when none is set). Job = top-level workload (uid); Node = a node its pods
// ran on; training metrics and progress come from the four seed-003 routes.
import { DEFAULT_PROVIDER_TIMEOUT_SECONDS, requireSecret, type SecretSource } from '../../config/provider-kit.js';
import type { PrimusLensConfig } from './config.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import { metricDefinition, rawName } from '../../domain/metric-catalog.js';
import type {
  GpuRecord,
  JobPage,
  JobRef,
  JobStatus,
  MetricFetchRequest,
  NodeRecord,
  ProgressRecord,
  ProjectRecord,
  SeriesData,
  SystemMetric,
  TrainingFetchRequest,
} from '../../domain/types.js';
import { epochMillisToDate, epochSecondsToDate, finiteOrNull } from '../../domain/units.js';
import type { AdapterOptions } from '../platform.js';
import { trainingSeries, type JobDetailResult, type ProviderAdapter, type SystemMetricsResult } from '../provider.js';
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
  type TrainingPoint,
  type WorkloadDetail,
  type WorkloadListItem,
} from './wire.js';
import {
  lastKnownStatus,
  SYSTEM_METRICS,
  NODE_GRAPHS,
  trainingFlops,
  NODE_WIDE_SOURCE,
  UNIFIED,
  DEVICE_IDS_METRIC,
  lensRawName,
  latestPods,
  gpusPerNode,
  jobFromDetail,
  jobFromListItem,
  deviceUtilizationPoints,
  workloadGraphPoints,
  unifiedToSeries,
  SOURCE,
} from './mapping.js';

const PAGE_SIZE = 100;
/** The node route's name for its devices' utilization (node-wide, not the workload's own). */
const NODE_GPU_METRICS_NAME = rawName('GPU_UTILIZATION', 'PRIMUS_LENS', 'node gpuMetrics');
const PROMETHEUS_MAX_POINTS = 11_000;
/** How far back fetchProgress first looks for iteration times (a bounded answer for long runs). */
const PROGRESS_WINDOW_MS = 30 * 60_000;
const CLOCK_SKEW_MARGIN_MS = 24 * 3_600_000;
/** The stretch of iteration times the rate is measured over. */
const RATE_WINDOW_MS = 10 * 60_000;
/** Lens' iteration-times route reports these; the metrics routes never list them. */
const PROGRESS_METRICS = new Set(['iteration', 'target_iteration']);

/** The client with its auth headers, and the lookups of a workload (detail, list row, deleted status, GPU models). */
function lensClientParts(config: PrimusLensConfig, secrets: SecretSource, options: AdapterOptions) {
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
    timeoutMs: (config.timeoutSeconds ?? DEFAULT_PROVIDER_TIMEOUT_SECONDS) * 1000,
    timers: options.timers,
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
  return { config, secrets, providerId, headers, client, deletedStatuses, deletedStatus, getDetail, findListItem, modelsPerNode };
}

/** A workload's nodes, and the unified, node-wide and iteration-time series it reads. */
function lensSeriesParts(ctx: ReturnType<typeof lensClientParts>) {
  const { client, modelsPerNode } = ctx;
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
            rawName: NODE_GPU_METRICS_NAME,
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
            points: deviceUtilizationPoints(device, from, to),
          }),
        ),
    );
  }

  async function iterationTimes(uid: string, range: { start: number; end: number } | null, signal: AbortSignal): Promise<TrainingPoint[]> {
    const query = range ? { start: range.start, end: range.end } : {};
    const answer = await client.get(`/workloads/${encodeURIComponent(uid)}/metrics/iteration-times`, query, metricsDataSchema, signal);
    return answer.data;
  }
  return { nodesOf, unifiedData, nodeWideGpuSeries, iterationTimes };
}

type LensAdapter = ReturnType<typeof lensClientParts> & ReturnType<typeof lensSeriesParts>;

async function fetchSystemMetrics(ctx: LensAdapter, job: JobRef, request: MetricFetchRequest, signal: AbortSignal): Promise<SystemMetricsResult> {
  const { providerId, client, getDetail, nodesOf, unifiedData, nodeWideGpuSeries } = ctx;
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
        points: workloadGraphPoints(s, unit),
      });
    }
  }

  if (wanted.includes('MODEL_FLOPS_PER_GPU')) {
    const flops = trainingFlops(graphs, providerId, job.externalId, step);
    // Lens returns the TrainingPerformance graph even when it holds no point: an empty graph
    // says nothing yet (the framework may not have reported), so it does not cover the metric.
    if (flops && flops.points.length > 0) {
      covered.push('MODEL_FLOPS_PER_GPU');
      series.push(flops);
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
}

async function fetchTrainingMetrics(ctx: LensAdapter, job: JobRef, request: TrainingFetchRequest, signal: AbortSignal): Promise<SeriesData[]> {
  const { client } = ctx;
  const uid = encodeURIComponent(job.externalId);
  const sources = await client.get(`/workloads/${uid}/metrics/sources`, {}, dataSourcesSchema, signal);
  if (sources.data_sources.length === 0) return [];
  const available = await client.get(`/workloads/${uid}/metrics/available`, {}, availableMetricsSchema, signal);
  const requested = request.names ? new Set(request.names) : null;
  const names = available.metrics.map((m) => m.name).filter((n) => !PROGRESS_METRICS.has(n) && (!requested || requested.has(n)));
  if (names.length === 0) return [];

  const from = request.from?.getTime();
  const to = request.to?.getTime();
  // Lens applies a range only when both ends are given. From a time onwards (the collector's
  // incremental fetch, trainingSince) the far end is generous, as for iteration times, so that a
  // server clock ahead of ours cannot hide the latest points; up to a time only is applied here.
  const range =
    from !== undefined && to !== undefined
      ? { start: from, end: to }
      : from !== undefined
        ? { start: from, end: Math.max(Date.now(), from) + CLOCK_SKEW_MARGIN_MS }
        : {};
  const answer = await client.get(`/workloads/${uid}/metrics/data`, { metrics: [...new Set(names)].join(','), ...range }, metricsDataSchema, signal);

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
    return trainingSeries(
      name,
      source,
      null,
      dropped > 0 ? { duplicateIterationsDropped: dropped } : {},
      [...byIteration.values()].map((p) => ({ timestamp: epochMillisToDate(p.timestamp), step: p.iteration, value: finiteOrNull(p.value) })),
    );
  });
}

async function fetchProgress(ctx: LensAdapter, job: JobRef, signal: AbortSignal): Promise<ProgressRecord | null> {
  const { iterationTimes } = ctx;
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
}

export function createPrimusLensAdapter(config: PrimusLensConfig, secrets: SecretSource, options: AdapterOptions = {}): ProviderAdapter {
  const lensClient = lensClientParts(config, secrets, options);
  const ctx: LensAdapter = { ...lensClient, ...lensSeriesParts(lensClient) };
  const { providerId, client, deletedStatus, getDetail, findListItem, nodesOf } = ctx;

  return {
    id: providerId,
    kind: 'PRIMUS_LENS',
    capabilities: {
      systemMetrics: SYSTEM_METRICS,
      perGpuSeries: true,
      trainingMetrics: true,
      trainingSince: true,
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
      return jobFromDetail(detail, item, nodes);
    },

    fetchSystemMetrics: (job, request, signal) => fetchSystemMetrics(ctx, job, request, signal),

    fetchTrainingMetrics: (job, request, signal) => fetchTrainingMetrics(ctx, job, request, signal),

    fetchProgress: (job, signal) => fetchProgress(ctx, job, signal),
  };
}
