// Alibaba Cloud PAI-DLC adapter (fact sheet: shared/providers/pai-dlc.md). Project = workspace,
// Job = DLC job, Node = pod; metrics are per pod, one GetJobMetrics call per MetricType.
import type { z } from 'zod';
import { requireSecret, type PaiDlcConfig, type SecretSource } from '../../config/index.js';
import { UpstreamError } from '../../domain/errors.js';
import type { JobPage, JobRef, LogLineRecord, LogPage, LogRequest, MetricFetchRequest, ProjectRecord, SystemMetric } from '../../domain/types.js';
import { errorCodeForStatus, parseJsonBody, retryAfterFromHeader, sendHttp, type HttpResponse } from '../http-client.js';
import type { JobDetailResult, ProviderAdapter, SystemMetricsResult } from '../provider.js';
import { ecsSpecsNeeded, mapJob, mapMetricSeries, mapNodes, METRIC_TYPES } from './mapping.js';
import { canonicalQueryString, percentEncode, signedHeadersFor, type Acs3Credentials } from './signer.js';
import {
  errorBody,
  getJobResponse,
  jobMetricsResponse,
  listEcsSpecsResponse,
  listJobsResponse,
  podLogsResponse,
  type WireEcsSpec,
  type WireJob,
} from './wire.js';

export const PAI_DLC_VERSION = '2020-12-03';

/**
 * ListJobs silently hides jobs created more than 7 days ago unless StartTime is given; we ask for a
 * year back (a choice: long enough for any job history a dashboard shows, bounded so the window is explicit).
 */
export const LIST_LOOKBACK_DAYS = 365;
const PAGE_SIZE = 100; // the documented maximum
const LOG_MAX_LINES = 2000; // the documented default of MaxLines

const AUTH_CODE = /^(SignatureDoesNotMatch|SignatureNonceUsed|IncompleteSignature|MissingAuthorization|InvalidAuthorization|InvalidTimeStamp|InvalidAccessKeyId|InvalidSecurityToken|Forbidden|NoPermission|AccessDenied|InvalidAccessKeySecret)/i;
const NOT_FOUND_CODE = /NotFound|NotExist/i;

interface CallOptions {
  action: string;
  method?: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  signal: AbortSignal;
}

/**
 * Seconds to wait from a throttling answer: `x-acs-retry-after` (read as milliseconds, our reading,
 * unconfirmed), the older `x-ratelimit-user-api` / `x-ratelimit-user` headers (`TimeLeft:<ms>`), or
 * a standard Retry-After.
 */
export function retryAfterOf(headers: Headers): number | null {
  const acs = headers.get('x-acs-retry-after');
  if (acs && /^\d+(\.\d+)?$/.test(acs.trim())) return Math.ceil(Number(acs) / 1000);
  for (const name of ['x-ratelimit-user-api', 'x-ratelimit-user']) {
    const m = /TimeLeft:\s*(\d+)/i.exec(headers.get(name) ?? '');
    if (m) return Math.ceil(Number(m[1]) / 1000);
  }
  return retryAfterFromHeader(headers);
}

export function createPaiDlcAdapter(config: PaiDlcConfig, secrets: SecretSource): ProviderAdapter {
  const providerId = config.id;
  const creds: Acs3Credentials = {
    accessKeyId: requireSecret(secrets, config.accessKeyIdEnv, providerId),
    accessKeySecret: requireSecret(secrets, config.secretAccessKeyEnv, providerId),
    ...(config.securityTokenEnv ? { securityToken: requireSecret(secrets, config.securityTokenEnv, providerId) } : {}),
  };
  const base = new URL(config.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const timeoutMs = (config.timeoutSeconds ?? 30) * 1000;
  /** Instance type -> hardware; ECS specs do not change, so they are looked up once per process. */
  const ecsSpecCache = new Map<string, WireEcsSpec>();

  async function call<T>(opts: CallOptions, schema: z.ZodType<T>): Promise<T> {
    const method = opts.method ?? 'GET';
    const path = `${basePath}${opts.path}`;
    const query = opts.query ?? {};
    const headers = signedHeadersFor({ method, path, query, body: '' }, creds, {
      action: opts.action,
      version: PAI_DLC_VERSION,
      host: base.host,
    });
    // fetch derives Host from the URL (the same host[:port] we signed); it may not be set by hand.
    delete headers.host;
    const qs = canonicalQueryString(query);
    const res = await sendHttp(providerId, {
      method,
      url: `${base.protocol}//${base.host}${path}${qs ? `?${qs}` : ''}`,
      headers,
      timeoutMs,
      signal: opts.signal,
    });
    if (res.status < 200 || res.status >= 300) throw toError(res, opts.action);
    const parsed = schema.safeParse(parseJsonBody(providerId, res));
    if (!parsed.success) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `PAI-DLC ${opts.action} answered an unexpected shape`, {
        status: res.status,
      });
    }
    return parsed.data;
  }

  function toError(res: HttpResponse, action: string): UpstreamError {
    let code: string | null = null;
    let message: string | null = null;
    let requestId: string | null = null;
    try {
      const body = errorBody.safeParse(JSON.parse(res.text));
      if (body.success) {
        code = body.data.Code ?? body.data.code ?? null;
        message = body.data.Message ?? body.data.message ?? null;
        requestId = body.data.RequestId ?? body.data.requestId ?? null;
      }
    } catch {
      // Not Alibaba's JSON error body (a proxy's HTML page, say): the status alone decides.
    }
    const text = `PAI-DLC ${action} answered ${res.status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}${requestId ? ` (RequestId ${requestId})` : ''}`;
    const opts = { status: res.status, upstreamCode: code };
    if ((code && /Throttling/i.test(code)) || res.status === 429) {
      return new UpstreamError('UPSTREAM_RATE_LIMITED', providerId, text, { ...opts, retryAfterSeconds: retryAfterOf(res.headers) });
    }
    // Checked before not-found: an unknown AccessKeyId comes back as 404 InvalidAccessKeyId.NotFound.
    if ((code && AUTH_CODE.test(code)) || res.status === 401 || res.status === 403) {
      return new UpstreamError('UPSTREAM_AUTH', providerId, text, opts);
    }
    if ((code && NOT_FOUND_CODE.test(code)) || res.status === 404) {
      return new UpstreamError('UPSTREAM_NOT_FOUND', providerId, text, opts);
    }
    return new UpstreamError(errorCodeForStatus(res.status), providerId, text, opts);
  }

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
      return await call(
        { action: 'GetJob', path: `/api/v1/jobs/${percentEncode(jobId)}`, query: { NeedDetail: 'true' }, signal },
        getJobResponse,
      );
    } catch (err) {
      if (err instanceof UpstreamError && err.code === 'UPSTREAM_NOT_FOUND') return null;
      throw err;
    }
  }

  function listQuery(pageNumber: number, startTime: string, pageSize: number): Record<string, string> {
    return {
      PageNumber: String(pageNumber),
      PageSize: String(pageSize),
      StartTime: startTime,
      // ShowOwn's default is unconfirmed (metadata says true = only the caller's jobs): ask for everything visible.
      ShowOwn: 'false',
      // Oldest first, so jobs created during a walk land on later pages instead of shifting earlier ones.
      SortBy: 'GmtCreateTime',
      Order: 'asc',
      ...(config.workspaceId ? { WorkspaceId: config.workspaceId } : {}),
    };
  }

  function lookbackStart(): string {
    return new Date(Date.now() - LIST_LOOKBACK_DAYS * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  const adapter: ProviderAdapter = {
    id: providerId,
    kind: 'PAI_DLC',
    capabilities: {
      systemMetrics: [...METRIC_TYPES.keys()],
      perGpuSeries: false,
      metricsInOneCall: false,
      trainingMetrics: false,
      progress: false,
      logs: true,
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
      const startTime = startFromCursor || lookbackStart();
      const res = await call(
        { action: 'ListJobs', path: '/api/v1/jobs', query: listQuery(pageNumber, startTime, PAGE_SIZE), signal },
        listJobsResponse,
      );
      const items = res.Jobs ?? [];
      const total = Number(res.TotalCount ?? 0);
      const jobs = items
        .filter((j) => !config.workspaceId || String(j.WorkspaceId ?? '') === config.workspaceId)
        .map((j) => mapJob(j, ecsSpecCache));
      const more = items.length > 0 && pageNumber * PAGE_SIZE < total;
      return { jobs, nextCursor: more ? `${pageNumber + 1}|${startTime}` : null };
    },

    async getJob(ref, signal) {
      const job = await getWireJob(ref.externalId, signal);
      if (!job) return null;
      if (config.workspaceId && String(job.WorkspaceId ?? '') !== config.workspaceId) return null;
      await ensureEcsSpecs(ecsSpecsNeeded(job), signal);
      const result: JobDetailResult = { ...mapJob(job, ecsSpecCache), nodes: mapNodes(job, ecsSpecCache) };
      return result;
    },

    async fetchSystemMetrics(job: JobRef, request: MetricFetchRequest, signal): Promise<SystemMetricsResult> {
      const wanted = request.metrics.filter((m): m is SystemMetric => METRIC_TYPES.has(m));
      // TimeStep is documented in minutes ("5m"); finer steps are not offered.
      const timeStep = `${Math.max(1, Math.round(request.stepSeconds / 60))}m`;
      const startTime = request.from.toISOString().replace(/\.\d{3}Z$/, 'Z');
      const endTime = request.to.toISOString().replace(/\.\d{3}Z$/, 'Z');
      const answers = await Promise.all(
        wanted.map(async (metric) => {
          const body = await call(
            {
              action: 'GetJobMetrics',
              path: `/api/v1/jobs/${percentEncode(job.externalId)}/metrics`,
              query: { MetricType: METRIC_TYPES.get(metric)!.metricType, StartTime: startTime, EndTime: endTime, TimeStep: timeStep },
              signal,
            },
            jobMetricsResponse,
          );
          // An empty PodMetrics is "no data" (jobs whose monitoring moved to CloudMonitor answer that way).
          return mapMetricSeries(metric, body, timeStep);
        }),
      );
      return { series: answers.flat(), covered: wanted, from: request.from, to: request.to };
    },

    // Logs are plain lines without timestamps. The cursor is "<pod index>:<lines consumed>" over the
    // job's pods sorted by PodId; each page re-reads a pod's log from StartTime with a larger MaxLines
    // (the API returns the first MaxLines lines from StartTime, our reading, unconfirmed).
    async fetchLogs(ref, request: LogRequest, signal): Promise<LogPage> {
      const job = await getWireJob(ref.externalId, signal);
      if (!job) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `PAI-DLC job ${ref.externalId} does not exist`);
      const podIds = [...new Set((job.Pods ?? []).map((p) => p.PodId).filter((id): id is string => Boolean(id)))].sort();
      const [podText, lineText] = request.after ? request.after.split(':') : [];
      let podIndex = podText ? Number(podText) : 0;
      let consumed = lineText ? Number(lineText) : 0;
      const startTime = (request.since ?? ref.createdAt ?? new Date(Date.now() - 7 * 86_400_000)).toISOString().replace(/\.\d{3}Z$/, 'Z');
      const lines: LogLineRecord[] = [];
      while (podIndex < podIds.length && lines.length < request.limit) {
        const podId = podIds[podIndex]!;
        const want = Math.min(LOG_MAX_LINES, consumed + request.limit - lines.length);
        const res = await call(
          {
            action: 'GetPodLogs',
            path: `/api/v1/jobs/${percentEncode(ref.externalId)}/pods/${percentEncode(podId)}/logs`,
            query: { MaxLines: String(want), StartTime: startTime },
            signal,
          },
          podLogsResponse,
        );
        const fresh = (res.Logs ?? []).slice(consumed);
        for (const message of fresh) {
          consumed += 1;
          lines.push({ timestamp: null, message, node: podId, level: null, cursor: `${podIndex}:${consumed}` });
        }
        // Fewer lines than asked for, or the per-call cap reached: this pod is done for now.
        if ((res.Logs ?? []).length < want || want >= LOG_MAX_LINES) {
          podIndex += 1;
          consumed = 0;
        }
      }
      return { lines, nextCursor: podIndex < podIds.length ? `${podIndex}:${consumed}` : null };
    },
  };
  return adapter;
}
