import type { Freshness, SeriesRow } from '../store/index.js';
import type { CheckedSeriesArgs } from './args.js';
import { builder } from './builder.js';
import { MetricScopeEnum, MetricUnitEnum } from './enums.js';
import { GpuRef, NodeRef } from './refs.js';
import { SourceErrorRef } from './provider.js';

/** A stored series plus the window and shaping a field asked for it. */
export interface SeriesView {
  row: SeriesRow;
  window: { from: Date | null; to: Date | null };
  shape: CheckedSeriesArgs;
  freshness: Freshness;
}

export const MetricSeriesRef = builder.objectRef<SeriesView>('MetricSeries');
const MetricPointRef = builder.objectRef<{ ts: Date | null; step: number | null; value: number | null }>('MetricPoint');
const MetricSummaryRef = builder.objectRef<{
  count: number;
  min: number | null;
  max: number | null;
  avg: number | null;
  last: number | null;
  firstAt: Date | null;
  lastAt: Date | null;
}>('MetricSummary');
export const FreshnessRef = builder.objectRef<Freshness>('Freshness');

FreshnessRef.implement({
  description: 'How current an answer is: when it was fetched upstream and whether a due refresh failed',
  fields: (t) => ({
    fetchedAt: t.field({ type: 'DateTime', nullable: true, resolve: (f) => f.fetchedAt }),
    stale: t.exposeBoolean('stale', { description: 'True when a refresh failed and an older cached copy is served' }),
    error: t.field({ type: SourceErrorRef, nullable: true, resolve: (f) => f.error }),
  }),
});

MetricPointRef.implement({
  description: 'One point (or one downsampled bucket, stamped with its first point). A null value is a gap the platform reported.',
  fields: (t) => ({
    timestamp: t.field({
      type: 'DateTime',
      // Step-keyed training points without a wall-clock time fall back to nothing rather than a guess.
      nullable: true,
      resolve: (p) => p.ts,
    }),
    step: t.field({ type: 'Int', nullable: true, resolve: (p) => p.step }),
    value: t.field({ type: 'Float', nullable: true, resolve: (p) => p.value }),
  }),
});

MetricSummaryRef.implement({
  description: 'Statistics over the raw (not downsampled) points in the window; gaps are not counted',
  fields: (t) => ({
    count: t.exposeInt('count'),
    min: t.field({ type: 'Float', nullable: true, resolve: (s) => s.min }),
    max: t.field({ type: 'Float', nullable: true, resolve: (s) => s.max }),
    avg: t.field({ type: 'Float', nullable: true, resolve: (s) => s.avg }),
    last: t.field({ type: 'Float', nullable: true, resolve: (s) => s.last }),
    firstAt: t.field({ type: 'DateTime', nullable: true, resolve: (s) => s.firstAt }),
    lastAt: t.field({ type: 'DateTime', nullable: true, resolve: (s) => s.lastAt }),
  }),
});

MetricSeriesRef.implement({
  description: 'A series in canonical units, downsampled in the store to at most maxPoints',
  fields: (t) => ({
    name: t.string({ description: 'The canonical SystemMetric name, or the training metric name', resolve: (s) => s.row.name }),
    rawName: t.string({ nullable: true, description: "The platform's own metric name", resolve: (s) => s.row.rawName }),
    unit: t.field({ type: MetricUnitEnum, resolve: (s) => s.row.unit as never }),
    scope: t.field({ type: MetricScopeEnum, resolve: (s) => s.row.scope as never }),
    source: t.string({ description: 'The platform, or the training metric source (wandb, log, tensorflow, runicorn)', resolve: (s) => s.row.source }),
    stage: t.string({ nullable: true, description: 'Training stage (train, eval, ...) where the platform labels one', resolve: (s) => s.row.stage }),
    keyedBy: t.string({ description: '"time" for system metrics, "step" for training metrics', resolve: (s) => s.row.keyedBy }),
    meta: t.field({
      type: 'JSON',
      description: 'How to read the series honestly: derived values, inferred timestamps and the like',
      resolve: (s) => s.row.meta,
    }),
    node: t.field({
      type: NodeRef,
      nullable: true,
      resolve: (s, _a, ctx) => (s.row.nodeId ? ctx.store.loaders.nodeById.load(s.row.nodeId) : null),
    }),
    gpu: t.field({
      type: GpuRef,
      nullable: true,
      resolve: (s, _a, ctx) => (s.row.gpuId ? ctx.store.loaders.gpuById.load(s.row.gpuId) : null),
    }),
    points: t.field({
      type: [MetricPointRef],
      resolve: (s, _a, ctx) =>
        ctx.store.loaders.points.load({
          seriesId: s.row.id,
          keyedBy: s.row.keyedBy as 'time' | 'step',
          from: s.window.from,
          to: s.window.to,
          maxPoints: s.shape.maxPoints,
          aggregation: s.shape.aggregation,
        }),
    }),
    summary: t.field({
      type: MetricSummaryRef,
      resolve: async (s, _a, ctx) =>
        (await ctx.store.loaders.summary.load({ seriesId: s.row.id, keyedBy: s.row.keyedBy as 'time' | 'step', from: s.window.from, to: s.window.to })) ?? {
          count: 0,
          min: null,
          max: null,
          avg: null,
          last: null,
          firstAt: null,
          lastAt: null,
        },
    }),
    freshness: t.field({ type: FreshnessRef, resolve: (s) => s.freshness }),
  }),
});
