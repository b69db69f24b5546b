// Relay's Node interface and Query.node / Query.nodes: any object with a global id, refetched by
// that id alone (what relay-compiler's @refetchable and client caches rely on). The lookups are
// the federation entity resolvers (entities.ts), so both paths answer the same object.
import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { computeNodeById, gpuById, jobById, projectById, providerById, seriesById } from './entities.js';
import { NodeInterfaceRef } from './refs.js';

/** At most this many ids per Query.nodes call (a larger list is refused, not truncated). */
export const MAX_NODE_IDS = 100;

const TYPE_OF_KIND = { project: 'Project', job: 'Job', node: 'ComputeNode', gpu: 'Gpu', series: 'MetricSeries' } as const;

NodeInterfaceRef.implement({
  description: 'An object with a global id that Query.node(id:) answers again (the Relay Global Object Identification contract)',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Globally unique and stable across restarts: the same object always has the same id' }),
  }),
  resolveType: (value) => {
    // A provider's id is its config id (no kind in it); every other id names its kind.
    if (!value.id.includes(':')) return 'Provider';
    return TYPE_OF_KIND[parseGlobalId(value.id).kind];
  },
});

export async function nodeById(ctx: Context, id: string): Promise<{ id: string } | null> {
  if (!id.includes(':')) return providerById(ctx, id);
  let kind: keyof typeof TYPE_OF_KIND;
  try {
    kind = parseGlobalId(id).kind;
  } catch {
    return null;
  }
  switch (kind) {
    case 'project':
      return projectById(ctx, id);
    case 'job':
      return jobById(ctx, id);
    case 'node':
      return computeNodeById(ctx, id);
    case 'gpu':
      return gpuById(ctx, id);
    case 'series': {
      return seriesById(ctx, id);
    }
  }
}

builder.queryFields((t) => ({
  node: t.field({
    type: NodeInterfaceRef,
    nullable: true,
    description:
      'Any object of this graph by its global id (Provider, Project, Job, ComputeNode, Gpu, MetricSeries); null for an id this graph did not issue or that is gone',
    args: { id: t.arg.id({ required: true, description: 'A global id as answered by an `id` field (at most 1024 characters)' }) },
    resolve: (_r, args, ctx) => nodeById(ctx, String(args.id)),
  }),
  nodes: t.field({
    type: [NodeInterfaceRef],
    nullable: { list: false, items: true },
    directives: { listSize: { assumedSize: MAX_NODE_IDS } },
    description: `Objects by their global ids, in the order asked; null in place of an id that node(id:) would answer null for`,
    args: { ids: t.arg.idList({ required: true, description: `Global ids, at most ${MAX_NODE_IDS}` }) },
    resolve: (_r, args, ctx) => {
      if (args.ids.length > MAX_NODE_IDS) {
        throw new DomainError('BAD_INPUT', `"ids" may hold at most ${MAX_NODE_IDS} ids, got ${args.ids.length}`, { argument: 'ids' });
      }
      return Promise.all(args.ids.map((id) => nodeById(ctx, String(id))));
    },
  }),
}));
