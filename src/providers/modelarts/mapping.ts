// ModelArts answers -> domain records: the job object, its tasks and flavor, and the running
// metrics, whose values carry no timestamps and get them derived here.
import { z } from 'zod';
import { canonicalMetricFor } from '../../domain/metric-catalog.js';
import type { JobRecord, JobStatus, NodeRecord, SeriesData, SeriesPoint, SystemMetric } from '../../domain/types.js';
import { epochMillisToDate, finiteOrNull, parseSizeToBytes, percentToRatio } from '../../domain/units.js';

const nullableString = z.string().nullish();
const countLike = z.union([z.number(), z.string()]).nullish();

const deviceSchema = z
  .object({ unit_num: countLike, product_name: nullableString, memory: nullableString })
  .nullish();

export const jobSchema = z.object({
  metadata: z.object({
    id: z.string().min(1),
    name: z.string(),
    workspace_id: nullableString,
    create_time: z.number().nullish(),
  }),
  status: z.object({
    phase: z.string(),
    secondary_phase: nullableString,
    duration: z.number().nullish(),
    start_time: z.number().nullish(),
    tasks: z.array(z.string()).nullish(),
  }),
  spec: z
    .object({
      resource: z
        .object({
          flavor_id: nullableString,
          node_count: z.number().int().nullish(),
          flavor_detail: z
            .object({
              flavor_type: nullableString,
              flavor_info: z.object({ gpu: deviceSchema, npu: deviceSchema }).nullish(),
            })
            .nullish(),
        })
        .nullish(),
    })
    .nullish(),
});
export type ModelArtsJob = z.infer<typeof jobSchema>;

export const searchResponseSchema = z.object({
  total: z.number().nullish(),
  count: z.number().nullish(),
  items: z.array(jobSchema),
});

export const metricsResponseSchema = z.object({
  metrics: z.array(z.object({ metric: z.string(), value: z.array(z.number().nullable()) })),
});
export type MetricsResponse = z.infer<typeof metricsResponseSchema>;

export const logPreviewSchema = z.object({
  // Named `context` before 2022-03-01.
  content: z.string().nullish(),
  context: z.string().nullish(),
  current_size: z.number().nullish(),
  full_size: z.number().nullish(),
});

const STATUS_BY_PHASE: Record<string, JobStatus> = {
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

function gpuFlavor(job: ModelArtsJob): { perNode: number; model: string | null; memoryBytes: number | null } | null {
  const detail = job.spec?.resource?.flavor_detail;
  if (!detail) return null;
  const gpu = detail.flavor_info?.gpu;
  const perNode = finiteOrNull(gpu?.unit_num);
  if (!gpu || perNode === null) return { perNode: 0, model: null, memoryBytes: null };
  // GPU vendors quote GiB parts as "32GB".
  return { perNode, model: gpu.product_name ?? null, memoryBytes: parseSizeToBytes(gpu.memory, { gbIsBinary: true }) };
}

export function mapJob(job: ModelArtsJob): JobRecord {
  const start = job.status.start_time ?? 0;
  const startedAt = epochMillisToDate(start);
  const duration = finiteOrNull(job.status.duration);
  const finishedAt =
    TERMINAL_PHASES.has(job.status.phase) && startedAt && duration !== null ? new Date(startedAt.getTime() + duration) : null;
  const workspaceId = job.metadata.workspace_id || DEFAULT_WORKSPACE_ID;
  const gpus = gpuFlavor(job);
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
    finishedAt,
    gpuType: gpus?.model ?? null,
    // flavor_detail is only filled for public pools; without it the count is unknown, not zero.
    gpuCount: gpus && nodeCount !== null ? nodeCount * gpus.perNode : null,
  };
}

/** Tasks are the job's nodes; each gets the flavor's GPUs (the API has no per-GPU data beyond that). */
export function mapNodes(job: ModelArtsJob): NodeRecord[] {
  const gpus = gpuFlavor(job);
  return (job.status.tasks ?? []).map((task) => ({
    externalId: task,
    name: task,
    gpus: Array.from({ length: gpus?.perNode ?? 0 }, (_, index) => ({ index, model: gpus?.model ?? null, memoryTotalBytes: gpus?.memoryBytes ?? null })),
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
}

/**
 * The API returns per-minute averages oldest -> newest with no timestamps. We read the last element
 * as the most recent complete minute before the server answered (or before the job finished) and
 * step back one minute per element; each point is labelled with the start of its minute. The
 * window's end and length are unconfirmed, so the derivation is written into every series' meta.
 */
export function mapTaskMetrics(
  body: MetricsResponse,
  task: string,
  wanted: ReadonlySet<SystemMetric>,
  align: MetricAlignment,
): TaskMetricsResult | null {
  const length = Math.max(0, ...body.metrics.map((m) => m.value.length));
  if (length === 0) return null;
  const anchoredToFinish = align.finishedAt !== null && align.finishedAt.getTime() < align.referenceMs;
  const endMs = anchoredToFinish ? align.finishedAt!.getTime() : align.referenceMs;
  const lastMinuteStart = Math.floor(endMs / MINUTE_MS) * MINUTE_MS - MINUTE_MS;
  const startMs = align.startedAt?.getTime() ?? null;

  const series: SeriesData[] = [];
  for (const { metric: rawName, value } of body.metrics) {
    const name = canonicalMetricFor('MODELARTS', rawName);
    if (!name || !wanted.has(name)) continue;
    const points: SeriesPoint[] = [];
    let missing = 0;
    let clipped = 0;
    value.forEach((raw, i) => {
      const minuteStart = lastMinuteStart - (value.length - 1 - i) * MINUTE_MS;
      if (startMs !== null && minuteStart + MINUTE_MS <= startMs) {
        clipped += 1;
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
  return {
    series,
    windowFrom: new Date(lastMinuteStart - (length - 1) * MINUTE_MS),
    windowTo: new Date(lastMinuteStart + MINUTE_MS),
  };
}
