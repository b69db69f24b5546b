// Subscription: live utilization, job status changes and log lines. Resolvers only talk to the
// live hub (src/live), whose shared pollers write through the store; no subscription polls upstream.
import { DomainError, type ErrorCode } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import type { LiveHub } from '../live/hub.js';
import {
  jobRowFromJson,
  type GpuUtilizationPayload,
  type LivePayload,
  type LogLinePayload,
  type NodeUtilizationPayload,
  type SamplePayload,
  type UtilizationPointPayload,
} from '../live/events.js';
import { jobMatches } from '../store/index.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { JobStatusEnum, MetricScopeEnum } from './enums.js';
import { JobFilterRef, resolveJobFilter } from './job-filter.js';
import { LogLineRef } from './job.js';
import { JobRef } from './refs.js';

const UtilizationPointRef = builder.objectRef<UtilizationPointPayload>('UtilizationPoint');
const GpuUtilizationRef = builder.objectRef<GpuUtilizationPayload>('GpuUtilization');
const NodeUtilizationRef = builder.objectRef<NodeUtilizationPayload>('NodeUtilization');
const UtilizationSampleRef = builder.objectRef<SamplePayload>('UtilizationSample');

const ratio = 'ratio 0..1';
UtilizationPointRef.implement({
  description: 'One instant of one GPU, node or job. Only the metrics the platform reports at that scope are set; null = not reported (or a gap).',
  fields: (t) => ({
    timestamp: t.field({ type: 'DateTime', resolve: (p) => new Date(p.t) }),
    gpuUtilization: t.float({ nullable: true, description: ratio, resolve: (p) => p.gpuUtilization ?? null }),
    gpuMemoryUsedBytes: t.float({ nullable: true, resolve: (p) => p.gpuMemoryUsedBytes ?? null }),
    gpuMemoryUtilization: t.float({ nullable: true, description: ratio, resolve: (p) => p.gpuMemoryUtilization ?? null }),
    npuUtilization: t.float({ nullable: true, description: ratio, resolve: (p) => p.npuUtilization ?? null }),
    npuMemoryUtilization: t.float({ nullable: true, description: ratio, resolve: (p) => p.npuMemoryUtilization ?? null }),
    cpuUsageCores: t.float({ nullable: true, resolve: (p) => p.cpuUsageCores ?? null }),
    cpuUtilization: t.float({ nullable: true, description: ratio, resolve: (p) => p.cpuUtilization ?? null }),
    memoryUsedBytes: t.float({ nullable: true, resolve: (p) => p.memoryUsedBytes ?? null }),
    memoryUtilization: t.float({ nullable: true, description: ratio, resolve: (p) => p.memoryUtilization ?? null }),
  }),
});

GpuUtilizationRef.implement({
  description: 'One GPU (or NPU) of the job: its points in this sample, oldest first',
  fields: (t) => ({
    gpuId: t.id({ nullable: true, description: 'The Gpu id, for Query.job(...).gpus', resolve: (g) => g.gpuId }),
    nodeId: t.id({ nullable: true, resolve: (g) => g.nodeId }),
    nodeName: t.string({ nullable: true, resolve: (g) => g.nodeName }),
    index: t.exposeInt('index'),
    latest: t.field({ type: UtilizationPointRef, nullable: true, resolve: (g) => g.points.at(-1) ?? null }),
    points: t.field({ type: [UtilizationPointRef], resolve: (g) => g.points }),
  }),
});

NodeUtilizationRef.implement({
  description: 'One node (task, pod, host) of the job: its node-level points in this sample, oldest first',
  fields: (t) => ({
    nodeId: t.id({ nullable: true, resolve: (n) => n.nodeId }),
    name: t.exposeString('name'),
    latest: t.field({ type: UtilizationPointRef, nullable: true, resolve: (n) => n.points.at(-1) ?? null }),
    points: t.field({ type: [UtilizationPointRef], resolve: (n) => n.points }),
  }),
});

UtilizationSampleRef.implement({
  description:
    'One poll of a job: the points stored since the previous sample, per GPU, per node and for the whole job, in canonical units. ' +
    'The same points answer Job.metrics afterwards.',
  fields: (t) => ({
    jobId: t.exposeID('jobId'),
    job: t.field({ type: JobRef, nullable: true, resolve: (s, _a, ctx) => ctx.store.loaders.jobById.load(s.jobId) }),
    status: t.field({ type: JobStatusEnum, resolve: (s) => s.status as never }),
    polledAt: t.field({ type: 'DateTime', resolve: (s) => new Date(s.polledAt) }),
    from: t.field({ type: 'DateTime', description: 'The window this poll asked the platform for', resolve: (s) => new Date(s.from) }),
    to: t.field({ type: 'DateTime', resolve: (s) => new Date(s.to) }),
    intervalSeconds: t.exposeFloat('intervalSeconds', { description: 'How often this job is polled' }),
    granularity: t.field({
      type: MetricScopeEnum,
      description: 'The finest scope the platform reports: GPU when it has per-GPU series, NODE when only node aggregates',
      resolve: (s) => s.granularity,
    }),
    final: t.exposeBoolean('final', { description: 'The job has finished: this is the last sample and the stream completes' }),
    gpus: t.field({ type: [GpuUtilizationRef], resolve: (s) => s.gpus }),
    nodes: t.field({ type: [NodeUtilizationRef], resolve: (s) => s.nodes }),
    jobPoints: t.field({ type: [UtilizationPointRef], description: 'Job-level points, where the platform reports job aggregates', resolve: (s) => s.job }),
  }),
});

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

async function requireJob(ctx: Context, jobId: string) {
  parseGlobalId(jobId, 'job');
  const job = await ctx.store.loaders.jobById.load(jobId);
  if (!job) throw new DomainError('NOT_FOUND', `no job with id "${jobId.slice(0, 200)}"`);
  return job;
}

builder.subscriptionType({
  fields: (t) => ({
    jobUtilization: t.field({
      type: UtilizationSampleRef,
      description: "Per-GPU and per-node utilization and memory of a job, one sample per poll of its platform; completes when the job has finished",
      args: { jobId: t.arg.id({ required: true }) },
      subscribe: async (_root, args, ctx) => {
        const jobId = String(args.jobId);
        await requireJob(ctx, jobId);
        const live = liveOf(ctx);
        return live.subscribe([{ kind: 'utilization', key: jobId }], {
          capacity: live.options.sampleBuffer,
          expand: (p) => (p.type === 'sample' || p.type === 'error' ? [p] : []),
        });
      },
      resolve: (payload) => unlessError<SamplePayload>(payload),
    }),
    jobStatusChanged: t.field({
      type: JobRef,
      description: 'Jobs whose status changed (or that appeared), among those the filter selects',
      args: { filter: t.arg({ type: JobFilterRef, required: false }) },
      subscribe: (_root, args, ctx) => {
        const live = liveOf(ctx);
        const { providerIds, jobs } = resolveJobFilter(ctx, args.filter);
        return live.subscribe(
          providerIds.map((pid) => ({ kind: 'status' as const, key: pid })),
          {
            capacity: live.options.statusBuffer,
            expand: (p) => {
              if (p.type === 'error') return [p];
              if (p.type !== 'status') return [];
              return jobMatches(jobs, p.job) ? [p] : [];
            },
          },
        );
      },
      resolve: (payload, _args, ctx) => {
        const p = unlessError<{ job: Parameters<typeof jobRowFromJson>[0] }>(payload);
        // One context lives as long as the subscription: each event must read current rows.
        for (const loader of Object.values(ctx.store.loaders)) loader.clearAll();
        return jobRowFromJson(p.job);
      },
    }),
    jobLogs: t.field({
      type: LogLineRef,
      description: 'Log lines of a job as they arrive (from about a minute back), in order, none twice; completes when the job has finished',
      args: { jobId: t.arg.id({ required: true }) },
      subscribe: async (_root, args, ctx) => {
        const jobId = String(args.jobId);
        const job = await requireJob(ctx, jobId);
        const provider = ctx.store.providers.find(job.providerId);
        if (!provider?.capabilities.logs) throw new DomainError('UNSUPPORTED', `${provider?.kind ?? 'this platform'} has no log API`);
        const live = liveOf(ctx);
        return live.subscribe([{ kind: 'logs', key: jobId }], {
          capacity: live.options.logBuffer,
          expand: (p) => (p.type === 'logs' ? p.lines : p.type === 'error' ? [p] : []),
        });
      },
      resolve: (payload) => {
        const line = unlessError<LogLinePayload>(payload);
        return { ...line, timestamp: line.timestamp ? new Date(line.timestamp) : null };
      },
    }),
  }),
});
