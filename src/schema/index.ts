// The schema's one door: imports every type file and builds the schema, and exports what server/
// wires it with (the request context and its limits, the series arguments' checks, the printed
// subgraph SDL).
import { printSubgraphSchema } from '@apollo/subgraph';
import { defaultFieldResolver, GraphQLObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Context } from './context.js';
import { builder } from './builder.js';
import { checkDecodedArgsAgainst } from './decoded-args.js';
import { renameInSubgraphSdl } from './subgraph-names.js';
import './enums.js';
import './provider.js';
import './source-error.js';
import './metric-series.js';
import './job-filter.js';
import './job-connection.js';
import './project.js';
import './job.js';
import './run-metadata.js';
import './compute-node.js';
import './gpu.js';
import './subscription.js';
import './duration.js';
import './fleet.js';
import './compare.js';
import './ledger.js';
import './ledger-fleet.js';
import './entities.js';
import './relay.js';
import './finding.js';
import './alerts.js';

/** The plain schema (schema/schema.graphql), as a client that knows nothing of federation sees it. */
export const plainSchema = builder.toSchema({ sortSchema: false });
checkDecodedArgsAgainst(plainSchema);

/** The served schema: the plain one plus Federation v2's `_service` and `_entities` (schema/subgraph.graphql). */
export const schema = withServiceSdlOfContext(
  withPropertyReads(
    builder.toSubGraphSchema({
      // v2.9 for @cost / @listSize (demand control in Apollo Router and Hive Gateway).
      linkUrl: 'https://specs.apollo.dev/federation/v2.9',
      federationDirectives: ['@key', '@shareable', '@cost', '@listSize'],
    }),
  ),
);

/** What `_service { sdl }` answers: the schema with its federation directives, what composition reads. */
export function printedSubgraph(typeNames: ReadonlyMap<string, string> = new Map()): string {
  return renameInSubgraphSdl(schema, `${printSubgraphSchema(schema)}\n`, typeNames);
}

export { DEFAULT_LIMITS, type Access, type Context, type Limits } from './context.js';
export { checkSeriesArgs } from './args.js';
export { SubgraphNamesError } from './subgraph-names.js';

/**
 * Exposed fields (`t.expose*` of a property of the same name) without a resolver: Pothos gives them
 * graphql-js' defaultFieldResolver, which graphql-jit (server/plugins/use-query-jit.ts) calls as
 * any resolver, while a field without one it compiles into a plain property read. graphql-js
 * reads the property either way. A dashboard's million points each had three resolver calls.
 */
function withPropertyReads(served: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(served.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) if (field.resolve === defaultFieldResolver) field.resolve = undefined;
  }
  return served;
}

/** `_service { sdl }` answers the context's SDL when the server renames types in it (SUBGRAPH_TYPE_NAMES). */
function withServiceSdlOfContext(served: GraphQLSchema): GraphQLSchema {
  const service = served.getQueryType()!.getFields()._service!;
  const built = service.resolve as GraphQLFieldResolver<unknown, Context>;
  service.resolve = (root, args, ctx, info) => (ctx?.subgraphSdl ? { sdl: ctx.subgraphSdl } : built(root, args, ctx, info));
  return served;
}
