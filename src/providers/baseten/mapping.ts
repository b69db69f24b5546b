// Baseten wire objects -> domain records in canonical units.
import { metricDefinition, rawName } from '../../domain/metric-catalog.js';
import {
  TERMINAL_STATUSES,
  type JobRecord,
  type JobStatus,
  type NodeRecord,
  seriesWithColumns,
  type PointColumns,
  type SeriesData,
  type SystemMetric,
} from '../../domain/types.js';
import { isoToDate, isoToMillis, mibToBytes } from '../../domain/units.js';
import type { WireMetrics, WireNodeMetrics, WirePoint, WireQueueContext, WireTrainingJob } from './wire.js';

export const STATUS: Readonly<Record<string, JobStatus>> = {
  TRAINING_JOB_PENDING: 'PENDING',
  TRAINING_JOB_QUEUED: 'PENDING', // in the CLI source, not in the docs table
  TRAINING_JOB_CREATED: 'PENDING',
  TRAINING_JOB_DEPLOYING: 'PENDING',
  TRAINING_JOB_RUNNING: 'RUNNING',
  TRAINING_JOB_COMPLETED: 'SUCCEEDED',
  TRAINING_JOB_DEPLOY_FAILED: 'FAILED',
  TRAINING_JOB_FAILED: 'FAILED',
  TRAINING_JOB_STOPPED: 'STOPPED',
};

export function mapStatus(raw: string): JobStatus {
  return STATUS[raw] ?? 'UNKNOWN';
}

/**
 * Statuses in which the job has not started: waiting for capacity, or created and being deployed
 * (its containers are not running yet; issue 38: a creation time there read as a start gave ranFor
 * hours for jobs that never ran).
 */
const NOT_STARTED = new Set(['TRAINING_JOB_PENDING', 'TRAINING_JOB_QUEUED', 'TRAINING_JOB_CREATED', 'TRAINING_JOB_DEPLOYING']);
const FAILURE_STATUSES = new Set(['FAILED', 'STOPPED']);

export function mapJob(job: WireTrainingJob): JobRecord {
  const status = mapStatus(job.current_status);
  const gpusPerNode = job.instance_type.gpu_count ?? null;
  return {
    externalId: job.id,
    projectExternalId: job.training_project_id,
    projectName: job.training_project?.name,
    name: job.name ?? job.id,
    status,
    rawStatus: job.current_status,
    createdAt: isoToDate(job.created_at),
    // The job resource has no start field: a job waiting for capacity has not started; any other
    // started no earlier than its creation, the closest documented fact, until the store holds its
    // first metric point (CREATION gives way to FIRST_METRIC there).
    startedAt: NOT_STARTED.has(job.current_status) ? null : isoToDate(job.created_at),
    startedAtSource: 'CREATION',
    // Nor a finish field, and the official TrainingJobV1 has no status history. A terminal status
    // event (queue context) gives the finish where one exists (withQueueContext); otherwise the last
    // update of a terminal job stands in as an upper bound (it can move later, e.g. with checkpoint
    // sync; unconfirmed how far): without any end, the job's window would run to now.
    finishedAt: TERMINAL_STATUSES.has(status) ? isoToDate(job.updated_at) : null,
    gpuType: job.instance_type.gpu_type ?? null,
    // gpu_count is per node and the node count is not on the job resource: the total comes from
    // the queue context (requested_gpus) or, once nodes report, from the GPUs they report.
    gpuCount: gpusPerNode === 0 ? 0 : null,
    acceleratorKind: gpusPerNode === null ? null : gpusPerNode > 0 ? 'GPU' : 'NONE',
    failureReason: FAILURE_STATUSES.has(status) && job.error_message?.trim() ? job.error_message.trim() : null,
    consoleUrl: `https://app.baseten.co/training/${encodeURIComponent(job.training_project_id)}/logs/${encodeURIComponent(job.id)}`,
    restartCount: null,
    owner: job.user?.email ?? null,
    // The job resource has no labels, configuration, image or command (those are in the create
    // request only): none is claimed.
    labels: [],
  };
}

/**
 * What the queue context adds: requested_gpus (gpu_count x node count) as the job's GPU total, and
 * a terminal status event (a job stopped or failed while pending) as its finish time.
 */
export function withQueueContext(record: JobRecord, job: WireTrainingJob, context: WireQueueContext | null): JobRecord {
  if (!context || context.target_job_id !== job.id) return record;
  const own = context.events.filter((e) => e.training_job_id === job.id);
  const terminal = own.find((e) => TERMINAL_STATUSES.has(mapStatus(e.status)));
  return {
    ...record,
    gpuCount: context.requested_gpus ?? record.gpuCount,
    finishedAt: TERMINAL_STATUSES.has(record.status) && terminal ? isoToDate(terminal.created) : record.finishedAt,
  };
}

/** A series' points as columns (a dashboard's fetch brings millions: no object or Date per point). */
function toPoints(points: readonly WirePoint[]): PointColumns {
  const ts = new Float64Array(points.length);
  const value = new Float64Array(points.length);
  let n = 0;
  for (const p of points) {
    const ms = isoToMillis(p.timestamp);
    if (Number.isNaN(ms)) continue;
    ts[n] = ms;
    // finiteOrNull, with NaN for null.
    value[n] = typeof p.value === 'number' && Number.isFinite(p.value) ? p.value : Number.NaN;
    n++;
  }
  return n === points.length ? { length: n, ts, step: null, value } : { length: n, ts: ts.subarray(0, n), step: null, value: value.subarray(0, n) };
}

function series(
  name: SystemMetric,
  rawName: string,
  scope: 'JOB' | 'NODE' | 'GPU',
  nodeExternalId: string | null,
  gpuIndex: number | null,
  points: PointColumns,
  meta: Record<string, unknown> = {},
): SeriesData {
  return seriesWithColumns(
    {
      kind: 'system',
      name,
      rawName,
      unit: metricDefinition(name).unit,
      scope,
      nodeExternalId,
      gpuIndex,
      source: 'baseten',
      stage: null,
      keyedBy: 'time',
      meta,
    },
    points,
  );
}

/** Baseten's raw names, from the metric catalog (per node; the job's read-write cache volume apart). */
const BASETEN_NAME = {
  GPU_UTILIZATION: rawName('GPU_UTILIZATION', 'BASETEN'),
  GPU_MEMORY_USED: rawName('GPU_MEMORY_USED', 'BASETEN'),
  GPU_MEMORY_UTILIZATION: rawName('GPU_MEMORY_UTILIZATION', 'BASETEN'),
  CPU_USAGE: rawName('CPU_USAGE', 'BASETEN'),
  MEMORY_USED: rawName('MEMORY_USED', 'BASETEN'),
  STORAGE_USED: rawName('STORAGE_USED', 'BASETEN', 'per node'),
  STORAGE_UTILIZATION: rawName('STORAGE_UTILIZATION', 'BASETEN', 'per node'),
  CACHE_USED: rawName('STORAGE_USED', 'BASETEN', 'cache'),
  CACHE_UTILIZATION: rawName('STORAGE_UTILIZATION', 'BASETEN', 'cache'),
};

function rankIndex(rank: string): number | null {
  return /^\d+$/.test(rank) ? Number(rank) : null;
}

function nodeSeries(nodeId: string, m: WireNodeMetrics, gpuMemoryLimitBytes: number | null): SeriesData[] {
  const out: SeriesData[] = [];
  for (const [rank, pts] of Object.entries(m.gpu_utilization)) {
    const idx = rankIndex(rank);
    if (idx !== null) out.push(series('GPU_UTILIZATION', BASETEN_NAME.GPU_UTILIZATION, 'GPU', nodeId, idx, toPoints(pts)));
  }
  for (const [rank, pts] of Object.entries(m.gpu_memory_usage_bytes)) {
    const idx = rankIndex(rank);
    if (idx === null) continue;
    const used = toPoints(pts);
    out.push(series('GPU_MEMORY_USED', BASETEN_NAME.GPU_MEMORY_USED, 'GPU', nodeId, idx, used));
    if (gpuMemoryLimitBytes) {
      out.push(
        series(
          'GPU_MEMORY_UTILIZATION',
          BASETEN_NAME.GPU_MEMORY_UTILIZATION,
          'GPU',
          nodeId,
          idx,
          { ...used, value: used.value.map((v) => v / gpuMemoryLimitBytes) },
          { derived: true, derivation: `${BASETEN_NAME.GPU_MEMORY_UTILIZATION} / (instance_type.gpu_memory_limit_mib * 2^20)` },
        ),
      );
    }
  }
  out.push(series('CPU_USAGE', BASETEN_NAME.CPU_USAGE, 'NODE', nodeId, null, toPoints(m.cpu_usage)));
  out.push(series('MEMORY_USED', BASETEN_NAME.MEMORY_USED, 'NODE', nodeId, null, toPoints(m.cpu_memory_usage_bytes)));
  out.push(series('STORAGE_USED', BASETEN_NAME.STORAGE_USED, 'NODE', nodeId, null, toPoints(m.ephemeral_storage.usage_bytes)));
  out.push(series('STORAGE_UTILIZATION', BASETEN_NAME.STORAGE_UTILIZATION, 'NODE', nodeId, null, toPoints(m.ephemeral_storage.utilization)));
  return out;
}

/**
 * Per-node series from per_node_metrics. The top-level series describe only the leader node, so
 * they are not stored as job-level numbers (that would present one node as the whole job); the
 * read-write cache volume is the one truly job-level series.
 */
export function mapMetrics(body: WireMetrics, job: WireTrainingJob | undefined): { series: SeriesData[]; nodes: NodeRecord[] } {
  const gpuMemoryLimitBytes = mibToBytes(job?.instance_type.gpu_memory_limit_mib ?? null);
  const gpuModel = job?.instance_type.gpu_type ?? null;
  const out: SeriesData[] = [];
  const nodes: NodeRecord[] = [];
  for (const node of body.per_node_metrics) {
    out.push(...nodeSeries(node.node_id, node.metrics, gpuMemoryLimitBytes));
    // A node has the GPUs it reports, whatever the numbering (local 0..7 on every node, or global
    // 8..15 on the second): 2 nodes x 8 GPUs are 16 GPUs either way, never more.
    const ranks = new Set<number>();
    for (const r of [...Object.keys(node.metrics.gpu_utilization), ...Object.keys(node.metrics.gpu_memory_usage_bytes)]) {
      const idx = rankIndex(r);
      if (idx !== null) ranks.add(idx);
    }
    nodes.push({
      externalId: node.node_id,
      name: node.node_id,
      gpus: [...ranks].sort((a, b) => a - b).map((index) => ({ index, model: gpuModel, memoryTotalBytes: gpuMemoryLimitBytes })),
    });
  }
  if (body.cache) {
    out.push(series('STORAGE_USED', BASETEN_NAME.CACHE_USED, 'JOB', null, null, toPoints(body.cache.usage_bytes), { volume: 'read-write cache' }));
    out.push(
      series('STORAGE_UTILIZATION', BASETEN_NAME.CACHE_UTILIZATION, 'JOB', null, null, toPoints(body.cache.utilization), { volume: 'read-write cache' }),
    );
  }
  return { series: out, nodes };
}
