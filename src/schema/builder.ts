// The Pothos builder and its scalars; it defines no object types (one file per type does).
import SchemaBuilder from '@pothos/core';
import DirectivePlugin from '@pothos/plugin-directives';
import FederationPlugin from '@pothos/plugin-federation';
import { GraphQLError, Kind } from 'graphql';
import type { Context } from './context.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
    /** Seconds; written as an ISO-8601 duration (src/schema/duration.ts). */
    Duration: { Input: number; Output: number };
  };
  DefaultFieldNullability: false;
  // Federation v2.9 demand control (schema/subgraph.graphql): what a router charges per field.
  Directives: {
    cost: { locations: 'FIELD_DEFINITION'; args: { weight: number } };
    listSize: {
      locations: 'FIELD_DEFINITION';
      args: { assumedSize?: number; slicingArguments?: string[]; sizedFields?: string[]; requireOneSlicingArgument?: boolean };
    };
  };
}>({
  defaultFieldNullability: false,
  // Federation last: plugins that wrap resolvers (auth) must come before it (its README).
  plugins: [DirectivePlugin, FederationPlugin],
});

function parseDateTime(value: unknown): Date {
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(value)) {
    const d = new Date(value);
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw new GraphQLError('DateTime must be an ISO-8601 string with a time zone, e.g. 2025-03-01T10:00:00Z', {
    extensions: { code: 'BAD_INPUT' },
  });
}

builder.scalarType('DateTime', {
  description: 'An ISO-8601 instant, always answered in UTC (e.g. 2025-03-01T10:00:00.000Z)',
  serialize: (d) => d.toISOString(),
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
});

builder.scalarType('JSON', {
  description: 'Free-form metadata (e.g. how a series was derived)',
  serialize: (v) => v,
  parseValue: (v) => v,
});

builder.queryType({ description: 'What can be asked: providers, projects, jobs, any object by its id, and fleet-wide GPU questions' });
