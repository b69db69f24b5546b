// Federation v2 entities: Provider, Project, Job, Node and Gpu, each keyed by its id. A gateway
// resolves them in one `_entities` call; every representation goes through the request's loaders,
// so a batch of any size costs the same few SQL statements as one. An id this graph did not issue
// (malformed, another kind, an unconfigured provider, or gone upstream) resolves to null for that
// representation only.
import { createContextCache } from '@pothos/core';
import { jobGlobalId, parseGlobalId, type EntityKind, type ParsedId } from '../domain/ids.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { ProviderRef } from './provider.js';
import { GpuRef, JobRef, NodeRef, ProjectRef } from './refs.js';

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
const listSyncsOf = createContextCache((_ctx: Context) => new Map<string, Promise<unknown>>());

function syncJobListOnce(ctx: Context, providerId: string): Promise<unknown> {
  const syncs = listSyncsOf(ctx);
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

builder.asEntity(ProviderRef, {
  key: byId,
  // A copy: @apollo/subgraph tags what it returns with __typename, and the instance is shared.
  resolveReference: ({ id }, ctx) => {
    const provider = ctx.store.providers.find(id);
    return provider ? { ...provider } : null;
  },
});

builder.asEntity(ProjectRef, {
  key: byId,
  resolveReference: async ({ id }, ctx) => {
    const parsed = ownId(ctx, id, 'project');
    if (!parsed) return null;
    const cached = await ctx.store.loaders.projectById.load(id);
    if (cached) return cached;
    // Projects are learnt from the platform's job list (as Query.project does on a miss).
    await syncJobListOnce(ctx, parsed.providerId);
    ctx.store.loaders.projectById.clear(id);
    return ctx.store.loaders.projectById.load(id);
  },
});

builder.asEntity(JobRef, {
  key: byId,
  // jobById reads the cache and asks the platform only for the ids it misses.
  resolveReference: ({ id }, ctx) => (ownId(ctx, id, 'job') ? ctx.store.loaders.jobById.load(id) : null),
});

builder.asEntity(NodeRef, {
  key: byId,
  resolveReference: async ({ id }, ctx) => {
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
  },
});

builder.asEntity(GpuRef, {
  key: byId,
  resolveReference: async ({ id }, ctx) => {
    const parsed = ownId(ctx, id, 'gpu');
    if (!parsed) return null;
    const cached = await ctx.store.loaders.gpuById.load(id);
    if (cached) return cached;
    const job = await parentJob(ctx, parsed);
    if (!job) return null;
    await ctx.store.loaders.topology.load(job);
    ctx.store.loaders.gpuById.clear(id);
    return ctx.store.loaders.gpuById.load(id);
  },
});
