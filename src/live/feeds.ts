// What one poll of each feed does. Every poll goes through the store's door (src/store/index.ts):
// what a live subscriber sees is exactly what was written, so a later history query agrees with
// it point for point. Job status changes are claimed atomically by the store, so when several
// pollers (or replicas, or a query's list refresh) see the same change, exactly one announces it
// (the hub publishes what the store tells it).
import type { LogPage, SystemMetric } from '../domain/types.js';
import { isTerminal, type ProviderView, type Store, type StoredSample } from '../store/index.js';
import type { LivePayload, LogLinePayload } from './events.js';

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
  /** See LiveOptions.shareFetches: a fetch anyone made within SHARED_FRESH_FRACTION of an interval serves this poll. */
  shareFetches: boolean;
  signal: AbortSignal;
  state: FeedState;
  publish(payload: LivePayload): void;
}

/** 'end' when the feed is complete (the job finished and its last data went out). */
export type PollOutcome = 'continue' | 'end';

export const statusTopic = (providerId: string) => `live:status:${providerId}`;

/** The system metrics a live utilization feed polls (where the platform has them). */
export const LIVE_METRICS: ReadonlySet<SystemMetric> = new Set([
  'GPU_UTILIZATION',
  'GPU_MEMORY_USED',
  'GPU_MEMORY_UTILIZATION',
  'NPU_UTILIZATION',
  'NPU_MEMORY_UTILIZATION',
  'CPU_USAGE',
  'CPU_UTILIZATION',
  'MEMORY_USED',
  'MEMORY_UTILIZATION',
]);

/** How far back the first sample of a feed reaches, so a new dashboard starts with a short history. */
const FIRST_SAMPLE_LOOKBACK_MS = 5 * 60_000;
const LOG_PAGE = 500;
const LOG_PAGES_PER_POLL = 10;

// ---- utilization ------------------------------------------------------------------------------

/** How young (in intervals) another caller's fetch must be to serve a poll when fetches are shared. */
export const SHARED_FRESH_FRACTION = 0.9;

export async function pollUtilization(ctx: PollContext, jobId: string): Promise<PollOutcome> {
  const store = ctx.store;
  const sharedAge = ctx.shareFetches ? ctx.intervalMs * SHARED_FRESH_FRACTION : null;
  // The collector syncs the job list every interval: a status from the last two intervals' lists
  // serves the poll without a call of its own (a finish is seen at most one interval later).
  const job = sharedAge === null ? await store.refreshJob(jobId, ctx.signal) : await store.currentJob(jobId, 2 * ctx.intervalMs, ctx.signal);
  const terminal = isTerminal(job.status);
  const now = store.now();
  const to = terminal && job.finishedAt && job.finishedAt < now ? job.finishedAt : now;
  const cursorMs = ctx.state.cursor ? Date.parse(ctx.state.cursor) : null;
  const from = new Date(cursorMs ?? to.getTime() - Math.max(FIRST_SAMPLE_LOOKBACK_MS, 4 * ctx.intervalMs));
  const metrics = ctx.provider.capabilities.systemMetrics.filter((m) => LIVE_METRICS.has(m));
  if (metrics.length > 0 && from <= to) await store.refreshMetrics(job, from, to, metrics, sharedAge ?? undefined);
  const sample = toSample(await store.storedSample(job, metrics, cursorMs === null ? from : new Date(cursorMs + 1), to));
  const cursor = sample.newest ?? ctx.state.cursor;
  ctx.state.cursor = cursor;
  // Nothing until there is something: a feed that has never had a point (a Runicorn run, which
  // has no system metrics) sent an empty sample every poll. Once a point went out, every poll
  // says so (subscribers read polledAt as the feed's pulse); the final sample always goes.
  if (cursor === null && sample.series.length === 0 && !terminal) return 'continue';
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
    series: sample.series,
    cursor,
  });
  return terminal ? 'end' : 'continue';
}

/** Which series got points in the poll window, the newest point time among them, and the finest scope. */
function toSample({ series, points }: StoredSample) {
  const keyOf = new Map(series.map((s) => [s.id, s.seriesKey]));
  const touched = new Set<string>();
  let newest: number | null = null;
  for (const p of points) {
    if (!p.timestamp || !keyOf.has(p.seriesId)) continue;
    touched.add(keyOf.get(p.seriesId)!);
    const t = p.timestamp.getTime();
    if (newest === null || t > newest) newest = t;
  }
  const scopes = new Set(series.map((s) => s.scope));
  const granularity: 'GPU' | 'NODE' | 'JOB' = scopes.has('GPU') ? 'GPU' : scopes.has('NODE') ? 'NODE' : 'JOB';
  return { series: [...touched], granularity, newest: newest === null ? null : new Date(newest).toISOString() };
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
    const page = await store.logs(job, { after: ctx.state.cursor, since: ctx.state.cursor ? null : new Date(ctx.state.since!), limit: LOG_PAGE }, ctx.signal);
    publishLines(ctx, jobId, page);
    if (page.lines.length < LOG_PAGE) return terminal ? 'end' : 'continue';
  }
  return 'continue';
}

function publishLines(ctx: PollContext, jobId: string, page: LogPage) {
  if (page.lines.length === 0) return;
  const after = ctx.state.cursor;
  ctx.state.cursor = page.lines[page.lines.length - 1]!.cursor;
  ctx.publish({ type: 'logs', jobId, lines: page.lines.map(toLinePayload), after, cursor: ctx.state.cursor, since: ctx.state.since });
}

// ---- job status -----------------------------------------------------------------------------

/** One provider's job list, written through the store; the store tells the hub what changed. */
export async function pollStatuses(ctx: PollContext): Promise<PollOutcome> {
  await ctx.store.syncJobList(ctx.provider.id, ctx.signal);
  return 'continue';
}
