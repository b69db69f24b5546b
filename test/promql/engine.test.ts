// The evaluator's walk over each series (src/promql/engine.ts): a cursor per selector that moves
// forward with the steps of a range query must give, at any time and in any order of times, what
// a fresh evaluation at that time alone gives; running aggregates and the top k kept by insertion
// must give what the whole group's values give (ties in input order, NaN last, as a stable sort).
import { describe, expect, it } from 'vitest';
import { Evaluator, type SeriesData } from '../../src/promql/engine.js';
import { parsePromql } from '../../src/promql/parse.js';

const series = (labels: Record<string, string>, points: [number, number][]): SeriesData => ({
  labels: { __name__: 'm', ...labels },
  ts: Float64Array.from(points.map(([t]) => t)),
  values: Float64Array.from(points.map(([, v]) => v)),
});

// Uneven spacing, a gap past the 5 min lookback, NaN, ties and a series that starts late.
const DATA: SeriesData[] = [
  series({ g: 'a', i: '1' }, [
    [0, 1],
    [60_000, 2],
    [90_000, 2],
    [250_000, 2],
    [500_000, 7],
    [510_000, Number.NaN],
    [800_000, 3],
  ]),
  series({ g: 'a', i: '2' }, [
    [30_000, 2],
    [120_000, 5],
    [130_000, -1],
    [300_000, -1],
    [700_000, 2],
  ]),
  series({ g: 'b', i: '3' }, [
    [200_000, 2],
    [260_000, 2],
    [320_000, 9],
    [900_000, 0.5],
  ]),
  series({ g: 'b', i: '4' }, [
    [400_000, Number.NaN],
    [460_000, 4],
  ]),
];
const TIMES = Array.from({ length: 40 }, (_, k) => k * 25_000);
const QUERIES = [
  'm',
  'sum by (g) (m)',
  'avg(m)',
  'min by (g) (m)',
  'max without (i) (m)',
  'count by (g) (m)',
  'topk(2, m)',
  'bottomk by (g) (1, m)',
  'max_over_time(m[2m])',
  'avg_over_time(m[90s])',
  'count_over_time(m[5m])',
  'last_over_time(m[1m])',
  'm[2m]',
  'm * 2 > 3',
];

const evaluator = () => new Evaluator({ lookbackMs: 300_000, deadline: Number.POSITIVE_INFINITY, clock: () => 0, series: DATA });

describe('the evaluator walking each series', () => {
  it('gives at each time what an evaluation at that time alone gives, times rising or not', () => {
    for (const q of QUERIES) {
      const expr = parsePromql(q);
      const alone = TIMES.map((t) => evaluator().eval(expr, t));
      const rising = evaluator();
      expect(
        TIMES.map((t) => rising.eval(expr, t)),
        q,
      ).toEqual(alone);
      // Back and forth: an earlier time after a later one.
      const mixed = evaluator();
      const order = [...TIMES.keys()].sort((a, b) => ((a * 7) % 11) - ((b * 7) % 11) || a - b);
      for (const i of order) expect(mixed.eval(expr, TIMES[i]!), `${q} at ${TIMES[i]}`).toEqual(alone[i]);
    }
  });

  it('aggregates as over each group listed whole', () => {
    const t = 470_000;
    const at = evaluator().eval(parsePromql('m'), t);
    if (at.type !== 'vector') throw new Error('expected a vector');
    // At 470 s, each series' latest sample (all within the 5 min lookback): 2, -1, 9, 4.
    expect(at.samples.map((s) => s.value)).toEqual([2, -1, 9, 4]);
    const value = (q: string) => {
      const v = evaluator().eval(parsePromql(q), t);
      if (v.type !== 'vector') throw new Error('expected a vector');
      return v.samples.map((s) => [s.labels.g ?? s.labels.i ?? '', s.value]);
    };
    expect(value('sum by (g) (m)')).toEqual([
      ['a', 1],
      ['b', 13],
    ]);
    expect(value('avg(m)')).toEqual([['', 3.5]]);
    expect(value('min by (g) (m)')).toEqual([
      ['a', -1],
      ['b', 4],
    ]);
    expect(value('count by (g) (m)')).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
    expect(value('topk(3, m)')).toEqual([
      ['b', 9],
      ['b', 4],
      ['a', 2],
    ]);
    expect(value('bottomk(1, m)')).toEqual([['a', -1]]);
    // Of equal values the one listed first comes first, either way (at 90 s, series 1 and 2 are both 2).
    for (const q of ['topk(1, m)', 'bottomk(1, m)', 'topk(2, m)', 'bottomk(2, m)']) {
      const v = evaluator().eval(parsePromql(q), 90_000);
      if (v.type !== 'vector') throw new Error('expected a vector');
      expect(
        v.samples.map((s) => [s.labels.i, s.value]),
        q,
      ).toEqual(
        q.includes('1,')
          ? [['1', 2]]
          : [
              ['1', 2],
              ['2', 2],
            ],
      );
    }
    // NaN ranks last in topk and in bottomk, and min/max skip it while there is a number.
    const nan = (q: string) => {
      const v = evaluator().eval(parsePromql(q), 515_000);
      if (v.type !== 'vector') throw new Error('expected a vector');
      return v.samples.map((s) => [s.labels.i ?? s.labels.g, s.value]);
    };
    expect(nan('m')).toEqual([
      ['1', Number.NaN],
      ['2', -1],
      ['3', 9],
      ['4', 4],
    ]);
    expect(nan('topk(4, m)')).toEqual([
      ['3', 9],
      ['4', 4],
      ['2', -1],
      ['1', Number.NaN],
    ]);
    expect(nan('bottomk(4, m)')).toEqual([
      ['2', -1],
      ['4', 4],
      ['3', 9],
      ['1', Number.NaN],
    ]);
    expect(nan('max by (g) (m)')).toEqual([
      ['a', -1],
      ['b', 9],
    ]);
  });
});
