// PAI-DLC adapter: system metrics, through GetJobMetrics for pay-as-you-go jobs on public ECS
// resources and CloudMonitor's GetMetrics for every other job.
import { UpstreamError } from '../../domain/errors.js';
import { TERMINAL_STATUSES, type JobRef, type MetricFetchRequest, type SeriesData, type SystemMetric } from '../../domain/types.js';
import type { SystemMetricsResult } from '../provider.js';
import { percentScaleProblem, reportShapeMismatch } from '../shape-watch.js';
import { metricDefinition } from '../../domain/metric-catalog.js';
import {
  CARD_KEYS,
  CMS_NAMESPACE,
  CMS_QUERIES,
  type CmsQuery,
  type CmsSeriesKey,
  cmsPeriodFor,
  cmsPointOf,
  mapCmsSeries,
  mapJob,
  mapMetricSeries,
  mapNodes,
  mapStatus,
  METRIC_TYPES,
  metricsRouteOf,
  PAI_DLC_METRICS,
  RATE_CEILING_MB_S,
} from './mapping.js';
import { percentEncode } from './signer.js';
import { cmsDataPoint, cmsMetricsResponse, jobMetricsResponse, type WireCmsDataPoint, type WireCmsMetrics, type WireJob } from './wire.js';
import { CMS_MAX_PAGES, CMS_PAGE_LENGTH, isoSeconds, type PaiDlcContext } from './context.js';
import { visibleJob } from './jobs.js';

/**
 * Reads the job first: its resource type picks the route, and its pods are returned as the
 * topology so every series' node exists in the same answer (cold cache included).
 */
export async function fetchSystemMetrics(dlc: PaiDlcContext, ref: JobRef, request: MetricFetchRequest, signal: AbortSignal): Promise<SystemMetricsResult> {
  const { providerId, ctx, ecsSpecCache } = dlc;
  const job = await visibleJob(dlc, ref.externalId, signal);
  if (!job) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `PAI-DLC job ${ref.externalId} does not exist`);
  const route = metricsRouteOf(job);
  const offered = route === 'GetJobMetrics' ? new Set(METRIC_TYPES.keys()) : new Set(CMS_QUERIES.map((q) => q.metric));
  const wanted = request.metrics.filter((m): m is SystemMetric => offered.has(m));
  const answers =
    route === 'GetJobMetrics'
      ? (await legacyMetrics(dlc, job, request, wanted, signal)).map((a) => ({ ...a, complete: true }))
      : await cloudMonitorMetrics(dlc, job, request, wanted, signal);
  const running = !TERMINAL_STATUSES.has(mapStatus(job.Status));
  const podsStarted = (job.Pods ?? []).some((p) => p.GmtStartTime);
  const hasGpus = (mapJob(job, ecsSpecCache, ctx).gpuCount ?? 0) > 0;
  const routeName = route === 'GetJobMetrics' ? 'getjobmetrics' : 'cms';
  // A metric this job's route has no name for has nothing more to give: complete, and empty.
  const covered: SystemMetric[] = request.metrics.filter((m) => PAI_DLC_METRICS.includes(m) && !offered.has(m));
  const seen = new Map<SystemMetric, { hasPoints: boolean; complete: boolean }>();
  for (const a of answers) {
    const prev = seen.get(a.metric) ?? { hasPoints: false, complete: true };
    seen.set(a.metric, { hasPoints: prev.hasPoints || a.series.some((s) => s.points.length > 0), complete: prev.complete && a.complete });
  }
  for (const [metric, { hasPoints, complete }] of seen) {
    if (!complete) continue;
    const gpuOnly = metricDefinition(metric).finestScope === 'GPU';
    const expected = podsStarted && (!gpuOnly || hasGpus);
    // An empty answer while the job runs is not "no data": monitoring may lag, or this route
    // may not serve the job. It is left uncovered so the next question asks again.
    if (!hasPoints && running) {
      if (expected && job.Status === 'Running') {
        reportShapeMismatch({ providerId, assumption: `pai-dlc.${routeName}.empty-while-running`, detail: `${metric} of running job ${job.JobId}` });
      }
      continue;
    }
    // A finished job's empty answer is final, but for a job that ran inside the window asked and
    // within CloudMonitor's retention it says a name, a dimension or a route is wrong.
    if (!hasPoints && expected && ranWithin(job, request)) {
      reportShapeMismatch({ providerId, assumption: `pai-dlc.${routeName}.empty-after-finish`, detail: `${metric} of finished job ${job.JobId}` });
    }
    covered.push(metric);
  }
  return {
    series: answers.flatMap((a) => a.series),
    covered,
    from: request.from,
    to: request.to,
    nodes: mapNodes(job, ecsSpecCache),
  };
}

export async function legacyMetrics(dlc: PaiDlcContext, job: WireJob, request: MetricFetchRequest, wanted: SystemMetric[], signal: AbortSignal) {
  const { providerId, call } = dlc;
  // TimeStep is documented in minutes ("5m"); finer steps are not offered.
  const timeStep = `${Math.max(1, Math.round(request.stepSeconds / 60))}m`;
  const answers = await Promise.all(
    wanted.map(async (metric) => {
      const body = await call(
        {
          action: 'GetJobMetrics',
          path: `/api/v1/jobs/${percentEncode(job.JobId)}/metrics`,
          query: {
            MetricType: METRIC_TYPES.get(metric)!.metricType,
            StartTime: isoSeconds(request.from),
            EndTime: isoSeconds(request.to),
            TimeStep: timeStep,
          },
          signal,
        },
        jobMetricsResponse,
      );
      const mapping = METRIC_TYPES.get(metric)!;
      if (mapping.unit === 'MB/s') {
        const over = (body.PodMetrics ?? []).flatMap((pm) => pm.Metrics ?? []).filter((m) => Number(m.Value) > RATE_CEILING_MB_S).length;
        if (over > 0) {
          reportShapeMismatch({
            providerId,
            assumption: 'pai-dlc.getjobmetrics.rate-unit',
            detail: `${mapping.metricType} of job ${job.JobId}: ${over} value(s) over ${RATE_CEILING_MB_S} read as MB/s (bytes/s after all?)`,
          });
        }
      }
      return { metric, series: mapMetricSeries(metric, body, timeStep) };
    }),
  );
  return answers;
}

/**
 * The userId dimension. CloudMonitor fills it with the account (main) id, while a job's UserId may
 * be a RAM sub-user: the configured accountId wins, the job's UserId is the fallback (right for
 * jobs the main account submitted). Which one was sent is said in each series' meta.
 */
export function userIdOf(dlc: PaiDlcContext, job: WireJob): { userId: string | null; from: string } {
  const { config } = dlc;
  if (config.accountId) return { userId: config.accountId, from: 'config accountId' };
  return { userId: job.UserId || null, from: "the job's UserId (a RAM sub-user's jobs need accountId in the config)" };
}

/**
 * All points of one GetMetrics query, following NextToken to the end. One call asks for the whole
 * job (JOB_) or for every pod (CARD_: Dimensions is a JSON array of dimension objects, the SDK
 * model's example). Points are told apart by the `pod` and card keys they echo (our reading,
 * unconfirmed: a point without them is only attributable when the answer cannot mean another).
 */
export async function cmsPoints(
  dlc: PaiDlcContext,
  job: WireJob,
  podGpus: ReadonlyMap<string, number | null>,
  query: CmsQuery,
  request: MetricFetchRequest,
  period: number,
  signal: AbortSignal,
) {
  const { config, providerId, call } = dlc;
  const base = {
    jobId: job.JobId,
    regionId: config.regionId,
    ...(userIdOf(dlc, job).userId ? { userId: userIdOf(dlc, job).userId } : {}),
    ...(job.WorkspaceId != null && job.WorkspaceId !== '' ? { workspaceId: String(job.WorkspaceId) } : {}),
  };
  const podIds = [...podGpus.keys()];
  const dimensions = JSON.stringify(query.family === 'JOB' ? [base] : podIds.map((pod) => ({ ...base, pod })));
  /** "pod|card" (or "" for the job) -> points */
  const byKey = new Map<string, { key: CmsSeriesKey; points: { ms: number; value: number | null }[] }>();
  let token: string | null = null;
  let unattributed = 0;
  for (let page = 0; page < CMS_MAX_PAGES; page++) {
    const body: WireCmsMetrics = await call(
      {
        action: 'GetMetrics',
        path: '/api/v1/cms/metrics',
        query: {
          Namespace: CMS_NAMESPACE,
          MetricName: query.metricName,
          Dimensions: dimensions,
          JobId: job.JobId,
          StartTime: isoSeconds(request.from),
          EndTime: isoSeconds(request.to),
          Period: String(period),
          Length: String(CMS_PAGE_LENGTH),
          ...(token ? { NextToken: token } : {}),
        },
        signal,
      },
      cmsMetricsResponse,
    );
    // Success false inside a 200 is how CloudMonitor reports a refused query.
    if (body.Success === false || body.Success === 'false') {
      throw new UpstreamError(
        'UPSTREAM_BAD_RESPONSE',
        providerId,
        `PAI-DLC GetMetrics refused ${query.metricName}: ${body.Code ?? ''} ${body.Message ?? ''}`.trim(),
      );
    }
    let decoded: unknown = [];
    try {
      decoded = body.DataPoints ? JSON.parse(body.DataPoints) : [];
    } catch {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, 'PAI-DLC GetMetrics DataPoints is not JSON');
    }
    if (!Array.isArray(decoded)) {
      reportShapeMismatch({ providerId, assumption: 'pai-dlc.cms.datapoints-array', detail: `DataPoints decoded to ${typeof decoded}` });
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, 'PAI-DLC GetMetrics DataPoints is not a JSON array');
    }
    let unreadable = 0;
    for (const raw of decoded) {
      const parsed = cmsDataPoint.safeParse(raw);
      const point = parsed.success ? cmsPointOf(parsed.data) : null;
      if (!parsed.success || !point) {
        unreadable += 1;
        continue;
      }
      const key = query.family === 'JOB' ? { pod: null, gpuIndex: null, card: null } : cardKeyOf(parsed.data, podGpus);
      if (!key) {
        unattributed += 1;
        continue;
      }
      const id = `${key.pod ?? ''}|${key.card ?? ''}`;
      let entry = byKey.get(id);
      if (!entry) byKey.set(id, (entry = { key, points: [] }));
      entry.points.push(point);
    }
    if (unreadable > 0) {
      const keys = decoded[0] && typeof decoded[0] === 'object' ? Object.keys(decoded[0] as object).join(',') : typeof decoded[0];
      reportShapeMismatch({
        providerId,
        assumption: 'pai-dlc.cms.datapoint-shape',
        detail: `${unreadable} point(s) without timestamp/Value; keys seen: ${keys}`,
      });
    }
    token = body.NextToken || null;
    if (!token) break;
  }
  if (unattributed > 0) {
    reportShapeMismatch({
      providerId,
      assumption: 'pai-dlc.cms.card-dimension',
      detail: `${query.metricName}: ${unattributed} point(s) name no pod that was asked for, or no card of a pod with several GPUs`,
    });
  }
  return { entries: [...byKey.values()], complete: token === null, unattributed };
}

/**
 * The pod and card a CARD_ point belongs to. A card named by a number is that GPU index; any other
 * card name gets the index of its place among the pod's card names, in order.
 */
export function cardKeyOf(p: WireCmsDataPoint, podGpus: ReadonlyMap<string, number | null>): CmsSeriesKey | null {
  const pods = [...podGpus.keys()];
  const pod = p.pod ?? p.podId ?? (pods.length === 1 ? pods[0]! : null);
  if (!pod || !podGpus.has(pod)) return null;
  const record = p as Record<string, unknown>;
  const cardKey = CARD_KEYS.find((k) => record[k] !== undefined && record[k] !== null && record[k] !== '');
  if (!cardKey) return podGpus.get(pod) === 1 ? { pod, gpuIndex: 0, card: null } : null;
  const card = String(record[cardKey]);
  return { pod, gpuIndex: /^\d+$/.test(card) ? Number(card) : null, card };
}

export async function cloudMonitorMetrics(dlc: PaiDlcContext, job: WireJob, request: MetricFetchRequest, wanted: SystemMetric[], signal: AbortSignal) {
  const { providerId, ecsSpecCache } = dlc;
  const period = cmsPeriodFor(request.stepSeconds);
  const podGpus = new Map<string, number | null>(mapNodes(job, ecsSpecCache).map((n) => [n.externalId, n.gpus.length > 0 ? n.gpus.length : null]));
  const { from: userIdFrom } = userIdOf(dlc, job);
  const queries = CMS_QUERIES.filter((q) => wanted.includes(q.metric));
  const busy = job.Status === 'Running';
  const answers = await Promise.all(
    queries.map(async (query) => {
      if (query.family === 'CARD' && podGpus.size === 0) return { query, series: [] as SeriesData[], complete: true, fingerprint: '' };
      const { entries, complete } = await cmsPoints(dlc, job, podGpus, query, request, period, signal);
      const series: SeriesData[] = [];
      // Cards named otherwise than by number are indexed by their order within the pod.
      const named = new Map<string, string[]>();
      for (const e of entries)
        if (e.key.pod && e.key.card !== null && e.key.gpuIndex === null) named.set(e.key.pod, [...(named.get(e.key.pod) ?? []), e.key.card].sort());
      for (const e of entries) {
        const key = e.key.gpuIndex === null && e.key.pod && e.key.card !== null ? { ...e.key, gpuIndex: named.get(e.key.pod)!.indexOf(e.key.card) } : e.key;
        const gpus = key.pod ? podGpus.get(key.pod) : null;
        if (gpus != null && key.gpuIndex !== null && key.gpuIndex >= gpus) {
          reportShapeMismatch({
            providerId,
            assumption: 'pai-dlc.cms.card-count',
            detail: `${query.metricName}: pod ${key.pod} card ${key.card} beyond its ${gpus} GPU(s)`,
          });
        }
        checkRawValues(dlc, query, e.points, busy, job.JobId);
        const s = mapCmsSeries(query, key, e.points, period, { userIdFrom });
        if (s) series.push(s);
      }
      const fingerprint = entries
        .map((e) => `${e.key.pod ?? ''}|${e.key.card ?? ''}:${e.points.map((p) => `${p.ms}=${p.value}`).join(',')}`)
        .sort()
        .join(';');
      return { query, series, complete, fingerprint };
    }),
  );
  // MetricName is "not in use" per the SDK models, "required" per the operation text: if the API
  // ignored it, every name would answer the same points. Two names answering identical, non-trivial
  // points are reported and neither is taken as its metric.
  const suspect = new Set<CmsQuery>();
  for (let i = 0; i < answers.length; i++) {
    for (let j = i + 1; j < answers.length; j++) {
      const a = answers[i]!;
      const b = answers[j]!;
      const points = a.series.reduce((n, s) => n + s.points.length, 0);
      const nonZero = a.series.some((s) => s.points.some((p) => p.value !== null && p.value !== 0));
      if (a.query.metricName !== b.query.metricName && points >= 3 && nonZero && a.fingerprint === b.fingerprint) {
        reportShapeMismatch({
          providerId,
          assumption: 'pai-dlc.cms.metricname-ignored',
          detail: `${a.query.metricName} and ${b.query.metricName} answered the same ${points} points for job ${job.JobId}`,
        });
        suspect.add(a.query).add(b.query);
      }
    }
  }
  return answers.map((a) =>
    suspect.has(a.query)
      ? { metric: a.query.metric, series: [] as SeriesData[], complete: false }
      : { metric: a.query.metric, series: a.series, complete: a.complete },
  );
}

/** Raw values out of their unit's plausible range are reported (the unit reading would be wrong). */
export function checkRawValues(dlc: PaiDlcContext, query: CmsQuery, points: readonly { ms: number; value: number | null }[], busy: boolean, jobId: string) {
  const { providerId } = dlc;
  if (query.conversion === 'percent') {
    const problem = percentScaleProblem(points, busy);
    if (problem) reportShapeMismatch({ providerId, assumption: 'pai-dlc.cms.percent-scale', detail: `${query.metricName} of job ${jobId}: ${problem}` });
    return;
  }
  const over = points.filter((p) => p.value !== null && p.value > query.ceiling).length;
  if (over > 0) {
    reportShapeMismatch({
      providerId,
      assumption: `pai-dlc.cms.${query.conversion === 'MiB/s' ? 'rate' : 'tflops'}-unit`,
      detail: `${query.metricName} of job ${jobId}: ${over} value(s) over ${query.ceiling} ${query.conversion}`,
    });
  }
}

/**
 * CloudMonitor keeps metric data for 30 days by default (our reading for acs_pai_dlc, unconfirmed):
 * an empty answer for a job that ran at least two periods inside the window asked, and finished
 * within that retention, is unexpected.
 */
const CMS_RETENTION_MS = 30 * 86_400_000;
function ranWithin(job: WireJob, request: MetricFetchRequest): boolean {
  const started = Date.parse(job.GmtRunningTime ?? '');
  const finished = Date.parse(job.GmtFinishTime || job.GmtSuccessedTime || job.GmtFailedTime || job.GmtStoppedTime || '');
  if (Number.isNaN(started) || Number.isNaN(finished) || Date.now() - finished > CMS_RETENTION_MS) return false;
  const overlap = Math.min(finished, request.to.getTime()) - Math.max(started, request.from.getTime());
  return overlap >= 2 * Math.max(60_000, request.stepSeconds * 1000);
}
