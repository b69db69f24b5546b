// Viewer mode: the Runicorn viewer's HTTP API (no auth, no envelope) and its log WebSocket.
import { requestJson, type ErrorClassifier, type HttpResponse, type UpstreamTimers } from '../http-client.js';
import type { MetricTable } from './events.js';
import { LogReplays, type LogSlice } from './log-replay.js';
import type { RunicornSource, RunSnapshot } from './client.js';
import type { z } from 'zod';
import { errorBody, type GpuTelemetryBody, gpuTelemetrySchema, metricsBody, runDetail, runList } from './wire.js';

/** How long a list answer may serve the next ask (a refresh's projects-then-jobs pair). */
const LIST_REUSE_MS = 2_000;

/** The viewer's FastAPI errors: {detail} (a string, or validation items), and `retry_after` (seconds) on 429. */
const classifyViewerError: ErrorClassifier = (res, body, what) => {
  const parsed = errorBody.safeParse(body);
  const d = parsed.success ? parsed.data.detail : null;
  const detail = d === null ? '' : typeof d === 'string' ? d : d.map((i) => `${(i.loc ?? []).join('.')}: ${i.msg ?? ''}`).join('; ');
  return {
    message: `${what}: HTTP ${res.status}${detail ? ` (${detail})` : ''}`,
    retryAfterSeconds: parsed.success ? (parsed.data.retry_after ?? null) : null,
  };
};

export interface GpuTelemetry {
  /** When nvidia-smi was read (epoch s), as the viewer says. */
  ts: number | null;
  gpus: GpuTelemetryBody['gpus'] & {};
}

export class ViewerSource implements RunicornSource {
  private readonly base: string;
  private readonly logs: LogReplays;
  private readonly listed = new Map<string, RunSnapshot>();
  private spareList: { at: number; runs: RunSnapshot[] } | null = null;
  private listInFlight: Promise<RunSnapshot[]> | null = null;
  private readonly lastEvents = new Map<string, number | null>();

  constructor(
    private readonly providerId: string,
    baseUrl: string,
    private readonly timeoutMs: number,
    private readonly timers?: UpstreamTimers,
  ) {
    this.base = baseUrl.replace(/\/+$/, '');
    this.logs = new LogReplays({ providerId, baseUrl: this.base, timeoutMs });
  }

  /** GET a JSON route; `null` when the viewer says the run does not exist. */
  private async get<T>(path: string, schema: z.ZodType<T>, signal: AbortSignal, runRoute: boolean): Promise<T | null> {
    return requestJson(this.providerId, {
      method: 'GET',
      url: `${this.base}${path}`,
      timeoutMs: this.timeoutMs,
      timers: this.timers,
      signal,
      schema,
      what: `GET ${path}`,
      classify: classifyViewerError,
      absent: (res: HttpResponse) => res.status === 404 && runRoute && /"Run not found"/.test(res.text),
    });
  }

  /** The viewer host's GPUs now, as nvidia-smi tells the viewer (`/api/gpu/telemetry`); null without nvidia-smi. */
  async gpuTelemetry(signal: AbortSignal): Promise<GpuTelemetry | null> {
    const body = await this.get('/api/gpu/telemetry', gpuTelemetrySchema, signal, false);
    return body?.available ? { ts: body.ts ?? null, gpus: body.gpus ?? [] } : null;
  }

  /**
   * One list call per refresh: a refresh asks for projects and then jobs, so an answer is kept
   * for one more ask within LIST_REUSE_MS, and concurrent asks share one call.
   */
  async listRuns(signal: AbortSignal): Promise<RunSnapshot[]> {
    if (this.spareList && Date.now() - this.spareList.at < LIST_REUSE_MS) {
      const runs = this.spareList.runs;
      this.spareList = null;
      return runs;
    }
    this.listInFlight ??= this.fetchList(signal).finally(() => (this.listInFlight = null));
    const runs = await this.listInFlight;
    this.spareList = { at: Date.now(), runs };
    return runs;
  }

  private async fetchList(signal: AbortSignal): Promise<RunSnapshot[]> {
    const items = (await this.get('/api/runs', runList, signal, false)) ?? [];
    const runs = items.map((it) => ({
      id: it.id,
      path: it.path ?? null,
      alias: it.alias ?? null,
      status: it.status || 'finished',
      createdTime: it.created_time ?? null,
      // 0.6.0 exposes no start: the run's creation is its start (the SDK writes both in init).
      startedAt: it.created_time ?? null,
      endedAt: null,
      hostname: null,
      // The list carries the best metric's name and value only; its step and mode are in summary.json.
      summary: it.best_metric_name ? { best_metric_name: it.best_metric_name, best_metric_value: it.best_metric_value ?? null } : null,
      meta: null,
      tags: it.tags ?? null,
    }));
    for (const run of runs) this.listed.set(run.id, run);
    return runs;
  }

  async getRun(id: string, signal: AbortSignal): Promise<RunSnapshot | null> {
    const detail = await this.get(`/api/runs/${encodeURIComponent(id)}`, runDetail, signal, true);
    if (!detail) return null;
    // The detail has no created_time; the list has it, and it never changes, so the list is only
    // asked for a run it has not shown yet.
    if (!this.listed.has(id)) await this.listRuns(signal);
    const listed = this.listed.get(id);
    const status = detail.status || 'finished';
    const startedAt = detail.start_time ?? listed?.startedAt ?? null;
    let endedAt = status !== 'running' && detail.start_time != null && detail.duration != null ? detail.start_time + detail.duration : null;
    if (endedAt === null && status !== 'running') endedAt = await this.lastEventTime(id, signal);
    return {
      id: detail.id,
      path: detail.path ?? listed?.path ?? null,
      alias: detail.alias ?? null,
      status,
      createdTime: listed?.createdTime ?? null,
      startedAt,
      endedAt,
      endedAtFrom: endedAt === null ? null : detail.duration != null ? 'viewer' : 'last-metric-event',
      hostname: detail.hostname ?? null,
      summary: detail.summary ?? listed?.summary ?? null,
      meta: null,
      config: detail.assets?.config ?? null,
      // The detail has no tags; the list's are the run's.
      tags: listed?.tags ?? null,
    };
  }

  /**
   * A finished run's end as the viewer can tell it: 0.6.0 serves no end time, so the time of the
   * run's last metric event (metrics_step always keeps the last row, so downsample=100 suffices).
   * It is at or shortly before the real end (status.json's ended_at). Cached: a finished run's
   * events do not change.
   */
  private async lastEventTime(id: string, signal: AbortSignal): Promise<number | null> {
    if (this.lastEvents.has(id)) return this.lastEvents.get(id)!;
    const body = await this.get(`/api/runs/${encodeURIComponent(id)}/metrics_step?downsample=100`, metricsBody, signal, true);
    let last: number | null = null;
    for (const row of body?.rows ?? []) if (typeof row.time === 'number' && (last === null || row.time > last)) last = row.time;
    this.lastEvents.set(id, last);
    if (this.lastEvents.size > 10_000) this.lastEvents.delete(this.lastEvents.keys().next().value!);
    return last;
  }

  async metricTable(id: string, signal: AbortSignal): Promise<MetricTable | null> {
    // No downsample: the full table, so both modes see the same rows; the store downsamples.
    const body = await this.get(`/api/runs/${encodeURIComponent(id)}/metrics_step`, metricsBody, signal, true);
    return body ? { columns: body.columns, rows: body.rows } : null;
  }

  /**
   * A finished run's log is held after one replay, but the run may be deleted since: before lines
   * are served from memory, the viewer is asked whether the run still exists (one small GET).
   */
  async logLines(id: string, need: number, follow: boolean, signal: AbortSignal): Promise<LogSlice | null> {
    if (!follow && this.logs.heldWhole(id) && !(await this.get(`/api/runs/${encodeURIComponent(id)}`, runDetail, signal, true))) {
      this.logs.forget(id);
      return null;
    }
    return this.logs.read(id, need, follow, signal);
  }

  /** Log sockets open right now. */
  openLogSockets(): number {
    return this.logs.openSockets();
  }

  close(): Promise<void> {
    return this.logs.close();
  }
}
