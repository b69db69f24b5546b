// A ModelArts training-job API (v2) plus the IAM token endpoint on one loopback server, written
// from docs/platforms/modelarts.md: both auth modes really checked, page-index paging,
// ModelArts' error bodies ({error_code, error_msg}), 204 for metrics that are not ready yet.
import { randomBytes } from 'node:crypto';
import { startOfUtcDay, startSimulator, type Fault, type RouteDef, type SimRequest, type SimResponse, type SimulatorHandle } from '../kit.js';
import { buildFleet, endTime, metricSeries, taskLog, taskNames, type Phase, type SimJob, DEFAULT_WORKSPACE } from './fleet.js';
import { verifySignature } from './signature.js';

export interface ModelArtsSimulatorOptions {
  seed?: number;
  now?: () => number;
  /** All job times hang off this instant; default the start of the current UTC day. */
  anchorMs?: number;
  /** Finished jobs from earlier days, so the job list spans several pages; default 60. */
  historyJobs?: number;
  projectId?: string;
  /** The IAM project name, which is the region name. */
  region?: string;
  domainName?: string;
  userName?: string;
  password?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Lifetime of issued IAM tokens; the real service issues 24 h tokens. */
  tokenLifetimeMs?: number;
  /** At most this many bytes of log in a preview answer (the service returns the latest ~5 MB). */
  logPreviewLimitBytes?: number;
  port?: number;
}

export interface ModelArtsSimulator extends SimulatorHandle {
  /** The jobs as built at start (ground truth); terminate actions change their live state only. */
  readonly fleet: readonly SimJob[];
  readonly projectId: string;
  readonly region: string;
  readonly credentials: {
    domainName: string;
    userName: string;
    password: string;
    accessKeyId: string;
    secretAccessKey: string;
  };
  /** Invalidates every issued token, as a password change or revocation would. */
  revokeTokens(): void;
  /** The job as the API renders it right now (null for unknown ids). */
  renderJob(jobId: string): Record<string, unknown> | null;
}

const MINUTE = 60_000;
/** How long a terminate action keeps the job in Terminating before it shows Terminated. */
const TERMINATING_MS = 10_000;

function modelArtsError(status: number, code: string, message: string, headers?: Record<string, string>): SimResponse {
  return { status, body: { error_code: code, error_msg: message }, ...(headers ? { headers } : {}) };
}

const jobNotFound = (id: string) => modelArtsError(400, 'ModelArts.2775', `Training job ${id} not found.`);
const invalidArgument = (message: string) => modelArtsError(400, 'ModelArts.0101', message);

type Filter = { key: string; operator: string; value: string[] };

const FILTER_FIELDS: Record<string, (job: SimJob) => string | number> = {
  name: (j) => j.name,
  phase: (j) => j.phase,
  create_time: (j) => j.createTime,
  user_id: (j) => j.userName,
  kind: () => 'job',
  algorithm_name: () => '',
};

function matches(job: SimJob, f: Filter): boolean {
  const field = FILTER_FIELDS[f.key]!(job);
  switch (f.operator) {
    case 'in':
      return f.value.includes(String(field));
    case 'not':
      return !f.value.includes(String(field));
    case 'like':
      return f.value.some((v) => String(field).toLowerCase().includes(v.toLowerCase()));
    case 'between': {
      const [lo, hi] = f.value.map(Number);
      return typeof field === 'number' && lo !== undefined && hi !== undefined && field >= lo && field <= hi;
    }
    default:
      return false;
  }
}

function parseFilters(raw: unknown): Filter[] | string {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return 'filters must be an array';
  const out: Filter[] = [];
  for (const f of raw) {
    const { key, operator, value } = (f ?? {}) as Record<string, unknown>;
    if (typeof key !== 'string' || !(key in FILTER_FIELDS)) return `unsupported filter key ${String(key)}`;
    if (operator !== 'in' && operator !== 'not' && operator !== 'like' && operator !== 'between') return `unsupported operator ${String(operator)}`;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return 'filter value must be an array of strings';
    if (operator === 'between' && value.length !== 2) return 'between needs two values';
    out.push({ key, operator, value: value as string[] });
  }
  return out;
}

/** The fleet as of now (terminations applied), issued tokens, and how a job renders. */
function modelartsState(opts: ModelArtsSimulatorOptions) {
  const now = opts.now ?? Date.now;
  const anchorMs = opts.anchorMs ?? startOfUtcDay(now());
  const projectId = opts.projectId ?? '0f3c5b2a9e8d47c1b6a2d4e5f7a8b9c0';
  const region = opts.region ?? 'cn-north-4';
  const credentials = {
    domainName: opts.domainName ?? 'acme-account',
    userName: opts.userName ?? 'alice',
    password: opts.password ?? 'sim-password',
    accessKeyId: opts.accessKeyId ?? 'SIMAKMODELARTS00001',
    secretAccessKey: opts.secretAccessKey ?? 'sim-secret-access-key-modelarts',
  };
  const tokenLifetimeMs = opts.tokenLifetimeMs ?? 24 * 3_600_000;
  const previewLimit = opts.logPreviewLimitBytes ?? 5 * 1024 * 1024;
  const fleet = buildFleet(opts.seed ?? 7, anchorMs, opts.historyJobs ?? 60);
  const byId = new Map(fleet.map((j) => [j.id, j]));
  const terminatedAt = new Map<string, number>();
  const tokens = new Map<string, { projectId: string | null; expiresAt: number }>();

  /** The job with any terminate action applied, as of now. */
  const live = (job: SimJob, nowMs: number): SimJob => {
    const at = terminatedAt.get(job.id);
    if (at === undefined) return job;
    const stopped = nowMs - at >= TERMINATING_MS;
    const phase: Phase = stopped ? 'Terminated' : 'Terminating';
    const endedAfterMs = stopped ? (job.startTime === 0 ? 0 : at + TERMINATING_MS - job.startTime) : null;
    return { ...job, phase, secondaryPhase: phase, endedAfterMs };
  };

  const runningRecords = (job: SimJob, end: number | null) => {
    const bounds = [job.startTime, ...(job.restartsAfterMs ?? []).map((ms) => job.startTime + ms).filter((t) => t <= now())];
    return bounds.map((startMs, i) => {
      const last = i === bounds.length - 1;
      const endMs = last ? end : bounds[i + 1]! - 30_000;
      return {
        start_at: Math.floor(startMs / 1000),
        end_at: endMs !== null ? Math.floor(endMs / 1000) : 0,
        start_type: i === 0 ? 'init_or_rescheduled' : 'restarted',
        end_reason: last ? (end !== null ? job.phase : '') : 'Failed',
        end_related_task: last ? (end !== null ? 'worker-0' : '') : 'worker-1',
        end_recover: last ? '' : 'restart',
      };
    });
  };

  const render = (source: SimJob, nowMs: number): Record<string, unknown> => {
    const job = live(source, nowMs);
    const end = endTime(job);
    const started = job.startTime > 0;
    const duration = !started ? 0 : (end ?? nowMs) - job.startTime;
    const acc = job.flavor.accelerator;
    const tasks = taskNames(job);
    return {
      kind: 'job',
      metadata: {
        id: job.id,
        name: job.name,
        description: '',
        workspace_id: job.workspaceId,
        create_time: job.createTime,
        user_name: job.userName,
        annotations: { job_template: 'Template DL' },
      },
      status: {
        phase: job.phase,
        secondary_phase: job.secondaryPhase,
        duration,
        start_time: job.startTime,
        tasks,
        node_count_metrics: started ? [[job.startTime, job.nodeCount], ...(end !== null ? [[end, 0]] : [])] : null,
        task_statuses:
          end !== null
            ? tasks.map((task, i) => ({
                task,
                exit_code: job.phase === 'Completed' ? 0 : 1,
                message: i === 0 && job.failureMessage ? job.failureMessage : '',
              }))
            : [],
        // One record per run: a restart ends one (epoch seconds) and starts the next.
        running_records: started ? runningRecords(job, end) : [],
      },
      algorithm: {
        code_dir: `/obs-bucket/${job.name}/code/`,
        boot_file: `/obs-bucket/${job.name}/code/train.py`,
        engine: {
          engine_id: 'pytorch-1.8.0',
          engine_name: job.engine.name,
          engine_version: job.engine.version,
          image_url: `swr.cn-north-4.myhuaweicloud.com/modelarts-job-dev-image/${job.engine.version}`,
        },
        inputs: [],
        outputs: [],
        parameters: [
          { name: 'learning_rate', value: '0.001', description: '', constraint: { type: 'Float', editable: true, required: false } },
          { name: 'epochs', value: '10', description: '', constraint: { type: 'Integer', editable: true, required: false } },
        ],
        environments: [{ NCCL_DEBUG: 'INFO' }],
      },
      spec: {
        resource: {
          policy: 'regular',
          flavor_id: job.flavor.flavorId,
          flavor_name: job.flavor.flavorName,
          node_count: job.nodeCount,
          flavor_detail: {
            flavor_type: job.flavor.flavorType,
            billing: { code: job.flavor.flavorId, unit_num: 1 },
            flavor_info: {
              max_num: 16,
              cpu: { arch: acc.kind === 'npu' ? 'arm' : 'x86', core_num: job.flavor.cpuCores },
              ...(acc.kind === 'gpu' ? { gpu: { unit_num: acc.unitNum, product_name: acc.productName, memory: acc.memory } } : {}),
              // The sheet types npu.unit_num as a string, unlike gpu.unit_num.
              ...(acc.kind === 'npu' ? { npu: { unit_num: String(acc.unitNum), product_name: acc.productName, memory: acc.memory } } : {}),
              memory: { size: job.flavor.memoryGb, unit: 'GB' },
            },
          },
        },
      },
    };
  };

  const findJob = (req: SimRequest): SimJob | null => byId.get(req.params.jobId ?? '') ?? null;
  return {
    opts,
    now,
    anchorMs,
    projectId,
    region,
    credentials,
    tokenLifetimeMs,
    previewLimit,
    fleet,
    byId,
    terminatedAt,
    tokens,
    live,
    runningRecords,
    render,
    findJob,
  };
}

/** The IAM token route and the job search. */
function jobRoutes(ctx: ModelArtsSim): RouteDef[] {
  const { now, projectId, region, credentials, tokenLifetimeMs, fleet, tokens, live, render } = ctx;
  return [
    {
      method: 'POST',
      path: '/v3/auth/tokens',
      name: 'iamToken',
      handler: (req) => {
        const keystoneError = (status: number, message: string): SimResponse => ({
          status,
          body: { error: { code: status, title: status === 401 ? 'Unauthorized' : 'Bad Request', message } },
        });
        const auth = (req.body as { auth?: Record<string, any> } | undefined)?.auth;
        const identity = auth?.identity;
        if (!identity || !Array.isArray(identity.methods) || !identity.methods.includes('password')) {
          return keystoneError(400, 'Expecting to find identity.methods with password in request body.');
        }
        const user = identity.password?.user;
        if (user?.name !== credentials.userName || user?.password !== credentials.password || user?.domain?.name !== credentials.domainName) {
          return keystoneError(401, 'The username or password is wrong.');
        }
        const scope = auth?.scope?.project;
        let scopedTo: string | null = null;
        if (scope) {
          if (scope.name !== region && scope.id !== projectId) return keystoneError(401, 'The project in scope does not exist or is not accessible.');
          scopedTo = projectId;
        }
        const nowMs = now();
        const token = `MIIT${randomBytes(48).toString('base64url')}`;
        tokens.set(token, { projectId: scopedTo, expiresAt: nowMs + tokenLifetimeMs });
        const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');
        const domain = { id: 'd0a1b2c3d4e5f60718293a4b5c6d7e8f', name: credentials.domainName };
        return {
          status: 201,
          headers: { 'X-Subject-Token': token },
          body: {
            token: {
              expires_at: iso(nowMs + tokenLifetimeMs),
              issued_at: iso(nowMs),
              methods: ['password'],
              ...(scopedTo ? { project: { id: projectId, name: region, domain } } : { domain }),
              user: { id: 'u1f2e3d4c5b6a79808f7e6d5c4b3a2910', name: credentials.userName, domain, password_expires_at: '' },
              roles: [{ id: 'r0', name: 'te_admin' }],
              ...(req.query.get('nocatalog') === 'true' ? {} : { catalog: [{ type: 'modelarts', name: 'modelarts', endpoints: [] }] }),
            },
          },
        };
      },
    },
    {
      method: 'POST',
      path: '/v2/:projectId/training-job-searches',
      name: 'searchJobs',
      handler: (req) => {
        const body = (req.body ?? {}) as Record<string, unknown>;
        if (typeof body !== 'object' || Array.isArray(body)) return invalidArgument('request body must be a JSON object');
        const offset = body.offset ?? 0;
        const limit = body.limit ?? 10;
        if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) return invalidArgument('offset must be a non-negative integer page index');
        if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 50) return invalidArgument('limit must be an integer from 1 to 50');
        const sortBy = body.sort_by ?? 'create_time';
        const order = body.order ?? 'desc';
        if (sortBy !== 'create_time' && sortBy !== 'name') return invalidArgument(`unsupported sort_by ${String(sortBy)}`);
        if (order !== 'asc' && order !== 'desc') return invalidArgument('order must be asc or desc');
        const filters = parseFilters(body.filters);
        if (typeof filters === 'string') return invalidArgument(filters);
        // The search covers one workspace; without workspace_id it is the default one, "0".
        const workspaceId = typeof body.workspace_id === 'string' && body.workspace_id !== '' ? body.workspace_id : DEFAULT_WORKSPACE;

        const nowMs = now();
        const visible = fleet.map((j) => live(j, nowMs));
        const matching = visible
          .filter((j) => j.workspaceId === workspaceId)
          .filter((j) => filters.every((f) => matches(j, f)))
          .sort((a, b) => {
            const cmp = sortBy === 'name' ? a.name.localeCompare(b.name) : a.createTime - b.createTime || a.id.localeCompare(b.id);
            return order === 'asc' ? cmp : -cmp;
          });
        const page = matching.slice(offset * limit, offset * limit + limit);
        return {
          status: 200,
          body: {
            total: visible.length,
            count: matching.length,
            limit,
            offset,
            sort_by: sortBy,
            order,
            group_by: typeof body.group_by === 'string' ? body.group_by : '',
            workspace_id: workspaceId,
            ai_project: '',
            items: page.map((j) => render(j, nowMs)),
          },
        };
      },
    },
  ];
}

/** A job's detail, a task's running metrics and log preview, and the terminate action. */
function metricAndLogRoutes(ctx: ModelArtsSim): RouteDef[] {
  const { now, previewLimit, terminatedAt, live, render, findJob } = ctx;
  return [
    {
      method: 'GET',
      path: '/v2/:projectId/training-jobs/:jobId',
      name: 'getJob',
      handler: (req) => {
        const job = findJob(req);
        return job ? { status: 200, body: render(job, now()) } : jobNotFound(req.params.jobId!);
      },
    },
    {
      method: 'GET',
      path: '/v2/:projectId/training-jobs/:jobId/metrics/:taskId',
      name: 'getMetrics',
      handler: (req) => {
        const source = findJob(req);
        if (!source) return jobNotFound(req.params.jobId!);
        const nowMs = now();
        const job = live(source, nowMs);
        if (job.startTime === 0 || nowMs - job.startTime < MINUTE) {
          // ModelArts.2777 NotReadyToFetchMetric: a 204 carries no body to say so.
          return { status: 204 };
        }
        const task = req.params.taskId!;
        if (!taskNames(job).includes(task)) return invalidArgument(`task ${task} does not belong to training job ${job.id}`);
        return { status: 200, body: { metrics: metricSeries(job, task, nowMs) } };
      },
    },
    {
      method: 'GET',
      path: '/v2/:projectId/training-jobs/:jobId/tasks/:taskId/logs/preview',
      name: 'logPreview',
      handler: (req) => {
        const source = findJob(req);
        if (!source) return jobNotFound(req.params.jobId!);
        const nowMs = now();
        const job = live(source, nowMs);
        if (job.startTime === 0) return { status: 204 }; // ModelArts.2776: logs not ready
        const task = req.params.taskId!;
        if (!taskNames(job).includes(task)) return invalidArgument(`task ${task} does not belong to training job ${job.id}`);
        const full = Buffer.from(taskLog(job, task, nowMs), 'utf8');
        const content = full.subarray(Math.max(0, full.length - previewLimit));
        return { status: 200, body: { content: content.toString('utf8'), current_size: content.length, full_size: full.length } };
      },
    },
    {
      method: 'POST',
      path: '/v2/:projectId/training-jobs/:jobId/actions',
      name: 'jobAction',
      handler: (req) => {
        const source = findJob(req);
        if (!source) return jobNotFound(req.params.jobId!);
        if ((req.body as { action_type?: unknown } | undefined)?.action_type !== 'terminate') {
          return invalidArgument('action_type must be terminate');
        }
        const nowMs = now();
        const job = live(source, nowMs);
        if (job.phase !== 'Creating' && job.phase !== 'Pending' && job.phase !== 'Running') {
          return modelArtsError(409, 'ModelArts.2796', `Training job ${job.id} in phase ${job.phase} cannot be terminated.`);
        }
        terminatedAt.set(job.id, nowMs);
        return { status: 202, body: render(source, nowMs) };
      },
    },
  ];
}

type ModelArtsSim = ReturnType<typeof modelartsState>;

export async function startModelArtsSimulator(opts: ModelArtsSimulatorOptions = {}): Promise<ModelArtsSimulator> {
  const ctx: ModelArtsSim = modelartsState(opts);
  const routes = [...jobRoutes(ctx), ...metricAndLogRoutes(ctx)];
  const { now, projectId, region, credentials, fleet, byId, tokens, render } = ctx;

  const authenticate = (req: SimRequest): SimResponse | null => {
    if (req.route === 'iamToken') return null;
    const pathProject = /^\/v2\/([^/]+)\//.exec(req.url.pathname)?.[1];
    const tokenHeader = req.headers['x-auth-token'];
    if (typeof tokenHeader === 'string') {
      const token = tokens.get(tokenHeader);
      if (!token) return modelArtsError(401, 'ModelArts.0201', 'Invalid token.');
      if (token.expiresAt <= now()) return modelArtsError(401, 'ModelArts.0203', 'The token has expired.');
      if (token.projectId === null) return modelArtsError(401, 'ModelArts.0207', 'The token is not scoped to a project.');
      if (pathProject !== undefined && pathProject !== token.projectId) {
        return modelArtsError(403, 'ModelArts.0210', 'The project ID in the URL does not match the token.');
      }
      return null;
    }
    const check = verifySignature(req, (ak) => (ak === credentials.accessKeyId ? credentials.secretAccessKey : undefined), now());
    if (!check.ok) {
      // The sheet documents 401 ModelArts.0201-0208 for token problems and 403 ModelArts.0206 for
      // an invalid AK/SK; which of them a bad signature or a stale date gets is unconfirmed.
      return check.reason === 'missing'
        ? modelArtsError(401, 'ModelArts.0201', 'Authentication required: send X-Auth-Token or an SDK-HMAC-SHA256 signature.')
        : modelArtsError(403, 'ModelArts.0206', `Invalid AK/SK: ${check.message}.`);
    }
    const headerProject = req.headers['x-project-id'];
    if (
      (typeof headerProject === 'string' && pathProject !== undefined && headerProject !== pathProject) ||
      (pathProject !== undefined && pathProject !== projectId)
    ) {
      return modelArtsError(403, 'ModelArts.0210', 'The project ID does not match the credentials.');
    }
    return null;
  };

  const renderFault = (fault: Fault, req: SimRequest): SimResponse => {
    switch (fault.kind) {
      case 'rate_limit':
        return modelArtsError(429, 'ModelArts.2799', 'Too many requests, please try again later.', {
          'Retry-After': String(fault.retryAfterSeconds ?? 1),
        });
      case 'status': {
        const status = fault.status ?? 503;
        return status >= 500
          ? modelArtsError(status, 'ModelArts.0001', 'The system is busy or an internal error occurred.')
          : modelArtsError(status, 'ModelArts.0101', 'Injected failure.');
      }
      case 'malformed':
        return { status: 200, rawText: '{"metrics": [{"metric": "cpuUsage", "value": [1.5, ', headers: { 'content-type': 'application/json' } };
      case 'auth':
        return req.headers['x-auth-token'] ? modelArtsError(401, 'ModelArts.0201', 'Invalid token.') : modelArtsError(403, 'ModelArts.0206', 'Invalid AK/SK.');
      case 'empty':
        // Metrics and logs say "not ready" with a bare 204; elsewhere an empty 200 body.
        return req.route === 'getMetrics' || req.route === 'logPreview' ? { status: 204 } : { status: 200, rawText: '' };
      default:
        return modelArtsError(500, 'ModelArts.0001', `unhandled fault ${fault.kind}`);
    }
  };

  // The server's own clock in every answer's Date header, so a client can align timestamp-less
  // metrics to the server's "now" (and tests that pin now() see it).
  const withDate = (res: SimResponse): SimResponse => ({ ...res, headers: { date: new Date(now()).toUTCString(), ...(res.headers ?? {}) } });

  const handle = await startSimulator(
    {
      name: 'modelarts',
      routes: routes.map((r) => ({ ...r, handler: async (req: SimRequest) => withDate(await r.handler(req)) })),
      renderFault: (fault, req) => withDate(renderFault(fault, req)),
      authenticate: (req) => {
        const denied = authenticate(req);
        return denied ? withDate(denied) : null;
      },
      notFound: () => withDate(modelArtsError(404, 'APIG.0101', 'The API does not exist or has not been published in the environment.')),
    },
    opts.port ?? 0,
  );

  return Object.assign(handle, {
    fleet,
    projectId,
    region,
    credentials,
    revokeTokens: () => tokens.clear(),
    renderJob: (jobId: string) => {
      const job = byId.get(jobId);
      return job ? render(job, now()) : null;
    },
  });
}
