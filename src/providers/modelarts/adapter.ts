// The Huawei Cloud ModelArts adapter: training jobs (API v2) of one IAM project, grouped by
// ModelArts workspace, with per-task running metrics and log previews.
import { DEFAULT_PROVIDER_TIMEOUT_SECONDS, requireSecret, type SecretSource } from '../../config/provider-kit.js';
import type { ModelArtsConfig } from './config.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import type { JobPage, JobRef, LogLineRecord, LogPage, LogRequest, MetricFetchRequest, ProjectRecord, SeriesData, SystemMetric } from '../../domain/types.js';
import { TERMINAL_STATUSES } from '../../domain/types.js';
import type { HttpResponse, UpstreamTimers } from '../http-client.js';
import type { JobDetailResult, ProviderAdapter, ProviderCapabilities, SystemMetricsResult } from '../provider.js';
import { reportShapeMismatch } from '../shape-watch.js';
import { JOB_NOT_FOUND_CODE, ModelArtsClient, type ModelArtsAuth } from './client.js';
import {
  DEFAULT_WORKSPACE_ID,
  jobSchema,
  logPreviewSchema,
  mapJob,
  mapNodes,
  mapTaskMetrics,
  metricsResponseSchema,
  searchResponseSchema,
  workspaceName,
  type ModelArtsJob,
} from './mapping.js';

/** The search API's largest page. */
const PAGE_SIZE = 50;

const SYSTEM_METRICS: readonly SystemMetric[] = [
  'GPU_UTILIZATION',
  'GPU_MEMORY_UTILIZATION',
  'CPU_UTILIZATION',
  'MEMORY_UTILIZATION',
  'NPU_UTILIZATION',
  'NPU_MEMORY_UTILIZATION',
];

export interface ModelArtsAdapterOptions {
  /** The clock used for signing dates and token expiry; default Date.now. */
  now?: () => number;
  /** What the time-outs of its calls run on (AdapterOptions.timers); default the real clock. */
  timers?: UpstreamTimers;
}

function authFromConfig(config: ModelArtsConfig, secrets: SecretSource): ModelArtsAuth {
  if (config.accessKeyIdEnv && config.secretAccessKeyEnv) {
    return {
      mode: 'aksk',
      credentials: {
        accessKeyId: requireSecret(secrets, config.accessKeyIdEnv, config.id),
        secretAccessKey: requireSecret(secrets, config.secretAccessKeyEnv, config.id),
      },
      securityToken: config.securityTokenEnv ? requireSecret(secrets, config.securityTokenEnv, config.id) : null,
    };
  }
  if (config.iamUrl && config.domainName && config.usernameEnv && config.passwordEnv) {
    return {
      mode: 'token',
      iamUrl: config.iamUrl,
      domainName: config.domainName,
      username: requireSecret(secrets, config.usernameEnv, config.id),
      password: requireSecret(secrets, config.passwordEnv, config.id),
      projectName: config.projectName ?? null,
    };
  }
  throw new Error(`provider "${config.id}": needs AK/SK or IAM credentials`);
}

/** Per-task byte offsets into the full log, so a resumed read never repeats a line. */
type LogOffsets = Record<string, number>;

function encodeLogCursor(offsets: LogOffsets): string {
  return Buffer.from(JSON.stringify(offsets), 'utf8').toString('base64url');
}

function decodeLogCursor(cursor: string | null): LogOffsets {
  if (cursor === null) return {};
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && Object.values(parsed).every((v) => Number.isInteger(v) && (v as number) >= 0)) {
      return parsed as LogOffsets;
    }
  } catch {
    // falls through to the error below
  }
  throw new DomainError('BAD_INPUT', 'not a ModelArts log cursor');
}

/**
 * Where a ModelArts log line says when it was written. Training logs mix the platform's own lines
 * ("[ModelArts Service Log]2024-05-20 10:31:56,842 - INFO - ...", a "[Modelarts Service Log]"
 * spelling too), Python logging's default "2024-05-20 10:31:56,842 - name - INFO - ...", bracketed
 * "[2024-05-20 10:31:56]" stamps and ISO-8601 with an offset. A stamp without an offset is read as
 * UTC (the training containers' default TZ; our reading, unconfirmed).
 */
const LOG_TIMESTAMP = /^(?:\[Model[Aa]rts Service Log\]\s*)?\[?(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?\]?/;
const LOG_LEVEL = /\b(DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\b/;

/** The time and level a ModelArts log line starts with, in any of the formats above. */
export function parseLogLine(text: string): { timestamp: Date | null; level: string | null; assumedUtc: boolean } {
  const m = LOG_TIMESTAMP.exec(text);
  if (!m) return { timestamp: null, level: null, assumedUtc: false };
  const fraction = m[3] ? `.${m[3].slice(0, 3).padEnd(3, '0')}` : '';
  const offset = m[4] ? (m[4] === 'Z' ? 'Z' : m[4].includes(':') ? m[4] : `${m[4].slice(0, 3)}:${m[4].slice(3)}`) : 'Z';
  const ms = Date.parse(`${m[1]}T${m[2]}${fraction}${offset}`);
  const rest = text.slice(m[0].length, m[0].length + 40);
  return { timestamp: Number.isNaN(ms) ? null : new Date(ms), level: LOG_LEVEL.exec(rest)?.[1] ?? null, assumedUtc: !m[4] };
}

/** Slack for clocks and log buffering before a stamp read as UTC counts as contradicting that reading. */
const LOG_CLOCK_SLACK_MS = 10 * 60_000;

/** The region in a ModelArts endpoint (modelarts.{region}.myhuaweicloud.com), else the IAM project name. */
function regionOf(config: ModelArtsConfig): string | null {
  try {
    const m = /^modelarts\.([a-z0-9-]+)\./.exec(new URL(config.baseUrl).hostname);
    if (m) return m[1]!;
  } catch {
    // a malformed URL fails elsewhere, with a clearer message
  }
  return config.projectName ?? null;
}

/** The signed client, the region and workspace, and job lookups (search pages, one job, its tasks). */
function modelartsParts(config: ModelArtsConfig, secrets: SecretSource, options: ModelArtsAdapterOptions) {
  const providerId = config.id;
  const now = options.now ?? Date.now;
  const client = new ModelArtsClient({
    providerId,
    baseUrl: config.baseUrl,
    projectId: config.projectId,
    timeoutMs: (config.timeoutSeconds ?? DEFAULT_PROVIDER_TIMEOUT_SECONDS) * 1000,
    timers: options.timers,
    auth: authFromConfig(config, secrets),
    now,
  });
  const mapCtx = { region: regionOf(config) };
  // The search lists one workspace: the configured one, or the default ("0") the API itself
  // defaults to. Jobs of other workspaces are only visible with their workspace configured.
  const workspaceId = config.workspaceId || DEFAULT_WORKSPACE_ID;
  // Task names seen on jobs, so logs need no extra job lookup; only non-empty lists are kept,
  // because a job gets its tasks when it starts.
  const knownTasks = new Map<string, string[]>();

  const remember = (job: ModelArtsJob) => {
    const tasks = job.status.tasks ?? [];
    if (tasks.length > 0) knownTasks.set(job.metadata.id, tasks);
  };

  const jobPath = (jobId: string, rest = '') => client.projectPath(`/training-jobs/${encodeURIComponent(jobId)}${rest}`);

  const searchPage = async (page: number, signal: AbortSignal) => {
    const res = await client.send(
      'POST',
      client.projectPath('/training-job-searches'),
      {
        // `offset` is a page index, not a record offset.
        offset: page,
        limit: PAGE_SIZE,
        sort_by: 'create_time',
        order: 'desc',
        workspace_id: workspaceId,
      },
      signal,
    );
    const body = client.parse(res, searchResponseSchema, 'training job search');
    body.items.forEach(remember);
    const seen = page * PAGE_SIZE + body.items.length;
    const last = body.items.length < PAGE_SIZE || (body.count != null && seen >= body.count);
    return { items: body.items, nextPage: last ? null : page + 1 };
  };

  const fetchJob = async (jobId: string, signal: AbortSignal): Promise<ModelArtsJob | null> => {
    try {
      const res = await client.send('GET', jobPath(jobId), undefined, signal);
      const job = client.parse(res, jobSchema, 'training job');
      remember(job);
      return job;
    } catch (err) {
      if (err instanceof UpstreamError && err.details.upstreamCode === JOB_NOT_FOUND_CODE) return null;
      throw err;
    }
  };

  const tasksOf = async (jobId: string, signal: AbortSignal): Promise<string[]> => {
    const cached = knownTasks.get(jobId);
    if (cached) return cached;
    const job = await fetchJob(jobId, signal);
    return job?.status.tasks ?? [];
  };

  /** The server's clock from its Date header, which the metric windows are cut by. */
  const serverTime = (res: HttpResponse): { ms: number; source: 'server Date header' | 'local clock' } => {
    const header = res.headers.get('date');
    const ms = header ? Date.parse(header) : Number.NaN;
    return Number.isNaN(ms) ? { ms: now(), source: 'local clock' } : { ms, source: 'server Date header' };
  };

  const capabilities: ProviderCapabilities = {
    systemMetrics: SYSTEM_METRICS,
    perGpuSeries: false,
    trainingMetrics: false,
    progress: false,
    logs: true,
    // One-minute averages (mapping.ts): a point a minute at most.
    sampleSeconds: 60,
  };
  return {
    config,
    secrets,
    options,
    providerId,
    now,
    client,
    mapCtx,
    workspaceId,
    knownTasks,
    remember,
    jobPath,
    searchPage,
    fetchJob,
    tasksOf,
    serverTime,
    capabilities,
  };
}

type ModelArtsParts = ReturnType<typeof modelartsParts>;

async function fetchSystemMetrics(ctx: ModelArtsParts, job: JobRef, request: MetricFetchRequest, signal: AbortSignal): Promise<SystemMetricsResult> {
  const { providerId, now, client, mapCtx, jobPath, fetchJob, serverTime } = ctx;
  const wanted = new Set(request.metrics.filter((m) => SYSTEM_METRICS.includes(m)));
  const covered = [...wanted];
  // The job first: its tasks are the nodes the series belong to, returned with them so the
  // topology and the series agree in every answer (a cold cache included).
  const detail = await fetchJob(job.externalId, signal);
  if (!detail) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `ModelArts job ${job.externalId} does not exist`);
  const tasks = wanted.size === 0 ? [] : (detail.status.tasks ?? []);
  const nodes = mapNodes(detail);
  const current = mapJob(detail, mapCtx);
  const finishedAt = TERMINAL_STATUSES.has(current.status) ? current.finishedAt : null;

  const answers = await Promise.all(
    tasks.map(async (task) => {
      const res = await client.send('GET', jobPath(job.externalId, `/metrics/${encodeURIComponent(task)}`), undefined, signal);
      const clock = serverTime(res);
      // 204 is ModelArts.2777 NotReadyToFetchMetric: the job started under a minute ago.
      if (res.status === 204 || res.text.trim() === '') return { result: null, clock };
      const body = client.parse(res, metricsResponseSchema, `metrics of ${task}`);
      const result = mapTaskMetrics(body, task, wanted, {
        referenceMs: clock.ms,
        referenceSource: clock.source,
        startedAt: current.startedAt ?? job.startedAt,
        finishedAt,
      });
      for (const c of result?.contradictions ?? []) reportShapeMismatch({ providerId, ...c, detail: `job ${job.externalId}, ${c.detail}` });
      return { result, clock };
    }),
  );

  const series: SeriesData[] = [];
  let from: number | null = null;
  let to: number | null = null;
  for (const { result } of answers) {
    if (!result) continue;
    series.push(...result.series);
    // Complete for the range every task's window covers.
    from = Math.max(from ?? -Infinity, result.windowFrom.getTime());
    to = Math.min(to ?? Infinity, result.windowTo.getTime());
  }
  if (from === null || to === null || from > to) {
    // Nothing to report yet: an empty range, complete in the vacuous sense.
    const at = answers[0]?.clock.ms ?? now();
    // A running job with nothing to report yet is not "no data": nothing is recorded complete.
    return { series, covered: TERMINAL_STATUSES.has(current.status) ? covered : [], from: new Date(at), to: new Date(at), nodes };
  }
  return { series, covered, from: new Date(from), to: new Date(to), nodes };
}

async function fetchLogs(ctx: ModelArtsParts, job: JobRef, request: LogRequest, signal: AbortSignal): Promise<LogPage> {
  const { providerId, client, jobPath, tasksOf, serverTime } = ctx;
  const offsets = decodeLogCursor(request.after);
  const tasks = await tasksOf(job.externalId, signal);
  const lines: LogLineRecord[] = [];
  let full = false;
  for (const task of tasks) {
    if (full) break;
    const res = await client.send('GET', jobPath(job.externalId, `/tasks/${encodeURIComponent(task)}/logs/preview`), undefined, signal);
    // 204 is ModelArts.2776: the log is not ready yet.
    if (res.status === 204 || res.text.trim() === '') continue;
    const body = client.parse(res, logPreviewSchema, `log preview of ${task}`);
    const content = Buffer.from(body.content ?? body.context ?? '', 'utf8');
    const serverNow = serverTime(res).ms;
    let outside = 0;
    const fullSize = body.full_size ?? content.length;
    // The preview is the tail of the full log: its first byte sits at fullSize - content.length.
    const contentStart = Math.max(0, fullSize - content.length);
    let offset = offsets[task] ?? 0;
    if (offset > fullSize) offset = 0; // the log was replaced (a rescheduled task): read it again
    let pos = Math.max(offset, contentStart) - contentStart;
    while (pos < content.length) {
      const nl = content.indexOf(0x0a, pos);
      if (nl === -1) break; // an unfinished last line waits for the next read
      const text = content.subarray(pos, nl).toString('utf8').replace(/\r$/, '');
      pos = nl + 1;
      offsets[task] = contentStart + pos;
      const { timestamp, level, assumedUtc } = parseLogLine(text);
      // A stamp read as UTC that lies after the server's now, or before the job began, says the
      // containers do not write UTC: counted, and reported once per read below.
      if (assumedUtc && timestamp) {
        const t = timestamp.getTime();
        if (t > serverNow + LOG_CLOCK_SLACK_MS || (job.startedAt && t < job.startedAt.getTime() - LOG_CLOCK_SLACK_MS)) outside += 1;
      }
      if (request.since && timestamp && timestamp < request.since) continue;
      lines.push({ timestamp, message: text, node: task, level, cursor: encodeLogCursor(offsets) });
      if (lines.length >= request.limit) {
        full = true;
        break;
      }
    }
    if (outside > 0) {
      reportShapeMismatch({
        providerId,
        assumption: 'modelarts.log-timestamps-utc',
        detail: `job ${job.externalId}, task ${task}: ${outside} log stamps without an offset fall outside the job's time when read as UTC`,
      });
    }
  }
  return { lines, nextCursor: tasks.length === 0 && request.after === null ? null : encodeLogCursor(offsets) };
}

export function createModelArtsAdapter(config: ModelArtsConfig, secrets: SecretSource, options: ModelArtsAdapterOptions = {}): ProviderAdapter {
  const ctx: ModelArtsParts = modelartsParts(config, secrets, options);
  const { providerId, mapCtx, workspaceId, searchPage, fetchJob, capabilities } = ctx;
  return {
    id: providerId,
    kind: 'MODELARTS',
    capabilities,

    // One workspace per provider: the one the search lists (see workspaceId in modelartsParts).
    async listProjects(_signal): Promise<ProjectRecord[]> {
      return [{ externalId: workspaceId, name: workspaceName(workspaceId) }];
    },

    async listJobs(cursor, signal): Promise<JobPage> {
      const page = cursor === null ? 0 : Number(cursor);
      if (!Number.isInteger(page) || page < 0) throw new DomainError('BAD_INPUT', `not a ModelArts page cursor: ${cursor}`);
      const result = await searchPage(page, signal);
      return { jobs: result.items.map((j) => mapJob(j, mapCtx)), nextCursor: result.nextPage === null ? null : String(result.nextPage) };
    },

    async getJob(ref, signal): Promise<JobDetailResult | null> {
      const job = await fetchJob(ref.externalId, signal);
      if (!job) return null;
      const mapped = mapJob(job, mapCtx);
      // Failed, yet no field we read (status.reason is unconfirmed) says why: the reason lives elsewhere.
      if (mapped.status === 'FAILED' && !mapped.failureReason) {
        reportShapeMismatch({
          providerId,
          assumption: 'modelarts.failure-reason',
          detail: `job ${ref.externalId} failed (phase ${job.status.phase}) with no reason in the fields read`,
        });
      }
      return { ...mapped, nodes: mapNodes(job) };
    },

    fetchSystemMetrics: (job, request, signal) => fetchSystemMetrics(ctx, job, request, signal),

    fetchLogs: (job, request, signal) => fetchLogs(ctx, job, request, signal),
  };
}
