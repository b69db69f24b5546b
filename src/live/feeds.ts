// What one poll of each feed does. Every poll goes through the store (ReadThrough / Repository):
// what a live subscriber sees is exactly what was written, so a later history query agrees with
// it point for point. Job status changes are claimed atomically in SQL, so when several pollers
// (or replicas) see the same change, exactly one of them announces it.
import { sql } from 'drizzle-orm';
import { DomainError } from '../domain/errors.js';
import { jobGlobalId, parseGlobalId } from '../domain/ids.js';
import type { JobRecord, JobRef, LogPage, SystemMetric } from '../domain/types.js';
import type { ProviderAdapter } from '../providers/provider.js';
import type { ProviderInstance } from '../providers/provider-set.js';
import { fetchCatalog, isTerminal, jobRef, type ReadThrough } from '../store/read-through.js';
import type { JobRow } from '../store/repository.js';
import { rowsOf } from '../store/sql-util.js';
import {
  jobRowToJson,
  type GpuUtilizationPayload,
  type LivePayload,
  type LogLinePayload,
  type NodeUtilizationPayload,
  type UtilizationPointPayload,
} from './events.js';

export type FeedKind = 'utilization' | 'logs' | 'status';

export interface FeedState {
  /** Utilization: newest point time published; logs: the platform's cursor after the last line. */
  cursor: string | null;
  /** Logs: where the first poll began. */
  since: string | null;
}

export interface PollContext {
  readThrough: ReadThrough;
  provider: ProviderInstance;
  intervalMs: number;
  signal: AbortSignal;
  state: FeedState;
  publish(payload: LivePayload): void;
  /** Announces a status change on the provider's status feed. */
  publishStatus(payload: LivePayload): void;
}

/** 'end' when the feed is complete (the job finished and its last data went out). */
export type PollOutcome = 'continue' | 'end';

export const statusTopic = (providerId: string) => `live:status:${providerId}`;

/** Canonical metric -> field of a utilization point. */
export const UTILIZATION_FIELDS: Partial<Record<SystemMetric, keyof Omit<UtilizationPointPayload, 't'>>> = {
  GPU_UTILIZATION: 'gpuUtilization',
  GPU_MEMORY_USED: 'gpuMemoryUsedBytes',
  GPU_MEMORY_UTILIZATION: 'gpuMemoryUtilization',
  NPU_UTILIZATION: 'npuUtilization',
  NPU_MEMORY_UTILIZATION: 'npuMemoryUtilization',
  CPU_USAGE: 'cpuUsageCores',
  CPU_UTILIZATION: 'cpuUtilization',
  MEMORY_USED: 'memoryUsedBytes',
  MEMORY_UTILIZATION: 'memoryUtilization',
};

/** How far back the first sample of a feed reaches, so a new dashboard starts with a short history. */
const FIRST_SAMPLE_LOOKBACK_MS = 5 * 60_000;
const LOG_PAGE = 500;
const LOG_PAGES_PER_POLL = 10;

// ---- jobs and their status ------------------------------------------------------------------

/**
 * Writes job records (through `write`) and announces the ones whose status changed. The claim is
 * one UPDATE whose WHERE is re-checked on the latest row version, so of two concurrent writers of
 * the same change (two pollers, two replicas) only one gets the row back and announces it.
 */
export async function recordJobs(
  ctx: Pick<PollContext, 'readThrough' | 'publishStatus'>,
  providerId: string,
  jobs: readonly JobRecord[],
  announceNew: boolean,
  write: () => Promise<void>,
) {
  const repo = ctx.readThrough.repo;
  const ids = jobs.map((j) => jobGlobalId(providerId, j.externalId));
  const known = new Set((await repo.jobsByIds(ids)).map((j) => j.id));
  const claims = jobs.map((j, i) => ({ id: ids[i]!, status: j.status })).filter((c) => known.has(c.id));
  const changed = new Map<string, string>();
  if (claims.length > 0) {
    const rows = await rowsOf<{ id: string; previous: string }>(
      repo.db,
      sql`update jobs set status = x.status
          from jsonb_to_recordset(${JSON.stringify(claims)}::jsonb) as x(id text, status text), jobs as old
          where jobs.id = x.id and old.id = x.id and jobs.status is distinct from x.status
          returning jobs.id, old.status as previous`,
    );
    for (const r of rows) changed.set(r.id, r.previous);
  }
  await write();
  const toAnnounce = [...changed.keys(), ...(announceNew ? ids.filter((id) => !known.has(id)) : [])];
  if (toAnnounce.length === 0) return;
  for (const row of await repo.jobsByIds(toAnnounce)) {
    ctx.publishStatus({ type: 'status', job: jobRowToJson(row), previousStatus: changed.get(row.id) ?? null });
  }
}

/** The job as the platform has it now (status, nodes), written to the store; throws NOT_FOUND when it is gone. */
export async function refreshJob(ctx: PollContext, jobId: string): Promise<JobRow> {
  const rt = ctx.readThrough;
  const [cached] = await rt.jobsByIds([parseGlobalId(jobId, 'job')]);
  if (cached instanceof Error) throw cached;
  if (!cached) throw new DomainError('NOT_FOUND', `no job with id "${jobId}"`);
  const [project] = await rt.repo.projectsByIds([cached.projectId]);
  const detail = await rt.providers.call(
    cached.providerId,
    (a, signal) => a.getJob({ externalId: cached.externalId, projectExternalId: project?.externalId ?? '' }, signal),
    ctx.signal,
  );
  if (!detail) throw new DomainError('NOT_FOUND', `job ${jobId} no longer exists upstream`);
  const at = rt.now();
  await recordJobs(ctx, cached.providerId, [detail], false, () => rt.repo.upsertJobs(cached.providerId, [detail], at, true));
  if (detail.nodes) await rt.repo.writeTopology(cached.providerId, [{ job: cached, nodes: detail.nodes }], at);
  const [row] = await rt.repo.jobsByIds([jobId]);
  return row ?? cached;
}

// ---- utilization ------------------------------------------------------------------------------

export async function pollUtilization(ctx: PollContext, jobId: string): Promise<PollOutcome> {
  const rt = ctx.readThrough;
  const job = await refreshJob(ctx, jobId);
  const terminal = isTerminal(job.status);
  const now = rt.now();
  const to = terminal && job.finishedAt && job.finishedAt < now ? job.finishedAt : now;
  const cursorMs = ctx.state.cursor ? Date.parse(ctx.state.cursor) : null;
  const from = new Date(cursorMs ?? to.getTime() - Math.max(FIRST_SAMPLE_LOOKBACK_MS, 4 * ctx.intervalMs));
  const metrics = ctx.provider.adapter.capabilities.systemMetrics.filter((m) => UTILIZATION_FIELDS[m]);
  if (metrics.length > 0 && from <= to) {
    // forceTopology: fetch now whatever the cache TTL says (and learn nodes that metrics reveal).
    const [freshness] = await rt.ensureMetrics([{ job, from, to, metrics }], { forceTopology: true });
    if (freshness instanceof Error) throw freshness;
    if (freshness?.error) throw new DomainError(freshness.error.code as never, freshness.error.message);
  }
  const sample = await readSample(rt, job, metrics, cursorMs === null ? from : new Date(cursorMs + 1), to);
  const cursor = sample.newest ?? ctx.state.cursor;
  ctx.state.cursor = cursor;
  ctx.publish({
    type: 'sample',
    jobId,
    status: job.status,
    // When the poll's result went out (what publish-to-receive latency is measured from).
    polledAt: new Date().toISOString(),
    from: from.toISOString(),
    to: to.toISOString(),
    intervalSeconds: ctx.intervalMs / 1000,
    granularity: sample.granularity,
    final: terminal,
    job: sample.job,
    nodes: sample.nodes,
    gpus: sample.gpus,
    cursor,
  });
  return terminal ? 'end' : 'continue';
}

async function readSample(rt: ReadThrough, job: JobRow, metrics: readonly SystemMetric[], from: Date, to: Date) {
  const repo = rt.repo;
  const wanted = new Set<string>(metrics);
  const [allSeries, nodes, gpus] = await Promise.all([repo.seriesOfJobs([job.id], 'system'), repo.nodesOfJobs([job.id]), repo.gpusOfJobs([job.id])]);
  const series = allSeries.filter((s) => wanted.has(s.name));
  // maxPoints far above any poll window's count: every stored point comes back as itself.
  const points = await repo.pointsOf(series.map((s) => ({ seriesId: s.id, keyedBy: 'time' as const, from, to })), 1_000_000, 'LAST');
  const nodeById = new Map(nodes.map((n) => [n.id, n]));
  const gpuById = new Map(gpus.map((g) => [g.id, g]));
  const seriesById = new Map(series.map((s) => [s.id, s]));

  type Entity = { key: string; scope: 'JOB' | 'NODE' | 'GPU'; nodeId: string | null; gpuId: string | null; byTime: Map<number, UtilizationPointPayload> };
  const entities = new Map<string, Entity>();
  let newest: number | null = null;
  for (const p of points) {
    const s = seriesById.get(p.seriesId);
    if (!s || !p.ts) continue;
    const field = UTILIZATION_FIELDS[s.name as SystemMetric]!;
    const key = `${s.scope}|${s.nodeId ?? ''}|${s.gpuId ?? ''}`;
    let e = entities.get(key);
    if (!e) entities.set(key, (e = { key, scope: s.scope as Entity['scope'], nodeId: s.nodeId, gpuId: s.gpuId, byTime: new Map() }));
    const t = p.ts.getTime();
    let point = e.byTime.get(t);
    if (!point) e.byTime.set(t, (point = { t: p.ts.toISOString() }));
    point[field] = p.value;
    if (newest === null || t > newest) newest = t;
  }
  const ordered = (e: Entity) => [...e.byTime.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  const jobPoints: UtilizationPointPayload[] = [];
  const nodeOut: NodeUtilizationPayload[] = [];
  const gpuOut: GpuUtilizationPayload[] = [];
  for (const e of entities.values()) {
    if (e.scope === 'JOB') jobPoints.push(...ordered(e));
    else if (e.scope === 'NODE') {
      nodeOut.push({ nodeId: e.nodeId, name: (e.nodeId && nodeById.get(e.nodeId)?.name) || (e.nodeId?.split('#').pop() ?? 'job'), points: ordered(e) });
    } else {
      const gpu = e.gpuId ? gpuById.get(e.gpuId) : undefined;
      const nodeId = gpu?.nodeId ?? e.nodeId;
      gpuOut.push({
        gpuId: e.gpuId,
        nodeId,
        nodeName: (nodeId && nodeById.get(nodeId)?.name) || null,
        index: gpu?.idx ?? Number(e.gpuId?.split('#').pop() ?? 0),
        points: ordered(e),
      });
    }
  }
  nodeOut.sort((a, b) => (nodeById.get(a.nodeId ?? '')?.ord ?? 0) - (nodeById.get(b.nodeId ?? '')?.ord ?? 0) || a.name.localeCompare(b.name));
  gpuOut.sort((a, b) => (a.nodeName ?? '').localeCompare(b.nodeName ?? '') || a.index - b.index);
  const scopes = new Set(series.map((s) => s.scope));
  const granularity: 'GPU' | 'NODE' | 'JOB' = scopes.has('GPU') ? 'GPU' : scopes.has('NODE') ? 'NODE' : 'JOB';
  return { job: jobPoints.sort((a, b) => a.t.localeCompare(b.t)), nodes: nodeOut, gpus: gpuOut, granularity, newest: newest === null ? null : new Date(newest).toISOString() };
}

// ---- logs -----------------------------------------------------------------------------------

/**
 * An adapter that can push log lines (Runicorn's viewer WebSocket) may offer this; the logs feed
 * then follows the stream instead of polling. Not part of the adapter contract yet.
 */
export interface LogStreamingAdapter extends ProviderAdapter {
  streamLogs(job: JobRef, after: string | null, signal: AbortSignal): AsyncIterable<LogPage>;
}

export function canStreamLogs(adapter: ProviderAdapter): adapter is LogStreamingAdapter {
  return typeof (adapter as Partial<LogStreamingAdapter>).streamLogs === 'function';
}

function toLinePayload(l: LogPage['lines'][number]): LogLinePayload {
  return { timestamp: l.timestamp?.toISOString() ?? null, message: l.message, node: l.node, level: l.level, cursor: l.cursor };
}

export async function pollLogs(ctx: PollContext, jobId: string): Promise<PollOutcome> {
  const rt = ctx.readThrough;
  // Status first: when it says finished, the lines read after it include the last ones.
  const job = await refreshJob(ctx, jobId);
  const terminal = isTerminal(job.status);
  if (ctx.state.cursor === null && ctx.state.since === null) {
    ctx.state.since = new Date(rt.now().getTime() - Math.max(60_000, 2 * ctx.intervalMs)).toISOString();
  }
  const adapter = ctx.provider.adapter;
  if (canStreamLogs(adapter) && !terminal) {
    const [project] = await rt.repo.projectsByIds([job.projectId]);
    for await (const page of adapter.streamLogs(jobRef(job, project?.externalId ?? ''), ctx.state.cursor, ctx.signal)) {
      publishLines(ctx, jobId, page);
    }
    return 'continue';
  }
  for (let i = 0; i < LOG_PAGES_PER_POLL; i++) {
    const page = await rt.logs(job, {
      after: ctx.state.cursor,
      since: ctx.state.cursor ? null : new Date(ctx.state.since!),
      limit: LOG_PAGE,
    });
    publishLines(ctx, jobId, page);
    if (page.lines.length < LOG_PAGE) return terminal ? 'end' : 'continue';
  }
  return 'continue';
}

function publishLines(ctx: PollContext, jobId: string, page: LogPage) {
  if (page.lines.length === 0) return;
  ctx.state.cursor = page.lines[page.lines.length - 1]!.cursor;
  ctx.publish({ type: 'logs', jobId, lines: page.lines.map(toLinePayload), cursor: ctx.state.cursor, since: ctx.state.since });
}

// ---- job status -----------------------------------------------------------------------------

/** One provider's job list, written through the store; changes are announced by recordJobs. */
export async function pollStatuses(ctx: PollContext): Promise<PollOutcome> {
  const rt = ctx.readThrough;
  const pid = ctx.provider.id;
  const { projects, jobs } = await fetchCatalog(rt.providers, pid, ctx.signal);
  const at = rt.now();
  const [sync] = await rt.repo.providerSyncs([pid], 'jobs');
  // Before the first list ever cached, every job would look new: that is a baseline, not news.
  await recordJobs(ctx, pid, jobs, Boolean(sync?.syncedAt), async () => {
    await rt.repo.upsertCatalog(pid, projects, jobs, at);
    await rt.repo.recordProviderSync({ providerId: pid, dataset: 'jobs', syncedAt: at, attemptedAt: at, errorCode: null, errorMessage: null });
  });
  return 'continue';
}
