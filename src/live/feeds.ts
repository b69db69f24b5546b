// What one poll of each feed does. Every poll goes through the store's door (src/store/index.ts):
// what a live subscriber sees is exactly what was written, so a later history query agrees with
// it point for point. Job status changes are claimed atomically by the store, so when several
// pollers (or replicas, or a query's list refresh) see the same change, exactly one announces it
// (the hub publishes what the store tells it).
import type { LogPage, SystemMetric } from '../domain/types.js';
import { isTerminal, type ProviderView, type Store, type StoredSample } from '../store/index.js';
import {
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
  store: Store;
  provider: ProviderView;
  intervalMs: number;
  signal: AbortSignal;
  state: FeedState;
  publish(payload: LivePayload): void;
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

// ---- utilization ------------------------------------------------------------------------------

export async function pollUtilization(ctx: PollContext, jobId: string): Promise<PollOutcome> {
  const store = ctx.store;
  const job = await store.refreshJob(jobId, ctx.signal);
  const terminal = isTerminal(job.status);
  const now = store.now();
  const to = terminal && job.finishedAt && job.finishedAt < now ? job.finishedAt : now;
  const cursorMs = ctx.state.cursor ? Date.parse(ctx.state.cursor) : null;
  const from = new Date(cursorMs ?? to.getTime() - Math.max(FIRST_SAMPLE_LOOKBACK_MS, 4 * ctx.intervalMs));
  const metrics = ctx.provider.capabilities.systemMetrics.filter((m) => UTILIZATION_FIELDS[m]);
  if (metrics.length > 0 && from <= to) await store.refreshMetrics(job, from, to, metrics);
  const sample = toSample(await store.storedSample(job, metrics, cursorMs === null ? from : new Date(cursorMs + 1), to));
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

/** The stored points of one poll window, arranged per job, node and GPU, oldest first. */
function toSample({ series, nodes, gpus, points }: StoredSample) {
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

function toLinePayload(l: LogPage['lines'][number]): LogLinePayload {
  return { timestamp: l.timestamp?.toISOString() ?? null, message: l.message, node: l.node, level: l.level, cursor: l.cursor };
}

export async function pollLogs(ctx: PollContext, jobId: string): Promise<PollOutcome> {
  const store = ctx.store;
  // Status first: when it says finished, the lines read after it include the last ones.
  const job = await store.refreshJob(jobId, ctx.signal);
  const terminal = isTerminal(job.status);
  if (ctx.state.cursor === null && ctx.state.since === null) {
    ctx.state.since = new Date(store.now().getTime() - Math.max(60_000, 2 * ctx.intervalMs)).toISOString();
  }
  for (let i = 0; i < LOG_PAGES_PER_POLL; i++) {
    const page = await store.logs(
      job,
      { after: ctx.state.cursor, since: ctx.state.cursor ? null : new Date(ctx.state.since!), limit: LOG_PAGE },
      ctx.signal,
    );
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

/** One provider's job list, written through the store; the store tells the hub what changed. */
export async function pollStatuses(ctx: PollContext): Promise<PollOutcome> {
  await ctx.store.syncJobList(ctx.provider.id, ctx.signal);
  return 'continue';
}
