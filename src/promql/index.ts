// The Prometheus HTTP query API over the store's history (the module's one door): /api/v1/query,
// query_range, series, labels, label/<name>/values, metadata and status/buildinfo, answered in
// Prometheus' JSON shape and status codes, so Grafana's built-in Prometheus data source (and
// promtool) read every platform's history with no plugin. Series and labels are the scrape
// target's (src/domain/scrape-families.ts), drawn from every stored point of any job, not only the
// running ones /metrics/jobs shows. HTTP, tokens and tenants stay in src/server: this door takes
// the providers and projects a request may see, and the request's parameters.
import { SCRAPE_FAMILIES, scrapeLabels } from '../domain/scrape-families.js';
import type { Store } from '../store/index.js';
import { Evaluator, ExecutionError, labelKey, QueryTimeout, seriesMatches, type InstantValue, type Labels, type SeriesData } from './engine.js';
import { BadData, parseDuration, parsePromql, selectorsOf, typeOf, type Expr, type Matcher } from './parse.js';

export { BadData } from './parse.js';

/** Prometheus refuses a range query of more points than this per series (its own limit, kept as is). */
export const MAX_POINTS_PER_SERIES = 11_000;
/** Default limits; each is a PromApiOptions field. */
export const PROMQL_DEFAULTS = {
  lookbackMs: 5 * 60_000,
  /** Prometheus' --query.max-samples default: points read plus points answered, per query. */
  maxSamples: 50_000_000,
  /** Series one query may read. */
  maxSeries: 100_000,
  /** Prometheus' --query.timeout default; a smaller `timeout` parameter wins. */
  timeoutMs: 2 * 60_000,
};

export interface PromApiOptions {
  store: Store;
  lookbackMs?: number;
  maxSamples?: number;
  maxSeries?: number;
  timeoutMs?: number;
  /** The clock the time limit is measured on (default Date.now; tests pass a controllable one). */
  clock?: () => number;
}

/** What a request may see (its token's scope): providers, and projects (null = all). */
export interface PromAccess {
  providerIds: readonly string[];
  projectIds: readonly string[] | null;
}

export interface PromAnswer {
  status: number;
  body: unknown;
  /** The body already as JSON (a query_range answer, written as it is built); send this when present. */
  json?: string;
}

const NONE = new Float64Array(0);
/** Statements a query's points are read in, at once (on PGlite they run one after the other). */
const READ_PARTS = 2;
const FAMILY_NAMES = [...new Set(Object.values(SCRAPE_FAMILIES).map((f) => f.family))].sort();
const HELP = new Map(Object.values(SCRAPE_FAMILIES).map((f) => [f.family, f.help]));
const MIN_TIME = Date.UTC(1970, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31);

function error(status: number, errorType: string, message: string): PromAnswer {
  return { status, body: { status: 'error', errorType, error: message } };
}

function success(data: unknown): PromAnswer {
  return { status: 200, body: { status: 'success', data } };
}

/** A time parameter: Unix seconds (a float) or RFC 3339, as Prometheus reads it; ms. */
function parseTime(raw: string | null, name: string, fallback: number): number {
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (Number.isFinite(n)) return Math.round(n * 1000);
  if (/^\d{4}-\d{2}-\d{2}T/.test(raw)) {
    const d = Date.parse(raw);
    if (!Number.isNaN(d)) return d;
  }
  throw new BadData(`invalid parameter "${name}": cannot parse "${raw}" to a valid timestamp`);
}

/** A duration parameter: seconds (a float) or a Prometheus duration ("15s", "1m"); ms. */
function parseDurationParam(raw: string, name: string): number {
  const n = Number(raw);
  if (Number.isFinite(n)) return Math.round(n * 1000);
  try {
    return parseDuration(raw);
  } catch {
    throw new BadData(`invalid parameter "${name}": cannot parse "${raw}" to a valid duration`);
  }
}

/**
 * A sample value as Prometheus writes it (util/jsonutil.MarshalFloat): Go's shortest decimal,
 * plain below 1e21 and from 1e-6, else in exponent form with at least two exponent digits
 * ("3e-07"). JavaScript switches to exponents at the same bounds, with one digit at least.
 */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  const s = String(v);
  // Called once per answered point (1.44 M for a 24 h query_range of 1,000 series): the pattern only where there is an exponent.
  return s.includes('e') ? s.replace(/e([+-])(\d)$/, 'e$10$2') : s;
}

/** A scalar result as Prometheus writes it (Scalar.MarshalJSON: strconv.FormatFloat 'f', -1): never in exponent form. */
export function formatScalar(v: number): string {
  const s = formatValue(v);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, lead, frac = '', expText] = m;
  const digits = lead! + frac;
  const at = 1 + Number(expText);
  const body =
    at <= 0 ? `0.${'0'.repeat(-at)}${digits}` : at >= digits.length ? digits + '0'.repeat(at - digits.length) : `${digits.slice(0, at)}.${digits.slice(at)}`;
  return sign + body;
}

const sortedLabels = (l: Labels): Labels =>
  Object.fromEntries(
    Object.keys(l)
      .sort()
      .map((k) => [k, l[k]!]),
  );

export class PromApi {
  private readonly lookbackMs: number;
  private readonly maxSamples: number;
  private readonly maxSeries: number;
  private readonly timeoutMs: number;
  private readonly clock: () => number;

  constructor(private readonly opts: PromApiOptions) {
    this.clock = opts.clock ?? Date.now;
    this.lookbackMs = opts.lookbackMs ?? PROMQL_DEFAULTS.lookbackMs;
    this.maxSamples = opts.maxSamples ?? PROMQL_DEFAULTS.maxSamples;
    this.maxSeries = opts.maxSeries ?? PROMQL_DEFAULTS.maxSeries;
    this.timeoutMs = opts.timeoutMs ?? PROMQL_DEFAULTS.timeoutMs;
  }

  /** One API call: `path` is what follows /api/v1/, `params` the query string and form body together. */
  async handle(path: string, params: URLSearchParams, access: PromAccess): Promise<PromAnswer> {
    try {
      if (path === 'query') return await this.query(params, access);
      if (path === 'query_range') return await this.queryRange(params, access);
      if (path === 'series') return await this.seriesApi(params, access);
      if (path === 'labels') return await this.labelsApi(params, access, null);
      const label = /^label\/([^/]+)\/values$/.exec(path);
      if (label) return await this.labelsApi(params, access, labelName(label[1]!));
      if (path === 'metadata') return this.metadata(params);
      if (path === 'status/buildinfo')
        return success({
          version: '2.42.0',
          revision: 'training-graph',
          branch: '',
          buildUser: '',
          buildDate: '',
          goVersion: '',
          application: 'training-graph',
        });
      return error(404, 'not_found', `unknown API endpoint /api/v1/${path}`);
    } catch (err) {
      if (err instanceof BadData) return error(400, 'bad_data', err.message);
      if (err instanceof ExecutionError) return error(422, 'execution', err.message);
      if (err instanceof QueryTimeout) return error(503, 'timeout', err.message);
      throw err;
    }
  }

  private deadline(params: URLSearchParams): number {
    const raw = params.get('timeout');
    const ms = raw ? Math.min(parseDurationParam(raw, 'timeout'), this.timeoutMs) : this.timeoutMs;
    return this.clock() + ms;
  }

  private lookback(params: URLSearchParams): number {
    const raw = params.get('lookback_delta');
    if (!raw) return this.lookbackMs;
    const ms = parseDurationParam(raw, 'lookback_delta');
    if (ms <= 0) throw new BadData('invalid parameter "lookback_delta": must be positive');
    return ms;
  }

  private parse(params: URLSearchParams): Expr {
    const q = params.get('query');
    if (q === null) throw new BadData('invalid parameter "query": no query given');
    return parsePromql(q);
  }

  private async query(params: URLSearchParams, access: PromAccess): Promise<PromAnswer> {
    const expr = this.parse(params);
    const t = parseTime(params.get('time'), 'time', this.opts.store.now().getTime());
    const lookbackMs = this.lookback(params);
    const deadline = this.deadline(params);
    const ev = await this.evaluator(expr, t, t, 1, lookbackMs, deadline, access);
    const v = ev.eval(expr, t);
    const at = t / 1000;
    if (v.type === 'scalar') return success({ resultType: 'scalar', result: [at, formatScalar(v.value)] });
    if (v.type === 'vector') {
      const samples = v.samples.map((s) => ({ metric: sortedLabels(s.labels), value: [at, formatValue(s.value)] }));
      return success({ resultType: 'vector', result: samples });
    }
    const series = [...v.series]
      .sort((a, b) => (labelKey(a.labels) < labelKey(b.labels) ? -1 : 1))
      .map((s) => ({ metric: sortedLabels(s.labels), values: s.ts.map((x, i) => [x / 1000, formatValue(s.values[i]!)]) }));
    return success({ resultType: 'matrix', result: series });
  }

  private async queryRange(params: URLSearchParams, access: PromAccess): Promise<PromAnswer> {
    const expr = this.parse(params);
    const start = parseTime(params.get('start'), 'start', Number.NaN);
    const end = parseTime(params.get('end'), 'end', Number.NaN);
    if (Number.isNaN(start)) throw new BadData('invalid parameter "start": missing');
    if (Number.isNaN(end)) throw new BadData('invalid parameter "end": missing');
    if (end < start) throw new BadData('end timestamp must not be before start time');
    const stepRaw = params.get('step');
    if (!stepRaw) throw new BadData('invalid parameter "step": missing');
    const step = parseDurationParam(stepRaw, 'step');
    if (step <= 0) throw new BadData('zero or negative query resolution step widths are not accepted. Try a positive integer');
    const points = Math.floor((end - start) / step) + 1;
    if (points > MAX_POINTS_PER_SERIES)
      throw new BadData('exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)');
    if (typeOf(expr) === 'matrix') throw new BadData('invalid expression type "range vector" for range query, must be Scalar or instant Vector');
    const lookbackMs = this.lookback(params);
    const deadline = this.deadline(params);
    const ev = await this.evaluator(expr, start, end, points, lookbackMs, deadline, access);
    // Each point is written as JSON text as it is evaluated (`[t,"v"]`, what JSON.stringify would
    // write: formatValue's strings need no escaping), not kept as a [t, "v"] array to serialise
    // later: a 24 h answer of 1,000 series is 1.44 M points (bench/promql.ts), and the arrays cost
    // more in garbage and in the serialisation than the text.
    const out = new Map<string, { metric: Labels; values: string[] }>();
    let answered = 0;
    for (let t = start; t <= end; t += step) {
      ev.checkDeadline();
      const v = ev.eval(expr, t) as Exclude<InstantValue, { type: 'matrix' }>;
      const samples = v.type === 'scalar' ? [{ labels: {}, value: v.value }] : v.samples;
      const at = t / 1000;
      for (const s of samples) {
        const key = labelKey(s.labels);
        let series = out.get(key);
        if (!series) out.set(key, (series = { metric: sortedLabels(s.labels), values: [] }));
        series.values.push(`[${at},"${formatValue(s.value)}"]`);
      }
      answered += samples.length;
      if (answered > this.maxSamples) throw tooManySamples(`more than ${this.maxSamples} points answered`);
    }
    const result = [...out.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, s]) => `{"metric":${JSON.stringify(s.metric)},"values":[${s.values.join(',')}]}`);
    const json = `{"status":"success","data":{"resultType":"matrix","result":[${result.join(',')}]}}`;
    return {
      status: 200,
      json,
      get body() {
        return JSON.parse(json);
      },
    };
  }

  /**
   * Loads what the expression's selectors need for evaluation times in [first, last]: one
   * statement for the series, two at once for the points. Refused before the points are read when
   * series x evaluation times is above the sample limit, and once the points read take the rest of
   * it (each read stops there: at most twice the limit and two series' points are ever held).
   */
  private async evaluator(expr: Expr, first: number, last: number, steps: number, lookbackMs: number, deadline: number, access: PromAccess) {
    const selectors = selectorsOf(expr, lookbackMs);
    const back = Math.max(0, ...selectors.map((s) => s.backMs));
    const series = await this.load(
      selectors.map((s) => s.matchers),
      first - back,
      last,
      access,
      (rows) => {
        const limit = `the limit of ${this.maxSamples} samples`;
        if (rows * steps > this.maxSamples) throw tooManySamples(`${rows} series x ${steps} evaluation times exceed ${limit}`);
        return {
          points: this.maxSamples - rows * steps,
          refuse: (points) => tooManySamples(`${rows} series x ${steps} evaluation times with at least ${points} stored points exceed ${limit}`),
        };
      },
    );
    const ev = new Evaluator({ lookbackMs, deadline, series, clock: this.clock });
    ev.checkDeadline();
    return ev;
  }

  /** The series any of `selectors` matches, with their points in [from, to] (or, with no `check` of their cost, their labels only). */
  private async load(
    selectors: readonly (readonly Matcher[])[],
    from: number,
    to: number,
    access: PromAccess,
    check: ((series: number) => { points: number; refuse(points: number): Error }) | null,
  ): Promise<SeriesData[]> {
    const families = FAMILY_NAMES.filter((f) =>
      selectors.some((ms) => ms.filter((m) => m.name === '__name__').every((m) => seriesMatches([m], { __name__: f }))),
    );
    if (families.length === 0 || access.providerIds.length === 0) return [];
    const names = Object.entries(SCRAPE_FAMILIES)
      .filter(([, f]) => families.includes(f.family))
      .map(([name]) => name);
    // Which series have points in the window (an index probe each, no count: counting them would
    // read every point a second time; the read below stops at the limit instead).
    const rows = await this.opts.store.accelSeriesInWindow({
      names,
      providerIds: access.providerIds,
      projectIds: access.projectIds,
      from: new Date(Math.max(from, MIN_TIME)),
      to: new Date(Math.min(to, MAX_TIME)),
      limit: this.maxSeries,
      countPoints: false,
    });
    if (rows.length > this.maxSeries) throw tooManySamples(`the query matches more than ${this.maxSeries} series`);
    const chosen = rows
      .map((r) => {
        const labels: Labels = { __name__: SCRAPE_FAMILIES[r.name]!.family };
        for (const [k, v] of Object.entries(scrapeLabels(r))) if (v !== '') labels[k] = v;
        return { row: r, labels };
      })
      .filter((s) => selectors.some((ms) => seriesMatches(ms, s.labels)));
    if (!check) return chosen.map((s) => ({ labels: s.labels, ts: NONE, values: NONE }));
    const budget = check(chosen.length);
    // The series in READ_PARTS statements at once: PostgreSQL runs one statement on one core, and
    // reading the points is most of a query's time (docs/promql.md). Each part may take the whole
    // budget; their sum is checked against it.
    const ids = chosen.map((s) => s.row.seriesId);
    const size = Math.ceil(ids.length / READ_PARTS);
    const parts = await Promise.all(
      Array.from({ length: Math.ceil(ids.length / size) }, (_, i) =>
        this.opts.store.promPointsInWindow(ids.slice(i * size, (i + 1) * size), Math.max(from, MIN_TIME), Math.min(to, MAX_TIME), budget.points),
      ),
    );
    const total = parts.reduce((n, p) => n + p.total, 0);
    if (total > budget.points) throw budget.refuse(total);
    const byId = new Map(parts.flatMap((p) => p.series).map((p) => [p.seriesId, p]));
    return chosen.map((s) => ({ labels: s.labels, ts: byId.get(s.row.seriesId)?.ts ?? NONE, values: byId.get(s.row.seriesId)?.values ?? NONE }));
  }

  private matchParams(params: URLSearchParams, required: boolean): Matcher[][] {
    const raw = params.getAll('match[]');
    if (raw.length === 0) {
      if (required) throw new BadData('no match[] parameter provided');
      return [[{ name: '__name__', op: '=~', value: '.+', re: /^(?:.+)$/ }]];
    }
    return raw.map((m) => {
      const e = parsePromql(m);
      if (e.kind !== 'selector') throw new BadData(`invalid parameter "match[]": "${m}" is not a series selector`);
      return e.matchers;
    });
  }

  private window(params: URLSearchParams): [number, number] {
    return [parseTime(params.get('start'), 'start', MIN_TIME), parseTime(params.get('end'), 'end', MAX_TIME)];
  }

  private async seriesApi(params: URLSearchParams, access: PromAccess): Promise<PromAnswer> {
    const selectors = this.matchParams(params, true);
    const [from, to] = this.window(params);
    const series = await this.load(selectors, from, to, access, null);
    const unique = new Map(series.map((s) => [labelKey(s.labels), sortedLabels(s.labels)]));
    return success([...unique.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, l]) => l));
  }

  private async labelsApi(params: URLSearchParams, access: PromAccess, name: string | null): Promise<PromAnswer> {
    const selectors = this.matchParams(params, false);
    const [from, to] = this.window(params);
    const series = await this.load(selectors, from, to, access, null);
    const out = new Set<string>();
    for (const s of series) {
      if (name === null) for (const k of Object.keys(s.labels)) out.add(k);
      else if (s.labels[name] !== undefined) out.add(s.labels[name]!);
    }
    return success([...out].sort());
  }

  private metadata(params: URLSearchParams): PromAnswer {
    const metric = params.get('metric');
    const data: Record<string, { type: string; help: string; unit: string }[]> = {};
    for (const f of FAMILY_NAMES) if (!metric || metric === f) data[f] = [{ type: 'gauge', help: HELP.get(f)!, unit: '' }];
    return success(data);
  }
}

function tooManySamples(detail: string): ExecutionError {
  return new ExecutionError(
    `query processing would load too many samples into memory in query execution (${detail}); narrow the selector, the window or the step`,
  );
}

/** The label name of /api/v1/label/<name>/values; a malformed percent-encoding is the client's error (400), as in Prometheus. */
function labelName(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new BadData(`invalid label name: the path segment ${JSON.stringify(segment.slice(0, 100))} is not valid percent-encoding`);
  }
}
