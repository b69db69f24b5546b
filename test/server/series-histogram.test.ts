// The operation duration histogram observes through series found once, not prom-client's
// Histogram: its scrape must read exactly as prom-client's would for the same observations.
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesHistogram } from '../../src/server/metrics.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

describe('SeriesHistogram', () => {
  it("scrapes as prom-client's Histogram does, text and JSON, alone and merged into another registry", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Histogram({
      name: 'h_seconds',
      help: 'a "help" text',
      labelNames: ['operation', 'type'] as const,
      buckets: BUCKETS,
      registers: [theirs],
    });
    const histogram = new SeriesHistogram('h_seconds', 'a "help" text', ['operation', 'type'], BUCKETS, [ours]);
    const observations: [Record<string, string>, number][] = [
      [{ operation: 'Fleet', type: 'query' }, 0.003],
      [{ operation: 'Fleet', type: 'query' }, 0.01],
      [{ operation: 'Fleet', type: 'query' }, 0.7],
      [{ operation: 'anonymous', type: 'mutation' }, 42],
      [{ operation: 'Fleet', type: 'query' }, 30],
      [{ operation: 'we"ird\\name', type: 'query' }, 0.2],
    ];
    for (const [labels, value] of observations) {
      reference.observe(labels, value);
      histogram.observe(histogram.series(labels), value);
    }
    // The same label set, asked again, is the same series.
    expect(histogram.series({ operation: 'Fleet', type: 'query' })).toBe(histogram.series({ type: 'query', operation: 'Fleet' }));
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    expect(await Registry.merge([new Registry(), ours]).metrics()).toBe(await Registry.merge([new Registry(), theirs]).metrics());

    reference.reset();
    histogram.reset();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
