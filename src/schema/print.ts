// Writes the printed SDL to schema/schema.graphql and the Federation v2 subgraph SDL to
// schema/subgraph.graphql (`npm run schema:print`); a test fails when either drifts.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { parseSubgraphTypeNames } from '../domain/subgraph-type-names.js';
import { plainSchema, printedSubgraph } from './index.js';

export { printedSubgraph };

const SCHEMA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../schema');
export const SCHEMA_FILE = path.join(SCHEMA_DIR, 'schema.graphql');
export const SUBGRAPH_FILE = path.join(SCHEMA_DIR, 'subgraph.graphql');

export function printedSchema(): string {
  return `${printSchema(plainSchema)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  writeFileSync(SCHEMA_FILE, printedSchema());
  // With SUBGRAPH_TYPE_NAMES set, the subgraph SDL a server with that setting serves.
  writeFileSync(SUBGRAPH_FILE, printedSubgraph(parseSubgraphTypeNames(process.env.SUBGRAPH_TYPE_NAMES ?? '')));
  console.log(`wrote ${SCHEMA_FILE} and ${SUBGRAPH_FILE}`);
}
