// The Runicorn adapter, in two modes over the same mapping: the viewer's HTTP API (baseUrl) or the
// storage folder read directly (storageDir). Project = the run's experiment path, Job = a run.
import type { RunicornConfig, SecretSource } from '../../config/index.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import type { JobRecord, JobRef, LogLineRecord, LogPage, LogRequest, MetricFetchRequest, ProjectRecord, TrainingFetchRequest } from '../../domain/types.js';
import { epochSecondsToDate } from '../../domain/units.js';
import type { JobDetailResult, ProviderAdapter, ProviderCapabilities, SystemMetricsResult } from '../provider.js';
import { logTimestamper, mapStatus, progressFromTable, tableToSeries, targetIterationFrom } from './mapping.js';
import type { RunicornSource, RunSnapshot } from './source.js';
import { StorageSource } from './storage-source.js';
import { ViewerSource } from './viewer-source.js';

/**
 * Runs directly under runs/ have no path; they share this project id. The full path (not its
 * first segment) is the project: it is the only grouping the SDK writes, and a first-segment
 * project would lose the rest of the path, which a job record has no other place for.
 */
export const ROOT_PROJECT_ID = '/';

/** The one node of every run: the machine the writer ran on (Runicorn records no per-run GPUs). */
export const HOST_NODE_ID = 'host';

export interface RunicornAdapter extends ProviderAdapter {
  readonly mode: 'viewer' | 'storage';
  /** Bytes read from events.jsonl files so far (storage mode; 0 in viewer mode). */
  eventBytesRead(): number;
}

const CAPABILITIES: ProviderCapabilities = {
  // Runicorn has no per-run system metrics; /api/gpu/telemetry is a host snapshot tied to no run.
  systemMetrics: [],
  perGpuSeries: false,
  metricsInOneCall: true,
  trainingMetrics: true,
  progress: true,
  logs: true,
};

export function createRunicornAdapter(config: RunicornConfig, _secrets: SecretSource): RunicornAdapter {
  const timeoutMs = (config.timeoutSeconds ?? 30) * 1000;
  let source: RunicornSource;
  let storage: StorageSource | null = null;
  if (config.storageDir) {
    storage = new StorageSource(config.id, config.storageDir.replace(/^~(?=\/|$)/, process.env.HOME ?? '~'));
    source = storage;
  } else if (config.baseUrl) {
    source = new ViewerSource(config.id, config.baseUrl, timeoutMs);
  } else {
    throw new Error(`provider "${config.id}": needs baseUrl or storageDir`);
  }

  const projectIdOf = (run: RunSnapshot) => run.path || ROOT_PROJECT_ID;

  const toJob = (run: RunSnapshot): JobRecord => {
    const status = mapStatus(run.status);
    return {
      externalId: run.id,
      projectExternalId: projectIdOf(run),
      projectName: projectIdOf(run),
      name: run.alias || run.id,
      status,
      rawStatus: run.status,
      createdAt: epochSecondsToDate(run.createdTime),
      startedAt: epochSecondsToDate(run.startedAt),
      // Storage mode reads status.json's ended_at; the 0.6.0 viewer exposes no end at all.
      finishedAt: status === 'RUNNING' ? null : epochSecondsToDate(run.endedAt),
      gpuType: null,
      gpuCount: null,
    };
  };

  const requireRun = async (job: Pick<JobRef, 'externalId'>, signal: AbortSignal) => {
    const table = await source.metricTable(job.externalId, signal);
    if (!table) throw new UpstreamError('UPSTREAM_NOT_FOUND', config.id, `run ${job.externalId} not found`, { status: 404 });
    return table;
  };

  return {
    id: config.id,
    kind: 'RUNICORN',
    capabilities: CAPABILITIES,
    mode: storage ? 'storage' : 'viewer',
    eventBytesRead: () => storage?.eventBytesRead ?? 0,

    async listProjects(signal): Promise<ProjectRecord[]> {
      const earliest = new Map<string, number | null>();
      for (const run of await source.listRuns(signal)) {
        const id = projectIdOf(run);
        const prev = earliest.get(id);
        const t = run.createdTime;
        earliest.set(id, prev === undefined ? t : prev === null ? t : t === null ? prev : Math.min(prev, t));
      }
      return [...earliest.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, created]) => ({ externalId: id, name: id, createdAt: epochSecondsToDate(created) }));
    },

    // The viewer lists every run in one answer (no paging), so there is only one page.
    async listJobs(_cursor, signal) {
      return { jobs: (await source.listRuns(signal)).map(toJob), nextCursor: null };
    },

    async getJob(ref, signal): Promise<JobDetailResult | null> {
      const run = await source.getRun(ref.externalId, signal);
      if (!run) return null;
      return { ...toJob(run), nodes: [{ externalId: HOST_NODE_ID, name: run.hostname ?? HOST_NODE_ID, gpus: [] }] };
    },

    async fetchSystemMetrics(_job, request: MetricFetchRequest): Promise<SystemMetricsResult> {
      // Nothing per run exists, so the (empty) answer is complete for whatever was asked.
      return { series: [], covered: [...request.metrics], from: request.from, to: request.to };
    },

    async fetchTrainingMetrics(job, request: TrainingFetchRequest, signal) {
      return tableToSeries(await requireRun(job, signal), request);
    },

    async fetchProgress(job, signal) {
      const table = await requireRun(job, signal);
      const run = await source.getRun(job.externalId, signal);
      return progressFromTable(table, targetIterationFrom(run?.summary, run?.meta));
    },

    async fetchLogs(job, request: LogRequest, signal): Promise<LogPage> {
      const start = request.after === null ? 0 : Number(request.after);
      if (!Number.isInteger(start) || start < 0) throw new DomainError('BAD_INPUT', `not a Runicorn log cursor: ${request.after}`);
      const lines = await source.logLines(job.externalId, signal);
      if (!lines) throw new UpstreamError('UPSTREAM_NOT_FOUND', config.id, `run ${job.externalId} not found`, { status: 404 });
      const stamp = logTimestamper(job.externalId, job.createdAt);
      // Timestamps depend on the lines before (day roll-over), so every line is stamped in order.
      const stamped = lines.map((message) => (message === null ? null : { message, timestamp: stamp(message) }));
      const out: LogLineRecord[] = [];
      let cursor = start;
      for (let i = start; i < stamped.length && out.length < request.limit; i++) {
        cursor = i + 1;
        const line = stamped[i];
        if (!line) continue;
        if (request.since && line.timestamp && line.timestamp < request.since) continue;
        out.push({ timestamp: line.timestamp, message: line.message, node: null, level: null, cursor: String(i + 1) });
      }
      return { lines: out, nextCursor: cursor > 0 ? String(cursor) : request.after };
    },
  };
}
