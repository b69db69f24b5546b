import { parseGlobalId, seriesGlobalId } from '../domain/ids.js';
import type { Freshness, SeriesRow, SummaryRow } from '../store/index.js';
import type { CheckedSeriesArgs } from './args.js';
import { builder } from './builder.js';
import type { ArgBuilder } from '@pothos/core';
import { AggregationEnum, MetricScopeEnum, MetricUnitEnum, SeriesKeyEnum, SystemMetricEnum } from './enums.js';
import { ComputeNodeRef, GpuRef, NodeInterfaceRef, type SourceErrorShape } from './refs.js';
import { SourceErrorRef } from './refs.js';
import { type Context, DEFAULT_LIMITS } from './context.js';
import { selectsField } from './selection.js';
import { freshnessId, ID_DOCS, pointId, summaryId } from './value-ids.js';

/** A stored series plus the window and shaping a field asked for it. */
export interface SeriesView {
  /** The global id: series and the asked window and shaping (seriesGlobalId). */
  id: string;
  row: SeriesRow;
  window: { from: Date | null; to: Date | null };
  shape: CheckedSeriesArgs;
  freshness: Freshness;
}

export function seriesView(row: SeriesRow, window: SeriesView['window'], shape: CheckedSeriesArgs, freshness: Freshness): SeriesView {
  const id = seriesGlobalId(parseGlobalId(row.jobId, 'job').providerId, {
    seriesKey: row.seriesKey,
    from: shape.from,
    to: shape.to,
    maxPoints: shape.maxPoints,
    aggregation: shape.aggregation,
  });
  return { id, row, window, shape, freshness };
}

type Types = typeof builder.$inferSchemaTypes;

/** from, to, maxPoints and aggregation, as every series field takes them. */
export function windowArgs(arg: ArgBuilder<Types>, defaults: { from: string; to: string } = { from: 'the job start', to: 'the job end, or now' }) {
  return {
    from: arg({ type: 'DateTime', required: false, description: `Window start (inclusive); default: ${defaults.from}` }),
    to: arg({
      type: 'DateTime',
      required: false,
      description: `Window end (inclusive); default: ${defaults.to}. [from, to] may span at most 366 days unless configured`,
    }),
    maxPoints: arg.int({
      required: false,
      description:
        'At most this many points per series, downsampled in equal-width buckets beyond it: 1..the server cap (default 500, cap 10000 unless configured)',
    }),
    aggregation: arg({ type: AggregationEnum, required: false, description: 'How points in one bucket are combined when downsampling; default AVG' }),
  };
}

/** names and scope plus the window: the arguments of Job.metrics and ComputeNode.metrics. */
export function systemSeriesArgs(arg: ArgBuilder<Types>) {
  return {
    names: arg({
      type: [SystemMetricEnum],
      required: false,
      description: 'Only these metrics (those the platform does not report are skipped); default: every metric the platform reports',
    }),
    scope: arg({ type: MetricScopeEnum, required: false, description: 'Only series of this scope; default: every scope' }),
    ...windowArgs(arg),
  };
}

/** A freshness as one object reports it: its id is derived from that object's (`ownerId`). */
export interface FreshnessView extends Freshness {
  ownerId: string;
  /** Set when Query.node answered it: the id asked. */
  id?: string;
}

/** A point of a series; `series` is set when its id is selected (the id is derived from the series'). */
export interface PointView {
  timestamp: Date | null;
  step: number | null;
  value: number | null;
  series?: SeriesView;
  id?: string;
}

/** A series' summary as the store computes it, owned by its series. */
export interface SummaryView extends Omit<SummaryRow, 'seriesId' | 'index'> {
  /** The series' id. */
  ownerId: string;
  id?: string;
}

export const MetricSeriesRef = builder.objectRef<SeriesView>('MetricSeries');
const MetricPointRef = builder.objectRef<PointView>('MetricPoint');
const MetricSummaryRef = builder.objectRef<SummaryView>('MetricSummary');
export const FreshnessRef = builder.objectRef<FreshnessView>('Freshness');

export const freshnessView = (f: Freshness, ownerId: string): FreshnessView => ({ fetchedAt: f.fetchedAt, stale: f.stale, error: f.error, ownerId });

/** The SourceError of a failed refresh, as Freshness.error answers it. */
export function freshnessError(f: FreshnessView): SourceErrorShape | null {
  return f.error ? { ...f.error, stale: f.stale, cachedAt: f.fetchedAt, ownerId: f.id ?? freshnessId(f.ownerId) } : null;
}

FreshnessRef.implement({
  shareable: true,
  interfaces: [NodeInterfaceRef],
  description: 'How current an answer is: when it was fetched upstream and whether a due refresh failed',
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.Freshness, resolve: (f) => f.id ?? freshnessId(f.ownerId) }),
    fetchedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the data answered was fetched from the platform; null if never',
      resolve: (f) => f.fetchedAt,
    }),
    stale: t.exposeBoolean('stale', { description: 'True when a refresh failed and an older cached copy is served' }),
    error: t.field({
      type: SourceErrorRef,
      nullable: true,
      description: 'Why the due refresh failed; null when it did not fail',
      resolve: (f) => freshnessError(f),
    }),
  }),
});

MetricPointRef.implement({
  shareable: true,
  interfaces: [NodeInterfaceRef],
  description: 'One point (or one downsampled bucket, stamped with its first point). A null value is a gap the platform reported.',
  fields: (t) => ({
    id: t.id({
      description: ID_DOCS.MetricPoint,
      resolve: (p) => {
        if (p.id) return p.id;
        // MetricSeries.points attaches the series whenever `id` is in the selection.
        if (!p.series) throw new Error('a MetricPoint id was asked for without its series');
        return pointId(p.series.id, p.series.row.keyedBy, p);
      },
    }),
    // Exposed: a point's fields are plain property reads in the compiled query (src/schema/index.ts).
    timestamp: t.expose('timestamp', {
      type: 'DateTime',
      // Step-keyed training points without a wall-clock time fall back to nothing rather than a guess.
      nullable: true,
      description: "When the point (or its bucket's first point) was measured; null for a step-keyed point the platform logged without a time",
    }),
    step: t.exposeInt('step', {
      nullable: true,
      description: 'The training step (a count) of a step-keyed point; null for time-keyed ones',
    }),
    value: t.exposeFloat('value', {
      nullable: true,
      description: "The value in the series' unit; null for a gap the platform reported",
    }),
  }),
});

MetricSummaryRef.implement({
  shareable: true,
  interfaces: [NodeInterfaceRef],
  description: 'Statistics over the raw (not downsampled) points in the window; gaps are not counted',
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.MetricSummary, resolve: (s) => s.id ?? summaryId(s.ownerId) }),
    count: t.exposeInt('count', { description: 'Points with a value in the window (a count)' }),
    min: t.field({ type: 'Float', nullable: true, description: "The lowest value, in the series' unit; null without points", resolve: (s) => s.min }),
    max: t.field({ type: 'Float', nullable: true, description: "The highest value, in the series' unit; null without points", resolve: (s) => s.max }),
    avg: t.field({
      type: 'Float',
      nullable: true,
      description: "The mean of the values (not time-weighted), in the series' unit; null without points",
      resolve: (s) => s.avg,
    }),
    last: t.field({ type: 'Float', nullable: true, description: "The latest value, in the series' unit; null without points", resolve: (s) => s.last }),
    firstAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the first point was measured; null without timed points',
      resolve: (s) => s.firstAt,
    }),
    lastAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the latest point was measured; null without timed points',
      resolve: (s) => s.lastAt,
    }),
  }),
});

MetricSeriesRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'A series in canonical units, downsampled in the store to at most maxPoints',
  fields: (t) => ({
    id: t.exposeID('id', {
      description:
        'Global id of this series as asked: job, scope, node or GPU, metric, and the window and shaping arguments (the same series with other points is another object). Opaque and stable; live samples carry the same ids as Job.metrics with the same arguments',
    }),
    name: t.string({ description: 'The canonical SystemMetric name, or the training metric name', resolve: (s) => s.row.name }),
    rawName: t.string({ nullable: true, description: "The platform's own metric name", resolve: (s) => s.row.rawName }),
    unit: t.field({ type: MetricUnitEnum, description: 'The canonical unit of every value', resolve: (s) => s.row.unit as never }),
    scope: t.field({ type: MetricScopeEnum, description: 'Whether this series is one GPU, one node or the whole job', resolve: (s) => s.row.scope as never }),
    source: t.string({ description: 'The platform, or the training metric source (wandb, log, tensorflow, runicorn)', resolve: (s) => s.row.source }),
    stage: t.string({ nullable: true, description: 'Training stage (train, eval, ...) where the platform labels one', resolve: (s) => s.row.stage }),
    keyedBy: t.field({
      type: SeriesKeyEnum,
      description: 'TIME for system metrics, STEP for training metrics',
      resolve: (s) => (s.row.keyedBy === 'step' ? 'STEP' : 'TIME'),
    }),
    meta: t.field({
      type: 'JSON',
      description: 'How to read the series honestly: derived values, inferred timestamps and the like',
      resolve: (s) => s.row.meta,
    }),
    node: t.field({
      type: ComputeNodeRef,
      nullable: true,
      description: 'The node a NODE- or GPU-scope series belongs to; null for JOB scope',
      resolve: (s, _a, ctx) => (s.row.nodeId ? ctx.store.loaders.nodeById.load(s.row.nodeId) : null),
    }),
    gpu: t.field({
      type: GpuRef,
      nullable: true,
      description: 'The GPU of a GPU-scope series; null for other scopes',
      resolve: (s, _a, ctx) => (s.row.gpuId ? ctx.store.loaders.gpuById.load(s.row.gpuId) : null),
    }),
    points: t.field({
      type: [MetricPointRef],
      // maxPoints is an argument of the field that answered the series: the default is assumed.
      directives: { listSize: { assumedSize: DEFAULT_LIMITS.defaultMaxPoints } },
      description: 'The points in the window, oldest first, at most maxPoints (downsampled in equal-width buckets beyond it)',
      resolve: async (s, _a, ctx, info) => {
        const points: PointView[] = await pointsOf(s, ctx);
        // A point's id is derived from its series': only a selected id makes each point carry it.
        return selectsField(info, 'id') ? points.map((p) => ({ timestamp: p.timestamp, step: p.step, value: p.value, series: s })) : points;
      },
    }),
    // Columnar form of the same points, what charting clients take (uPlot's data arrays, Grafana
    // data frames): no object per point, about half the bytes of `points`.
    timestamps: t.field({
      type: ['Float'],
      // One element per point: maxPoints is an argument of the field that answered the series, its default assumed.
      directives: { listSize: { assumedSize: DEFAULT_LIMITS.defaultMaxPoints } },
      nullable: { list: false, items: true },
      description: 'The time of each point of `points`, in epoch milliseconds (UTC), in the same order; null for a step-keyed point the platform gave no time',
      resolve: async (s, _a, ctx) => (await pointsOf(s, ctx)).map((p) => (p.timestamp === null ? null : p.timestamp.getTime())),
    }),
    steps: t.field({
      type: ['Int'],
      // One element per point: maxPoints is an argument of the field that answered the series, its default assumed.
      directives: { listSize: { assumedSize: DEFAULT_LIMITS.defaultMaxPoints } },
      nullable: { list: false, items: true },
      description: 'The training step of each point of `points`, in the same order; null where the point has no step (system metrics)',
      resolve: async (s, _a, ctx) => (await pointsOf(s, ctx)).map((p) => p.step),
    }),
    values: t.field({
      type: ['Float'],
      // One element per point: maxPoints is an argument of the field that answered the series, its default assumed.
      directives: { listSize: { assumedSize: DEFAULT_LIMITS.defaultMaxPoints } },
      nullable: { list: false, items: true },
      description: 'The value of each point of `points`, in the series `unit`, in the same order; null is a gap the platform reported',
      resolve: async (s, _a, ctx) => (await pointsOf(s, ctx)).map((p) => p.value),
    }),
    resolution: t.int({
      nullable: true,
      description:
        "Seconds each point summarizes when the store answered from a rollup instead of raw points: 60 (the 1-minute rollup), 3600 (the 1-hour one) or a multiple of either (that many rollup buckets merged to stay within maxPoints; each point is then stamped with its bucket's start, and AVG is the merged buckets' sum over their count). A rollup answers a time-keyed series whose window holds more than max(1000, 10 x maxPoints) raw points and whose raw equal-width bucket would be at least 30 s, or a window reaching before `rawSince`. Null (the default): raw points, as stored or in equal-width buckets. Chosen by the store; no argument",
      resolve: async (s, _a, ctx) => (await shapedPointsOf(s, ctx)).resolution,
    }),
    rawSince: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        "Raw points before this instant were dropped by retention (the provider's collect.rawRetentionDays, default 30 days; docs/configuration.md); the 1-minute and 1-hour rollups of that time remain, and a window reaching before it is answered from them (see resolution). Null: no raw point of this series was dropped",
      resolve: (s) => (s.row.rawBefore == null ? null : new Date(s.row.rawBefore)),
    }),
    minuteRollupSince: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        "1-minute rollup buckets before this instant (a whole UTC hour) were dropped by retention (the provider's collect.minuteRollupRetentionDays, default 365 days; docs/configuration.md); the 1-hour rollup of that time remains, and a window reaching before it is answered from it (resolution 3600 or a multiple). Null (the default): no 1-minute bucket of this series was dropped",
      resolve: (s) => (s.row.minuteBefore == null ? null : new Date(s.row.minuteBefore)),
    }),
    hourRollupSince: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        "1-hour rollup buckets before this instant (a whole UTC hour) were dropped by retention (the provider's collect.hourRollupRetentionDays, default: kept for ever; docs/configuration.md); nothing of this series before it is stored any more. Null (the default): no 1-hour bucket of this series was dropped",
      resolve: (s) => (s.row.hourBefore == null ? null : new Date(s.row.hourBefore)),
    }),
    coarsestAvailable: t.int({
      nullable: true,
      description:
        "What retention left of the window's oldest part, in seconds a stored value summarizes there: null (the default) = raw points for the whole window (or a step-keyed series, which has no rollups); 60 = the window starts before `rawSince`, so its oldest part exists only as 1-minute rollup buckets; 3600 = it starts before `minuteRollupSince` too, only 1-hour buckets. A window without `from` reaches back to the first point. What the answer was read at is `resolution` (it may be coarser, never finer, for that part); a part before `hourRollupSince` is not stored at all. Follows from the series' retention cuts and the window; no argument",
      resolve: (s) => coarsestAvailable(s),
    }),
    summary: t.field({
      type: MetricSummaryRef,
      description: 'Statistics over the raw points in the window',
      resolve: (s, _a, ctx) => summaryOf(s, ctx),
    }),
    freshness: t.field({
      type: FreshnessRef,
      description: 'How current the points are, and the error of a failed refresh',
      resolve: (s) => freshnessView(s.freshness, s.id),
    }),
  }),
});

/** MetricSeries.coarsestAvailable: 3600, 60 or null, from the series' retention cuts and its window's start. */
export function coarsestAvailable(s: SeriesView): number | null {
  if (s.row.keyedBy !== 'time') return null;
  const from = s.window.from?.getTime() ?? Number.NEGATIVE_INFINITY;
  const before = (cut: number | null) => cut != null && from < cut;
  if (!before(s.row.rawBefore)) return null;
  return before(s.row.minuteBefore) ? 3600 : 60;
}

/** Statistics over the series' raw points in its window. */
export async function summaryOf(s: SeriesView, ctx: Context): Promise<SummaryView> {
  const row = await ctx.store.loaders.summary.load({
    seriesId: s.row.id,
    jobId: s.row.jobId,
    keyedBy: s.row.keyedBy as 'time' | 'step',
    from: s.window.from,
    to: s.window.to,
  });
  if (!row) return { count: 0, min: null, max: null, avg: null, last: null, firstAt: null, lastAt: null, ownerId: s.id };
  return { count: row.count, min: row.min, max: row.max, avg: row.avg, last: row.last, firstAt: row.firstAt, lastAt: row.lastAt, ownerId: s.id };
}

/** The series' points as asked (window, maxPoints, aggregation): one load shared by `points` and the columns. */
export async function pointsOf(s: SeriesView, ctx: Context): Promise<PointView[]> {
  return (await shapedPointsOf(s, ctx)).points;
}

/** The series' points as asked, with the resolution the store read them at. */
export function shapedPointsOf(s: SeriesView, ctx: Context) {
  return ctx.store.loaders.points.load({
    seriesId: s.row.id,
    jobId: s.row.jobId,
    keyedBy: s.row.keyedBy as 'time' | 'step',
    from: s.window.from,
    to: s.window.to,
    maxPoints: s.shape.maxPoints,
    aggregation: s.shape.aggregation,
  });
}
