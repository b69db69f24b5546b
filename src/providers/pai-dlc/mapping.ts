// PAI-DLC wire records -> domain records in canonical units.
import { metricDefinition, rawName } from '../../domain/metric-catalog.js';
import type { AcceleratorKind, GpuRecord, JobRecord, JobStatus, NodeRecord, SeriesData, SeriesPoint, SystemMetric } from '../../domain/types.js';
import { finiteOrNull, GIB, isoToDate, percentToRatio } from '../../domain/units.js';
import type { WireCmsDataPoint, WireEcsSpec, WireJob, WireJobMetrics, WireJobSpec, WirePod } from './wire.js';

export const PAI_DLC_SOURCE = 'pai-dlc';

/**
 * GetJobMetrics' MetricTypes and how their values arrive. `*Usage` read as percent (the doc's
 * example 23.45). `*Rate`: the DLC page gives no unit; the sibling PAI-Studio API, whose MetricType
 * names are the same, documents MB/s, so they are read as MB/s = 10^6 bytes/s (our reading,
 * unconfirmed for DLC). A value above RATE_CEILING_MB_S is reported: no pod moves that much, so
 * such values would be bytes/s after all.
 */
const GETJOBMETRICS_METRICS: ReadonlyMap<SystemMetric, 'percent' | 'MB/s'> = new Map([
  ['GPU_UTILIZATION', 'percent'],
  ['GPU_MEMORY_UTILIZATION', 'percent'],
  ['CPU_UTILIZATION', 'percent'],
  ['MEMORY_UTILIZATION', 'percent'],
  ['NETWORK_RECEIVE_RATE', 'MB/s'],
  ['NETWORK_TRANSMIT_RATE', 'MB/s'],
  ['DISK_READ_RATE', 'MB/s'],
  ['DISK_WRITE_RATE', 'MB/s'],
]);
export const MB = 1_000_000;
export const MIB = 1_048_576;
/** 400 GB/s: more than a pod's network or disk carries (3.2 Tbit/s of NICs). */
export const RATE_CEILING_MB_S = 400_000;
export const GETJOBMETRICS_RATE_NOTE = 'MB/s as PAI-Studio documents for the same MetricType names (unconfirmed for DLC), converted to bytes/s';

export type CmsConversion = 'percent' | 'MiB/s' | 'TFLOP/s';

/**
 * One GetMetrics (namespace acs_pai_dlc) query: the canonical metric, the MetricName, whether it is
 * the job-wide (JOB_) or the per-card (CARD_) family, how values arrive, and the largest raw value
 * that is physically plausible (above it the unit reading is reported as wrong).
 * Names: JOB_GPU_ACCELERATOR_DUTTY_UTIL and CARD_GPU_DRAM_ACTIVE_UTIL are what real callers send;
 * the other CARD_ names are the AliyunPaidlc_CARD_GPU_* Prometheus names without the prefix (our
 * reading, unconfirmed). Scales: "UTIL"/"ACTIVE"/"DUTY_CYCLE" read as percent (unconfirmed; a
 * value over 100, or a long busy series never above 1, is reported); NVLink/PCIe in MiB/s as the
 * Prometheus export documents; TENSORTFLOPS_USED in TFLOP/s (our reading of the name).
 */
export interface CmsQuery {
  metric: SystemMetric;
  metricName: string;
  family: 'JOB' | 'CARD';
  conversion: CmsConversion;
  ceiling: number;
}

const cms = (metric: SystemMetric, family: 'JOB' | 'CARD', conversion: CmsConversion, ceiling: number): CmsQuery => ({
  metric,
  metricName: rawName(metric, 'PAI_DLC', family === 'JOB' ? 'CloudMonitor job' : 'CloudMonitor card'),
  family,
  conversion,
  ceiling,
});

export const CMS_QUERIES: readonly CmsQuery[] = [
  cms('GPU_UTILIZATION', 'JOB', 'percent', 100),
  cms('GPU_UTILIZATION', 'CARD', 'percent', 100),
  cms('GPU_SM_ACTIVE', 'CARD', 'percent', 100),
  cms('GPU_TENSOR_ACTIVE', 'CARD', 'percent', 100),
  cms('GPU_DRAM_ACTIVE', 'CARD', 'percent', 100),
  // NVLink 5 moves 900 GB/s per direction; PCIe 6 x16 128 GB/s per direction (in MiB/s, rounded up).
  cms('GPU_NVLINK_RECEIVE_RATE', 'CARD', 'MiB/s', 900_000),
  cms('GPU_NVLINK_TRANSMIT_RATE', 'CARD', 'MiB/s', 900_000),
  cms('GPU_PCIE_RECEIVE_RATE', 'CARD', 'MiB/s', 125_000),
  cms('GPU_PCIE_TRANSMIT_RATE', 'CARD', 'MiB/s', 125_000),
  // The densest tensor throughput of any card shipped (FP4, sparse) stays under 20,000 TFLOP/s.
  cms('GPU_TENSOR_FLOPS', 'CARD', 'TFLOP/s', 20_000),
];

export const CMS_NAMESPACE = 'acs_pai_dlc';

/** Every metric the adapter can answer on one route or the other. */
export const PAI_DLC_METRICS: readonly SystemMetric[] = [...new Set([...GETJOBMETRICS_METRICS.keys(), ...CMS_QUERIES.map((q) => q.metric)])];

export function convertCmsValue(conversion: CmsConversion, raw: number): number | null {
  switch (conversion) {
    case 'percent':
      return percentToRatio(raw);
    case 'MiB/s':
      return raw * MIB;
    case 'TFLOP/s':
      return raw * 1e12;
  }
}

/**
 * The keys a CARD_ point may name its card by. No source shows the key; `gpuId` is our reading
 * (unconfirmed) and the others are what GPU exporters use. A pod with several GPUs whose points
 * name no card is reported, never guessed.
 */
export const CARD_KEYS = ['gpuId', 'cardId', 'card', 'gpu', 'deviceId', 'minorNumber', 'minor_number', 'gpuIndex'] as const;

/** The statistical periods GetMetrics accepts (official SDK model: 15, 60, 900, 3600 seconds). */
export const CMS_PERIODS = [15, 60, 900, 3600] as const;

/** The smallest allowed period at least `stepSeconds` long (or the longest there is). */
export function cmsPeriodFor(stepSeconds: number): number {
  return CMS_PERIODS.find((p) => p >= stepSeconds) ?? CMS_PERIODS[CMS_PERIODS.length - 1]!;
}

export type MetricsRoute = 'GetJobMetrics' | 'CloudMonitor';

/**
 * Where a job's monitoring lives. GetJobMetrics' own documentation: "except for pay-as-you-go tasks
 * based on general-purpose computing resources, all task types are connected to CloudMonitor". We
 * read pay-as-you-go general-purpose as ResourceType ECS with no resource quota (empty ResourceId)
 * and no quota ResourceConfig in its specs; everything else (quotas, Lingjun, ACS) goes to
 * CloudMonitor.
 */
export function metricsRouteOf(job: WireJob): MetricsRoute {
  const resourceType = (job.ResourceType ?? '').toUpperCase();
  const onQuota = Boolean(job.ResourceId) || (job.JobSpecs ?? []).some((s) => s.ResourceConfig && !s.EcsSpec);
  return (resourceType === 'ECS' || resourceType === '') && !onQuota ? 'GetJobMetrics' : 'CloudMonitor';
}

/** Canonical metric -> the MetricType GetJobMetrics takes, and how its values arrive. */
export const METRIC_TYPES: ReadonlyMap<SystemMetric, { metricType: string; percent: boolean; unit: 'percent' | 'MB/s' }> = new Map(
  [...GETJOBMETRICS_METRICS].map(([metric, unit]) => [metric, { metricType: rawName(metric, 'PAI_DLC', 'GetJobMetrics'), percent: unit === 'percent', unit }]),
);

export const STATUS_MAP: Readonly<Record<string, JobStatus>> = {
  Creating: 'PENDING',
  Queuing: 'PENDING',
  Bidding: 'PENDING',
  EnvPreparing: 'PENDING',
  SanityChecking: 'PENDING',
  Running: 'RUNNING',
  Restarting: 'RUNNING',
  Stopping: 'RUNNING',
  // Training is over and only the resources are held for inspection: the outcome is what counts.
  SucceededReserving: 'SUCCEEDED',
  FailedReserving: 'FAILED',
  Succeeded: 'SUCCEEDED',
  Failed: 'FAILED',
  Stopped: 'STOPPED',
};

export function mapStatus(raw: string | null | undefined): JobStatus {
  return (raw && STATUS_MAP[raw]) || 'UNKNOWN';
}

function intOrNull(value: unknown): number | null {
  const n = finiteOrNull(value);
  return n === null ? null : Math.round(n);
}

export interface PodHardware {
  gpus: number | null;
  gpuType: string | null;
  /** Memory of one card in bytes: EcsSpec.GpuMemory (GiB) for public resources; quotas do not say. */
  memoryBytes: number | null;
}

/**
 * GPUs of one pod of a spec: ResourceConfig.GPU (resource quotas), else the ECS spec's card count
 * (public resources, looked up through ListEcsSpecs); null when neither says.
 */
export function podHardware(spec: WireJobSpec, ecsSpecs: ReadonlyMap<string, WireEcsSpec>): PodHardware {
  const fromConfig = intOrNull(spec.ResourceConfig?.GPU);
  const configType = spec.ResourceConfig?.GPUType || null;
  // A quota's GPUType names the model ("Tesla-V100-16G") but no field states the card's memory:
  // it stays unknown rather than read out of a name.
  if (fromConfig !== null) return { gpus: fromConfig, gpuType: fromConfig > 0 ? configType : null, memoryBytes: null };
  const ecs = spec.EcsSpec ? ecsSpecs.get(spec.EcsSpec) : undefined;
  if (ecs) {
    const gpus = intOrNull(ecs.Gpu) ?? 0;
    const gib = finiteOrNull(ecs.GpuMemory);
    return { gpus, gpuType: gpus > 0 ? ecs.GpuType || configType : null, memoryBytes: gpus > 0 && gib !== null && gib > 0 ? gib * GIB : null };
  }
  return { gpus: null, gpuType: configType, memoryBytes: null };
}

/** Instance types whose GPU count only ListEcsSpecs can tell. */
export function ecsSpecsNeeded(job: WireJob): string[] {
  const names = (job.JobSpecs ?? []).filter((s) => intOrNull(s.ResourceConfig?.GPU) === null && s.EcsSpec).map((s) => s.EcsSpec!);
  return [...new Set(names)];
}

function jobHardware(job: WireJob, ecsSpecs: ReadonlyMap<string, WireEcsSpec>): { gpuCount: number | null; gpuType: string | null } {
  const specs = job.JobSpecs ?? [];
  let total = 0;
  let gpuType: string | null = null;
  for (const spec of specs) {
    const hw = podHardware(spec, ecsSpecs);
    const pods = intOrNull(spec.PodCount);
    if (hw.gpus === null || pods === null) {
      // RequestGPU is the job's total as a string (our reading, unconfirmed): the fallback when a spec is opaque.
      return { gpuCount: intOrNull(job.RequestGPU), gpuType: gpuType ?? hw.gpuType };
    }
    total += hw.gpus * pods;
    gpuType ??= hw.gpuType;
  }
  if (specs.length === 0) return { gpuCount: intOrNull(job.RequestGPU), gpuType: null };
  return { gpuCount: total, gpuType };
}

/** Statuses whose ReasonCode/ReasonMessage explain a failure or a stop (a success's "JobSucceeded" is no failure). */
const FAILURE_STATUSES = new Set(['Failed', 'FailedReserving', 'Stopped', 'Stopping']);

export function failureReasonOf(job: WireJob): string | null {
  if (!FAILURE_STATUSES.has(job.Status ?? '')) return null;
  const code = (job.ReasonCode ?? '').trim();
  const message = (job.ReasonMessage ?? '').trim();
  if (!code && !message) return null;
  return code && message ? `${code}: ${message}` : code || message;
}

/**
 * Restarts: the used half of RestartTimes ("2/10"), else the most earlier incarnations
 * (HistoryPods) any pod has; null when the job says neither.
 */
export function restartCountOf(job: WireJob): number | null {
  const m = /^\s*(\d+)\s*\/\s*\d+\s*$/.exec(job.RestartTimes ?? '');
  if (m) return Number(m[1]);
  const pods = job.Pods ?? [];
  if (pods.length === 0) return null;
  return Math.max(0, ...pods.map((p) => p.HistoryPods?.length ?? 0));
}

export interface PaiDlcContext {
  /** The region the provider is configured for (console links carry it). */
  regionId?: string;
}

/**
 * The job's page in the PAI console. The format is the one the console itself links to
 * (`#/job/detail?jobId=...`); international-site accounts use pai.console.alibabacloud.com, which
 * we cannot tell from the API (unconfirmed), so the China-site host is used.
 */
export function consoleUrlOf(job: WireJob, ctx: PaiDlcContext): string | null {
  if (!ctx.regionId || job.WorkspaceId == null || job.WorkspaceId === '') return null;
  const q = new URLSearchParams({ regionId: ctx.regionId, workspaceId: String(job.WorkspaceId) });
  return `https://pai.console.aliyun.com/?${q.toString()}#/job/detail?jobId=${encodeURIComponent(job.JobId)}&page=jobs`;
}

function acceleratorKindOf(gpuCount: number | null): AcceleratorKind | null {
  if (gpuCount === null) return null;
  return gpuCount > 0 ? 'GPU' : 'NONE';
}

export function mapJob(job: WireJob, ecsSpecs: ReadonlyMap<string, WireEcsSpec> = new Map(), ctx: PaiDlcContext = {}): JobRecord {
  const { gpuCount, gpuType } = jobHardware(job, ecsSpecs);
  const finishedAt = isoToDate(job.GmtFinishTime) ?? isoToDate(job.GmtSuccessedTime) ?? isoToDate(job.GmtFailedTime) ?? isoToDate(job.GmtStoppedTime);
  const workspaceId = job.WorkspaceId == null ? '' : String(job.WorkspaceId);
  return {
    externalId: job.JobId,
    projectExternalId: workspaceId,
    ...(job.WorkspaceName ? { projectName: job.WorkspaceName } : {}),
    name: job.DisplayName || job.JobId,
    status: mapStatus(job.Status),
    rawStatus: job.Status ?? null,
    createdAt: isoToDate(job.GmtCreateTime),
    startedAt: isoToDate(job.GmtRunningTime),
    finishedAt,
    gpuType,
    gpuCount,
    acceleratorKind: acceleratorKindOf(gpuCount),
    failureReason: failureReasonOf(job),
    consoleUrl: consoleUrlOf(job, ctx),
    restartCount: restartCountOf(job),
    owner: job.Username || null,
    // PAI-DLC jobs have no labels in the job item (Tags is only a ListJobs filter).
    labels: [],
    config: job.Envs && Object.keys(job.Envs).length > 0 ? { envs: job.Envs } : null,
    image: imageOf(job),
    command: job.UserCommand || null,
  };
}

/** The image of the job's roles: one where they agree, each role's where they differ. */
function imageOf(job: WireJob): string | null {
  const images = [...new Set((job.JobSpecs ?? []).map((s) => s.Image).filter((i): i is string => Boolean(i)))];
  if (images.length <= 1) return images[0] ?? null;
  return (job.JobSpecs ?? [])
    .filter((s) => s.Image)
    .map((s) => `${s.Type ?? 'role'}: ${s.Image}`)
    .join(', ');
}

function gpuRecords(hw: PodHardware): GpuRecord[] {
  return Array.from({ length: hw.gpus ?? 0 }, (_, index) => ({ index, model: hw.gpuType, memoryTotalBytes: hw.memoryBytes }));
}

/**
 * Pods -> Nodes, keyed by PodId (stable across restarts; each restart is a new PodUid under the same
 * PodId). Earlier incarnations with a PodId no current pod has still count as nodes.
 */
export function mapNodes(job: WireJob, ecsSpecs: ReadonlyMap<string, WireEcsSpec>): NodeRecord[] {
  const specsByType = new Map((job.JobSpecs ?? []).map((s) => [s.Type ?? '', s] as const));
  const nodes = new Map<string, NodeRecord>();
  const visit = (pod: WirePod) => {
    if (pod.PodId && !nodes.has(pod.PodId)) {
      const spec = specsByType.get(pod.Type ?? '') ?? (job.JobSpecs?.length === 1 ? job.JobSpecs[0] : undefined);
      const hw = spec ? podHardware(spec, ecsSpecs) : { gpus: null, gpuType: null, memoryBytes: null };
      nodes.set(pod.PodId, { externalId: pod.PodId, name: pod.PodId, gpus: gpuRecords(hw) });
    }
    for (const earlier of pod.HistoryPods ?? []) visit(earlier);
  };
  for (const pod of job.Pods ?? []) visit(pod);
  return [...nodes.values()];
}

/** One NODE-scope series per pod of a GetJobMetrics answer; an empty PodMetrics yields none. */
export function mapMetricSeries(metric: SystemMetric, body: WireJobMetrics, timeStep: string): SeriesData[] {
  const mapping = METRIC_TYPES.get(metric)!;
  const def = metricDefinition(metric);
  return (body.PodMetrics ?? []).map((podMetric) => {
    const points: SeriesPoint[] = [];
    for (const m of podMetric.Metrics ?? []) {
      const ms = finiteOrNull(m.Time);
      if (ms === null || ms <= 0) continue;
      const raw = finiteOrNull(m.Value);
      const value = mapping.percent ? percentToRatio(m.Value) : raw === null ? null : raw * MB;
      points.push({ timestamp: new Date(ms), step: null, value });
    }
    points.sort((a, b) => a.timestamp!.getTime() - b.timestamp!.getTime());
    return {
      kind: 'system',
      name: metric,
      rawName: mapping.metricType,
      unit: def.unit,
      scope: 'NODE',
      nodeExternalId: podMetric.PodId,
      gpuIndex: null,
      source: PAI_DLC_SOURCE,
      stage: null,
      keyedBy: 'time',
      meta: {
        timeStep,
        ...(mapping.percent ? { convertedFrom: 'percent' } : { convertedFrom: 'MB/s', unitNote: GETJOBMETRICS_RATE_NOTE }),
        ...(def.finestScope === 'GPU' ? { aggregation: "one value per pod; how the pod's GPUs are combined is not documented" } : {}),
      },
      points,
    } satisfies SeriesData;
  });
}

/** The value of a decoded DataPoints element, read the way wire.ts describes (unconfirmed). */
export function cmsPointOf(p: WireCmsDataPoint): { ms: number; value: number | null } | null {
  const ms = finiteOrNull(p.timestamp ?? p.Timestamp);
  if (ms === null || ms <= 0) return null;
  const raw = p.Value !== undefined ? p.Value : p.value !== undefined ? p.value : p.Average;
  if (raw === undefined) return null;
  return { ms, value: raw === null ? null : finiteOrNull(raw) };
}

export interface CmsSeriesKey {
  /** null for the JOB_ family. */
  pod: string | null;
  gpuIndex: number | null;
  /** The card as the point named it, when it named one. */
  card: string | null;
}

/** One series (job scope for JOB_, GPU scope for CARD_) from GetMetrics points already decoded and paged. */
export function mapCmsSeries(
  query: CmsQuery,
  key: CmsSeriesKey,
  points: readonly { ms: number; value: number | null }[],
  periodSeconds: number,
  meta: Record<string, unknown>,
): SeriesData | null {
  const def = metricDefinition(query.metric);
  if (points.length === 0) return null;
  const byTime = new Map<number, SeriesPoint>();
  for (const p of points) {
    const value = p.value === null ? null : convertCmsValue(query.conversion, p.value);
    byTime.set(p.ms, { timestamp: new Date(p.ms), step: null, value });
  }
  return {
    kind: 'system',
    name: query.metric,
    rawName: query.metricName,
    unit: def.unit,
    scope: query.family === 'JOB' ? 'JOB' : 'GPU',
    nodeExternalId: query.family === 'JOB' ? null : key.pod,
    gpuIndex: query.family === 'JOB' ? null : key.gpuIndex,
    source: PAI_DLC_SOURCE,
    stage: null,
    keyedBy: 'time',
    meta: {
      route: 'CloudMonitor GetMetrics',
      namespace: CMS_NAMESPACE,
      periodSeconds,
      convertedFrom: query.conversion,
      ...(key.card !== null && String(key.gpuIndex) !== key.card ? { card: key.card } : {}),
      ...meta,
    },
    points: [...byTime.values()].sort((a, b) => a.timestamp!.getTime() - b.timestamp!.getTime()),
  };
}
