// Query.compareRuns: the same training or system metrics of several jobs, from any platforms,
// aligned on one axis (step, time, or time since each run's start) and downsampled to one grid,
// ready to draw as one chart. Each job's data is read through the cache as its own fields would
// (a failing platform fails its run alone), then the grid and every value on it come from one
// SQL statement (store: comparePoints).
import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import type { Aggregation, SystemMetric } from '../domain/types.js';
import { decodedArgs } from './decoded-args.js';
import { comparisonValueId, jsonPart, parseJsonPart, parseTextPart, textPart, valueId } from '../domain/value-ids.js';
import { type ComparisonRow, type JobRow, jobWindow } from '../store/index.js';
import { checkSeriesArgs } from './args.js';
import { builder } from './builder.js';
import { type Context, DEFAULT_LIMITS } from './context.js';
import { AggregationEnum, MetricUnitEnum, SystemMetricEnum } from './enums.js';
import { JobRef, NodeInterfaceRef, SourceErrorRef, type SourceErrorShape } from './refs.js';

export const MAX_COMPARED_JOBS = 20;
export const MAX_COMPARED_METRICS = 10;
const AXES = ['STEP', 'TIME', 'RELATIVE_TIME'] as const;
type Axis = (typeof AXES)[number];

interface CompareMetricInput {
  training?: string | null;
  system?: SystemMetric | null;
}

interface CompareArgs {
  jobIds: readonly (string | number)[];
  metrics: readonly CompareMetricInput[];
  xAxis?: Axis | null;
  from?: Date | null;
  to?: Date | null;
  maxPoints?: number | null;
  aggregation?: Aggregation | null;
}

/** The arguments as checked and normalized: what the comparison's id is made of. */
export interface CheckedCompare {
  jobIds: string[];
  metrics: { kind: 'training' | 'system'; name: string }[];
  axis: Axis;
  from: Date | null;
  to: Date | null;
  maxPoints: number;
  aggregation: Aggregation;
}

interface ComparedSeriesShape {
  runId: string;
  kind: 'training' | 'system';
  name: string;
  unit: string | null;
  values: (number | null)[];
  points: number;
  id?: string;
}

interface ComparedRunShape {
  comparisonId: string;
  jobId: string;
  job: JobRow | null;
  error: SourceErrorShape | null;
  series: ComparedSeriesShape[];
  id?: string;
}

export interface ComparisonShape {
  args: CheckedCompare;
  x: number[];
  runs: ComparedRunShape[];
  id?: string;
}

const comparisonIdOf = (a: CheckedCompare) =>
  comparisonValueId(
    jsonPart([
      a.jobIds,
      a.metrics.map((m) => [m.kind, m.name]),
      a.axis,
      a.from?.toISOString() ?? null,
      a.to?.toISOString() ?? null,
      a.maxPoints,
      a.aggregation,
    ]),
  );
export const comparedRunId = (comparisonId: string, jobId: string) => valueId('comparedrun', comparisonId, textPart(jobId));
export const comparedSeriesId = (runId: string, kind: string, name: string) => valueId('comparedseries', runId, textPart(`${kind}:${name}`));

/** The arguments a comparison id names, as compareRuns would take them; throws BAD_ID for anything else. */
export function parseComparisonPart(part: string): CompareArgs {
  const v = parseJsonPart(part);
  if (Array.isArray(v) && v.length === 7) {
    const [jobIds, metrics, xAxis, from, to, maxPoints, aggregation] = v as unknown[];
    if (Array.isArray(metrics)) {
      // Checked as compareRuns' own arguments: a forged run list, metric, axis or window is BAD_INPUT.
      const asMetric = (m: unknown) => (Array.isArray(m) && m.length === 2 ? (m[0] === 'system' ? { system: m[1] } : { training: m[1] }) : m);
      return decodedArgs(
        'Query.compareRuns',
        { jobIds, metrics: metrics.map(asMetric), xAxis, from, to, maxPoints, aggregation } as unknown as CompareArgs & Record<string, unknown>,
        'id',
      );
    }
  }
  throw new DomainError('BAD_ID', 'not an id of this graph');
}

export const parseComparedRunPart = (part: string) => parseTextPart(part);
export function parseComparedSeriesPart(part: string): { kind: string; name: string } {
  const text = parseTextPart(part);
  const colon = text.indexOf(':');
  return { kind: text.slice(0, colon), name: text.slice(colon + 1) };
}

function checkCompare(ctx: Context, args: CompareArgs): CheckedCompare {
  const jobIds = [...new Set(args.jobIds.map(String))];
  if (jobIds.length < 1 || jobIds.length > MAX_COMPARED_JOBS) {
    throw new DomainError('BAD_INPUT', `"jobIds" takes 1 to ${MAX_COMPARED_JOBS} jobs, got ${jobIds.length}`, { argument: 'jobIds' });
  }
  for (const id of jobIds) parseGlobalId(id, 'job');
  if (args.metrics.length < 1 || args.metrics.length > MAX_COMPARED_METRICS) {
    throw new DomainError('BAD_INPUT', `"metrics" takes 1 to ${MAX_COMPARED_METRICS} metrics, got ${args.metrics.length}`, { argument: 'metrics' });
  }
  const axis = args.xAxis ?? 'STEP';
  const metrics = args.metrics.map((m) => {
    const training = m.training ?? null;
    const system = m.system ?? null;
    if ((training === null) === (system === null)) {
      throw new DomainError('BAD_INPUT', 'each metric names either `training` (a training metric name) or `system` (a SystemMetric), not both', {
        argument: 'metrics',
      });
    }
    if (training !== null && (training.length === 0 || training.length > 200)) {
      throw new DomainError('BAD_INPUT', 'a training metric name is 1..200 characters', { argument: 'metrics' });
    }
    if (system !== null && axis === 'STEP') {
      throw new DomainError('BAD_INPUT', `system metric ${system} has no step: compare it by TIME or RELATIVE_TIME`, { argument: 'xAxis' });
    }
    return training !== null ? { kind: 'training' as const, name: training } : { kind: 'system' as const, name: system! };
  });
  const unique = [...new Map(metrics.map((m) => [`${m.kind}:${m.name}`, m])).values()];
  const shape = checkSeriesArgs({ from: args.from, to: args.to, maxPoints: args.maxPoints, aggregation: args.aggregation }, ctx.limits);
  return { jobIds, metrics: unique, axis, from: shape.from, to: shape.to, maxPoints: shape.maxPoints, aggregation: shape.aggregation };
}

/** Runs the comparison: each job's data read through the cache (failures per run), then one statement for the grid. */
export async function askComparison(ctx: Context, args: CompareArgs): Promise<ComparisonShape> {
  const q = checkCompare(ctx, args);
  const comparisonId = comparisonIdOf(q);
  const jobs = await ctx.store.loaders.jobById.loadMany(q.jobIds);
  const now = ctx.store.now();
  const training = q.metrics.filter((m) => m.kind === 'training').map((m) => m.name);
  const system = q.metrics.filter((m) => m.kind === 'system').map((m) => m.name as SystemMetric);
  const runs: ComparedRunShape[] = await Promise.all(
    q.jobIds.map(async (jobId, i): Promise<ComparedRunShape> => {
      const run: ComparedRunShape = { comparisonId, jobId, job: null, error: null, series: [] };
      const runId = comparedRunId(comparisonId, jobId);
      const found = jobs[i];
      if (!found || found instanceof Error) {
        const e = found instanceof DomainError ? found : null;
        run.error = { code: e?.code ?? 'NOT_FOUND', message: e?.message ?? `no job with id "${jobId.slice(0, 200)}"`, stale: false, ownerId: runId };
        return run;
      }
      run.job = found;
      const provider = ctx.store.providers.find(found.providerId);
      const reads: Promise<unknown>[] = [];
      if (training.length > 0) reads.push(ctx.store.loaders.trainingReady.load(found));
      const metrics = system.filter((m) => provider?.capabilities.systemMetrics.includes(m));
      if (metrics.length > 0)
        reads.push(ctx.store.loaders.metricsReady.load({ job: found, window: jobWindow(found, now, q.from, q.to), metrics, maxPoints: q.maxPoints }));
      for (const r of await Promise.allSettled(reads)) {
        if (r.status === 'rejected') {
          const err = r.reason as { code?: string; message?: string };
          run.error = {
            code: err.code ?? 'UPSTREAM_UNAVAILABLE',
            message: err.message ?? 'the platform failed',
            stale: false,
            providerId: found.providerId,
            job: found,
            ownerId: runId,
          };
        } else {
          const f = r.value as { stale?: boolean; fetchedAt?: Date | null; error?: { code: string; message: string } | null };
          if (f?.stale && f.error) {
            run.error = { ...f.error, stale: true, cachedAt: f.fetchedAt ?? null, providerId: found.providerId, job: found, ownerId: runId };
          }
        }
      }
      return run;
    }),
  );
  const listed = runs.filter((r) => r.job && !(r.error && !r.error.stale)).map((r) => r.jobId);
  const rows = await ctx.store.comparePoints({
    jobIds: listed,
    training,
    system,
    axis: q.axis,
    buckets: q.maxPoints,
    aggregation: q.aggregation,
    from: q.from,
    to: q.to,
  });
  return { args: q, id: comparisonId, ...onGrid(comparisonId, q, runs, rows) };
}

/** The shared grid (the buckets any run has a value in, in order) and each run's values on it. */
function onGrid(comparisonId: string, q: CheckedCompare, runs: ComparedRunShape[], rows: ComparisonRow[]): Pick<ComparisonShape, 'x' | 'runs'> {
  const buckets = [...new Map(rows.map((r) => [r.bucket, r.x])).entries()].sort((a, b) => a[0] - b[0]);
  const position = new Map(buckets.map(([b], i) => [b, i]));
  const cells = new Map<string, ComparisonRow[]>();
  for (const r of rows) {
    const k = `${r.jobId}|${r.kind}|${r.name}`;
    const list = cells.get(k);
    if (list) list.push(r);
    else cells.set(k, [r]);
  }
  for (const run of runs) {
    const runId = comparedRunId(comparisonId, run.jobId);
    run.series = q.metrics.map((m) => {
      const mine = cells.get(`${run.jobId}|${m.kind}|${m.name}`) ?? [];
      const values: (number | null)[] = buckets.map(() => null);
      for (const r of mine) values[position.get(r.bucket)!] = r.value;
      return { runId, kind: m.kind, name: m.name, unit: mine[0]?.unit ?? null, values, points: mine.reduce((n, r) => n + r.points, 0) };
    });
  }
  return { x: buckets.map(([, x]) => x), runs };
}

const CompareAxisEnum = builder.enumType('CompareAxis', {
  description: 'The x axis runs are aligned on',
  values: {
    STEP: { description: 'Training step (a count); training metrics only (system metrics have no step)' },
    TIME: { description: 'Wall-clock time: x in epoch milliseconds (UTC)' },
    RELATIVE_TIME: { description: "Time since each run's start (else its creation): x in seconds, so runs started apart line up" },
  },
});

const CompareMetricRef = builder.inputRef<CompareMetricInput>('CompareMetric').implement({
  description: 'One metric to compare: exactly one of `training` or `system`',
  fields: (t) => ({
    training: t.string({ required: false, description: 'A training metric name as the platform logs it (e.g. "loss"), 1..200 characters' }),
    system: t.field({
      type: SystemMetricEnum,
      required: false,
      description: "A system metric, in its canonical unit; a job's devices at their finest scope, aggregated per bucket",
    }),
  }),
});

const ComparedSeriesRef = builder.objectRef<ComparedSeriesShape>('ComparedSeries');
ComparedSeriesRef.implement({
  description: "One metric of one run on the comparison's grid",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({
      description: "Global id (a Node id): the run's id plus the metric, `*:comparedseries:<metric>:<run id>`; the same question gives the same id",
      resolve: (s) => s.id ?? comparedSeriesId(s.runId, s.kind, s.name),
    }),
    metric: t.exposeString('name', { description: 'The metric: a training metric name, or a SystemMetric value' }),
    training: t.boolean({ description: 'True for a training metric, false for a system metric', resolve: (s) => s.kind === 'training' }),
    unit: t.field({
      type: MetricUnitEnum,
      nullable: true,
      description: "The values' unit (NONE for training metrics); null when the run has no point of this metric",
      resolve: (s) => s.unit as never,
    }),
    values: t.field({
      type: ['Float'],
      // One element per grid bucket: compareRuns' maxPoints, its default assumed.
      directives: { listSize: { assumedSize: DEFAULT_LIMITS.defaultMaxPoints } },
      nullable: { list: false, items: true },
      description: 'One value per x of the grid (RunComparison.x), aggregated over the bucket; null where this run has no point in it',
      resolve: (s) => s.values,
    }),
    points: t.int({ description: 'Raw points of this run and metric on the grid (a count); 0 when it has none', resolve: (s) => s.points }),
  }),
});

const ComparedRunRef = builder.objectRef<ComparedRunShape>('ComparedRun');
ComparedRunRef.implement({
  description: 'One job of a comparison: its metrics on the shared grid, or why it has none',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({
      description: "Global id (a Node id): the comparison's id plus the job's, `*:comparedrun:<job id>:<comparison id>`",
      resolve: (r) => r.id ?? comparedRunId(r.comparisonId, r.jobId),
    }),
    jobId: t.id({ description: 'The job id as asked', resolve: (r) => r.jobId }),
    job: t.field({ type: JobRef, nullable: true, description: 'The job; null when there is no such job (see error)', resolve: (r) => r.job }),
    error: t.field({
      type: SourceErrorRef,
      nullable: true,
      description:
        "Why this run's data is missing (NOT_FOUND, the platform's failure) or old (stale: true, served from the cache); null when it is fine. A failing run fails alone",
      resolve: (r) => r.error,
    }),
    series: t.field({
      type: [ComparedSeriesRef],
      directives: { listSize: { assumedSize: MAX_COMPARED_METRICS } },
      description: 'One per asked metric, in the order asked',
      resolve: (r) => r.series,
    }),
  }),
});

const RunComparisonRef = builder.objectRef<ComparisonShape>('RunComparison');
RunComparisonRef.implement({
  description: 'Several runs, from any platforms, aligned on one axis and downsampled to one grid: draw x against each series.values',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({
      description: 'Global id (a Node id): the question, `*:comparison:<arguments>`; the same arguments give the same id (and Query.node asks again)',
      resolve: (c) => c.id ?? comparisonIdOf(c.args),
    }),
    xAxis: t.field({ type: CompareAxisEnum, description: 'The axis as asked', resolve: (c) => c.args.axis }),
    x: t.field({
      type: ['Float'],
      // One element per grid bucket: compareRuns' maxPoints, its default assumed.
      directives: { listSize: { assumedSize: DEFAULT_LIMITS.defaultMaxPoints } },
      description:
        "The grid, ascending: each bucket's first x over all runs (STEP: the step; TIME: epoch ms; RELATIVE_TIME: seconds since the run's start). At most maxPoints; only buckets some run has a value in",
      resolve: (c) => c.x,
    }),
    runs: t.field({
      type: [ComparedRunRef],
      directives: { listSize: { assumedSize: MAX_COMPARED_JOBS } },
      description: 'One per asked job, in the order asked',
      resolve: (c) => c.runs,
    }),
  }),
});

builder.queryFields((t) => ({
  compareRuns: t.field({
    type: RunComparisonRef,
    directives: { cost: { weight: 50 } },
    description: 'The same training or system metrics of several jobs, from any platforms, aligned on one axis and downsampled to one grid (one chart)',
    args: {
      jobIds: t.arg.idList({ required: true, description: `The jobs (Job ids), 1..${MAX_COMPARED_JOBS}` }),
      metrics: t.arg({ type: [CompareMetricRef], required: true, description: `The metrics, 1..${MAX_COMPARED_METRICS}` }),
      xAxis: t.arg({ type: CompareAxisEnum, required: false, description: 'The axis; default STEP' }),
      from: t.arg({ type: 'DateTime', required: false, description: 'Only points at or after this time; default: each run from its start' }),
      to: t.arg({
        type: 'DateTime',
        required: false,
        description: "Only points at or before this time; default: to each run's end or now. [from, to] may span at most 366 days unless configured",
      }),
      maxPoints: t.arg.int({ required: false, description: 'Buckets of the grid, 1..the server cap (default 500, cap 10000 unless configured)' }),
      aggregation: t.arg({ type: AggregationEnum, required: false, description: 'How the points of one bucket are combined; default AVG' }),
    },
    resolve: (_r, args, ctx) => askComparison(ctx, args),
  }),
}));

export type { ComparedRunShape, ComparedSeriesShape };
