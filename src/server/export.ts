// Series as files for notebooks: GET /export/jobs/<job id>/metrics.csv (or .jsonl) and
// /export/jobs/<job id>/training-metrics.csv|.jsonl, with the arguments of Job.metrics and
// Job.trainingMetrics as query parameters. Each export runs the equivalent GraphQL operation
// through the same app (the same argument checks, limits, token scope, error codes and cache), and
// streams the answer's points as rows, gzip-compressed when the client accepts it.
import type http from 'node:http';
import { PassThrough, type Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { DomainError } from '../domain/errors.js';
import { checkSeriesArgs, type Limits } from '../schema/index.js';
import type { App } from './yoga.js';

const PATH = /^\/export\/jobs\/([^/]+)\/(metrics|training-metrics)\.(csv|jsonl)$/;
const MAY_BE_EXPORT = /export|[\t\n\r]/;

const seriesFields = (point: string) =>
  `id name unit scope source stage rawName node { name } gpu { index } freshness { stale cachedAt: fetchedAt error { code message } } points { ${point} }`;

const QUERIES = {
  metrics: `query Export($id: ID!, $names: [SystemMetric!], $scope: MetricScope, $from: DateTime, $to: DateTime, $maxPoints: Int, $aggregation: Aggregation) {
    job(id: $id) { id metrics(names: $names, scope: $scope, from: $from, to: $to, maxPoints: $maxPoints, aggregation: $aggregation) { ${seriesFields('timestamp value')} } } }`,
  'training-metrics': `query Export($id: ID!, $names: [String!], $from: DateTime, $to: DateTime, $maxPoints: Int, $aggregation: Aggregation) {
    job(id: $id) { id trainingMetrics(names: $names, from: $from, to: $to, maxPoints: $maxPoints, aggregation: $aggregation) { ${seriesFields('timestamp step value')} } } }`,
} as const;

/** The query parameters each export takes (the field's arguments); anything else is refused. */
const PARAMS = {
  metrics: ['names', 'scope', 'from', 'to', 'maxPoints', 'aggregation'],
  'training-metrics': ['names', 'from', 'to', 'maxPoints', 'aggregation'],
} as const;

/** A JSON Lines row: a point with everything its series is. */
export const EXPORT_COLUMNS = ['job_id', 'series_id', 'metric', 'unit', 'scope', 'node', 'gpu', 'source', 'stage', 'timestamp', 'step', 'value'] as const;
/**
 * CSV keeps its rows short: a series' identity (a ~230-character id among it) was repeated on every
 * point row, 309 KB for 7,888 rows. The file opens with the series table as `# ` comment lines
 * (CSV after the prefix), and each point row names its series by the table's short `series` key.
 */
export const CSV_SERIES_COLUMNS = ['series', 'job_id', 'series_id', 'metric', 'unit', 'scope', 'node', 'gpu', 'source', 'stage'] as const;
export const CSV_POINT_COLUMNS = ['series', 'timestamp', 'step', 'value'] as const;

const STATUS_OF_CODE: Record<string, number> = {
  BAD_INPUT: 400,
  BAD_REQUEST: 400,
  BAD_ID: 400,
  GRAPHQL_VALIDATION_FAILED: 400,
  NOT_FOUND: 404,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  QUERY_TOO_COSTLY: 400,
  RATE_LIMITED: 429,
};

interface ExportedSeries {
  id: string;
  name: string;
  unit: string;
  scope: string;
  source: string;
  stage: string | null;
  node: { name: string } | null;
  gpu: { index: number } | null;
  freshness: { stale: boolean; cachedAt: string | null; error: { code: string; message: string } | null };
  points: { timestamp: string | null; step?: number | null; value: number | null }[];
}

interface GqlError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; argument?: string; http?: { status?: number } };
}

/** Text a spreadsheet would read as a formula (OWASP's CSV injection list: = + - @ tab, carriage return). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell. Text that starts like a formula (a metric named `=1+2` or `@SUM(1,1)`) is
 * neutralised as OWASP recommends: a single quote before it, and the cell quoted. Numbers are
 * written as numbers, never prefixed: a negative value or step is data a notebook must read back
 * as a number, and a number cannot carry a formula (only text cells can, so only they are touched).
 */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return String(v);
  const s = String(v);
  if (FORMULA_START.test(s)) return `"'${s.replace(/"/g, '""')}"`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function refuse(res: http.ServerResponse, status: number, errors: GqlError[], extra: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...extra });
  res.end(JSON.stringify({ errors }));
}

/**
 * A query parameter the operation could not take (an unknown enum value, a malformed time) is
 * reported by GraphQL against its variable, which is named after the argument: said as the
 * fields say bad input, BAD_INPUT naming the argument.
 */
function asArgumentError(e: GqlError): GqlError {
  const variable = /^Variable "\$(\w+)" got invalid value/.exec(e.message);
  if (!variable) return e;
  return { message: e.message, extensions: { code: 'BAD_INPUT', argument: variable[1]! } };
}

/** Writes one chunk, waiting while the client's socket is full; false once the client has gone. */
async function write(out: Writable, chunk: string, res: http.ServerResponse): Promise<boolean> {
  if (res.destroyed) return false;
  if (!out.write(chunk))
    await new Promise<void>((resolve) => {
      const done = () => {
        out.off('drain', done);
        res.off('close', done);
        resolve();
      };
      out.once('drain', done);
      res.once('close', done);
    });
  return !res.destroyed;
}

/** A path segment decoded, or null when its percent-encoding is malformed. */
function decodedSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** True when the request was an export (answered here), false for any other path. */
export function serveExport(req: http.IncomingMessage, res: http.ServerResponse, app: App, limits: Limits): boolean {
  // Every request passes here on its way to GraphQL: one that cannot be an export is let go before
  // its URL is parsed. Its path would need the letters of "export": URL parsing adds none, it only
  // drops tabs and line breaks from between them.
  if ((req.method !== 'GET' && req.method !== 'HEAD') || !req.url || !MAY_BE_EXPORT.test(req.url)) return false;
  // A target URL cannot parse (`http://[`) or a job id whose percent-encoding is malformed (`%`,
  // `%zz`, a cut UTF-8 sequence) is the client's mistake: 400, never a throw out of the listener.
  const url = URL.parse(req.url, 'http://x');
  if (!url) return false;
  const m = PATH.exec(url.pathname);
  if (!m) return false;
  const jobId = decodedSegment(m[1]!);
  if (jobId === null) {
    refuse(res, 400, [{ message: 'the job id in the path is not valid percent-encoded UTF-8', extensions: { code: 'BAD_INPUT', argument: 'id' } }]);
    return true;
  }
  void answer(req, res, app, limits, url, jobId, m[2] as keyof typeof QUERIES, m[3] as 'csv' | 'jsonl').catch((err) => {
    if (!res.headersSent) refuse(res, 500, [{ message: 'the export failed', extensions: { code: 'INTERNAL' } }]);
    else res.destroy(err as Error);
  });
  return true;
}

/** What a series is: its row in the CSV's series table, the leading fields of each JSON Lines row. */
function identity(jobId: string, s: ExportedSeries) {
  return {
    job_id: jobId,
    series_id: s.id,
    metric: s.name,
    unit: s.unit,
    scope: s.scope,
    node: s.node?.name ?? null,
    gpu: s.gpu?.index ?? null,
    source: s.source,
    stage: s.stage,
  };
}

async function answer(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  app: App,
  limits: Limits,
  url: URL,
  jobId: string,
  kind: keyof typeof QUERIES,
  format: 'csv' | 'jsonl',
) {
  const allowed = new Set<string>(PARAMS[kind]);
  for (const key of url.searchParams.keys()) {
    if (!allowed.has(key)) {
      return refuse(res, 400, [
        { message: `unknown parameter "${key}"; this export takes ${[...allowed].join(', ')}`, extensions: { code: 'BAD_INPUT', argument: key } },
      ]);
    }
  }
  const variables: Record<string, unknown> = { id: jobId };
  const names = url.searchParams.get('names');
  if (names)
    variables.names = names
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean);
  for (const key of ['scope', 'from', 'to', 'aggregation'] as const) if (url.searchParams.has(key)) variables[key] = url.searchParams.get(key);
  if (url.searchParams.has('maxPoints')) {
    const raw = url.searchParams.get('maxPoints')!;
    if (!/^\d{1,9}$/.test(raw))
      return refuse(res, 400, [{ message: `"maxPoints" must be a whole number, got "${raw}"`, extensions: { code: 'BAD_INPUT', argument: 'maxPoints' } }]);
    variables.maxPoints = Number(raw);
  }
  // The field's own checks, before the operation: its cost estimate would otherwise refuse a
  // maxPoints above the cap as too costly instead of naming the argument.
  const when = (key: 'from' | 'to') => {
    const d = new Date(String(variables[key] ?? ''));
    return variables[key] !== undefined && !Number.isNaN(d.getTime()) ? d : null;
  };
  try {
    checkSeriesArgs({ from: when('from'), to: when('to'), maxPoints: variables.maxPoints as number | undefined }, limits);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return refuse(res, 400, [{ message: err.message, extensions: { code: 'BAD_INPUT', argument: err.details.argument as string } }]);
  }
  const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json' });
  if (req.headers.authorization) headers.set('authorization', req.headers.authorization);
  const requestId = req.headers['x-request-id'];
  if (typeof requestId === 'string') headers.set('x-request-id', requestId);
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  const gql = await app.fetch('http://training-graph/graphql', {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: QUERIES[kind], variables }),
    signal: abort.signal,
  });
  const body = (await gql.json()) as {
    data?: { job: { id: string; metrics?: ExportedSeries[] | null; trainingMetrics?: ExportedSeries[] | null } | null } | null;
    errors?: GqlError[];
  };
  const job = body.data?.job ?? null;
  const series = job ? (kind === 'metrics' ? job.metrics : job.trainingMetrics) : null;
  // Stale data is data: exported with a header saying so; anything else that failed is refused whole.
  const hard = (body.errors ?? []).filter((e) => !(e.extensions as { stale?: boolean } | undefined)?.stale).map(asArgumentError);
  if (!job || !series || hard.length > 0) {
    const first = hard[0] ?? { message: `no job with id "${jobId.slice(0, 200)}"`, extensions: { code: 'NOT_FOUND' } };
    const code = first.extensions?.code ?? 'INTERNAL';
    const status = first.extensions?.http?.status ?? STATUS_OF_CODE[code] ?? (gql.status >= 400 ? gql.status : 502);
    const retryAfter = (first.extensions as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
    const extra: Record<string, string> =
      status === 401 ? { 'www-authenticate': 'Bearer' } : status === 429 && typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {};
    return refuse(res, status, hard.length > 0 ? hard : [first], extra);
  }
  const stale = series.filter((s) => s.freshness.stale);
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  res.writeHead(200, {
    'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    'content-disposition': `inline; filename="${kind}.${format}"`,
    ...(gzip ? { 'content-encoding': 'gzip', vary: 'accept-encoding' } : {}),
    ...(stale.length > 0
      ? { 'x-stale': `${stale.length} series served from the cache after a failed refresh (${stale[0]!.freshness.error?.code ?? 'UPSTREAM_UNAVAILABLE'})` }
      : {}),
  });
  if (req.method === 'HEAD') return res.end();
  let out: Writable = res;
  if (gzip) {
    const z = createGzip();
    z.pipe(res);
    out = z;
  } else {
    const pass = new PassThrough();
    pass.pipe(res);
    out = pass;
  }
  if (format === 'csv') {
    // A line break would end the comment line: within the table it is a space.
    const cell = (v: unknown) => csvCell(typeof v === 'string' ? v.replace(/[\r\n]+/g, ' ') : v);
    const table = series.map((s, i) => `# ${CSV_SERIES_COLUMNS.map((c) => cell(c === 'series' ? i + 1 : identity(job.id, s)[c])).join(',')}\n`);
    if (!(await write(out, `# ${CSV_SERIES_COLUMNS.join(',')}\n${table.join('')}${CSV_POINT_COLUMNS.join(',')}\n`, res))) return;
  }
  for (const [i, s] of series.entries()) {
    const base = identity(job.id, s);
    let chunk = '';
    for (const p of s.points) {
      chunk +=
        format === 'csv'
          ? `${i + 1},${csvCell(p.timestamp)},${csvCell(p.step)},${csvCell(p.value)}\n`
          : `${JSON.stringify({ ...base, timestamp: p.timestamp, step: p.step, value: p.value })}\n`;
      if (chunk.length >= 64 * 1024) {
        if (!(await write(out, chunk, res))) return;
        chunk = '';
      }
    }
    if (chunk && !(await write(out, chunk, res))) return;
  }
  out.end();
}
