// The Runicorn adapter, in two modes over the same mapping: the viewer's HTTP API (baseUrl) or the
// storage folder read directly (storageDir). Project = the run's experiment path, Job = a run.
import { DEFAULT_PROVIDER_TIMEOUT_SECONDS, type SecretSource } from '../../config/provider-kit.js';
import type { RunicornConfig } from './config.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import {
  TERMINAL_STATUSES,
  type JobRecord,
  type JobRef,
  type LogGap,
  type LogLineRecord,
  type LogPage,
  type LogRequest,
  type MetricFetchRequest,
  type ProjectRecord,
  type TrainingFetchRequest,
  type SeriesData,
  type SystemMetric,
} from '../../domain/types.js';
import { LogClock } from './log-clock.js';
import { epochSecondsToDate } from '../../domain/units.js';
import type { AdapterOptions } from '../platform.js';
import type { JobDetailResult, ProviderAdapter, ProviderCapabilities, SystemMetricsResult } from '../provider.js';
import { mapStatus, progressFromTable, reportedBest, tableToSeries, targetIterationFrom, TELEMETRY } from './mapping.js';
import type { RunicornSource, RunSnapshot } from './client.js';
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

const VIEWER_CAP_GAP =
  "the Runicorn viewer's log socket replays at most 10,000 lines and drops the line it read when it hit that cap; logs.txt (storage mode) has it";

export interface RunicornAdapter extends ProviderAdapter {
  readonly mode: 'viewer' | 'storage';
  /** Bytes read from events.jsonl files so far (storage mode; 0 in viewer mode). */
  eventBytesRead(): number;
  /** Viewer log sockets open right now (viewer mode; 0 in storage mode). */
  openLogSockets(): number;
}

const CAPABILITIES: ProviderCapabilities = {
  // Runicorn has no per-run system metrics; a viewer has /api/gpu/telemetry (below).
  systemMetrics: [],
  perGpuSeries: false,
  trainingMetrics: true,
  // The table is read whole either way (a file, or the viewer's answer), but a running run's sweep
  // then maps and writes only the points logged since its newest stored one, less the overlap, not
  // the whole run again (a day-long run logging a step a second: 87,000 points every sweep).
  trainingSince: true,
  progress: true,
  logs: true,
};

const TELEMETRY_METRICS = Object.keys(TELEMETRY) as SystemMetric[];
const HOST_SOURCE = 'runicorn:host';

/** The source (a viewer or a storage folder), runs as job records, and the log clocks. */
function runicornParts(config: RunicornConfig, options: AdapterOptions) {
  const timeoutMs = (config.timeoutSeconds ?? DEFAULT_PROVIDER_TIMEOUT_SECONDS) * 1000;
  let source: RunicornSource;
  let storage: StorageSource | null = null;
  let viewer: ViewerSource | null = null;
  if (config.storageDir) {
    storage = new StorageSource(config.id, config.storageDir.replace(/^~(?=\/|$)/, process.env.HOME ?? '~'));
    source = storage;
  } else if (config.baseUrl) {
    viewer = new ViewerSource(config.id, config.baseUrl, timeoutMs, options.timers);
    source = viewer;
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
      // Storage mode reads status.json's ended_at; viewer mode the last metric event (getJob only).
      finishedAt: status === 'RUNNING' ? null : epochSecondsToDate(run.endedAt),
      gpuType: null,
      gpuCount: null,
      // A run has no owner (meta.json's hostname is the machine, not a person).
      owner: null,
      labels: run.tags == null ? undefined : run.tags.map((key) => ({ key, value: null })),
      config: run.config && Object.keys(run.config).length > 0 ? run.config : null,
      reportedSummary: reportedBest(run.summary),
    };
  };

  /**
   * Line instants depend on the lines around them (day roll-over, daylight saving), so each run
   * keeps one clock fed every line known so far, in file order. Only new lines are fed: logs.txt
   * only grows, and a log whose last fed line changed is a new log (the clock starts over).
   */
  const clocks = new Map<string, { clock: LogClock; last: string | null }>();
  const clockFor = (job: JobRef, lines: readonly (string | null)[]): LogClock => {
    let entry = clocks.get(job.externalId);
    const fed = entry?.clock.fed ?? 0;
    if (!entry || lines.length < fed || (fed > 0 && lines[fed - 1] !== entry.last) || Date.now() > entry.clock.validUntil) {
      const notAfter = () => job.finishedAt ?? new Date();
      entry = { clock: new LogClock({ runId: job.externalId, createdAt: job.createdAt, notAfter }), last: null };
      clocks.delete(job.externalId);
      clocks.set(job.externalId, entry);
      if (clocks.size > 64) clocks.delete(clocks.keys().next().value!);
    }
    for (let i = entry.clock.fed; i < lines.length; i++) entry.clock.feed(lines[i] ?? '');
    entry.last = lines.length > 0 ? (lines[lines.length - 1] ?? null) : null;
    return entry.clock;
  };

  const requireRun = async (job: Pick<JobRef, 'externalId'>, signal: AbortSignal) => {
    const table = await source.metricTable(job.externalId, signal);
    if (!table) throw new UpstreamError('UPSTREAM_NOT_FOUND', config.id, `run ${job.externalId} not found`, { status: 404 });
    return table;
  };
  return { config, timeoutMs, source, storage, viewer, projectIdOf, toJob, clocks, clockFor, requireRun };
}

type RunicornParts = ReturnType<typeof runicornParts>;

async function fetchSystemMetrics(ctx: RunicornParts, job: JobRef, request: MetricFetchRequest, signal: AbortSignal): Promise<SystemMetricsResult> {
  const { viewer } = ctx;
  const complete = { series: [], covered: [...request.metrics], from: request.from, to: request.to };
  // Storage mode has no system metrics at all; a finished run's host readings are what was
  // cached while it ran (the endpoint has no history): either way the empty answer is complete.
  if (!viewer || job.status !== 'RUNNING') return complete;
  const wanted = request.metrics.filter((m) => TELEMETRY[m]);
  if (wanted.length === 0) return complete;
  const telemetry = await viewer.gpuTelemetry(signal);
  // No nvidia-smi on the viewer's host: nothing to claim.
  if (!telemetry) return { series: [], covered: [], from: request.from, to: request.to };
  const at = new Date(Math.round((telemetry.ts ?? Date.now() / 1000) * 1000));
  const series: SeriesData[] = [];
  for (const metric of wanted) {
    const spec = TELEMETRY[metric]!;
    for (const gpu of telemetry.gpus) {
      const raw = gpu[spec.field];
      series.push({
        kind: 'system',
        name: metric,
        rawName: spec.field,
        unit: spec.unit,
        scope: 'GPU',
        nodeExternalId: HOST_NODE_ID,
        gpuIndex: gpu.index,
        source: HOST_SOURCE,
        stage: null,
        keyedBy: 'time',
        meta: {
          hostWide: true,
          gpuName: gpu.name ?? null,
          note: "the viewer host's GPU as nvidia-smi reports it, whichever process uses it: not the run's own",
        },
        points: [{ timestamp: at, step: null, value: typeof raw === 'number' ? spec.convert(raw) : null }],
      });
    }
  }
  return { series, covered: wanted, from: request.from, to: request.to };
}

async function fetchLogs(ctx: RunicornParts, job: JobRef, request: LogRequest, signal: AbortSignal): Promise<LogPage> {
  const { config, source, clockFor } = ctx;
  const start = request.after === null ? 0 : Number(request.after);
  if (!Number.isInteger(start) || start < 0) throw new DomainError('BAD_INPUT', `not a Runicorn log cursor: ${request.after}`);
  const end = start + request.limit;
  const follow = !TERMINAL_STATUSES.has(job.status);
  // With `since`, lines before it are skipped, not counted: the page holds `limit` lines at or
  // after it, so every line so far is read (the instants are known only by reading the lines).
  const since = request.since;
  const slice = await source.logLines(job.externalId, since ? Number.MAX_SAFE_INTEGER : end, follow, signal);
  if (!slice) throw new UpstreamError('UPSTREAM_NOT_FOUND', config.id, `run ${job.externalId} not found`, { status: 404 });
  const clock = clockFor(job, slice.lines);
  const out: LogLineRecord[] = [];
  const gaps: LogGap[] = [];
  let cursor = start;
  for (let i = start; i < slice.lines.length && (since ? out.length < request.limit : i < end); i++) {
    cursor = i + 1;
    const message = slice.lines[i];
    if (message === null || message === undefined) {
      gaps.push({ after: i === 0 ? null : String(i), lines: 1, reason: VIEWER_CAP_GAP });
      continue;
    }
    const timestamp = clock.at(i);
    if (since && timestamp && timestamp < since) continue;
    out.push({ timestamp, message, node: null, level: null, cursor: String(i + 1) });
  }
  return { lines: out, nextCursor: cursor > 0 ? String(cursor) : request.after, ...(gaps.length > 0 ? { gaps } : {}) };
}

export function createRunicornAdapter(config: RunicornConfig, _secrets: SecretSource, options: AdapterOptions = {}): RunicornAdapter {
  const ctx: RunicornParts = runicornParts(config, options);
  const { source, storage, viewer, projectIdOf, toJob, requireRun } = ctx;
  return {
    id: config.id,
    kind: 'RUNICORN',
    capabilities: viewer ? { ...CAPABILITIES, systemMetrics: TELEMETRY_METRICS } : CAPABILITIES,
    mode: storage ? 'storage' : 'viewer',
    eventBytesRead: () => storage?.eventBytesRead ?? 0,
    openLogSockets: () => viewer?.openLogSockets() ?? 0,

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

    fetchSystemMetrics: (job, request, signal) => fetchSystemMetrics(ctx, job, request, signal),

    async fetchTrainingMetrics(job, request: TrainingFetchRequest, signal) {
      return tableToSeries(await requireRun(job, signal), request);
    },

    async fetchProgress(job, signal) {
      const table = await requireRun(job, signal);
      const run = await source.getRun(job.externalId, signal);
      // Storage mode: summary.json / meta.json; viewer mode: a newer viewer's summary, else the
      // logged config (assets.json). Which keys mean "target" is a convention (see targetIterationFrom).
      return progressFromTable(table, targetIterationFrom(run?.summary, run?.meta, run?.config));
    },

    fetchLogs: (job, request, signal) => fetchLogs(ctx, job, request, signal),

    async close() {
      await source.close?.();
    },
  };
}
