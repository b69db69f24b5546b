// Evaluation of the PromQL subset over series held in memory, with Prometheus 2.x's rules (the
// version Debian ships, the one test/promql/conformance.test.ts compares against):
// - an instant selector at time t takes each series' latest sample in [t - lookback, t] (a sample
//   exactly `lookback` old still counts; an older one is stale and the series is absent at t);
// - a range selector x[d] at t takes the samples in [t - d, t];
// - a range query evaluates the expression on its own at start, start + step, ... <= end;
// - arithmetic, `bool` comparisons, aggregations (bar topk/bottomk) and *_over_time (bar
//   last_over_time) drop the metric name; a filtering comparison keeps the vector's sample as it is;
// - a result with two series of the same label set is an execution error, as in Prometheus.
import { BadData, COMPARISONS, matches, type BinOp, type Expr, type Matcher } from './parse.js';

export type Labels = Record<string, string>;

/** One stored series, its samples in time order (ms). */
export interface SeriesData {
  labels: Labels;
  ts: Float64Array;
  values: Float64Array;
}

export interface Sample {
  labels: Labels;
  value: number;
}

export type InstantValue =
  | { type: 'scalar'; value: number }
  | { type: 'vector'; samples: Sample[] }
  | { type: 'matrix'; series: { labels: Labels; ts: number[]; values: number[] }[] };

/** The query ran past its time limit (Prometheus' errorType "timeout", 503). */
export class QueryTimeout extends Error {}
/** The query could be parsed but not run on this data (errorType "execution", 422). */
export class ExecutionError extends Error {}

/**
 * Label sets are never changed once made, and one set is met again at every evaluation step (a
 * query_range of 1,000 series over 1,441 steps asks for its key 1.4 M times): each set's key is
 * worked out once (bench/promql.ts: the key was 60% of the evaluation time).
 */
const keys = new WeakMap<Labels, string>();

export function labelKey(l: Labels): string {
  let key = keys.get(l);
  if (key === undefined) {
    key = JSON.stringify(
      Object.keys(l)
        .sort()
        .map((k) => [k, l[k]]),
    );
    keys.set(l, key);
  }
  return key;
}

export function seriesMatches(matchers: readonly Matcher[], labels: Labels): boolean {
  return matchers.every((m) => matches(m, labels[m.name] ?? ''));
}

const withoutName = new WeakMap<Labels, Labels>();

/** The label set without its metric name: the same object for the same set, so its key is worked out once. */
function dropName(l: Labels): Labels {
  if (!('__name__' in l)) return l;
  let rest = withoutName.get(l);
  if (!rest) {
    const { __name__: _n, ...others } = l;
    withoutName.set(l, (rest = others));
  }
  return rest;
}

/** The index of the last sample at or before t, -1 when none. */
function lastAtOrBefore(ts: Float64Array, t: number): number {
  let lo = 0;
  let hi = ts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ts[mid]! <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Each series' last sample at or before a time, for times met in rising order (a range query's
 * steps): it walks forward from where it was, so a query_range reads each sample once instead of
 * a binary search per series per step (bench/promql.ts: 1,000 series x 1,441 steps). An earlier
 * time than the last one starts again with binary searches.
 */
class Cursor {
  private t = Number.NEGATIVE_INFINITY;
  readonly at: Int32Array;

  constructor(private readonly series: readonly SeriesData[]) {
    this.at = new Int32Array(series.length).fill(-1);
  }

  /** After it, at[i] is the index of series i's last sample at or before t (-1: none). */
  moveTo(t: number): Int32Array {
    const { at, series } = this;
    if (t < this.t) for (let i = 0; i < series.length; i++) at[i] = lastAtOrBefore(series[i]!.ts, t);
    else
      for (let i = 0; i < series.length; i++) {
        const ts = series[i]!.ts;
        let j = at[i]!;
        while (j + 1 < ts.length && ts[j + 1]! <= t) j++;
        at[i] = j;
      }
    this.t = t;
    return at;
  }
}

function binop(op: BinOp, l: number, r: number): number {
  switch (op) {
    case '+':
      return l + r;
    case '-':
      return l - r;
    case '*':
      return l * r;
    case '/':
      return l / r;
    case '%':
      return l % r;
    case '^':
      return l ** r;
    case '==':
      return l === r ? 1 : 0;
    case '!=':
      return l !== r ? 1 : 0;
    case '>':
      return l > r ? 1 : 0;
    case '<':
      return l < r ? 1 : 0;
    case '>=':
      return l >= r ? 1 : 0;
    case '<=':
      return l <= r ? 1 : 0;
  }
}

export interface EvalContext {
  lookbackMs: number;
  /** The time (on `clock`) after which the evaluation gives up. */
  deadline: number;
  /** Wall-clock ms (Date.now; tests pass their own). */
  clock: () => number;
  /** Every series loaded for the query; each selector takes those its matchers match. */
  series: readonly SeriesData[];
}

export class Evaluator {
  private readonly selected = new Map<readonly Matcher[], SeriesData[]>();
  /** Per selector (and per range selector, one for each end of its window): where each series was at the last step. */
  private readonly cursors = new Map<object, Cursor>();
  /** Per aggregation, its groups (each one label object, met at every step) and each input label set's group. */
  private readonly grouped = new Map<Expr, { of: WeakMap<Labels, number>; byKey: Map<string, number>; labels: Labels[] }>();

  constructor(private readonly ctx: EvalContext) {}

  private select(matchers: readonly Matcher[]): SeriesData[] {
    let s = this.selected.get(matchers);
    if (!s) this.selected.set(matchers, (s = this.ctx.series.filter((x) => seriesMatches(matchers, x.labels))));
    return s;
  }

  private cursor(node: object, series: readonly SeriesData[]): Cursor {
    let c = this.cursors.get(node);
    if (!c) this.cursors.set(node, (c = new Cursor(series)));
    return c;
  }

  checkDeadline(): void {
    if (this.ctx.clock() > this.ctx.deadline) throw new QueryTimeout('query timed out in query execution');
  }

  eval(e: Expr, t: number): InstantValue {
    switch (e.kind) {
      case 'number':
        return { type: 'scalar', value: e.value };
      case 'selector': {
        const out: Sample[] = [];
        const series = this.select(e.matchers);
        const at = this.cursor(e, series).moveTo(t);
        for (let k = 0; k < series.length; k++) {
          const s = series[k]!;
          const i = at[k]!;
          if (i >= 0 && s.ts[i]! >= t - this.ctx.lookbackMs) out.push({ labels: s.labels, value: s.values[i]! });
        }
        return { type: 'vector', samples: out };
      }
      case 'range': {
        const out: { labels: Labels; ts: number[]; values: number[] }[] = [];
        this.window(e, t, (s, lo, hi) =>
          out.push({ labels: s.labels, ts: Array.from(s.ts.subarray(lo, hi + 1)), values: Array.from(s.values.subarray(lo, hi + 1)) }),
        );
        return { type: 'matrix', series: out };
      }
      case 'call': {
        // Straight off each series' window (no copy of its samples per step).
        const out: Sample[] = [];
        // last_over_time alone keeps the metric name: its answer is one of the series' own samples.
        this.window(e.arg, t, (s, lo, hi) =>
          out.push({ labels: e.fn === 'last_over_time' ? s.labels : dropName(s.labels), value: overTime(e.fn, s.values, lo, hi + 1) }),
        );
        return unique({ type: 'vector', samples: out });
      }
      case 'neg': {
        const v = this.eval(e.expr, t);
        if (v.type === 'scalar') return { type: 'scalar', value: -v.value };
        if (v.type === 'vector') return unique({ type: 'vector', samples: v.samples.map((s) => ({ labels: dropName(s.labels), value: -s.value })) });
        throw new BadData('unary minus on a range vector');
      }
      case 'binary': {
        const l = this.eval(e.lhs, t);
        const r = this.eval(e.rhs, t);
        const comparison = COMPARISONS.has(e.op);
        if (l.type === 'scalar' && r.type === 'scalar') return { type: 'scalar', value: binop(e.op, l.value, r.value) };
        const swap = l.type === 'scalar';
        const vec = (swap ? r : l) as Extract<InstantValue, { type: 'vector' }>;
        const scalar = (swap ? l : r) as Extract<InstantValue, { type: 'scalar' }>;
        const out: Sample[] = [];
        for (const s of vec.samples) {
          const [lv, rv] = swap ? [scalar.value, s.value] : [s.value, scalar.value];
          const result = binop(e.op, lv, rv);
          if (comparison && !e.bool) {
            if (result === 1) out.push(s);
          } else out.push({ labels: dropName(s.labels), value: result });
        }
        return unique({ type: 'vector', samples: out });
      }
      case 'agg':
        return this.aggregate(e, t);
    }
  }

  /** Each series with samples in [t - range, t], with the first and last index of those. */
  private window(e: Extract<Expr, { kind: 'range' }>, t: number, each: (s: SeriesData, lo: number, hi: number) => void): void {
    const series = this.select(e.selector.matchers);
    const his = this.cursor(e, series).moveTo(t);
    const los = this.cursor(e.selector, series).moveTo(t - e.rangeMs - 1);
    for (let k = 0; k < series.length; k++) {
      const hi = his[k]!;
      const lo = los[k]! + 1;
      if (hi >= lo) each(series[k]!, lo, hi);
    }
  }

  private aggregate(e: Extract<Expr, { kind: 'agg' }>, t: number): InstantValue {
    const v = this.eval(e.expr, t);
    if (v.type !== 'vector') throw new BadData('expected an instant vector in aggregation');
    const groupLabels = (l: Labels): Labels => {
      if (!e.grouping) return {};
      if (e.grouping.by) {
        const out: Labels = {};
        for (const k of e.grouping.labels) if (l[k] !== undefined && l[k] !== '') out[k] = l[k]!;
        return out;
      }
      const out: Labels = {};
      const without = new Set([...e.grouping.labels, '__name__']);
      for (const [k, val] of Object.entries(l)) if (!without.has(k)) out[k] = val;
      return out;
    };
    let memo = this.grouped.get(e);
    if (!memo) this.grouped.set(e, (memo = { of: new WeakMap(), byKey: new Map(), labels: [] }));
    const { of, byKey, labels } = memo;
    // Each input's group, as an index into `labels`; the groups in the order first met (that is
    // the order the answer lists them in, as with a Map keyed by the groups).
    const groupOf = (l: Labels): number => {
      let g = of.get(l);
      if (g === undefined) {
        const made = groupLabels(l);
        const k = labelKey(made);
        g = byKey.get(k);
        if (g === undefined) byKey.set(k, (g = labels.push(made) - 1));
        of.set(l, g);
      }
      return g;
    };
    const order: number[] = [];
    const slot = new Map<number, number>();
    const slotOf = (g: number): number => {
      let i = slot.get(g);
      if (i === undefined) slot.set(g, (i = order.push(g) - 1));
      return i;
    };
    if (e.op === 'topk' || e.op === 'bottomk') {
      const p = this.eval(e.param!, t);
      if (p.type !== 'scalar') throw new BadData('expected a scalar parameter');
      const k = Math.trunc(p.value);
      const out: Sample[] = [];
      if (!(k >= 1)) return { type: 'vector', samples: out };
      // NaN sorts last either way, as in Prometheus' heaps.
      const rank = (x: number) => (Number.isNaN(x) ? Number.NEGATIVE_INFINITY : e.op === 'topk' ? x : -x);
      // Each group's best k so far, best first; of equal ranks the one met first stays first (as a stable sort would leave them).
      const best: Sample[][] = [];
      for (const s of v.samples) {
        const i = slotOf(groupOf(s.labels));
        const list = (best[i] ??= []);
        const r = rank(s.value);
        if (list.length === k && !(r > rank(list[k - 1]!.value))) continue;
        let at = list.length;
        while (at > 0 && r > rank(list[at - 1]!.value)) at--;
        list.splice(at, 0, s);
        if (list.length > k) list.pop();
      }
      for (const list of best) out.push(...list);
      return { type: 'vector', samples: out };
    }
    // One running value per group, each input taken in order: the same operations, in the same
    // order, as over the group's values listed first (aggregateValues), with no list per group.
    const acc: number[] = [];
    const count: number[] = [];
    for (const s of v.samples) {
      const i = slotOf(groupOf(s.labels));
      const x = s.value;
      const n = (count[i] ?? 0) + 1;
      count[i] = n;
      if (n === 1) {
        acc[i] = e.op === 'avg' ? x : e.op === 'count' ? 1 : e.op === 'sum' ? 0 + x : x;
        continue;
      }
      const a = acc[i]!;
      switch (e.op) {
        case 'sum':
          acc[i] = a + x;
          break;
        case 'count':
          acc[i] = n;
          break;
        case 'avg':
          acc[i] = a + (x / n - a / n);
          break;
        case 'min':
          acc[i] = x < a || Number.isNaN(a) ? x : a;
          break;
        case 'max':
          acc[i] = x > a || Number.isNaN(a) ? x : a;
          break;
        default:
          throw new BadData(`unsupported aggregation ${e.op}`);
      }
    }
    return { type: 'vector', samples: order.map((g, i) => ({ labels: labels[g]!, value: acc[i]! })) };
  }
}

/** Prometheus' running mean (it avoids overflow on large sums; the last digit can differ from sum/count), over xs[lo, end). */
function incrementalMean(xs: Float64Array, lo: number, end: number): number {
  let mean = 0;
  let n = 0;
  for (let i = lo; i < end; i++) {
    n += 1;
    mean += xs[i]! / n - mean / n;
  }
  return mean;
}

/** A *_over_time function over the samples xs[lo, end) (never empty). */
function overTime(fn: string, xs: Float64Array, lo: number, end: number): number {
  switch (fn) {
    case 'avg_over_time':
      return incrementalMean(xs, lo, end);
    case 'min_over_time':
    case 'max_over_time': {
      const min = fn === 'min_over_time';
      let a = xs[lo]!;
      for (let i = lo + 1; i < end; i++) {
        const b = xs[i]!;
        if ((min ? b < a : b > a) || Number.isNaN(a)) a = b;
      }
      return a;
    }
    case 'last_over_time':
      return xs[end - 1]!;
    case 'count_over_time':
      return end - lo;
    default:
      throw new BadData(`unsupported function ${fn}`);
  }
}

function unique(v: Extract<InstantValue, { type: 'vector' }>): InstantValue {
  const seen = new Set<string>();
  for (const s of v.samples) {
    const k = labelKey(s.labels);
    if (seen.has(k)) throw new ExecutionError('vector cannot contain metrics with the same labelset');
    seen.add(k);
  }
  return v;
}
