// Relay's Node interface and Query.node / Query.nodes: any object with a global id, refetched by
// that id alone (what relay-compiler's @refetchable and client caches rely on). Entities are
// looked up by the federation entity resolvers (entities.ts), so both paths answer the same
// object; values (points, summaries, freshness, errors, health, progress, log lines and pages, the
// live sample, the fleet and its rows) through their owner (value-nodes.ts).
import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import { MAX_VALUE_ID_LENGTH, VALUE_KINDS, valueKindOf } from '../domain/value-ids.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { computeNodeById, gpuById, jobById, projectById, providerById, seriesById } from './entities.js';
import { NodeInterfaceRef, type NodeShape } from './refs.js';
import { valueById } from './value-nodes.js';

/** At most this many ids per Query.nodes call (a larger list is refused, not truncated). */
export const MAX_NODE_IDS = 100;

const TYPE_OF_KIND = { project: 'Project', job: 'Job', node: 'ComputeNode', gpu: 'Gpu', series: 'MetricSeries' } as const;

NodeInterfaceRef.implement({
  description: 'An object with a global id that Query.node(id:) answers again (the Relay Global Object Identification contract)',
  fields: (t) => ({
    id: t.id({
      description: 'Globally unique and stable across restarts: the same object always has the same id',
      resolve: (v) => {
        // Every implementing type resolves its own id; this is never reached.
        if (!v.id) throw new Error('a Node without an id');
        return v.id;
      },
    }),
  }),
  resolveType: (value) => {
    // Only Query.node / Query.nodes answer through the interface, and what they answer carries its id.
    const id = value.id!;
    // A provider's id is its config id (no kind in it); every other id names its kind.
    if (!id.includes(':')) return 'Provider';
    const valueKind = valueKindOf(id);
    if (valueKind) return VALUE_KINDS[valueKind].type;
    return TYPE_OF_KIND[parseGlobalId(id).kind];
  },
});

export async function nodeById(ctx: Context, id: string): Promise<NodeShape | null> {
  if (!id.includes(':')) return providerById(ctx, id);
  if (valueKindOf(id)) return valueById(ctx, id);
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
  // Shareable: a supergraph's other Relay-style subgraphs define Query.node / nodes too, and the
  // router may ask any of them (each answers the ids it issued, null for the others).
  node: t.field({
    type: NodeInterfaceRef,
    nullable: true,
    shareable: true,
    description:
      'Any object of this graph by its global id: the entities (Provider, Project, Job, ComputeNode, Gpu, MetricSeries) and the values that belong to one (MetricPoint, MetricSummary, Freshness, SourceError, ProviderHealth, ProviderCollection, JobProgress, LogPage, LogLine, LogGap, UtilizationSample) or to a Fleet question (Fleet, FleetUtilization, GpuHours, IdleGpu, IdleInterval), findings (Finding, FindingEvidence, FindingSeriesEvidence, AlertNotification, FindingAcknowledgement) and silences (Silence, SilenceMatchers, SilenceLabel), read again through their owner; null for an id this graph did not issue or whose object is gone',
    args: {
      id: t.arg.id({
        required: true,
        description: `A global id as answered by an \`id\` field (at most ${MAX_VALUE_ID_LENGTH} characters; entity ids at most 1024)`,
      }),
    },
    resolve: (_r, args, ctx) => nodeById(ctx, String(args.id)),
  }),
  nodes: t.field({
    type: [NodeInterfaceRef],
    shareable: true,
    nullable: { list: false, items: true },
    directives: { listSize: { assumedSize: MAX_NODE_IDS } },
    description: `Objects by their global ids, in the order asked; null in place of an id that node(id:) would answer null for`,
    args: { ids: t.arg.idList({ required: true, description: `Global ids, at most ${MAX_NODE_IDS}` }) },
    resolve: (_r, args, ctx) => {
      if (args.ids.length > MAX_NODE_IDS) {
        throw new DomainError('BAD_INPUT', `"ids" may hold at most ${MAX_NODE_IDS} ids, got ${args.ids.length}`, { argument: 'ids' });
      }
      // Each id fails alone: one refused (RATE_LIMITED) or failed is answered as its error (null with
      // the error at its index), not the whole list's.
      return Promise.all(args.ids.map((id) => nodeById(ctx, String(id)).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))));
    },
  }),
}));
