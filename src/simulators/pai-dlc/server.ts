// A PAI-DLC (2020-12-03) simulator that behaves like the ROA API on the wire: V3-signed requests,
// Alibaba's error bodies, ListJobs' silent 7-day window, numbers-as-strings, per-pod metric series
// one MetricType per call, and empty PodMetrics for jobs whose monitoring moved to CloudMonitor.
import { randomUUID } from 'node:crypto';
import { startOfUtcDay, hashSeed, startSimulator, type RouteDef, type SimRequest, type SimResponse, type SimulatorHandle } from '../kit.js';
import { buildFleet, type PaiDlcFleet, type SimJob, type SimPod } from './fleet.js';
import { verifyAcs3Signature } from './signature.js';
import { MAX_CLOCK_SKEW_MS, LIST_DEFAULT_WINDOW_MS, ACTIONS, TERMINAL, iso, parseIsoParam } from './api.js';
import { cmsAndActionHandlers, metricAndLogHandlers } from './metrics.js';

export interface PaiDlcSimulatorOptions {
  seed?: number;
  now?: () => number;
  /** All job times are derived from it; default: the start of the current UTC day. */
  anchorMs?: number;
  accessKeyId?: string;
  accessKeySecret?: string;
  regionId?: string;
  port?: number;
}

export interface PaiDlcSimulator extends SimulatorHandle {
  readonly fleet: PaiDlcFleet;
  readonly accessKeyId: string;
  readonly accessKeySecret: string;
  readonly regionId: string;
}

export const PAI_DLC_API_VERSION = '2020-12-03';

/** The options read once, the fleet, error bodies, and request signing checks. */
export function paiDlcBasics(opts: PaiDlcSimulatorOptions) {
  const now = opts.now ?? Date.now;
  const seed = opts.seed ?? 2;
  const anchorMs = opts.anchorMs ?? startOfUtcDay(now());
  const accessKeyId = opts.accessKeyId ?? 'LTAI5tSimulatedPaiDlcKey';
  const accessKeySecret = opts.accessKeySecret ?? 'sim-pai-dlc-secret-0123456789abcdef';
  const regionId = opts.regionId ?? 'cn-hangzhou';
  const hostId = `pai-dlc.${regionId}.aliyuncs.com`;
  const fleet = buildFleet(seed, anchorMs);
  /** nonce -> when it stops mattering (a request with an older date would be rejected anyway). */
  const usedNonces = new Map<string, number>();

  const errorBody = (status: number, code: string, message: string, headers?: Record<string, string>): SimResponse => ({
    status,
    headers,
    body: { RequestId: randomUUID().toUpperCase(), HostId: hostId, Code: code, Message: message },
  });
  const ok = (body: Record<string, unknown>): SimResponse => ({ status: 200, body: { ...body, RequestId: randomUUID().toUpperCase() } });

  // Our reading (unconfirmed): an unknown JobId answers 404 with an Alibaba-style *.NotFound code.
  const jobNotFound = (jobId: string) => errorBody(404, 'InvalidJobId.NotFound', `The specified job does not exist: ${jobId}.`);
  const invalidParameter = (message: string) => errorBody(400, 'InvalidParameter', message);
  const findJob = (jobId: string) => fleet.jobs.find((j) => j.JobId === jobId);

  const authenticate = (req: SimRequest): SimResponse | null => {
    const action = ACTIONS[req.route];
    if (!action) return null;
    const verdict = verifyAcs3Signature(
      { method: req.method, rawPath: req.url.pathname, query: req.query, headers: req.headers, rawBody: req.rawBody },
      (ak) => (ak === accessKeyId ? accessKeySecret : null),
    );
    if (!verdict.ok) return errorBody(verdict.status, verdict.code, verdict.message);
    const at = now();
    if (Math.abs(at - verdict.dateMs) > MAX_CLOCK_SKEW_MS) {
      return errorBody(400, 'InvalidTimeStamp.Expired', 'Specified time stamp or date value is expired.');
    }
    for (const [nonce, until] of usedNonces) if (until < at) usedNonces.delete(nonce);
    if (usedNonces.has(verdict.nonce)) return errorBody(400, 'SignatureNonceUsed', 'Specified signature nonce was used already.');
    usedNonces.set(verdict.nonce, verdict.dateMs + MAX_CLOCK_SKEW_MS);

    if (req.headers['x-acs-version'] !== PAI_DLC_API_VERSION) {
      return errorBody(400, 'InvalidVersion', 'Specified parameter Version is not valid.');
    }
    if (req.headers['x-acs-action'] !== action) {
      return errorBody(404, 'InvalidAction.NotFound', 'Specified api is not found, please check your url and method.');
    }
    return null;
  };
  return {
    opts,
    now,
    seed,
    anchorMs,
    accessKeyId,
    accessKeySecret,
    regionId,
    hostId,
    fleet,
    usedNonces,
    errorBody,
    ok,
    jobNotFound,
    invalidParameter,
    findJob,
    authenticate,
  };
}

/** Jobs and their pods as GetJob and ListJobs render them. */
export function jobRendering(ctx: ReturnType<typeof paiDlcBasics>) {
  const { now, fleet } = ctx;

  const renderPod = (pod: SimPod, resourceType: SimJob['ResourceType']): Record<string, unknown> => {
    const end = pod.finishedMs ?? now();
    return {
      PodId: pod.PodId,
      PodUid: pod.PodUid,
      Type: pod.Type,
      Status: pod.Status,
      SubStatus: pod.SubStatus,
      Ip: pod.Ip,
      PodIps: [{ InterfaceName: 'eth0', Ip: pod.Ip }],
      NodeName: pod.NodeName,
      ResourceType: resourceType,
      GmtCreateTime: iso(pod.createdMs),
      GmtStartTime: iso(pod.startedMs),
      GmtFinishTime: iso(pod.finishedMs),
      Duration: pod.startedMs === null ? 0 : Math.max(0, Math.floor((end - pod.startedMs) / 1000)),
      HistoryPods: pod.HistoryPods.map((p) => renderPod(p, resourceType)),
    };
  };

  const jobGpus = (job: SimJob) =>
    job.JobSpecs.reduce((sum, s) => {
      const perPod = s.ResourceConfig ? Number(s.ResourceConfig.GPU) : (fleet.ecsSpecs.find((e) => e.InstanceType === s.EcsSpec)?.Gpu ?? 0);
      return sum + perPod * s.PodCount;
    }, 0);

  const renderJob = (job: SimJob, detail: boolean): Record<string, unknown> => {
    const end = job.finishedMs ?? now();
    const finishField =
      job.Status === 'Succeeded' || job.Status === 'SucceededReserving'
        ? { GmtSuccessedTime: iso(job.finishedMs) }
        : job.Status === 'Failed' || job.Status === 'FailedReserving'
          ? { GmtFailedTime: iso(job.finishedMs) }
          : job.Status === 'Stopped'
            ? { GmtStoppedTime: iso(job.finishedMs) }
            : {};
    const podCount = job.JobSpecs.reduce((n, s) => n + s.PodCount, 0);
    const memoryGi = job.JobSpecs.reduce((n, s) => {
      const perPod = s.ResourceConfig ? Number.parseInt(s.ResourceConfig.Memory, 10) : (fleet.ecsSpecs.find((e) => e.InstanceType === s.EcsSpec)?.Memory ?? 0);
      return n + perPod * s.PodCount;
    }, 0);
    const cpu = job.JobSpecs.reduce((n, s) => {
      const perPod = s.ResourceConfig ? Number(s.ResourceConfig.CPU) : (fleet.ecsSpecs.find((e) => e.InstanceType === s.EcsSpec)?.Cpu ?? 0);
      return n + perPod * s.PodCount;
    }, 0);
    const history = [
      { Status: 'Creating', StartTime: iso(job.createdMs), EndTime: iso(job.createdMs + 30_000), ReasonCode: '', ReasonMessage: '' },
      ...(job.runningMs !== null
        ? [{ Status: 'Running', StartTime: iso(job.runningMs), EndTime: iso(job.finishedMs), ReasonCode: '', ReasonMessage: '' }]
        : []),
    ];
    return {
      JobId: job.JobId,
      DisplayName: job.DisplayName,
      JobType: job.JobType,
      Status: job.Status,
      SubStatus: '',
      ReasonCode: job.ReasonCode,
      ReasonMessage: job.ReasonMessage,
      WorkspaceId: job.workspace.WorkspaceId,
      WorkspaceName: job.workspace.WorkspaceName,
      ResourceId: job.ResourceId,
      ResourceType: job.ResourceType,
      ResourceLevel: 'L0',
      UserId: job.user.UserId,
      Username: job.user.Username,
      UserCommand: `python /root/code/train.py --epochs 10 --job ${job.DisplayName}`,
      Envs: { NCCL_DEBUG: 'INFO', PYTHONUNBUFFERED: '1' },
      GmtCreateTime: iso(job.createdMs),
      GmtSubmittedTime: iso(job.createdMs),
      GmtRunningTime: iso(job.runningMs),
      GmtFinishTime: iso(job.finishedMs),
      ...finishField,
      GmtModifiedTime: iso(job.finishedMs ?? job.runningMs ?? job.createdMs),
      Duration: job.runningMs === null ? 0 : Math.max(0, Math.floor((end - job.runningMs) / 1000)),
      NodeCount: String(podCount),
      RequestGPU: String(jobGpus(job)),
      RequestCPU: cpu,
      RequestMemory: `${memoryGi}Gi`,
      RestartTimes: `${job.restartsUsed}/${job.restartsMax}`,
      Priority: 1,
      JobSpecs: job.JobSpecs,
      StatusHistory: history,
      // ListJobs leaves the pod list out (our reading, unconfirmed); GetJob carries it.
      Pods: detail ? job.Pods.map((p) => renderPod(p, job.ResourceType)) : [],
      ...(detail
        ? {
            ClusterId: `c${hashSeed(job.JobId).toString(16)}`,
            TenantId: job.user.UserId,
            RestartRecord: [],
            JobReplicaStatuses: job.JobSpecs.map((s) => ({
              Type: s.Type,
              Active: TERMINAL.has(job.Status) ? 0 : job.Pods.filter((p) => p.Type === s.Type).length,
            })),
          }
        : {}),
    };
  };
  return { renderPod, jobGpus, renderJob };
}

/** ListJobs (paged, filtered) and GetJob. */
export function jobHandlers(ctx: ReturnType<typeof paiDlcBasics> & ReturnType<typeof jobRendering>) {
  const { now, fleet, ok, jobNotFound, invalidParameter, findJob, renderJob } = ctx;

  const listJobs = (req: SimRequest): SimResponse => {
    const q = req.query;
    const pageNumber = Number(q.get('PageNumber') ?? '1');
    const pageSize = Number(q.get('PageSize') ?? '10');
    if (!Number.isInteger(pageNumber) || pageNumber < 1) return invalidParameter('PageNumber must be a positive integer.');
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) return invalidParameter('PageSize must be between 1 and 100.');
    const start = parseIsoParam(q.get('StartTime'));
    const end = parseIsoParam(q.get('EndTime'));
    if (start === 'invalid' || end === 'invalid') return invalidParameter('StartTime and EndTime must be ISO 8601 UTC times.');
    const at = now();
    const from = start ?? at - LIST_DEFAULT_WINDOW_MS;
    const to = end ?? at;
    // ShowOwn defaults to true (metadata default, unconfirmed): only the caller's own jobs.
    const showOwn = (q.get('ShowOwn') ?? 'true') !== 'false';
    // One workspace per listing: WorkspaceId, or the account's default one. Only FromAllWorkspaces
    // together with ShowOwn=true spans workspaces (the official model's wording); which workspace an
    // unscoped listing shows is our reading (unconfirmed): the default workspace.
    const allWorkspaces = showOwn && q.get('FromAllWorkspaces') === 'true';
    const workspaceId = q.get('WorkspaceId') || (allWorkspaces ? null : fleet.workspaces[0]!.WorkspaceId);
    const status = q.get('Status');
    const displayName = q.get('DisplayName')?.toLowerCase();
    const jobIdPart = q.get('JobId')?.toLowerCase();
    const jobIds = q.get('JobIds')?.split(',').filter(Boolean);
    const order = (q.get('Order') ?? 'desc').toLowerCase() === 'asc' ? 1 : -1;
    const sortBy = q.get('SortBy') ?? 'GmtCreateTime';
    const sortKey = (j: SimJob): string | number =>
      sortBy === 'DisplayName'
        ? j.DisplayName
        : sortBy === 'JobType'
          ? j.JobType
          : sortBy === 'Status'
            ? j.Status
            : sortBy === 'GmtFinishTime'
              ? (j.finishedMs ?? 0)
              : j.createdMs;

    const matching = fleet.jobs
      .filter((j) => j.createdMs >= from && j.createdMs <= to)
      .filter((j) => !showOwn || j.user.UserId === fleet.callerUserId)
      .filter((j) => !workspaceId || j.workspace.WorkspaceId === workspaceId)
      .filter((j) => !status || j.Status === status)
      .filter((j) => !displayName || j.DisplayName.toLowerCase().includes(displayName))
      .filter((j) => !jobIdPart || j.JobId.toLowerCase().includes(jobIdPart))
      .filter((j) => !jobIds || jobIds.includes(j.JobId))
      .sort((a, b) => {
        const ka = sortKey(a);
        const kb = sortKey(b);
        if (ka !== kb) return (ka < kb ? -1 : 1) * order;
        return a.JobId < b.JobId ? -1 : 1;
      });
    const page = matching.slice((pageNumber - 1) * pageSize, pageNumber * pageSize);
    return ok({ Jobs: page.map((j) => renderJob(j, false)), TotalCount: matching.length });
  };

  const getJob = (req: SimRequest): SimResponse => {
    const job = findJob(req.params.jobId!);
    return job ? ok(renderJob(job, req.query.get('NeedDetail') !== 'false')) : jobNotFound(req.params.jobId!);
  };
  return { listJobs, getJob };
}

type PaiDlcSim = ReturnType<typeof paiDlcBasics> &
  ReturnType<typeof jobRendering> &
  ReturnType<typeof jobHandlers> &
  ReturnType<typeof metricAndLogHandlers> &
  ReturnType<typeof cmsAndActionHandlers>;

export async function startPaiDlcSimulator(opts: PaiDlcSimulatorOptions = {}): Promise<PaiDlcSimulator> {
  const basics = paiDlcBasics(opts);
  const rendered = { ...basics, ...jobRendering(basics) };
  const withJobs = { ...rendered, ...jobHandlers(rendered) };
  const withMetrics = { ...withJobs, ...metricAndLogHandlers(withJobs) };
  const ctx: PaiDlcSim = { ...withMetrics, ...cmsAndActionHandlers(withMetrics) };
  const {
    accessKeyId,
    accessKeySecret,
    regionId,
    fleet,
    errorBody,
    authenticate,
    listJobs,
    getJob,
    getJobMetrics,
    getPodLogs,
    getMetrics,
    stopJob,
    listEcsSpecs,
    renderFault,
  } = ctx;

  const routes: RouteDef[] = [
    { method: 'GET', path: '/api/v1/jobs', name: 'listJobs', handler: listJobs },
    { method: 'GET', path: '/api/v1/jobs/:jobId', name: 'getJob', handler: getJob },
    { method: 'GET', path: '/api/v1/jobs/:jobId/metrics', name: 'getJobMetrics', handler: getJobMetrics },
    { method: 'GET', path: '/api/v1/jobs/:jobId/pods/:podId/logs', name: 'getPodLogs', handler: getPodLogs },
    { method: 'POST', path: '/api/v1/jobs/:jobId/stop', name: 'stopJob', handler: stopJob },
    { method: 'GET', path: '/api/v1/ecsspecs', name: 'listEcsSpecs', handler: listEcsSpecs },
    { method: 'GET', path: '/api/v1/cms/metrics', name: 'getMetrics', handler: getMetrics },
  ];

  const handle = await startSimulator(
    {
      name: 'pai-dlc',
      routes,
      renderFault,
      authenticate,
      notFound: () => errorBody(404, 'InvalidAction.NotFound', 'Specified api is not found, please check your url and method.'),
    },
    opts.port ?? 0,
  );
  return Object.assign(handle, { fleet, accessKeyId, accessKeySecret, regionId });
}
