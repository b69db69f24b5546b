// PAI-DLC wire records -> domain records in canonical units.
import { metricDefinition } from '../../domain/metric-catalog.js';
import type { GpuRecord, JobRecord, JobStatus, NodeRecord, SeriesData, SeriesPoint, SystemMetric } from '../../domain/types.js';
import { finiteOrNull, GIB, isoToDate, percentToRatio } from '../../domain/units.js';
import type { WireEcsSpec, WireJob, WireJobMetrics, WireJobSpec, WirePod } from './wire.js';

export const PAI_DLC_SOURCE = 'pai-dlc';

/** Canonical metric -> the MetricType GetJobMetrics takes, and whether values are percent. */
export const METRIC_TYPES: ReadonlyMap<SystemMetric, { metricType: string; percent: boolean }> = new Map([
  ['GPU_UTILIZATION', { metricType: 'GpuCoreUsage', percent: true }],
  ['GPU_MEMORY_UTILIZATION', { metricType: 'GpuMemoryUsage', percent: true }],
  ['CPU_UTILIZATION', { metricType: 'CpuCoreUsage', percent: true }],
  ['MEMORY_UTILIZATION', { metricType: 'MemoryUsage', percent: true }],
  ['NETWORK_RECEIVE_RATE', { metricType: 'NetworkInputRate', percent: false }],
  ['NETWORK_TRANSMIT_RATE', { metricType: 'NetworkOutputRate', percent: false }],
  ['DISK_READ_RATE', { metricType: 'DiskReadRate', percent: false }],
  ['DISK_WRITE_RATE', { metricType: 'DiskWriteRate', percent: false }],
]);

const STATUS_MAP: Record<string, JobStatus> = {
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

/**
 * GPU memory from the GPU type's name where it states it ("Tesla-V100-16G", "NVIDIA-A100-SXM4-80GB").
 * Vendors quote binary gigabytes there, so 16G is 16 GiB.
 */
export function gpuMemoryFromTypeName(gpuType: string | null | undefined): number | null {
  if (!gpuType) return null;
  const m = /(?:^|[-_ ])(\d{1,3})\s*G(?:B|iB|i)?(?=$|[-_ ])/i.exec(gpuType);
  return m ? Number(m[1]) * GIB : null;
}

export interface PodHardware {
  gpus: number | null;
  gpuType: string | null;
}

/**
 * GPUs of one pod of a spec: ResourceConfig.GPU (resource quotas), else the ECS spec's card count
 * (public resources, looked up through ListEcsSpecs); null when neither says.
 */
export function podHardware(spec: WireJobSpec, ecsSpecs: ReadonlyMap<string, WireEcsSpec>): PodHardware {
  const fromConfig = intOrNull(spec.ResourceConfig?.GPU);
  const configType = spec.ResourceConfig?.GPUType || null;
  if (fromConfig !== null) return { gpus: fromConfig, gpuType: fromConfig > 0 ? configType : null };
  const ecs = spec.EcsSpec ? ecsSpecs.get(spec.EcsSpec) : undefined;
  if (ecs) {
    const gpus = intOrNull(ecs.Gpu) ?? 0;
    return { gpus, gpuType: gpus > 0 ? ecs.GpuType || configType : null };
  }
  return { gpus: null, gpuType: configType };
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

export function mapJob(job: WireJob, ecsSpecs: ReadonlyMap<string, WireEcsSpec> = new Map()): JobRecord {
  const { gpuCount, gpuType } = jobHardware(job, ecsSpecs);
  const finishedAt =
    isoToDate(job.GmtFinishTime) ?? isoToDate(job.GmtSuccessedTime) ?? isoToDate(job.GmtFailedTime) ?? isoToDate(job.GmtStoppedTime);
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
  };
}

function gpuRecords(hw: PodHardware): GpuRecord[] {
  const memory = gpuMemoryFromTypeName(hw.gpuType);
  return Array.from({ length: hw.gpus ?? 0 }, (_, index) => ({ index, model: hw.gpuType, memoryTotalBytes: memory }));
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
      const hw = spec ? podHardware(spec, ecsSpecs) : { gpus: null, gpuType: null };
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
      const value = mapping.percent ? percentToRatio(m.Value) : finiteOrNull(m.Value);
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
        ...(mapping.percent ? { convertedFrom: 'percent' } : {}),
        ...(def.finestScope === 'GPU'
          ? { aggregation: 'one value per pod; how the pod\'s GPUs are combined is not documented' }
          : {}),
      },
      points,
    } satisfies SeriesData;
  });
}
