// The series questions Job, Node and Gpu share: make sure the data is cached for the window,
// then pick the stored series that match.
import type { MetricScope, SystemMetric } from '../domain/types.js';
import { jobWindow, type JobRow, type SeriesRow } from '../store/index.js';
import { checkSeriesArgs, type SeriesArgs } from './args.js';
import type { Context } from './context.js';
import { seriesView, type SeriesView } from './metric-series.js';

export interface SystemSeriesQuery extends SeriesArgs {
  names?: readonly SystemMetric[] | null;
  scope?: MetricScope | null;
}

export async function systemSeries(
  ctx: Context,
  job: JobRow,
  args: SystemSeriesQuery,
  pick: (row: SeriesRow) => boolean = () => true,
): Promise<SeriesView[]> {
  const shape = checkSeriesArgs(args, ctx.limits);
  const available = ctx.store.providers.require(job.providerId).capabilities.systemMetrics;
  const names = args.names?.length ? args.names.filter((n) => available.includes(n)) : available;
  if (names.length === 0) return [];
  const window = jobWindow(job, ctx.store.now(), shape.from, shape.to);
  const freshness = await ctx.store.loaders.metricsReady.load({ job, window, metrics: names, maxPoints: shape.maxPoints });
  const rows = await ctx.store.loaders.seriesOfJob.load({ jobId: job.id, kind: 'system' });
  return rows
    .filter((r) => names.includes(r.name as SystemMetric) && (!args.scope || r.scope === args.scope) && pick(r))
    .map((row) => seriesView(row, window, shape, freshness));
}

export interface TrainingSeriesQuery extends SeriesArgs {
  names?: readonly string[] | null;
}

export async function trainingSeries(ctx: Context, job: JobRow, args: TrainingSeriesQuery): Promise<SeriesView[]> {
  const shape = checkSeriesArgs(args, ctx.limits);
  const freshness = await ctx.store.loaders.trainingReady.load(job);
  const rows = await ctx.store.loaders.seriesOfJob.load({ jobId: job.id, kind: 'training' });
  const names = args.names?.length ? new Set(args.names) : null;
  return rows
    .filter((r) => !names || names.has(r.name))
    .map((row) => seriesView(row, { from: shape.from, to: shape.to }, shape, freshness));
}
