// Every entity by its global id, for Federation v2 `_entities` (Provider, Project, Job, ComputeNode
// and Gpu, each keyed by its id) and for Relay's Query.node / Query.nodes (those and MetricSeries).
// Every lookup goes through the request's loaders, so a batch of any size costs the same few SQL
// statements as one. An id this graph did not issue (malformed, another kind, an unconfigured
// provider, or gone upstream) resolves to null for that id only.
import { createContextCache } from '@pothos/core';
import { decodedArgs } from './decoded-args.js';
import { jobGlobalId, parseGlobalId, parseSeriesId, type EntityKind, type ParsedId } from '../domain/ids.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import type { SeriesView } from './metric-series.js';
import { systemSeries, trainingSeries } from './series-fields.js';
import { ProviderRef } from './provider.js';
import { GpuRef, JobRef, ComputeNodeRef, ProjectRef } from './refs.js';

const byId = builder.selection<{ id: string }>('id');

function ownId(ctx: Context, id: string, kind: EntityKind): ParsedId | null {
  try {
    const parsed = parseGlobalId(id, kind);
    return ctx.store.providers.find(parsed.providerId) ? parsed : null;
  } catch {
    return null;
  }
}

// One provider list sync per provider per request, however many unknown projects a batch holds.
const listSyncs = createContextCache((_ctx: Context) => new Map<string, Promise<unknown>>());

function syncJobListOnce(ctx: Context, providerId: string): Promise<unknown> {
  const syncs = listSyncs(ctx);
  let sync = syncs.get(providerId);
  if (!sync) syncs.set(providerId, (sync = ctx.store.syncJobLists([providerId])));
  return sync;
}

/** The job a node or GPU belongs to: its key starts with the job's external id, up to the first '#'. */
async function parentJob(ctx: Context, parsed: ParsedId) {
  const hash = parsed.key.indexOf('#');
  if (hash <= 0) return null;
  return ctx.store.loaders.jobById.load(jobGlobalId(parsed.providerId, parsed.key.slice(0, hash)));
}

export function providerById(ctx: Context, id: string) {
  // A copy: @apollo/subgraph tags what it returns with __typename, and the instance is shared.
  const provider = ctx.store.providers.find(id);
  return provider ? { ...provider } : null;
}

export async function projectById(ctx: Context, id: string) {
  const parsed = ownId(ctx, id, 'project');
  if (!parsed) return null;
  const cached = await ctx.store.loaders.projectById.load(id);
  if (cached) return cached;
  // Projects are learnt from the platform's job list (as Query.project does on a miss).
  await syncJobListOnce(ctx, parsed.providerId);
  ctx.store.loaders.projectById.clear(id);
  return ctx.store.loaders.projectById.load(id);
}

// jobById reads the cache and asks the platform only for the ids it misses.
export const jobById = (ctx: Context, id: string) => (ownId(ctx, id, 'job') ? ctx.store.loaders.jobById.load(id) : null);

export async function computeNodeById(ctx: Context, id: string) {
  const parsed = ownId(ctx, id, 'node');
  if (!parsed) return null;
  const cached = await ctx.store.loaders.nodeById.load(id);
  if (cached) return cached;
  // Nodes are learnt with their job's topology; a cold cache fetches it once per job.
  const job = await parentJob(ctx, parsed);
  if (!job) return null;
  await ctx.store.loaders.topology.load(job);
  ctx.store.loaders.nodeById.clear(id);
  return ctx.store.loaders.nodeById.load(id);
}

export async function gpuById(ctx: Context, id: string) {
  const parsed = ownId(ctx, id, 'gpu');
  if (!parsed) return null;
  const cached = await ctx.store.loaders.gpuById.load(id);
  if (cached) return cached;
  const job = await parentJob(ctx, parsed);
  if (!job) return null;
  await ctx.store.loaders.topology.load(job);
  ctx.store.loaders.gpuById.clear(id);
  return ctx.store.loaders.gpuById.load(id);
}

/** A series as the field that issued its id answered it: same window, same shaping, same points. */
export async function seriesById(ctx: Context, id: string): Promise<SeriesView | null> {
  let parts: ReturnType<typeof parseSeriesId>;
  try {
    parts = parseSeriesId(id);
  } catch {
    return null;
  }
  if (!ctx.store.providers.find(parts.providerId)) return null;
  const [jobId, kind, name] = parts.seriesKey.split('|');
  const job = await jobById(ctx, jobId!);
  if (!job) return null;
  // The window and shaping the id carries, checked as the series field checks its own.
  const shaping = decodedArgs('Job.metrics', { maxPoints: parts.maxPoints, aggregation: parts.aggregation }, 'id');
  const args = { from: parts.from, to: parts.to, maxPoints: shaping.maxPoints, aggregation: shaping.aggregation as never };
  const views =
    kind === 'training' ? await trainingSeries(ctx, job, { ...args, names: [name!] }) : await systemSeries(ctx, job, { ...args, names: [name as never] });
  return views.find((v) => v.row.seriesKey === parts.seriesKey) ?? null;
}

builder.asEntity(ProviderRef, { key: byId, resolveReference: ({ id }, ctx) => providerById(ctx, id) });
builder.asEntity(ProjectRef, { key: byId, resolveReference: ({ id }, ctx) => projectById(ctx, id) });
builder.asEntity(JobRef, { key: byId, resolveReference: ({ id }, ctx) => jobById(ctx, id) });
builder.asEntity(ComputeNodeRef, { key: byId, resolveReference: ({ id }, ctx) => computeNodeById(ctx, id) });
builder.asEntity(GpuRef, { key: byId, resolveReference: ({ id }, ctx) => gpuById(ctx, id) });
