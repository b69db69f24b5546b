// Alibaba Cloud PAI-DLC adapter (fact sheet: shared/providers/pai-dlc.md). Project = workspace,
// Job = DLC job, Node = pod. Metrics are per pod: GetJobMetrics (one call per MetricType) for
// pay-as-you-go jobs on public ECS resources, CloudMonitor's GetMetrics for every other job.
import type { SecretSource } from '../../config/provider-kit.js';
import type { PaiDlcConfig } from './config.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import {
  TERMINAL_STATUSES,
  type JobPage,
  type JobRef,
  type LogLineRecord,
  type LogPage,
  type LogRequest,
  type MetricFetchRequest,
  type ProjectRecord,
  type SeriesData,
  type SystemMetric,
} from '../../domain/types.js';
import type { JobDetailResult, ProviderAdapter, SystemMetricsResult } from '../provider.js';
import { percentScaleProblem, reportShapeMismatch } from '../shape-watch.js';
import { createPaiDlcClient } from './client.js';
import { metricDefinition } from '../../domain/metric-catalog.js';
import {
  CARD_KEYS,
  CMS_PERIODS,
  CMS_NAMESPACE,
  CMS_QUERIES,
  type CmsQuery,
  type CmsSeriesKey,
  cmsPeriodFor,
  cmsPointOf,
  ecsSpecsNeeded,
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
import {
  cmsDataPoint,
  cmsMetricsResponse,
  getJobResponse,
  jobMetricsResponse,
  listEcsSpecsResponse,
  listJobsResponse,
  podLogsResponse,
  type WireCmsDataPoint,
  type WireCmsMetrics,
  type WireEcsSpec,
  type WireJob,
  type WirePod,
} from './wire.js';

export { PAI_DLC_VERSION } from './client.js';

/**
 * ListJobs silently hides jobs created more than 7 days ago unless StartTime is given; we ask for a
 * year back (a choice: long enough for any job history a dashboard shows, bounded so the window is explicit).
 */
export const LIST_LOOKBACK_DAYS = 365;
const PAGE_SIZE = 100; // the documented maximum
/** GetPodLogs' documented default of MaxLines, and the most we ask one call for. */
export const LOG_MAX_LINES = 2000;
/** Points per GetMetrics page (the SDK's documented default is 1000). */
const CMS_PAGE_LENGTH = 1000;
/** Pages one CloudMonitor series may take before the answer counts as incomplete. */
const CMS_MAX_PAGES = 50;

const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export function createPaiDlcAdapter(config: PaiDlcConfig, secrets: SecretSource): ProviderAdapter {
  const client = createPaiDlcClient(config, secrets);
  const providerId = client.providerId;
  const call = client.call;
  const ctx = { regionId: config.regionId };
  /** Instance type -> hardware; ECS specs do not change, so they are looked up once per process. */
  const ecsSpecCache = new Map<string, WireEcsSpec>();

  async function ensureEcsSpecs(instanceTypes: string[], signal: AbortSignal): Promise<void> {
    const missing = instanceTypes.filter((t) => !ecsSpecCache.has(t));
    if (missing.length === 0) return;
    const res = await call(
      {
        action: 'ListEcsSpecs',
        path: '/api/v1/ecsspecs',
        query: { InstanceTypes: missing.join(','), PageNumber: '1', PageSize: String(PAGE_SIZE) },
        signal,
      },
      listEcsSpecsResponse,
    );
    for (const spec of res.EcsSpecs ?? []) ecsSpecCache.set(spec.InstanceType, spec);
  }

  async function getWireJob(jobId: string, signal: AbortSignal): Promise<WireJob | null> {
    try {
      return await call({ action: 'GetJob', path: `/api/v1/jobs/${percentEncode(jobId)}`, query: { NeedDetail: 'true' }, signal }, getJobResponse);
    } catch (err) {
      if (err instanceof UpstreamError && err.code === 'UPSTREAM_NOT_FOUND') return null;
      throw err;
    }
  }

  /** The job as the adapter's view needs it: outside the configured workspace it does not exist. */
  async function visibleJob(jobId: string, signal: AbortSignal): Promise<WireJob | null> {
    const job = await getWireJob(jobId, signal);
    if (!job) return null;
    if (config.workspaceId && String(job.WorkspaceId ?? '') !== config.workspaceId) return null;
    await ensureEcsSpecs(ecsSpecsNeeded(job), signal);
    return job;
  }

  /**
   * The listing the real API gives. ListJobs spans one workspace unless FromAllWorkspaces is set,
   * and the official model says FromAllWorkspaces "must be used together with ShowOwn=true": across
   * workspaces only the caller's own jobs are listed. So with a workspace configured we list all of
   * its jobs (ShowOwn=false); without one, the caller's jobs in every workspace.
   */
  function listQuery(pageNumber: number, startTime: string): Record<string, string> {
    return {
      PageNumber: String(pageNumber),
      PageSize: String(PAGE_SIZE),
      StartTime: startTime,
      // Oldest first, so jobs created during a walk land on later pages instead of shifting earlier ones.
      SortBy: 'GmtCreateTime',
      Order: 'asc',
      ...(config.workspaceId ? { WorkspaceId: config.workspaceId, ShowOwn: 'false' } : { ShowOwn: 'true', FromAllWorkspaces: 'true' }),
    };
  }

  function lookbackStart(): string {
    return isoSeconds(new Date(Date.now() - LIST_LOOKBACK_DAYS * 86_400_000));
  }

  /** Every pod incarnation (earlier ones from HistoryPods first), in a stable order for log cursors. */
  function incarnationsOf(job: WireJob): { pod: WirePod; podId: string; key: string }[] {
    const out: { pod: WirePod; podId: string; key: string }[] = [];
    const pods = [...(job.Pods ?? [])].filter((p) => p.PodId).sort((a, b) => (a.PodId! < b.PodId! ? -1 : a.PodId! > b.PodId! ? 1 : 0));
    for (const pod of pods) {
      const history = [...(pod.HistoryPods ?? [])].sort((a, b) =>
        (a.GmtStartTime ?? a.GmtCreateTime ?? '').localeCompare(b.GmtStartTime ?? b.GmtCreateTime ?? ''),
      );
      for (const h of [...history, pod]) out.push({ pod: h, podId: pod.PodId!, key: h.PodUid || `${pod.PodId}@${h.GmtCreateTime ?? ''}` });
    }
    return out;
  }

  async function legacyMetrics(job: WireJob, request: MetricFetchRequest, wanted: SystemMetric[], signal: AbortSignal) {
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
  function userIdOf(job: WireJob): { userId: string | null; from: string } {
    if (config.accountId) return { userId: config.accountId, from: 'config accountId' };
    return { userId: job.UserId || null, from: "the job's UserId (a RAM sub-user's jobs need accountId in the config)" };
  }

  /**
   * All points of one GetMetrics query, following NextToken to the end. One call asks for the whole
   * job (JOB_) or for every pod (CARD_: Dimensions is a JSON array of dimension objects, the SDK
   * model's example). Points are told apart by the `pod` and card keys they echo (our reading,
   * unconfirmed: a point without them is only attributable when the answer cannot mean another).
   */
  async function cmsPoints(
    job: WireJob,
    podGpus: ReadonlyMap<string, number | null>,
    query: CmsQuery,
    request: MetricFetchRequest,
    period: number,
    signal: AbortSignal,
  ) {
    const base = {
      jobId: job.JobId,
      regionId: config.regionId,
      ...(userIdOf(job).userId ? { userId: userIdOf(job).userId } : {}),
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
  function cardKeyOf(p: WireCmsDataPoint, podGpus: ReadonlyMap<string, number | null>): CmsSeriesKey | null {
    const pods = [...podGpus.keys()];
    const pod = p.pod ?? p.podId ?? (pods.length === 1 ? pods[0]! : null);
    if (!pod || !podGpus.has(pod)) return null;
    const record = p as Record<string, unknown>;
    const cardKey = CARD_KEYS.find((k) => record[k] !== undefined && record[k] !== null && record[k] !== '');
    if (!cardKey) return podGpus.get(pod) === 1 ? { pod, gpuIndex: 0, card: null } : null;
    const card = String(record[cardKey]);
    return { pod, gpuIndex: /^\d+$/.test(card) ? Number(card) : null, card };
  }

  async function cloudMonitorMetrics(job: WireJob, request: MetricFetchRequest, wanted: SystemMetric[], signal: AbortSignal) {
    const period = cmsPeriodFor(request.stepSeconds);
    const podGpus = new Map<string, number | null>(mapNodes(job, ecsSpecCache).map((n) => [n.externalId, n.gpus.length > 0 ? n.gpus.length : null]));
    const { from: userIdFrom } = userIdOf(job);
    const queries = CMS_QUERIES.filter((q) => wanted.includes(q.metric));
    const busy = job.Status === 'Running';
    const answers = await Promise.all(
      queries.map(async (query) => {
        if (query.family === 'CARD' && podGpus.size === 0) return { query, series: [] as SeriesData[], complete: true, fingerprint: '' };
        const { entries, complete } = await cmsPoints(job, podGpus, query, request, period, signal);
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
          checkRawValues(query, e.points, busy, job.JobId);
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
  function checkRawValues(query: CmsQuery, points: readonly { ms: number; value: number | null }[], busy: boolean, jobId: string) {
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

  const adapter: ProviderAdapter = {
    id: providerId,
    kind: 'PAI_DLC',
    capabilities: {
      systemMetrics: PAI_DLC_METRICS,
      perGpuSeries: true,
      trainingMetrics: false,
      progress: false,
      logs: true,
      // CloudMonitor's shortest period (mapping.ts CMS_PERIODS).
      sampleSeconds: CMS_PERIODS[0],
    },

    // PAI-DLC has no workspace listing of its own (that is the AI Workspace API): workspaces are
    // what the visible jobs name.
    async listProjects(signal) {
      const seen = new Map<string, ProjectRecord>();
      let cursor: string | null = null;
      do {
        const page: JobPage = await adapter.listJobs(cursor, signal);
        for (const job of page.jobs) {
          if (job.projectExternalId && !seen.has(job.projectExternalId)) {
            seen.set(job.projectExternalId, { externalId: job.projectExternalId, name: job.projectName ?? job.projectExternalId });
          }
        }
        cursor = page.nextCursor;
      } while (cursor);
      if (config.workspaceId && !seen.has(config.workspaceId)) {
        seen.set(config.workspaceId, { externalId: config.workspaceId, name: config.workspaceId });
      }
      return [...seen.values()];
    },

    // Cursor = "<page>|<StartTime>": the window is fixed for the whole walk so pages do not shift.
    async listJobs(cursor, signal) {
      const [pageText, startFromCursor] = cursor ? cursor.split('|') : [];
      const pageNumber = pageText ? Number(pageText) : 1;
      if (!Number.isInteger(pageNumber) || pageNumber < 1) throw new DomainError('BAD_INPUT', `not a PAI-DLC page cursor: ${cursor}`);
      const startTime = startFromCursor || lookbackStart();
      const res = await call({ action: 'ListJobs', path: '/api/v1/jobs', query: listQuery(pageNumber, startTime), signal }, listJobsResponse);
      const items = res.Jobs ?? [];
      const total = Number(res.TotalCount ?? 0);
      if (!config.workspaceId) {
        // ShowOwn=true should give one submitter; several mean the flag was not honoured (unconfirmed default).
        const users = new Set(items.map((j) => j.UserId).filter(Boolean));
        if (users.size > 1)
          reportShapeMismatch({ providerId, assumption: 'pai-dlc.listjobs.show-own', detail: `ShowOwn=true listed jobs of ${users.size} users` });
      }
      const jobs = items.filter((j) => !config.workspaceId || String(j.WorkspaceId ?? '') === config.workspaceId).map((j) => mapJob(j, ecsSpecCache, ctx));
      const more = items.length > 0 && pageNumber * PAGE_SIZE < total;
      return { jobs, nextCursor: more ? `${pageNumber + 1}|${startTime}` : null };
    },

    async getJob(ref, signal) {
      const job = await visibleJob(ref.externalId, signal);
      if (!job) return null;
      const result: JobDetailResult = { ...mapJob(job, ecsSpecCache, ctx), nodes: mapNodes(job, ecsSpecCache) };
      return result;
    },

    /**
     * Reads the job first: its resource type picks the route, and its pods are returned as the
     * topology so every series' node exists in the same answer (cold cache included).
     */
    async fetchSystemMetrics(ref: JobRef, request: MetricFetchRequest, signal): Promise<SystemMetricsResult> {
      const job = await visibleJob(ref.externalId, signal);
      if (!job) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `PAI-DLC job ${ref.externalId} does not exist`);
      const route = metricsRouteOf(job);
      const offered = route === 'GetJobMetrics' ? new Set(METRIC_TYPES.keys()) : new Set(CMS_QUERIES.map((q) => q.metric));
      const wanted = request.metrics.filter((m): m is SystemMetric => offered.has(m));
      const answers =
        route === 'GetJobMetrics'
          ? (await legacyMetrics(job, request, wanted, signal)).map((a) => ({ ...a, complete: true }))
          : await cloudMonitorMetrics(job, request, wanted, signal);
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
    },

    /**
     * Logs are plain lines without timestamps, at most MaxLines (default 2000) per call, from
     * StartTime on. We page by time: each incarnation (PodUid) of each pod is read in windows
     * [start, end] at second resolution; a window that comes back full is halved until it is not,
     * then read whole, and the next window starts one second after it. Both ends inclusive and
     * oldest-first order are our reading (unconfirmed). The cursor is
     * "<incarnation>:<window start s>:<window end s>:<lines of that window already returned>".
     */
    async fetchLogs(ref, request: LogRequest, signal): Promise<LogPage> {
      const job = await visibleJob(ref.externalId, signal);
      if (!job) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `PAI-DLC job ${ref.externalId} does not exist`);
      const incarnations = incarnationsOf(job);
      const cursor = decodeLogCursor(request.after);
      // The cursor names its incarnation by PodUid: a restart adds incarnations before later pods.
      let index = cursor ? incarnations.findIndex((i) => i.key === cursor.key) : 0;
      if (cursor && index < 0) {
        if (cursor.key !== END_KEY) throw new DomainError('BAD_INPUT', 'the log cursor names a pod incarnation this job does not have');
        index = incarnations.length;
      }
      let windowStart = cursor?.start ?? null;
      let windowEnd = cursor?.end ?? null;
      let skip = cursor?.skip ?? 0;
      const nowSec = Math.floor(Date.now() / 1000);
      const sinceSec = request.since ? Math.floor(request.since.getTime() / 1000) : null;
      const lines: LogLineRecord[] = [];
      while (index < incarnations.length && lines.length < request.limit) {
        const { pod, podId } = incarnations[index]!;
        const startedSec = secondsOf(pod.GmtStartTime) ?? secondsOf(pod.GmtCreateTime);
        // A running pod is read up to the last whole second, so no later line lands in a read second.
        const lastSec = secondsOf(pod.GmtFinishTime) ?? nowSec - 1;
        let start = windowStart ?? Math.max(startedSec ?? lastSec + 1, sinceSec ?? -Infinity);
        if (startedSec === null || start > lastSec) {
          if (pod.GmtFinishTime || startedSec === null) {
            index += 1;
            windowStart = windowEnd = null;
            skip = 0;
            continue;
          }
          break; // a running pod with nothing new yet
        }
        let end = windowEnd ?? lastSec;
        let got: string[] = [];
        for (;;) {
          const res = await call(
            {
              action: 'GetPodLogs',
              path: `/api/v1/jobs/${percentEncode(job.JobId)}/pods/${percentEncode(podId)}/logs`,
              query: {
                ...(pod.PodUid ? { PodUid: pod.PodUid } : {}),
                MaxLines: String(LOG_MAX_LINES),
                StartTime: isoSeconds(new Date(start * 1000)),
                EndTime: isoSeconds(new Date(end * 1000)),
              },
              signal,
            },
            podLogsResponse,
          );
          got = res.Logs ?? [];
          if (got.length < LOG_MAX_LINES || end <= start || windowEnd !== null) break;
          end = start + Math.floor((end - start) / 2);
        }
        if (got.length >= LOG_MAX_LINES && end <= start) {
          reportShapeMismatch({
            providerId,
            assumption: 'pai-dlc.logs.second-over-maxlines',
            detail: `pod ${podId} wrote ${LOG_MAX_LINES}+ lines within one second; later lines of that second are not read`,
          });
        }
        const fresh = got.slice(skip);
        const room = request.limit - lines.length;
        const taken = fresh.slice(0, room);
        taken.forEach((message, i) => {
          const consumed = skip + i + 1;
          const whole = consumed === got.length;
          lines.push({
            timestamp: null,
            message,
            node: podId,
            level: null,
            cursor: whole ? nextWindowCursor(incarnations, index, end) : encodeLogCursor({ key: incarnations[index]!.key, start, end, skip: consumed }),
          });
        });
        if (taken.length < fresh.length) {
          return { lines, nextCursor: encodeLogCursor({ key: incarnations[index]!.key, start, end, skip: skip + taken.length }) };
        }
        // The window is read whole: continue one second after it.
        windowStart = end + 1;
        windowEnd = null;
        skip = 0;
        start = windowStart;
      }
      if (index < incarnations.length) {
        return { lines, nextCursor: encodeLogCursor({ key: incarnations[index]!.key, start: windowStart, end: windowEnd, skip }) };
      }
      // Every incarnation read: a finished job is done, a running one may still get new pods.
      const finished = TERMINAL_STATUSES.has(mapStatus(job.Status));
      return { lines, nextCursor: finished ? null : encodeLogCursor({ key: END_KEY, start: null, end: null, skip: 0 }) };
    },
  };
  return adapter;
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

function secondsOf(iso: string | null | undefined): number | null {
  if (!iso) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/** Incarnation key of a cursor that has read every incarnation there was. */
const END_KEY = '~end';

interface LogCursor {
  /** The incarnation: its PodUid. */
  key: string;
  start: number | null;
  end: number | null;
  skip: number;
}

function encodeLogCursor(c: LogCursor): string {
  return Buffer.from(JSON.stringify([c.key, c.start, c.end, c.skip]), 'utf8').toString('base64url');
}

/** The cursor after a window read whole: one second after it in the same incarnation. */
function nextWindowCursor(incarnations: readonly { key: string }[], index: number, end: number): string {
  return encodeLogCursor({ key: incarnations[index]!.key, start: end + 1, end: null, skip: 0 });
}

function decodeLogCursor(text: string | null): LogCursor | null {
  if (!text) return null;
  try {
    const v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    const isSec = (x: unknown) => x === null || (Number.isInteger(x) && (x as number) >= 0);
    if (Array.isArray(v) && v.length === 4 && typeof v[0] === 'string' && isSec(v[1]) && isSec(v[2]) && Number.isInteger(v[3]) && v[3] >= 0) {
      return { key: v[0], start: v[1], end: v[2], skip: v[3] };
    }
  } catch {
    // falls through to the error below
  }
  throw new DomainError('BAD_INPUT', 'not a PAI-DLC log cursor');
}
