// Subscription: live utilization, job status changes and log lines. Resolvers only talk to the
// live hub (src/live), whose shared pollers write through the store; no subscription polls upstream.
import { DomainError, type ErrorCode } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import type { LiveHub } from '../live/hub.js';
import { jobRowFromJson, type LivePayload, type LogLinePayload, type SamplePayload } from '../live/events.js';
import { cacheOnlyConditions, jobMatches, jobWindow, type JobRow } from '../store/index.js';
import { checkSeriesArgs } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { AggregationEnum, MetricScopeEnum, SystemMetricEnum } from './enums.js';
import { JobFilterRef, resolveJobFilter } from './job-filter.js';
import { LogLineRef, type LogLineView } from './job.js';
import { MetricSeriesRef, seriesView } from './metric-series.js';
import { JobRef, NodeInterfaceRef } from './refs.js';
import type { SystemSeriesQuery } from './series-fields.js';
import { ID_DOCS, linePositions, sampleId } from './value-ids.js';

export interface SampleView {
  payload: SamplePayload;
  args: SystemSeriesQuery;
  /** Set when Query.node answered it: the id asked. */
  id?: string;
}

/** The sample's id: the job's and the subscription's arguments (as checked: defaults applied), one per feed and arguments. */
function idOfSample(ctx: Context, s: SampleView): string {
  const shape = checkSeriesArgs(s.args, ctx.limits);
  return sampleId(s.payload.jobId, { names: s.args.names ?? null, scope: s.args.scope ?? null, maxPoints: shape.maxPoints, aggregation: shape.aggregation });
}

/** The latest sample of the job's live feed on this server (every series it sampled so far), as a joining subscriber gets it first. */
export function latestSample(ctx: Context, jobId: string, args: SystemSeriesQuery): SampleView | null {
  const payload = ctx.live?.latestSample(jobId) ?? null;
  return payload ? { payload, args } : null;
}

/** The job as stored after the poll (read only when a selected field needs it). */
const jobOf = (ctx: Context, s: SampleView): Promise<JobRow | null> => ctx.store.loaders.jobById.load(s.payload.jobId);

const UtilizationSampleRef = builder.objectRef<SampleView>('UtilizationSample');
UtilizationSampleRef.implement({
  description:
    "One poll of a job's platform: the job's series that got new points, as the same MetricSeries objects (same ids, same window and shaping) Job.metrics answers for the same arguments, read from the store after the poll wrote them. A client cache that holds the series from a query sees them updated in place.",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.UtilizationSample, resolve: (s, _a, ctx) => s.id ?? idOfSample(ctx, s) }),
    job: t.field({
      type: JobRef,
      nullable: true,
      description: 'The job as stored after this poll (its status is the polled one); null if it is gone',
      resolve: (s, _a, ctx) => jobOf(ctx, s),
    }),
    polledAt: t.field({ type: 'DateTime', description: "When the poll's result went out", resolve: (s) => new Date(s.payload.polledAt) }),
    from: t.field({ type: 'DateTime', description: 'Start of the window this poll asked the platform for', resolve: (s) => new Date(s.payload.from) }),
    to: t.field({ type: 'DateTime', description: 'End of the window this poll asked the platform for', resolve: (s) => new Date(s.payload.to) }),
    interval: t.field({
      type: 'Duration',
      description: "How often this job is polled (the provider's pollIntervalSeconds; failures back off up to 5 minutes)",
      resolve: (s) => s.payload.intervalSeconds,
    }),
    granularity: t.field({
      type: MetricScopeEnum,
      description: 'The finest scope the platform reports: GPU when it has per-GPU series, NODE when only node aggregates',
      resolve: (s) => s.payload.granularity,
    }),
    final: t.boolean({ description: 'The job has finished: this is the last sample and the stream completes', resolve: (s) => s.payload.final }),
    series: t.field({
      type: [MetricSeriesRef],
      description:
        "The series that got points in this poll (on a subscriber's first sample: every series the feed has sampled), each over the job's whole window (its start to this sample's `to`; on a subscriber's first sample, to the moment the server made it, so it holds what a query stored since the poll) at the subscription's maxPoints and aggregation, as Job.metrics answers them",
      resolve: (s, _a, ctx) => liveSeries(ctx, s),
    }),
  }),
});

/** The sample's series as Job.metrics(names, scope, maxPoints, aggregation) would answer them, read from the store. */
async function liveSeries(ctx: Context, s: SampleView) {
  const job = await jobOf(ctx, s);
  if (!job) return [];
  const shape = checkSeriesArgs(s.args, ctx.limits);
  const keys = new Set(s.payload.series);
  const names = s.args.names?.length ? new Set<string>(s.args.names) : null;
  const rows = await ctx.store.loaders.seriesOfJob.load({ jobId: job.id, kind: 'system' });
  // The window ends where the poll asked the platform to (on the store's clock; polledAt is the
  // wall clock's moment it went out), or for a joiner's first sample where the store was when it
  // was made; not at each subscriber's own moment: every subscriber of the event asks the store the
  // same question (and shares its answer).
  const window = jobWindow(job, new Date(s.payload.readTo ?? s.payload.to), null, null);
  // Just written by the poll, so as fresh as the poll.
  const freshness = { fetchedAt: new Date(s.payload.polledAt), stale: false, error: null };
  return rows
    .filter((r) => keys.has(r.seriesKey) && (!names || names.has(r.name)) && (!s.args.scope || r.scope === s.args.scope))
    .map((row) => seriesView(row, window, shape, freshness));
}

function liveOf(ctx: Context): LiveHub {
  if (!ctx.live) throw new DomainError('UNSUPPORTED', 'live subscriptions are not enabled on this server');
  return ctx.live;
}

/** An error event (upstream failing, backing off) reaches the client as a `next` with errors; the stream goes on. */
function unlessError<T>(payload: unknown): T {
  const p = payload as LivePayload;
  if (p && typeof p === 'object' && 'type' in p && p.type === 'error') {
    throw new DomainError(p.code as ErrorCode, p.message, { retryInSeconds: p.retryInSeconds, attempt: p.attempt, live: true });
  }
  return payload as T;
}

/** What a utilization subscriber gets of its feed's events (one function for all of them). */
const samplesAndErrors = (p: LivePayload) => (p.type === 'sample' || p.type === 'error' ? [p] : []);

async function requireJob(ctx: Context, jobId: string) {
  parseGlobalId(jobId, 'job');
  const job = await ctx.store.loaders.jobById.load(jobId);
  if (!job) throw new DomainError('NOT_FOUND', `no job with id "${jobId.slice(0, 200)}"`);
  return job;
}

builder.subscriptionType({
  description: 'Live data over graphql-ws (or SSE): utilization series, job status changes and log lines, from pollers shared by all subscribers',
  fields: (t) => ({
    jobUtilization: t.field({
      type: UtilizationSampleRef,
      description:
        'Live utilization and memory series of a job (per GPU where the platform has them, else per node), one sample per poll of its platform, shared by all subscribers; a subscriber joining a running feed first gets the series so far; completes when the job has finished',
      args: {
        jobId: t.arg.id({ required: true, description: 'The Job id' }),
        names: t.arg({
          type: [SystemMetricEnum],
          required: false,
          description: 'Only these metrics; default: every utilization and memory metric the platform reports',
        }),
        scope: t.arg({ type: MetricScopeEnum, required: false, description: 'Only series of this scope; default: every scope' }),
        maxPoints: t.arg.int({
          required: false,
          description: 'Points per series over the whole window, 1..the server cap (default 500, cap 10000 unless configured)',
        }),
        aggregation: t.arg({ type: AggregationEnum, required: false, description: 'How buckets are combined when downsampled; default AVG' }),
      },
      subscribe: async (_root, args, ctx) => {
        const jobId = String(args.jobId);
        checkSeriesArgs(args, ctx.limits);
        await requireJob(ctx, jobId);
        const live = liveOf(ctx);
        return live.subscribe([{ kind: 'utilization', key: jobId }], { capacity: live.options.sampleBuffer, expand: samplesAndErrors });
      },
      resolve: async (payload, args, ctx) => {
        const p = unlessError<SamplePayload>(payload);
        // One context lives as long as the subscription: each event reads current rows, and every
        // subscriber of this event shares the reads (store/index.ts startEvent).
        ctx.store.startEvent(p);
        return { payload: p, args };
      },
    }),
    jobStatusChanged: t.field({
      type: JobRef,
      description: 'Jobs whose status changed (or that appeared), among those the filter selects',
      args: { filter: t.arg({ type: JobFilterRef, required: false, description: 'Which jobs to hear about; default: every job the caller may see' }) },
      subscribe: (_root, args, ctx) => {
        const live = liveOf(ctx);
        const { providerIds, jobs } = resolveJobFilter(ctx, args.filter);
        const cacheOnly = cacheOnlyConditions(jobs);
        if (cacheOnly.length > 0) {
          // A status event carries the job alone; these conditions read its cached series and summaries.
          throw new DomainError('BAD_INPUT', `"${cacheOnly[0]}" is a search condition over cached training metrics, not for a live stream`, {
            argument: `filter.${cacheOnly[0]}`,
          });
        }
        return live.subscribe(
          providerIds.map((pid) => ({ kind: 'status' as const, key: pid })),
          {
            capacity: live.options.statusBuffer,
            expand: (p) => {
              if (p.type === 'error') return [p];
              if (p.type !== 'status') return [];
              return jobMatches(jobs, jobRowFromJson(p.job)) ? [p] : [];
            },
          },
        );
      },
      resolve: (payload, _args, ctx) => {
        const p = unlessError<{ job: Parameters<typeof jobRowFromJson>[0] }>(payload);
        ctx.store.startEvent(p);
        return jobRowFromJson(p.job);
      },
    }),
    jobLogs: t.field({
      type: LogLineRef,
      description: 'Log lines of a job as they arrive (from about a minute back), in order, none twice; completes when the job has finished',
      args: { jobId: t.arg.id({ required: true, description: 'The Job id' }) },
      subscribe: async (_root, args, ctx) => {
        const jobId = String(args.jobId);
        const job = await requireJob(ctx, jobId);
        const provider = ctx.store.providers.find(job.providerId);
        if (!provider?.capabilities.logs) throw new DomainError('UNSUPPORTED', `${provider?.kind ?? 'this platform'} has no log API`);
        const live = liveOf(ctx);
        return live.subscribe([{ kind: 'logs', key: jobId }], {
          capacity: live.options.logBuffer,
          expand: (p) => {
            if (p.type === 'error') return [p];
            if (p.type !== 'logs') return [];
            // Each line with where it sits (after the line before it), as Job.logs places it: the same line has the same id.
            const positions = linePositions(p.lines, p.after ?? null, p.after ? null : p.since ? new Date(p.since) : null);
            return p.lines.map((line, i) => ({ line, jobId, position: positions[i]! }));
          },
        });
      },
      resolve: (payload): LogLineView => {
        const { line, jobId, position } = unlessError<{ line: LogLinePayload; jobId: string; position: LogLineView['position'] }>(payload);
        return { ...line, timestamp: line.timestamp ? new Date(line.timestamp) : null, jobId, position };
      },
    }),
  }),
});
