// The series questions Job, Node and Gpu share: make sure the data is cached for the window,
// then pick the stored series that match.
import { Kind, valueFromASTUntyped, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { MetricScope, SystemMetric } from '../domain/types.js';
import { jobWindow, type JobRow, type SeriesRow, type TopologyHint } from '../store/index.js';
import { checkSeriesArgs, type SeriesArgs } from './args.js';
import type { Context } from './context.js';
import { seriesView, type SeriesView } from './metric-series.js';

export interface SystemSeriesQuery extends SeriesArgs {
  names?: readonly SystemMetric[] | null;
  scope?: MetricScope | null;
}

export async function systemSeries(ctx: Context, job: JobRow, args: SystemSeriesQuery, pick: (row: SeriesRow) => boolean = () => true): Promise<SeriesView[]> {
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
  return rows.filter((r) => !names || names.has(r.name)).map((row) => seriesView(row, { from: shape.from, to: shape.to }, shape, freshness));
}

/** Gpu fields that are one system metric each. */
const GPU_SERIES_FIELDS: Record<string, SystemMetric> = {
  utilization: 'GPU_UTILIZATION',
  memoryUsed: 'GPU_MEMORY_USED',
  memoryUtilization: 'GPU_MEMORY_UTILIZATION',
};

/**
 * Looks ahead, below a field that needs the job's nodes, for the series the query will ask
 * (Gpu.utilization and its siblings, Node.metrics): on platforms whose nodes only metrics reveal,
 * the one metrics call for that window teaches the nodes too. Every series field over the first
 * one's window joins it (their metrics together, the finest maxPoints): a dashboard asking a GPU's
 * utilization at 20 points and its memory at 1,000 makes one call at the finer resolution, which
 * serves both, not a coarse call the finer field then repeats. null when there is none (or the
 * first one's arguments are bad: the series field reports that itself).
 */
export function topologyHint(ctx: Context, job: JobRow, info: GraphQLResolveInfo): TopologyHint | null {
  const found: { args: Record<string, unknown>; metrics: readonly SystemMetric[] | null }[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode | undefined, depth: number) => {
    if (!set || depth > 6) return;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        if (seen.has(sel.name.value)) continue;
        seen.add(sel.name.value);
        walk(info.fragments[sel.name.value]?.selectionSet, depth + 1);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, depth + 1);
      else {
        const name = sel.name.value;
        if (name === 'job') continue; // another job's question, not this one's
        const gpuMetric = GPU_SERIES_FIELDS[name];
        if (gpuMetric || name === 'metrics') {
          const args = Object.fromEntries((sel.arguments ?? []).map((a) => [a.name.value, valueFromASTUntyped(a.value, info.variableValues)]));
          const names = Array.isArray(args.names) ? (args.names as SystemMetric[]) : null;
          found.push({ args, metrics: gpuMetric ? [gpuMetric] : names });
          continue;
        }
        walk(sel.selectionSet, depth + 1);
      }
    }
  };
  for (const node of info.fieldNodes) walk(node.selectionSet, 0);
  const first = found[0];
  if (!first) return null;
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(String(v)));
  const shapeOf = (f: (typeof found)[number]) => {
    const shape = checkSeriesArgs({ from: date(f.args.from), to: date(f.args.to), maxPoints: (f.args.maxPoints as number | undefined) ?? null }, ctx.limits);
    if ((shape.from && Number.isNaN(shape.from.getTime())) || (shape.to && Number.isNaN(shape.to.getTime()))) throw new Error('bad window');
    return shape;
  };
  try {
    const shape = shapeOf(first);
    const available = ctx.store.providers.find(job.providerId)?.capabilities.systemMetrics ?? [];
    const wanted = new Set<SystemMetric>();
    let maxPoints = shape.maxPoints;
    for (const f of found) {
      let other: ReturnType<typeof shapeOf>;
      try {
        other = f === first ? shape : shapeOf(f);
      } catch {
        continue; // its own field reports its bad arguments; the hint goes on without it
      }
      if (other.from?.getTime() !== shape.from?.getTime() || other.to?.getTime() !== shape.to?.getTime()) continue;
      for (const m of f.metrics ?? available) wanted.add(m);
      maxPoints = Math.max(maxPoints, other.maxPoints);
    }
    const metrics = available.filter((m) => wanted.has(m));
    if (metrics.length === 0) return null;
    return { window: jobWindow(job, ctx.store.now(), shape.from, shape.to), metrics, maxPoints };
  } catch {
    return null;
  }
}
