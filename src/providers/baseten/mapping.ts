// Baseten wire objects -> domain records in canonical units.
import { metricDefinition } from '../../domain/metric-catalog.js';
import { TERMINAL_STATUSES, type JobRecord, type JobStatus, type NodeRecord, type SeriesData, type SeriesPoint, type SystemMetric } from '../../domain/types.js';
import { finiteOrNull, isoToDate, mibToBytes } from '../../domain/units.js';
import type { WireMetrics, WireNodeMetrics, WirePoint, WireTrainingJob } from './wire.js';

const STATUS: Record<string, JobStatus> = {
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

export function mapJob(job: WireTrainingJob): JobRecord {
  const status = mapStatus(job.current_status);
  return {
    externalId: job.id,
    projectExternalId: job.training_project_id,
    projectName: job.training_project?.name,
    name: job.name ?? job.id,
    status,
    rawStatus: job.current_status,
    createdAt: isoToDate(job.created_at),
    // Baseten's job resource has no start/finish fields; created_at and the last update while
    // terminal are the closest documented facts.
    startedAt: isoToDate(job.created_at),
    finishedAt: TERMINAL_STATUSES.has(status) ? isoToDate(job.updated_at) : null,
    gpuType: job.instance_type.gpu_type ?? null,
    // gpu_count is per node and the node count is not on the job resource: the store fills the
    // job total once per_node_metrics reveals the nodes.
    gpuCount: null,
  };
}

function toPoints(points: readonly WirePoint[]): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  for (const p of points) {
    const ts = isoToDate(p.timestamp);
    if (!ts) continue;
    out.push({ timestamp: ts, step: null, value: finiteOrNull(p.value) });
  }
  return out;
}

function series(
  name: SystemMetric,
  rawName: string,
  scope: 'JOB' | 'NODE' | 'GPU',
  nodeExternalId: string | null,
  gpuIndex: number | null,
  points: SeriesPoint[],
  meta: Record<string, unknown> = {},
): SeriesData {
  return {
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
    points,
  };
}

function rankIndex(rank: string): number | null {
  return /^\d+$/.test(rank) ? Number(rank) : null;
}

function nodeSeries(nodeId: string, m: WireNodeMetrics, gpuMemoryLimitBytes: number | null): SeriesData[] {
  const out: SeriesData[] = [];
  for (const [rank, pts] of Object.entries(m.gpu_utilization)) {
    const idx = rankIndex(rank);
    if (idx !== null) out.push(series('GPU_UTILIZATION', 'gpu_utilization', 'GPU', nodeId, idx, toPoints(pts)));
  }
  for (const [rank, pts] of Object.entries(m.gpu_memory_usage_bytes)) {
    const idx = rankIndex(rank);
    if (idx === null) continue;
    const used = toPoints(pts);
    out.push(series('GPU_MEMORY_USED', 'gpu_memory_usage_bytes', 'GPU', nodeId, idx, used));
    if (gpuMemoryLimitBytes) {
      out.push(
        series(
          'GPU_MEMORY_UTILIZATION',
          'gpu_memory_usage_bytes',
          'GPU',
          nodeId,
          idx,
          used.map((p) => ({ ...p, value: p.value === null ? null : p.value / gpuMemoryLimitBytes })),
          { derived: true, derivation: 'gpu_memory_usage_bytes / (instance_type.gpu_memory_limit_mib * 2^20)' },
        ),
      );
    }
  }
  out.push(series('CPU_USAGE', 'cpu_usage', 'NODE', nodeId, null, toPoints(m.cpu_usage)));
  out.push(series('MEMORY_USED', 'cpu_memory_usage_bytes', 'NODE', nodeId, null, toPoints(m.cpu_memory_usage_bytes)));
  out.push(series('STORAGE_USED', 'ephemeral_storage.usage_bytes', 'NODE', nodeId, null, toPoints(m.ephemeral_storage.usage_bytes)));
  out.push(
    series('STORAGE_UTILIZATION', 'ephemeral_storage.utilization', 'NODE', nodeId, null, toPoints(m.ephemeral_storage.utilization)),
  );
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
    const ranks = new Set<number>();
    for (const r of [...Object.keys(node.metrics.gpu_utilization), ...Object.keys(node.metrics.gpu_memory_usage_bytes)]) {
      const idx = rankIndex(r);
      if (idx !== null) ranks.add(idx);
    }
    // A node that has not reported a rank yet still has the GPUs its instance type promises.
    const perNode = job?.instance_type.gpu_count ?? 0;
    for (let i = 0; i < perNode; i++) ranks.add(i);
    nodes.push({
      externalId: node.node_id,
      name: node.node_id,
      gpus: [...ranks].sort((a, b) => a - b).map((index) => ({ index, model: gpuModel, memoryTotalBytes: gpuMemoryLimitBytes })),
    });
  }
  if (body.cache) {
    out.push(series('STORAGE_USED', 'cache.usage_bytes', 'JOB', null, null, toPoints(body.cache.usage_bytes), { volume: 'read-write cache' }));
    out.push(
      series('STORAGE_UTILIZATION', 'cache.utilization', 'JOB', null, null, toPoints(body.cache.utilization), { volume: 'read-write cache' }),
    );
  }
  return { series: out, nodes };
}
