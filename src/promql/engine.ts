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
  ts: number[];
  values: number[];
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
function lastAtOrBefore(ts: readonly number[], t: number): number {
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
  /** Per aggregation, each input label set's group labels (one object per group, met at every step). */
  private readonly grouped = new Map<Expr, { of: WeakMap<Labels, Labels>; byKey: Map<string, Labels> }>();

  constructor(private readonly ctx: EvalContext) {}

  private select(matchers: readonly Matcher[]): SeriesData[] {
    let s = this.selected.get(matchers);
    if (!s) this.selected.set(matchers, (s = this.ctx.series.filter((x) => seriesMatches(matchers, x.labels))));
    return s;
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
        for (const s of this.select(e.matchers)) {
          const i = lastAtOrBefore(s.ts, t);
          if (i >= 0 && s.ts[i]! >= t - this.ctx.lookbackMs) out.push({ labels: s.labels, value: s.values[i]! });
        }
        return { type: 'vector', samples: out };
      }
      case 'range': {
        const out: { labels: Labels; ts: number[]; values: number[] }[] = [];
        for (const s of this.select(e.selector.matchers)) {
          const hi = lastAtOrBefore(s.ts, t);
          const lo = lastAtOrBefore(s.ts, t - e.rangeMs - 1) + 1;
          if (hi >= lo) out.push({ labels: s.labels, ts: s.ts.slice(lo, hi + 1), values: s.values.slice(lo, hi + 1) });
        }
        return { type: 'matrix', series: out };
      }
      case 'call': {
        const m = this.eval(e.arg, t);
        if (m.type !== 'matrix') throw new BadData('expected a range vector');
        // last_over_time alone keeps the metric name: its answer is one of the series' own samples.
        const out: Sample[] = m.series.map((s) => ({ labels: e.fn === 'last_over_time' ? s.labels : dropName(s.labels), value: overTime(e.fn, s.values) }));
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
    if (!memo) this.grouped.set(e, (memo = { of: new WeakMap(), byKey: new Map() }));
    const groups = new Map<string, { labels: Labels; samples: Sample[] }>();
    for (const s of v.samples) {
      let labels = memo.of.get(s.labels);
      if (!labels) {
        const made = groupLabels(s.labels);
        const k = labelKey(made);
        labels = memo.byKey.get(k) ?? made;
        memo.byKey.set(k, labels);
        memo.of.set(s.labels, labels);
      }
      const key = labelKey(labels);
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { labels, samples: [] }));
      g.samples.push(s);
    }
    if (e.op === 'topk' || e.op === 'bottomk') {
      const p = this.eval(e.param!, t);
      if (p.type !== 'scalar') throw new BadData('expected a scalar parameter');
      const k = Math.trunc(p.value);
      const out: Sample[] = [];
      if (!(k >= 1)) return { type: 'vector', samples: out };
      // NaN sorts last either way, as in Prometheus' heaps.
      const rank = (x: number) => (Number.isNaN(x) ? Number.NEGATIVE_INFINITY : e.op === 'topk' ? x : -x);
      for (const g of groups.values()) out.push(...[...g.samples].sort((a, b) => rank(b.value) - rank(a.value)).slice(0, k));
      return { type: 'vector', samples: out };
    }
    const out: Sample[] = [];
    for (const g of groups.values()) {
      const xs = g.samples.map((s) => s.value);
      out.push({ labels: g.labels, value: aggregateValues(e.op, xs) });
    }
    return { type: 'vector', samples: out };
  }
}

function aggregateValues(op: string, xs: readonly number[]): number {
  switch (op) {
    case 'sum':
      return xs.reduce((a, b) => a + b, 0);
    case 'count':
      return xs.length;
    case 'avg':
      return incrementalMean(xs);
    case 'min':
      return xs.reduce((a, b) => (b < a || Number.isNaN(a) ? b : a));
    case 'max':
      return xs.reduce((a, b) => (b > a || Number.isNaN(a) ? b : a));
    default:
      throw new BadData(`unsupported aggregation ${op}`);
  }
}

/** Prometheus' running mean (it avoids overflow on large sums; the last digit can differ from sum/count). */
function incrementalMean(xs: readonly number[]): number {
  let mean = 0;
  let n = 0;
  for (const x of xs) {
    n += 1;
    mean += x / n - mean / n;
  }
  return mean;
}

function overTime(fn: string, xs: readonly number[]): number {
  switch (fn) {
    case 'avg_over_time':
      return incrementalMean(xs);
    case 'min_over_time':
      return aggregateValues('min', xs);
    case 'max_over_time':
      return aggregateValues('max', xs);
    case 'last_over_time':
      return xs[xs.length - 1]!;
    case 'count_over_time':
      return xs.length;
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
