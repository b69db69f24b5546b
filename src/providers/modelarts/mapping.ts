// ModelArts answers -> domain records: the job object, its tasks and flavor, and the running
// metrics, whose values carry no timestamps and get them derived here.
import { canonicalMetricFor } from '../../domain/metric-catalog.js';
import type { AcceleratorKind, JobRecord, JobStatus, NodeRecord, SeriesData, SeriesPoint, SystemMetric } from '../../domain/types.js';
import type { MetricsResponse, ModelArtsJob } from './wire.js';

export { jobSchema, logPreviewSchema, metricsResponseSchema, searchResponseSchema, type MetricsResponse, type ModelArtsJob } from './wire.js';
import { fractionScaleProblem } from '../shape-watch.js';
import { epochMillisToDate, finiteOrNull, parseSizeToBytes, percentToRatio } from '../../domain/units.js';

export const STATUS_BY_PHASE: Readonly<Record<string, JobStatus>> = {
  Creating: 'PENDING',
  Pending: 'PENDING',
  Running: 'RUNNING',
  // Still shutting down; the raw phase says so.
  Terminating: 'RUNNING',
  Completed: 'SUCCEEDED',
  Failed: 'FAILED',
  // The docs only call it "abnormal"; we read it as a terminal failure.
  Abnormal: 'FAILED',
  Terminated: 'STOPPED',
};

export function mapStatus(phase: string): JobStatus {
  return STATUS_BY_PHASE[phase] ?? 'UNKNOWN';
}

const TERMINAL_PHASES = new Set(['Completed', 'Failed', 'Abnormal', 'Terminated']);

export const DEFAULT_WORKSPACE_ID = '0';

export function workspaceName(workspaceId: string): string {
  return workspaceId === DEFAULT_WORKSPACE_ID ? 'default' : workspaceId;
}

export interface Accelerators {
  kind: AcceleratorKind;
  perNode: number;
  model: string | null;
  memoryBytes: number | null;
}

/**
 * The flavor's accelerators: GPUs (`flavor_info.gpu`) or Ascend NPUs (`flavor_info.npu`, whose
 * unit_num is a string); a CPU flavor has none. null when the flavor is not described (dedicated
 * pools may leave flavor_detail out): then the count is unknown, not zero.
 */
export function acceleratorsOf(job: ModelArtsJob): Accelerators | null {
  const detail = job.spec?.resource?.flavor_detail;
  if (!detail) return null;
  for (const [kind, device] of [
    ['GPU', detail.flavor_info?.gpu],
    ['NPU', detail.flavor_info?.npu],
  ] as const) {
    const perNode = finiteOrNull(device?.unit_num);
    if (device && perNode !== null && perNode > 0) {
      // Vendors quote binary gigabytes as "32GB".
      return { kind, perNode, model: device.product_name ?? null, memoryBytes: parseSizeToBytes(device.memory, { gbIsBinary: true }) };
    }
  }
  const type = (detail.flavor_type ?? '').toUpperCase();
  if (type === 'GPU' || type === 'ASCEND' || type === 'NPU') return null; // an accelerator flavor without a count: unknown
  return { kind: 'NONE', perNode: 0, model: null, memoryBytes: null };
}

type RunningRecord = NonNullable<ModelArtsJob['status']['running_records']>[number];

function records(job: ModelArtsJob): RunningRecord[] {
  return [...(job.status.running_records ?? [])].sort((a, b) => (a.start_at ?? 0) - (b.start_at ?? 0));
}

/** Restarts: every run record after the first started the job again (restarted or rescheduled). */
export function restartCountOf(job: ModelArtsJob): number | null {
  const list = job.status.running_records;
  if (!list) return null;
  return Math.max(0, list.length - 1);
}

/**
 * When a stopped job stopped: the end of its last run record (epoch seconds), else start + duration.
 */
export function finishedAtOf(job: ModelArtsJob): Date | null {
  if (!TERMINAL_PHASES.has(job.status.phase)) return null;
  const last = records(job).at(-1);
  if (last?.end_at && last.end_at > 0) return new Date(last.end_at * 1000);
  const startedAt = epochMillisToDate(job.status.start_time ?? 0);
  const duration = finiteOrNull(job.status.duration);
  return startedAt && duration !== null ? new Date(startedAt.getTime() + duration) : null;
}

const FAILED_PHASES = new Set(['Failed', 'Abnormal', 'Terminated']);

/**
 * Why a job failed or was stopped: status.reason where the API gives one (unconfirmed field), the
 * first task that exited non-zero (task_statuses), the last run's end_reason, or a secondary phase
 * that says more than the phase (CreateFailed, Lost).
 */
export function failureReasonOf(job: ModelArtsJob): string | null {
  if (!FAILED_PHASES.has(job.status.phase)) return null;
  if (job.status.reason?.trim()) return job.status.reason.trim();
  const failedTask = (job.status.task_statuses ?? []).find((t) => (t.exit_code ?? 0) !== 0);
  if (failedTask) {
    return `${failedTask.task ?? 'a task'} exited with code ${failedTask.exit_code}${failedTask.message?.trim() ? `: ${failedTask.message.trim()}` : ''}`;
  }
  const last = records(job).at(-1);
  const reason = last?.end_reason?.trim();
  if (reason && reason !== job.status.phase) return `${reason}${last?.end_related_task ? ` (${last.end_related_task})` : ''}`;
  const secondary = job.status.secondary_phase?.trim();
  if (secondary && secondary !== job.status.phase) return secondary;
  return null;
}

export interface ModelArtsContext {
  /** The region (cn-north-4, ...), from the endpoint's host or the IAM project name. */
  region?: string | null;
}

/**
 * The job's page in the ModelArts console. The console's training-job list lives at
 * `#/trainingJobs`; the detail route appended to it is our reading (unconfirmed).
 */
export function consoleUrlOf(job: ModelArtsJob, ctx: ModelArtsContext): string | null {
  if (!ctx.region) return null;
  return `https://console.huaweicloud.com/modelarts/?region=${encodeURIComponent(ctx.region)}#/trainingJobs/trainingJobDetail?id=${encodeURIComponent(job.metadata.id)}`;
}

export function mapJob(job: ModelArtsJob, ctx: ModelArtsContext = {}): JobRecord {
  const start = job.status.start_time ?? 0;
  const startedAt = epochMillisToDate(start);
  const workspaceId = job.metadata.workspace_id || DEFAULT_WORKSPACE_ID;
  const acc = acceleratorsOf(job);
  const nodeCount = job.spec?.resource?.node_count ?? null;
  return {
    externalId: job.metadata.id,
    projectExternalId: workspaceId,
    projectName: workspaceName(workspaceId),
    name: job.metadata.name,
    status: mapStatus(job.status.phase),
    rawStatus: job.status.phase,
    createdAt: epochMillisToDate(job.metadata.create_time),
    startedAt,
    finishedAt: finishedAtOf(job),
    gpuType: acc?.model ?? null,
    // GPUs or NPUs (acceleratorKind says which); flavor_detail is only filled for public pools, and
    // without it the count is unknown, not zero.
    gpuCount: acc && nodeCount !== null ? nodeCount * acc.perNode : null,
    acceleratorKind: acc?.kind ?? null,
    failureReason: failureReasonOf(job),
    consoleUrl: consoleUrlOf(job, ctx),
    restartCount: restartCountOf(job),
    owner: job.metadata.user_name || null,
    labels: Object.entries(job.metadata.annotations ?? {}).map(([key, value]) => ({ key, value: String(value) })),
    config: configOf(job),
    image: job.algorithm?.engine?.image_url || null,
    command: job.algorithm?.command || job.algorithm?.boot_file || null,
  };
}

/** Hyperparameters as { name: value } and the environment as one map: what the job was launched with. */
function configOf(job: ModelArtsJob): Record<string, unknown> | null {
  const params = job.algorithm?.parameters ?? [];
  const env = Object.assign({}, ...(job.algorithm?.environments ?? []));
  if (params.length === 0 && Object.keys(env).length === 0) return null;
  return {
    ...(params.length > 0 ? { parameters: Object.fromEntries(params.map((p) => [p.name, p.value ?? null])) } : {}),
    ...(Object.keys(env).length > 0 ? { environments: env } : {}),
  };
}

/** Tasks are the job's nodes; each gets the flavor's GPUs or NPUs (no per-device data beyond that). */
export function mapNodes(job: ModelArtsJob): NodeRecord[] {
  const acc = acceleratorsOf(job);
  return (job.status.tasks ?? []).map((task) => ({
    externalId: task,
    name: task,
    gpus: Array.from({ length: acc?.perNode ?? 0 }, (_, index) => ({ index, model: acc?.model ?? null, memoryTotalBytes: acc?.memoryBytes ?? null })),
  }));
}

const MINUTE_MS = 60_000;

export interface MetricAlignment {
  /** The server's clock when it answered (its Date header), or ours when it sent none. */
  referenceMs: number;
  referenceSource: 'server Date header' | 'local clock';
  startedAt: Date | null;
  /** Set for jobs that have stopped running: their window ends with the run. */
  finishedAt: Date | null;
}

export interface TaskMetricsResult {
  series: SeriesData[];
  /** Start of the oldest and end of the newest minute the arrays describe. */
  windowFrom: Date;
  windowTo: Date;
  /**
   * What in the answer contradicts the unconfirmed reading above (assumption name and what was
   * seen), for the adapter to report: samples that would date from before the task started (the
   * window is not "one value per minute ending now"), arrays of different lengths in one answer
   * (not one shared window), or utilization over 100 (not percent).
   */
  contradictions: { assumption: string; detail: string }[];
}

/**
 * The API returns per-minute averages oldest -> newest with no timestamps. We read the last element
 * as the most recent complete minute before the server answered (or before the job finished) and
 * step back one minute per element; each point is labelled with the start of its minute. The
 * window's end and length are unconfirmed, so the derivation is written into every series' meta.
 */
export function mapTaskMetrics(body: MetricsResponse, task: string, wanted: ReadonlySet<SystemMetric>, align: MetricAlignment): TaskMetricsResult | null {
  const length = Math.max(0, ...body.metrics.map((m) => m.value.length));
  if (length === 0) return null;
  const anchoredToFinish = align.finishedAt !== null && align.finishedAt.getTime() < align.referenceMs;
  const endMs = anchoredToFinish ? align.finishedAt!.getTime() : align.referenceMs;
  const lastMinuteStart = Math.floor(endMs / MINUTE_MS) * MINUTE_MS - MINUTE_MS;
  const startMs = align.startedAt?.getTime() ?? null;

  const contradictions: TaskMetricsResult['contradictions'] = [];
  const lengths = new Set(body.metrics.map((m) => m.value.length));
  if (lengths.size > 1) {
    contradictions.push({
      assumption: 'modelarts.metrics-shared-window',
      detail: `task ${task}: value arrays of lengths ${[...lengths].join(', ')} in one answer`,
    });
  }
  let sampledBeforeStart = 0;
  let overHundred = 0;
  const series: SeriesData[] = [];
  for (const { metric: rawName, value } of body.metrics) {
    for (const raw of value) if (raw !== null && raw > 100) overHundred += 1;
    const name = canonicalMetricFor('MODELARTS', rawName);
    if (!name || !wanted.has(name)) continue;
    const points: SeriesPoint[] = [];
    let missing = 0;
    let clipped = 0;
    value.forEach((raw, i) => {
      const minuteStart = lastMinuteStart - (value.length - 1 - i) * MINUTE_MS;
      if (startMs !== null && minuteStart + MINUTE_MS <= startMs) {
        clipped += 1;
        // A real sample (not -1) more than a minute before the task began: the minutes are not what we read.
        if (raw !== null && raw >= 0 && minuteStart + 2 * MINUTE_MS <= startMs) sampledBeforeStart += 1;
        return;
      }
      // -1 is the documented "no sample" marker; no utilization is negative, so any negative is one.
      const ratio = raw === null || raw < 0 ? null : percentToRatio(raw);
      if (ratio === null) {
        missing += 1;
        return;
      }
      points.push({ timestamp: new Date(minuteStart), step: null, value: ratio });
    });
    // All -1 (no such device, or not started in this window): nothing to report, and no empty series.
    if (points.length === 0) continue;
    // The check above fires only over 100: a 0..1 scale would pass it. A running job's accelerator
    // utilization never above 1 (1%) over an hour or more says the values are fractions after all.
    if ((name === 'GPU_UTILIZATION' || name === 'NPU_UTILIZATION') && align.finishedAt === null && startMs !== null) {
      const fraction = fractionScaleProblem(
        points.map((p) => ({ ms: p.timestamp!.getTime(), value: p.value === null ? null : p.value * 100 })),
        true,
      );
      if (fraction) contradictions.push({ assumption: 'modelarts.metrics-fraction-scale', detail: `task ${task} ${rawName}: ${fraction}` });
    }
    series.push({
      kind: 'system',
      name,
      rawName,
      unit: 'RATIO',
      scope: 'NODE',
      nodeExternalId: task,
      gpuIndex: null,
      source: 'modelarts',
      stage: null,
      keyedBy: 'time',
      meta: {
        aggregation: 'one-minute average over the task (all its devices); ModelArts has no per-GPU series',
        rawUnit: 'percent',
        timeAlignment: {
          method: 'derived',
          intervalSeconds: 60,
          label: 'start of the minute the value averages',
          lastPoint: anchoredToFinish ? 'last complete minute before the job finished' : 'last complete minute before the server answered',
          reference: anchoredToFinish ? 'job finishedAt' : align.referenceSource,
          referenceTime: new Date(endMs).toISOString(),
          lastMinuteStart: new Date(lastMinuteStart).toISOString(),
          rawLength: value.length,
          clippedBeforeStart: clipped,
        },
        missingSamples: missing,
      },
      points,
    });
  }
  if (sampledBeforeStart > 0) {
    contradictions.push({
      assumption: 'modelarts.metrics-minute-window',
      detail: `task ${task}: ${sampledBeforeStart} samples would date from before the task started (array length ${length}, last minute ${new Date(lastMinuteStart).toISOString()})`,
    });
  }
  if (overHundred > 0) contradictions.push({ assumption: 'modelarts.metrics-percent', detail: `task ${task}: ${overHundred} values over 100` });
  return {
    series,
    windowFrom: new Date(lastMinuteStart - (length - 1) * MINUTE_MS),
    windowTo: new Date(lastMinuteStart + MINUTE_MS),
    contradictions,
  };
}
