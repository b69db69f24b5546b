// A PAI-DLC (2020-12-03) simulator that behaves like the ROA API on the wire: V3-signed requests,
// Alibaba's error bodies, ListJobs' silent 7-day window, numbers-as-strings, per-pod metric series
// one MetricType per call, and empty PodMetrics for jobs whose monitoring moved to CloudMonitor.
import { randomUUID } from 'node:crypto';
import {
  startOfUtcDay,
  hashSeed,
  seededRandom,
  startSimulator,
  wave,
  type Fault,
  type RouteDef,
  type SimRequest,
  type SimResponse,
  type SimulatorHandle,
} from '../kit.js';
import { buildFleet, SIM_TIME, type PaiDlcFleet, type SimJob, type SimPod } from './fleet.js';
import { verifyAcs3Signature } from './signature.js';

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

/** How far x-acs-date may be from the server's clock (Alibaba's documented 15 minutes). */
const MAX_CLOCK_SKEW_MS = 15 * SIM_TIME.MIN;
const LIST_DEFAULT_WINDOW_MS = 7 * SIM_TIME.DAY;
const METRICS_DEFAULT_WINDOW_MS = SIM_TIME.HOUR;

const ACTIONS: Record<string, string> = {
  listJobs: 'ListJobs',
  getJob: 'GetJob',
  getJobMetrics: 'GetJobMetrics',
  getPodLogs: 'GetPodLogs',
  stopJob: 'StopJob',
  listEcsSpecs: 'ListEcsSpecs',
  getMetrics: 'GetMetrics',
};

/**
 * The GetMetrics names of namespace acs_pai_dlc this simulator serves, and nothing else: the
 * job-wide duty cycle (JOB_GPU_ACCELERATOR_DUTTY_UTIL, sic) and the per-card GPU family (CARD_GPU_*;
 * the fact sheet's names, partly our reading). Per-card values: percent 0..100 for the
 * activity ratios, MiB/s for NVLink/PCIe, TFLOP/s for tensor throughput, each up to `max`.
 */
const CMS_METRICS: Record<string, { family: 'JOB' | 'CARD'; max: number; floor: number }> = {
  JOB_GPU_ACCELERATOR_DUTTY_UTIL: { family: 'JOB', max: 100, floor: 0.15 },
  CARD_GPU_DUTY_CYCLE: { family: 'CARD', max: 100, floor: 0.15 },
  CARD_GPU_SM_UTIL: { family: 'CARD', max: 100, floor: 0.1 },
  CARD_GPU_PIP_TENSOR_ACTIVE: { family: 'CARD', max: 100, floor: 0.05 },
  CARD_GPU_DRAM_ACTIVE_UTIL: { family: 'CARD', max: 100, floor: 0.1 },
  CARD_GPU_TENSORTFLOPS_USED: { family: 'CARD', max: 250, floor: 0.05 },
  CARD_GPU_NVLINK_RECEIVE: { family: 'CARD', max: 200_000, floor: 0.02 },
  CARD_GPU_NVLINK_TRANSMIT: { family: 'CARD', max: 200_000, floor: 0.02 },
  CARD_GPU_PCIE_RECEIVE: { family: 'CARD', max: 20_000, floor: 0.02 },
  CARD_GPU_PCIE_TRANSMIT: { family: 'CARD', max: 20_000, floor: 0.02 },
};
const CMS_PERIODS = new Set([15, 60, 900, 3600]);
const CMS_DEFAULT_LENGTH = 1000;

/**
 * MetricType -> how its values look: Usage in percent 0..100, Rate in MB/s up to `max` (the unit
 * PAI-Studio documents for the same names; unconfirmed for DLC).
 */
const METRIC_TYPES: Record<string, { percent: boolean; max: number; needsGpu: boolean }> = {
  GpuCoreUsage: { percent: true, max: 100, needsGpu: true },
  GpuMemoryUsage: { percent: true, max: 100, needsGpu: true },
  CpuCoreUsage: { percent: true, max: 100, needsGpu: false },
  MemoryUsage: { percent: true, max: 100, needsGpu: false },
  NetworkInputRate: { percent: false, max: 1250, needsGpu: false },
  NetworkOutputRate: { percent: false, max: 1250, needsGpu: false },
  DiskReadRate: { percent: false, max: 500, needsGpu: false },
  DiskWriteRate: { percent: false, max: 200, needsGpu: false },
};

const TERMINAL = new Set(['Succeeded', 'Failed', 'Stopped']);

function iso(ms: number | null): string {
  return ms === null ? '' : new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Parses TimeStep: "5m", "30s", "1h", or a bare number of minutes (the doc's "default 5, unit minutes"). */
function parseTimeStep(text: string | null): number | null {
  if (text === null || text === '') return 5 * SIM_TIME.MIN;
  const m = /^(\d+)([smh]?)$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const unit = m[2] === 's' ? 1000 : m[2] === 'h' ? SIM_TIME.HOUR : SIM_TIME.MIN;
  return n > 0 ? n * unit : null;
}

function parseIsoParam(text: string | null): number | null | 'invalid' {
  if (text === null || text === '') return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? 'invalid' : ms;
}

/** The options read once, the fleet, error bodies, and request signing checks. */
function paiDlcBasics(opts: PaiDlcSimulatorOptions) {
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
function jobRendering(ctx: ReturnType<typeof paiDlcBasics>) {
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
function jobHandlers(ctx: ReturnType<typeof paiDlcBasics> & ReturnType<typeof jobRendering>) {
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

/** GetJobMetrics' per-pod series and GetPodLogs. */
function metricAndLogHandlers(ctx: ReturnType<typeof paiDlcBasics> & ReturnType<typeof jobRendering> & ReturnType<typeof jobHandlers>) {
  const { now, errorBody, ok, jobNotFound, invalidParameter, findJob } = ctx;

  const seriesFor = (job: SimJob, pod: SimPod, metricType: string, fromMs: number, toMs: number, stepMs: number) => {
    const shape = METRIC_TYPES[metricType]!;
    if (pod.startedMs === null || (shape.needsGpu && pod.gpus === 0)) return [];
    const podEnd = Math.min(pod.finishedMs ?? now(), now());
    const first = Math.ceil(Math.max(fromMs, pod.startedMs) / stepMs) * stepMs;
    const last = Math.min(toMs, podEnd);
    const seedOf = hashSeed(`${job.JobId}/${pod.PodId}/${metricType}`);
    const points: { Time: number; Value: number }[] = [];
    for (let t = first; t <= last; t += stepMs) {
      const value = wave(seedOf, t, shape.percent ? 0.15 : 0.02, shape.percent ? 0.98 : 0.9) * shape.max;
      points.push({ Time: t, Value: Math.round(value * 100) / 100 });
    }
    return points;
  };

  /** One card's points of a CARD_ metric: each name has its own wave, so no two names answer alike. */
  const cardSeries = (job: SimJob, pod: SimPod, card: number, metricName: string, fromMs: number, toMs: number, stepMs: number) => {
    const shape = CMS_METRICS[metricName]!;
    if (pod.startedMs === null) return [];
    const podEnd = Math.min(pod.finishedMs ?? now(), now());
    const first = Math.ceil(Math.max(fromMs, pod.startedMs) / stepMs) * stepMs;
    const last = Math.min(toMs, podEnd);
    const seedOf = hashSeed(`${job.JobId}/${pod.PodId}/${card}/${metricName}`);
    const points: { Time: number; Value: number }[] = [];
    for (let t = first; t <= last; t += stepMs) points.push({ Time: t, Value: Math.round(wave(seedOf, t, shape.floor, 0.97) * shape.max * 100) / 100 });
    return points;
  };

  const getJobMetrics = (req: SimRequest): SimResponse => {
    const job = findJob(req.params.jobId!);
    if (!job) return jobNotFound(req.params.jobId!);
    const metricType = req.query.get('MetricType');
    if (!metricType) return errorBody(400, 'MissingParameter', 'MetricType is mandatory for this action.');
    if (!METRIC_TYPES[metricType]) return invalidParameter(`The MetricType ${metricType} is not supported.`);
    const stepMs = parseTimeStep(req.query.get('TimeStep'));
    if (stepMs === null) return invalidParameter('TimeStep must look like "5m".');
    const at = now();
    const start = parseIsoParam(req.query.get('StartTime'));
    const end = parseIsoParam(req.query.get('EndTime'));
    if (start === 'invalid' || end === 'invalid') return invalidParameter('StartTime and EndTime must be ISO 8601 UTC times.');
    const fromMs = start ?? at - METRICS_DEFAULT_WINDOW_MS;
    const toMs = end ?? at;
    if (toMs < fromMs) return invalidParameter('EndTime must not be before StartTime.');
    const podMetrics = job.metricsViaGetJobMetrics
      ? job.Pods.map((pod) => ({ PodId: pod.PodId, Metrics: seriesFor(job, pod, metricType, fromMs, toMs, stepMs) }))
      : [];
    return ok({ JobId: job.JobId, PodMetrics: podMetrics });
  };

  const getPodLogs = (req: SimRequest): SimResponse => {
    const job = findJob(req.params.jobId!);
    if (!job) return jobNotFound(req.params.jobId!);
    const podId = req.params.podId!;
    const current = job.Pods.find((p) => p.PodId === podId);
    const incarnations = current ? [current, ...current.HistoryPods] : [];
    const podUid = req.query.get('PodUid');
    const pod = podUid ? incarnations.find((p) => p.PodUid === podUid) : current;
    if (!pod) return errorBody(404, 'InvalidPodId.NotFound', `The specified pod does not exist: ${podId}.`);
    const maxLines = Number(req.query.get('MaxLines') ?? '2000');
    if (!Number.isInteger(maxLines) || maxLines < 1) return invalidParameter('MaxLines must be a positive integer.');
    const at = now();
    const start = parseIsoParam(req.query.get('StartTime'));
    const end = parseIsoParam(req.query.get('EndTime'));
    if (start === 'invalid' || end === 'invalid') return invalidParameter('StartTime and EndTime must be ISO 8601 UTC times.');
    // Both bounds inclusive at second resolution (our reading, unconfirmed): a line at 10:00:05.4
    // is inside EndTime=10:00:05Z.
    const fromMs = start ?? at - 7 * SIM_TIME.DAY;
    const toMs = Math.min(end === null ? at : end + 999, pod.finishedMs ?? at);
    const lines: string[] = [];
    if (pod.startedMs !== null) {
      // One line a minute from the pod's start; plain text as the API returns it (oldest first, our reading).
      const rand = seededRandom(hashSeed(pod.PodUid));
      for (let t = pod.startedMs, step = 0; t <= toMs && lines.length < maxLines; t += SIM_TIME.MIN, step++) {
        const loss = (2.5 * Math.exp(-step / 200) + rand() * 0.05).toFixed(4);
        if (t >= fromMs) lines.push(`[${iso(t)}] ${pod.Type.toLowerCase()} step=${step * 50} loss=${loss}`);
      }
    }
    return ok({ JobId: job.JobId, PodId: pod.PodId, PodUid: pod.PodUid, Logs: lines });
  };
  return { seriesFor, cardSeries, getJobMetrics, getPodLogs };
}

/** CloudMonitor's GetMetrics, StopJob, ListEcsSpecs, and faults in this API's shapes. */
function cmsAndActionHandlers(
  ctx: ReturnType<typeof paiDlcBasics> & ReturnType<typeof jobRendering> & ReturnType<typeof jobHandlers> & ReturnType<typeof metricAndLogHandlers>,
) {
  const { now, regionId, fleet, errorBody, ok, jobNotFound, invalidParameter, findJob, cardSeries } = ctx;

  /**
   * GetMetrics, the CloudMonitor proxy: every job but pay-as-you-go ones on public ECS resources
   * reports here. DataPoints is a JSON string; NextToken pages by Length points.
   */
  const getMetrics = (req: SimRequest): SimResponse => {
    const q = req.query;
    if (q.get('Namespace') !== 'acs_pai_dlc') return invalidParameter('The Namespace is invalid; expected acs_pai_dlc.');
    const metricName = q.get('MetricName');
    if (!metricName) return errorBody(400, 'MissingParameter', 'MetricName is mandatory for this action.');
    const shape = CMS_METRICS[metricName];
    if (!shape) return invalidParameter(`The MetricName ${metricName} does not exist in namespace acs_pai_dlc.`);
    const period = Number(q.get('Period') ?? '60');
    if (!CMS_PERIODS.has(period)) return invalidParameter('Period must be one of 15, 60, 900, 3600.');
    const length = Number(q.get('Length') ?? String(CMS_DEFAULT_LENGTH));
    if (!Number.isInteger(length) || length < 1) return invalidParameter('Length must be a positive integer.');
    let dims: Record<string, unknown>[];
    try {
      const parsed = JSON.parse(q.get('Dimensions') ?? '[]') as unknown;
      dims = (Array.isArray(parsed) ? parsed : [parsed]).filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null);
    } catch {
      return invalidParameter('Dimensions must be a JSON string.');
    }
    const at = now();
    const start = parseIsoParam(q.get('StartTime'));
    const end = parseIsoParam(q.get('EndTime'));
    if (start === 'invalid' || end === 'invalid') return invalidParameter('StartTime and EndTime must be ISO 8601 UTC times.');
    const fromMs = start ?? at - METRICS_DEFAULT_WINDOW_MS;
    const toMs = end ?? at;
    const wantedJob = q.get('JobId') ?? (typeof dims[0]?.jobId === 'string' ? (dims[0].jobId as string) : null);
    const job = wantedJob ? findJob(wantedJob) : undefined;
    const points: Record<string, unknown>[] = [];
    // CloudMonitor files a job's metrics under the account (main) id, not under a RAM sub-user who
    // submitted it: a userId dimension naming anyone else matches nothing.
    const userOk = dims.every((d) => d.userId === undefined || d.userId === fleet.accountId);
    // Jobs still on GetJobMetrics (pay-as-you-go, public ECS) are not in CloudMonitor: no points.
    if (job && !job.metricsViaGetJobMetrics && userOk) {
      const echo = { jobId: job.JobId, regionId, userId: fleet.accountId, workspaceId: job.workspace.WorkspaceId };
      const stepMs = period * 1000;
      if (shape.family === 'JOB') {
        const cards = job.Pods.flatMap((pod) =>
          Array.from({ length: pod.gpus }, (_, card) => cardSeries(job, pod, card, 'CARD_GPU_DUTY_CYCLE', fromMs, toMs, stepMs)),
        );
        const byTime = new Map<number, number[]>();
        for (const series of cards) for (const p of series) byTime.set(p.Time, [...(byTime.get(p.Time) ?? []), p.Value]);
        for (const [t, values] of [...byTime].sort((a, b) => a[0] - b[0])) {
          points.push({ timestamp: t, ...echo, Value: Math.round((values.reduce((x, y) => x + y, 0) / values.length) * 100) / 100 });
        }
      } else {
        const podFilter = new Set(dims.map((d) => d.pod).filter((p): p is string => typeof p === 'string'));
        for (const pod of job.Pods) {
          if (podFilter.size > 0 && !podFilter.has(pod.PodId)) continue;
          for (let card = 0; card < pod.gpus; card++) {
            for (const p of cardSeries(job, pod, card, metricName, fromMs, toMs, stepMs)) {
              points.push({ timestamp: p.Time, ...echo, pod: pod.PodId, gpuId: String(card), Value: p.Value });
            }
          }
        }
      }
    }
    const offset = Number(Buffer.from(q.get('NextToken') ?? '', 'base64url').toString('utf8') || '0');
    if (!Number.isInteger(offset) || offset < 0) return invalidParameter('The NextToken is invalid.');
    const page = points.slice(offset, offset + length);
    const next = offset + length < points.length ? Buffer.from(String(offset + length), 'utf8').toString('base64url') : null;
    return ok({ Code: '200', Message: 'Success.', Success: true, Period: String(period), NextToken: next, DataPoints: JSON.stringify(page) });
  };

  const stopJob = (req: SimRequest): SimResponse => {
    const job = findJob(req.params.jobId!);
    if (!job) return jobNotFound(req.params.jobId!);
    // Stopping a finished job is a no-op here (the real answer is unconfirmed).
    if (!TERMINAL.has(job.Status)) {
      const at = now();
      job.Status = 'Stopped';
      job.ReasonCode = 'JobStoppedByUser';
      job.ReasonMessage = 'Job stopped by user.';
      job.finishedMs = at;
      for (const pod of job.Pods) {
        pod.finishedMs = at;
        pod.Status = 'Failed';
      }
    }
    return ok({ JobId: job.JobId });
  };

  const listEcsSpecs = (req: SimRequest): SimResponse => {
    const wanted = req.query.get('InstanceTypes')?.split(',').filter(Boolean);
    const accelerator = req.query.get('AcceleratorType');
    const pageNumber = Number(req.query.get('PageNumber') ?? '1');
    const pageSize = Number(req.query.get('PageSize') ?? '10');
    if (!Number.isInteger(pageNumber) || pageNumber < 1 || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
      return invalidParameter('PageNumber/PageSize out of range.');
    }
    const specs = fleet.ecsSpecs.filter((s) => !wanted || wanted.includes(s.InstanceType)).filter((s) => !accelerator || s.AcceleratorType === accelerator);
    return ok({
      EcsSpecs: specs.slice((pageNumber - 1) * pageSize, pageNumber * pageSize).map((s) => ({ ...s, IsAvailable: true, ResourceType: 'ECS' })),
      TotalCount: specs.length,
    });
  };

  const renderFault = (fault: Fault, req: SimRequest): SimResponse => {
    switch (fault.kind) {
      case 'rate_limit':
        // x-acs-retry-after in milliseconds (our reading, unconfirmed).
        return errorBody(429, 'Throttling.User', 'Request was denied due to user flow control.', {
          'x-acs-retry-after': String(Math.round((fault.retryAfterSeconds ?? 1) * 1000)),
        });
      case 'status': {
        const status = fault.status ?? 503;
        if (status >= 500) {
          return status === 503
            ? errorBody(503, 'ServiceUnavailable', 'The request has failed due to a temporary failure of the server.')
            : errorBody(status, 'InternalError', 'The request processing has failed due to some unknown error, exception or failure.');
        }
        return errorBody(status, 'InvalidParameter', 'The request is not valid.');
      }
      case 'auth':
        return errorBody(404, 'InvalidAccessKeyId.NotFound', 'Specified access key is not found.');
      case 'malformed':
        return { status: 200, headers: { 'content-type': 'application/json;charset=utf-8' }, rawText: '{"RequestId":"6A8B1C2D-TRUNCATED","Jobs":[{"JobId":' };
      case 'empty':
        if (req.route === 'listJobs') return ok({ Jobs: [], TotalCount: 0 });
        if (req.route === 'getJobMetrics') return ok({ JobId: req.params.jobId ?? '', PodMetrics: [] });
        if (req.route === 'getMetrics') return ok({ Code: '200', Message: 'Success.', Success: true, Period: '60', NextToken: null, DataPoints: '[]' });
        return { status: 200, headers: { 'content-type': 'application/json;charset=utf-8' }, rawText: '' };
      default:
        return errorBody(500, 'InternalError', 'The request processing has failed due to some unknown error, exception or failure.');
    }
  };
  return { getMetrics, stopJob, listEcsSpecs, renderFault };
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
