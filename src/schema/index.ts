// Imports every type file and builds the schema; nothing else.
import { builder } from './builder.js';
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
import './entities.js';
import './relay.js';

/** The plain schema (schema/schema.graphql), as a client that knows nothing of federation sees it. */
export const plainSchema = builder.toSchema({ sortSchema: false });

/** The served schema: the plain one plus Federation v2's `_service` and `_entities` (schema/subgraph.graphql). */
export const schema = builder.toSubGraphSchema({
  // v2.9 for @cost / @listSize (demand control in Apollo Router and Hive Gateway).
  linkUrl: 'https://specs.apollo.dev/federation/v2.9',
  federationDirectives: ['@key', '@shareable', '@cost', '@listSize'],
});
