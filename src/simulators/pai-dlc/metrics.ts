// The PAI-DLC simulator's metric, log and action handlers: GetJobMetrics, GetPodLogs, CloudMonitor's
// GetMetrics, StopJob, ListEcsSpecs, and faults in this API's shapes.
import { hashSeed, seededRandom, wave, type Fault, type SimRequest, type SimResponse } from '../kit.js';
import { SIM_TIME, type SimJob, type SimPod } from './fleet.js';
import { METRICS_DEFAULT_WINDOW_MS, CMS_METRICS, CMS_PERIODS, CMS_DEFAULT_LENGTH, METRIC_TYPES, TERMINAL, iso, parseTimeStep, parseIsoParam } from './api.js';
import type { jobHandlers, jobRendering, paiDlcBasics } from './server.js';

/** GetJobMetrics' per-pod series and GetPodLogs. */
export function metricAndLogHandlers(ctx: ReturnType<typeof paiDlcBasics> & ReturnType<typeof jobRendering> & ReturnType<typeof jobHandlers>) {
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
export function cmsAndActionHandlers(
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
