// The Baseten training API simulator: every route of docs/platforms/baseten.md over real HTTP,
// with Baseten's auth header forms, its 429 body, a real per-key per-endpoint rate limit, and
// the kit's fault injection rendered in Baseten's own error shapes.
import { hashSeed, seededRandom, startSimulator, type Fault, type SimRequest, type SimResponse, type SimulatorHandle } from '../kit.js';
import {
  createBasetenFleet,
  loggingSpan,
  metricValue,
  nodeIds,
  rankKeys,
  reportingSpan,
  TERMINAL_JOB_STATUSES,
  type AnomalySpec,
  type BasetenFleet,
  type FleetJob,
  type FleetProject,
  type FleetShape,
} from './fleet.js';

export interface BasetenRateLimit {
  /** Requests one API key may make to one endpoint per window; default 100. */
  requestsPerWindow?: number;
  /** Window length; default 1 s (the documented 100 requests/second). */
  windowSeconds?: number;
}

export interface BasetenSimulatorOptions {
  seed?: number | string;
  anchorMs?: number;
  /** The data clock: running jobs' metrics and logs reach up to now(). Default Date.now. */
  now?: () => number;
  fleet?: FleetShape;
  /** Anomalies of running jobs' GPU utilization (fleet.ts demoAnomalies); none by default. */
  anomalies?: AnomalySpec[];
  /** The key the simulator accepts; default one derived from the seed. */
  apiKey?: string;
  /** false switches the rate limit off. */
  rateLimit?: BasetenRateLimit | false;
  /** The clock of the rate limiter (wall time by default, independent of the data clock). */
  rateLimitClock?: () => number;
  port?: number;
}

export interface BasetenSimulator extends SimulatorHandle {
  readonly fleet: BasetenFleet;
  readonly apiKey: string;
}

const RATE_LIMIT_MESSAGE = 'Rate limit exceeded. Please try again later.';
const MAX_LOG_WINDOW_MS = 7 * 24 * 3600_000;
const DEFAULT_LOG_WINDOW_MS = 30 * 60_000;
// Unconfirmed: the server's default metrics window. We serve the last hour ending now, or
// ending at completion for a finished job (the CLI relies on that anchoring).
const DEFAULT_METRICS_WINDOW_MS = 3600_000;
// Unconfirmed: how the server picks a step. We take the smallest of these that keeps a series
// at or under 240 points, which gives 15 s over the default hour.
const STEP_CHOICES_SECONDS = [15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400];
const TARGET_POINTS = 240;
// Unconfirmed: a cap on points per series (Prometheus-style) so a tiny step over a long
// window is refused instead of producing millions of points.
const MAX_POINTS_PER_SERIES = 11_000;
const LOG_SLOT_MS = 2000;
const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

class BadRequest extends Error {}
class NotFound extends Error {}

const message = (status: number, text: string): SimResponse => ({ status, body: { message: text } });

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Metric timestamps are step-aligned whole seconds, written without a fraction like the sheet's example. */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** The options read once, the fleet, the rate limiter, and how projects and jobs render. */
function basetenState(options: BasetenSimulatorOptions) {
  const now = options.now ?? Date.now;
  const fleet = createBasetenFleet({ seed: options.seed, anchorMs: options.anchorMs, now, fleet: options.fleet, anomalies: options.anomalies });
  const apiKey = options.apiKey ?? defaultApiKey(fleet.seed);
  const limiter = options.rateLimit === false ? null : rateLimiter(options.rateLimit ?? {}, options.rateLimitClock ?? Date.now);

  const projectById = (id: string): FleetProject => {
    const project = fleet.projects.find((p) => p.id === id);
    if (!project) throw new NotFound(`Training project ${id} not found`);
    return project;
  };
  const jobIn = (projectId: string, jobId: string): FleetJob => {
    projectById(projectId);
    const job = fleet.jobs.find((j) => j.id === jobId && j.projectId === projectId);
    if (!job) throw new NotFound(`Training job ${jobId} not found in project ${projectId}`);
    return job;
  };
  const projectResource = (project: FleetProject) => {
    const own = fleet.jobs.filter((j) => j.projectId === project.id);
    const latest = own.reduce<FleetJob | null>((a, j) => (a === null || j.createdAtMs > a.createdAtMs ? j : a), null);
    const updatedAtMs = Math.max(project.createdAtMs, ...own.map((j) => j.updatedAtMs));
    return {
      id: project.id,
      name: project.name,
      created_at: iso(project.createdAtMs),
      updated_at: iso(updatedAtMs),
      team_name: project.teamName,
      latest_job: latest ? jobResource(latest) : null,
    };
  };
  const jobResource = (job: FleetJob) => {
    const project = projectById(job.projectId);
    return {
      id: job.id,
      name: job.name,
      created_at: iso(job.createdAtMs),
      updated_at: iso(job.updatedAtMs),
      current_status: job.status,
      error_message: job.errorMessage,
      instance_type: { ...job.instanceType },
      training_project_id: project.id,
      training_project: { id: project.id, name: project.name },
      checkpoint_sync_status: job.checkpointSyncStatus,
      priority: job.priority,
      availability_model: job.availabilityModel,
      user: job.userEmail === undefined ? null : { email: job.userEmail },
    };
  };
  const byCreated = (order: 'asc' | 'desc') => (a: FleetJob, b: FleetJob) => (order === 'asc' ? a.createdAtMs - b.createdAtMs : b.createdAtMs - a.createdAtMs);

  const guarded =
    (handler: (req: SimRequest) => SimResponse) =>
    (req: SimRequest): SimResponse => {
      try {
        if (req.rawBody.length > 0 && req.body === undefined) throw new BadRequest('Request body is not valid JSON');
        return handler(req);
      } catch (err) {
        if (err instanceof NotFound) return message(404, err.message);
        if (err instanceof BadRequest) return message(400, err.message);
        throw err;
      }
    };
  return { options, now, fleet, apiKey, limiter, projectById, jobIn, projectResource, jobResource, byCreated, guarded };
}

/** Job search, stop, queue context, logs and metrics. */
function basetenHandlers(ctx: ReturnType<typeof basetenState>) {
  const { now, fleet, jobIn, jobResource, byCreated } = ctx;
  const searchJobs = (req: SimRequest): SimResponse => {
    const body = objectBody(req);
    const projectId = optionalString(body, 'project_id');
    const jobId = optionalString(body, 'job_id');
    const statuses = body.statuses ?? null;
    if (statuses !== null && (!Array.isArray(statuses) || statuses.some((s) => typeof s !== 'string'))) {
      throw new BadRequest('statuses must be a list of strings');
    }
    const orderBy = body.order_by ?? [{ field: 'created_at', order: 'desc' }];
    if (!Array.isArray(orderBy)) throw new BadRequest('order_by must be a list');
    let jobs = fleet.jobs.filter(
      (j) =>
        (projectId === null || j.projectId === projectId) &&
        (jobId === null || j.id === jobId) &&
        (statuses === null || (statuses as string[]).includes(j.status)),
    );
    // Applied last to first so the first entry is the primary key (Array.sort is stable).
    for (const entry of [...orderBy].reverse()) {
      const { field, order = 'desc' } = (entry ?? {}) as { field?: unknown; order?: unknown };
      if (field !== 'created_at') throw new BadRequest(`Unsupported order_by field: ${String(field)}`);
      if (order !== 'asc' && order !== 'desc') throw new BadRequest(`Unsupported order: ${String(order)}`);
      jobs = [...jobs].sort(byCreated(order));
    }
    return { status: 200, body: { training_jobs: jobs.map(jobResource) } };
  };

  const stopJob = (req: SimRequest): SimResponse => {
    const job = jobIn(req.params.projectId!, req.params.jobId!);
    // Unconfirmed: what stopping a finished job answers. We refuse with 400 and a message.
    if (TERMINAL_JOB_STATUSES.has(job.status)) {
      throw new BadRequest(`Training job ${job.id} is already in terminal state ${job.status}`);
    }
    const at = now();
    job.status = 'TRAINING_JOB_STOPPED';
    job.finishedAtMs = at;
    job.updatedAtMs = at;
    job.checkpointSyncStatus = job.startedAtMs === null ? null : 'COMPLETED';
    return { status: 200, body: { training_job: jobResource(job) } };
  };

  /**
   * The queue-context diagnostic (x-stability: unstable in the spec): the job's requested GPUs
   * (gpu_count x node count) and every status event of it in [submitted_at, released_at or now].
   */
  const queueContext = (req: SimRequest): SimResponse => {
    const job = fleet.jobs.find((j) => j.id === req.params.jobId);
    if (!job) throw new NotFound(`Training job ${req.params.jobId} not found`);
    const nowMs = now();
    const releasedMs = job.deployingAtMs !== null ? job.deployingAtMs - 60_000 : job.startedAtMs;
    const released = releasedMs !== null && releasedMs <= nowMs ? releasedMs : null;
    const windowEnd = released ?? nowMs;
    const events: Record<string, unknown>[] = [
      {
        training_job_id: job.id,
        training_job_name: job.name,
        status: 'TRAINING_JOB_PENDING',
        created: iso(job.createdAtMs),
        event_message: null,
        exit_code: null,
      },
    ];
    if (released !== null)
      events.push({
        training_job_id: job.id,
        training_job_name: job.name,
        status: 'TRAINING_JOB_CREATED',
        created: iso(released),
        event_message: null,
        exit_code: null,
      });
    // A job that ended while still pending has its terminal event inside the window.
    if (released === null && job.finishedAtMs !== null && job.finishedAtMs <= windowEnd) {
      events.push({
        training_job_id: job.id,
        training_job_name: job.name,
        status: job.status,
        created: iso(job.finishedAtMs),
        event_message: job.errorMessage,
        exit_code: null,
      });
    }
    return {
      status: 200,
      body: {
        target_job_id: job.id,
        target_job_name: job.name,
        gpu_type: job.instanceType.gpu_type ?? '',
        requested_gpus: job.gpusPerNode * job.nodeCount,
        submitted_at: iso(job.createdAtMs),
        released_at: released === null ? null : iso(released),
        pending_seconds: released === null ? null : Math.round((released - job.createdAtMs) / 1000),
        org_capacity: null,
        team_capacity: null,
        active_at_submit: [],
        pending_ahead_at_submit: [],
        events,
        events_window_end: iso(windowEnd),
      },
    };
  };

  const getLogs = (req: SimRequest): SimResponse => {
    const job = jobIn(req.params.projectId!, req.params.jobId!);
    const fields = requestFields(req);
    const endMs = intField(fields, 'end_epoch_millis') ?? now();
    const startMs = intField(fields, 'start_epoch_millis') ?? endMs - DEFAULT_LOG_WINDOW_MS;
    if (startMs > endMs) throw new BadRequest('start_epoch_millis must not be after end_epoch_millis');
    if (endMs - startMs > MAX_LOG_WINDOW_MS) throw new BadRequest('The requested time window must not exceed 7 days');
    // Unconfirmed: the default direction. We default to ascending, the order clients page in.
    const direction = stringField(fields, 'direction') ?? 'asc';
    if (direction !== 'asc' && direction !== 'desc') throw new BadRequest('direction must be asc or desc');
    const limit = intField(fields, 'limit') ?? 500;
    if (limit < 1 || limit > 1000) throw new BadRequest('limit must be between 1 and 1000');
    const minLevel = stringField(fields, 'min_level');
    if (minLevel !== null && !LOG_LEVELS.includes(minLevel as LogLevel)) {
      throw new BadRequest(`min_level must be one of ${LOG_LEVELS.join(', ')}`);
    }
    return { status: 200, body: { logs: jobLogs(job, startMs, endMs, now(), direction, limit, minLevel as LogLevel | null) } };
  };

  const getMetrics = (req: SimRequest): SimResponse => {
    const job = jobIn(req.params.projectId!, req.params.jobId!);
    const fields = requestFields(req);
    const nowMs = now();
    const anchorEnd = job.finishedAtMs !== null ? Math.min(job.finishedAtMs, nowMs) : nowMs;
    const start = intField(fields, 'start_epoch_millis');
    const end = intField(fields, 'end_epoch_millis');
    const endMs = end ?? (start !== null ? Math.max(anchorEnd, start) : anchorEnd);
    const startMs = start ?? endMs - DEFAULT_METRICS_WINDOW_MS;
    if (startMs > endMs) throw new BadRequest('start_epoch_millis must not be after end_epoch_millis');
    const askedStep = intField(fields, 'step_seconds');
    if (askedStep !== null && askedStep < 1) throw new BadRequest('step_seconds must be a positive integer');
    const stepSeconds = askedStep ?? pickStepSeconds(endMs - startMs);
    if ((endMs - startMs) / (stepSeconds * 1000) > MAX_POINTS_PER_SERIES) {
      throw new BadRequest(`Too many points per series: exceeded maximum resolution of ${MAX_POINTS_PER_SERIES} points`);
    }
    return { status: 200, body: metricsBody(job, startMs, endMs, stepSeconds * 1000, nowMs, jobResource(job)) };
  };
  return { searchJobs, stopJob, queueContext, getLogs, getMetrics };
}

type BasetenSim = ReturnType<typeof basetenState> & ReturnType<typeof basetenHandlers>;

export async function startBasetenSimulator(options: BasetenSimulatorOptions = {}): Promise<BasetenSimulator> {
  const state = basetenState(options);
  const ctx: BasetenSim = { ...state, ...basetenHandlers(state) };
  const {
    fleet,
    apiKey,
    limiter,
    projectById,
    jobIn,
    projectResource,
    jobResource,
    byCreated,
    guarded,
    searchJobs,
    stopJob,
    queueContext,
    getLogs,
    getMetrics,
  } = ctx;

  const sim = await startSimulator(
    {
      name: 'baseten',
      routes: [
        {
          method: 'GET',
          path: '/v1/training_projects',
          name: 'listProjects',
          handler: guarded(() => ({ status: 200, body: { training_projects: fleet.projects.map(projectResource) } })),
        },
        {
          method: 'GET',
          path: '/v1/training_projects/:projectId',
          name: 'getProject',
          handler: guarded((req) => ({ status: 200, body: { training_project: projectResource(projectById(req.params.projectId!)) } })),
        },
        {
          method: 'GET',
          path: '/v1/training_projects/:projectId/jobs',
          name: 'listJobs',
          handler: guarded((req) => {
            const project = projectById(req.params.projectId!);
            // Unconfirmed: the order of this unpaginated list. We use search's default, newest first.
            const jobs = fleet.jobs.filter((j) => j.projectId === project.id).sort(byCreated('desc'));
            return { status: 200, body: { training_project: projectResource(project), training_jobs: jobs.map(jobResource) } };
          }),
        },
        { method: 'POST', path: '/v1/training_jobs/search', name: 'searchJobs', handler: guarded(searchJobs) },
        { method: 'GET', path: '/v1/training/jobs/:jobId/queue_context', name: 'queueContext', handler: guarded(queueContext) },
        {
          method: 'GET',
          path: '/v1/training_projects/:projectId/jobs/:jobId',
          name: 'getJob',
          handler: guarded((req) => {
            const job = jobIn(req.params.projectId!, req.params.jobId!);
            return { status: 200, body: { training_project: projectResource(projectById(job.projectId)), training_job: jobResource(job) } };
          }),
        },
        { method: 'POST', path: '/v1/training_projects/:projectId/jobs/:jobId/stop', name: 'stopJob', handler: guarded(stopJob) },
        { method: 'GET', path: '/v1/training_projects/:projectId/jobs/:jobId/logs', name: 'getLogs', handler: guarded(getLogs) },
        // Deprecated POST forms with the same fields in a JSON body (the seed-era client uses them).
        { method: 'POST', path: '/v1/training_projects/:projectId/jobs/:jobId/logs', name: 'getLogs', handler: guarded(getLogs) },
        { method: 'GET', path: '/v1/training_projects/:projectId/jobs/:jobId/metrics', name: 'getMetrics', handler: guarded(getMetrics) },
        { method: 'POST', path: '/v1/training_projects/:projectId/jobs/:jobId/metrics', name: 'getMetrics', handler: guarded(getMetrics) },
      ],
      renderFault,
      authenticate: (req) => {
        const presented = presentedKey(req);
        // Unconfirmed: the exact status and body of an auth failure. We answer 401 with a
        // top-level `message`, the key the Python client prints.
        if (presented === null) return message(401, 'Missing API key: send Authorization: Api-Key <key>');
        if (presented !== apiKey) return message(401, 'Invalid API key');
        return limiter?.(presented, req.route) ?? null;
      },
      notFound: (req) => message(404, `No route for ${req.method} ${req.url.pathname}`),
    },
    options.port ?? 0,
  );
  return Object.assign(sim, { fleet, apiKey });
}

function defaultApiKey(seed: number): string {
  const rng = seededRandom(seed ^ 0x5eed);
  const chars = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const part = (n: number) => Array.from({ length: n }, () => chars[Math.floor(rng() * chars.length)]).join('');
  return `${part(8)}.${part(32)}`;
}

/** Both documented header forms: `Api-Key <key>` (docs) and `Bearer <key>` (OpenAPI scheme). */
function presentedKey(req: SimRequest): string | null {
  const header = req.headers.authorization;
  if (!header) return null;
  const match = /^(Api-Key|Bearer)\s+(\S+)\s*$/i.exec(header);
  return match ? match[2]! : '';
}

function rateLimiter(config: BasetenRateLimit, clock: () => number) {
  const limit = config.requestsPerWindow ?? 100;
  const windowMs = (config.windowSeconds ?? 1) * 1000;
  const windows = new Map<string, { startMs: number; count: number }>();
  return (key: string, route: string): SimResponse | null => {
    const id = `${key}\u0000${route}`;
    const t = clock();
    let window = windows.get(id);
    if (!window || t - window.startMs >= windowMs) {
      window = { startMs: t, count: 0 };
      windows.set(id, window);
    }
    window.count += 1;
    if (window.count <= limit) return null;
    return rateLimited(Math.max(1, Math.ceil((window.startMs + windowMs - t) / 1000)));
  };
}

// Unconfirmed: a Retry-After header. The docs show only the body, so the simulator sends only
// the body and clients must read `retry_after` from it.
function rateLimited(retryAfterSeconds: number): SimResponse {
  return { status: 429, body: { error: RATE_LIMIT_MESSAGE, retry_after: retryAfterSeconds } };
}

function renderFault(fault: Fault, req: SimRequest): SimResponse {
  switch (fault.kind) {
    case 'rate_limit':
      return rateLimited(fault.retryAfterSeconds ?? 1);
    case 'auth':
      return message(401, 'Invalid API key');
    case 'malformed': {
      const cut = `{"training_jobs": [{"id": "p7qr9qv", "created_at": "2025-03-01T09:40:00Z", "current_status": "TRAINING_JOB_RUN`;
      return { status: 200, rawText: cut, headers: { 'content-type': 'application/json' } };
    }
    case 'empty':
      return { status: 200, rawText: '', headers: { 'content-type': 'application/json' } };
    default: {
      const status = fault.status ?? 503;
      return message(status, `Simulated upstream failure (${status}) on ${req.route}`);
    }
  }
}

function objectBody(req: SimRequest): Record<string, unknown> {
  if (req.body === undefined || req.body === null) return {};
  if (typeof req.body !== 'object' || Array.isArray(req.body)) throw new BadRequest('Request body must be a JSON object');
  return req.body as Record<string, unknown>;
}

function optionalString(body: Record<string, unknown>, key: string): string | null {
  const value = body[key] ?? null;
  if (value !== null && typeof value !== 'string') throw new BadRequest(`${key} must be a string`);
  return value;
}

/** GET takes query parameters; the deprecated POST takes the same fields in a JSON body. */
function requestFields(req: SimRequest): Record<string, unknown> {
  if (req.method === 'POST') return objectBody(req);
  return Object.fromEntries(req.query.entries());
}

function intField(fields: Record<string, unknown>, key: string): number | null {
  const raw = fields[key];
  if (raw === undefined || raw === null || raw === '') return null;
  const value = typeof raw === 'string' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new BadRequest(`${key} must be an integer`);
  return value;
}

function stringField(fields: Record<string, unknown>, key: string): string | null {
  const raw = fields[key];
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string') throw new BadRequest(`${key} must be a string`);
  return raw;
}

function pickStepSeconds(windowMs: number): number {
  return STEP_CHOICES_SECONDS.find((s) => windowMs / (s * 1000) <= TARGET_POINTS) ?? STEP_CHOICES_SECONDS.at(-1)!;
}

type Point = { timestamp: string; value: number };

function metricsBody(job: FleetJob, startMs: number, endMs: number, stepMs: number, nowMs: number, trainingJob: unknown) {
  const span = reportingSpan(job, nowMs);
  const times: number[] = [];
  if (span) {
    const lo = Math.max(startMs, span.fromMs);
    const hi = Math.min(endMs, span.toMs);
    for (let t = Math.ceil(lo / stepMs) * stepMs; t <= hi; t += stepMs) times.push(t);
  }
  // Every series of the answer has these instants: formatted once, not once per series and GPU.
  const stamps = times.map(isoSeconds);
  const series = (f: (t: number) => number): Point[] => times.map((t, i) => ({ timestamp: stamps[i]!, value: f(t) }));
  const nodeMetrics = (node: number) => ({
    gpu_utilization: Object.fromEntries(rankKeys(job).map((r) => [r, series((t) => metricValue(job, node, 'gpu_utilization', Number(r), t))])),
    gpu_memory_usage_bytes: Object.fromEntries(rankKeys(job).map((r) => [r, series((t) => metricValue(job, node, 'gpu_memory_usage_bytes', Number(r), t))])),
    cpu_usage: series((t) => metricValue(job, node, 'cpu_usage', 0, t)),
    cpu_memory_usage_bytes: series((t) => metricValue(job, node, 'cpu_memory_usage_bytes', 0, t)),
    ephemeral_storage: {
      usage_bytes: series((t) => metricValue(job, node, 'ephemeral_storage.usage_bytes', 0, t)),
      utilization: series((t) => metricValue(job, node, 'ephemeral_storage.utilization', 0, t)),
    },
  });
  // Nodes appear once the job has started (empty per_node_metrics = still starting); after
  // that every node is listed even when the window holds none of its points (unconfirmed).
  const perNode = span ? nodeIds(job).map((nodeId, i) => ({ node_id: nodeId, metrics: nodeMetrics(i) })) : [];
  const leader = perNode[0]?.metrics ?? {
    gpu_utilization: {},
    gpu_memory_usage_bytes: {},
    cpu_usage: [],
    cpu_memory_usage_bytes: [],
    ephemeral_storage: { usage_bytes: [], utilization: [] },
  };
  return {
    ...leader,
    cache:
      job.cacheCapacityBytes === null
        ? null
        : {
            usage_bytes: series((t) => metricValue(job, 0, 'cache.usage_bytes', 0, t)),
            utilization: series((t) => metricValue(job, 0, 'cache.utilization', 0, t)),
          },
    training_job: trainingJob,
    per_node_metrics: perNode,
  };
}

interface LogLine {
  ns: bigint;
  timestamp: string;
  message: string;
  replica: string | null;
  request_id: string | null;
  level: LogLevel | null;
}

const LEVEL_RANK: Record<LogLevel, number> = { DEBUG: 0, INFO: 1, WARNING: 2, ERROR: 3 };

/** Replica (pod) names; a format of our own, deliberately unlike node_id (unconfirmed). */
function replicaName(job: FleetJob, node: number): string {
  return `bt-train-${job.id}-${node}`;
}

/** The one line a slot may hold: at most one line per 2 s slot, never on a whole second. */
function slotLine(job: FleetJob, slot: number): LogLine | null {
  const rng = seededRandom(hashSeed(`${job.id}:log:${slot}`));
  if (rng() >= 0.75) return null;
  const ms = slot * LOG_SLOT_MS + 1 + Math.floor(rng() * 999);
  const ns = BigInt(ms) * 1_000_000n + BigInt(Math.floor(rng() * 1_000_000));
  const node = Math.floor(rng() * job.nodeCount);
  const roll = rng();
  if (job.startedAtMs === null || ms < job.startedAtMs) {
    const steps = ['Pulling image layer', 'Downloading model weights shard', 'Mounting training cache', 'Waiting for peer nodes'];
    return line(ns, `${steps[slot % steps.length]} (${Math.floor(rng() * 100)}%)`, replicaName(job, node), 'INFO');
  }
  const step = Math.floor((ms - job.startedAtMs) / 1500);
  const loss = (2.8 * Math.exp(-step / 4000) + 0.3 + rng() * 0.05).toFixed(4);
  if (roll < 0.1) return line(ns, `${Math.floor(rng() * 100)}%|#####     | ${step}/20000 [tqdm]`, replicaName(job, node), null);
  if (roll < 0.25) return line(ns, `dataloader prefetched batch ${step} on rank ${Math.floor(rng() * job.gpusPerNode)}`, replicaName(job, node), 'DEBUG');
  if (roll < 0.93) return line(ns, `step=${step} loss=${loss} lr=2.0e-05 grad_norm=${(rng() * 2).toFixed(3)}`, replicaName(job, node), 'INFO');
  return line(ns, `step=${step} slow collective: allreduce took ${(1 + rng() * 4).toFixed(2)}s`, replicaName(job, node), 'WARNING');
}

function line(ns: bigint, text: string, replica: string | null, level: LogLevel | null): LogLine {
  return { ns, timestamp: ns.toString(), message: text, replica, request_id: null, level };
}

/** Lines the platform itself writes at phase changes; exactly on the boundary's millisecond. */
function boundaryLines(job: FleetJob): LogLine[] {
  const at = (ms: number) => BigInt(ms) * 1_000_000n;
  const out: LogLine[] = [];
  if (job.deployingAtMs !== null) {
    out.push(line(at(job.deployingAtMs), `Deploying training job on ${job.nodeCount} node(s) of ${job.instanceType.name}`, null, 'INFO'));
  }
  if (job.startedAtMs !== null) out.push(line(at(job.startedAtMs), `All ${job.nodeCount} node(s) ready; training started`, null, 'INFO'));
  if (job.finishedAtMs !== null) {
    const ending: Record<string, [string, LogLevel]> = {
      TRAINING_JOB_COMPLETED: ['Training job completed successfully', 'INFO'],
      TRAINING_JOB_FAILED: [job.errorMessage ?? 'Training job failed', 'ERROR'],
      TRAINING_JOB_DEPLOY_FAILED: [job.errorMessage ?? 'Deployment failed', 'ERROR'],
      TRAINING_JOB_STOPPED: ['Training job stopped by user request', 'WARNING'],
    };
    const [text, level] = ending[job.status] ?? ['Training job ended', 'INFO'];
    out.push(line(at(job.finishedAtMs), text, null, level));
  }
  return out;
}

function jobLogs(job: FleetJob, startMs: number, endMs: number, nowMs: number, direction: 'asc' | 'desc', limit: number, minLevel: LogLevel | null) {
  const span = loggingSpan(job, nowMs);
  if (!span) return [];
  const lo = Math.max(startMs, span.fromMs);
  const hi = Math.min(endMs, span.toMs);
  if (lo > hi) return [];
  const keep = (l: LogLine) => minLevel === null || (l.level !== null && LEVEL_RANK[l.level] >= LEVEL_RANK[minLevel]);
  const inRange = (l: LogLine) => {
    const ms = Number(l.ns / 1_000_000n);
    // Regular lines stop before the end of life; the closing boundary line sits exactly on it.
    return ms >= lo && ms <= hi && (job.finishedAtMs === null || ms <= job.finishedAtMs);
  };
  const regular: LogLine[] = [];
  const firstSlot = Math.floor(lo / LOG_SLOT_MS);
  const lastSlot = Math.floor(hi / LOG_SLOT_MS);
  for (let i = 0; i <= lastSlot - firstSlot && regular.length < limit; i++) {
    const slot = direction === 'asc' ? firstSlot + i : lastSlot - i;
    const l = slotLine(job, slot);
    if (l && inRange(l) && Number(l.ns / 1_000_000n) !== job.finishedAtMs && keep(l)) regular.push(l);
  }
  const lines = [...regular, ...boundaryLines(job).filter((l) => inRange(l) && keep(l))];
  lines.sort((a, b) => (a.ns === b.ns ? 0 : a.ns < b.ns === (direction === 'asc') ? -1 : 1));
  return lines.slice(0, limit).map(({ ns: _ns, ...wire }) => wire);
}
