// Composable beside any Relay subgraph (issue 45): a supergraph of three subgraphs, this one, a
// Relay-style "directory" that defines its own Query.node and Query.nodes (as every Relay server
// does), and a "ci" subgraph with an enum of its own taken as an argument. Composed with @theguild/federation-composition
// from the SDL this subgraph serves at `_service { sdl }`.
import { composeServices } from '@theguild/federation-composition';
import { graphql, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../../src/schema/index.js';

const RELAY_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key", "@shareable"])

  interface Node {
    id: ID!
  }

  type Team implements Node @key(fields: "id") {
    id: ID!
    name: String!
  }

  type Query {
    node(id: ID!): Node @shareable
    nodes(ids: [ID!]!): [Node]! @shareable
    teams: [Team!]!
  }
`;

const CI_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])

  enum PipelineState {
    QUEUED
    PASSED
  }

  type Pipeline @key(fields: "id") {
    id: ID!
    state: PipelineState!
  }

  type Query {
    pipelines(state: PipelineState): [Pipeline!]!
  }
`;

async function servedSdl(): Promise<string> {
  const res = await graphql({ schema, source: '{ _service { sdl } }', contextValue: {} });
  expect(res.errors).toBeUndefined();
  return (res.data as { _service: { sdl: string } })._service.sdl;
}

describe('composed beside a Relay-style subgraph', () => {
  it('composes when another subgraph also defines Query.node and Query.nodes', async () => {
    const composed = composeServices([
      { name: 'training', typeDefs: parse(await servedSdl()), url: 'http://training/graphql' },
      { name: 'directory', typeDefs: parse(RELAY_SDL), url: 'http://directory/graphql' },
      { name: 'ci', typeDefs: parse(CI_SDL), url: 'http://ci/graphql' },
    ]);
    expect(composed.errors?.map((e) => e.message) ?? []).toEqual([]);
    const sdl = composed.supergraphSdl!;
    // One Query.node and one Query.nodes, each resolvable from both subgraphs.
    const query = /type Query[^{]*\{([\s\S]*?)\n\}/.exec(sdl)![1]!;
    for (const field of ['node', 'nodes']) {
      const line = query.split('\n').find((l) => l.trim().startsWith(`${field}(`) || l.trim() === `${field}(`);
      expect(line, field).toBeDefined();
    }
    expect(query.match(/@join__field\(graph: DIRECTORY\)/g)?.length).toBeGreaterThanOrEqual(2);
  });

  // Not composable, and said so in the README: an enum used as an argument anywhere must hold the
  // same values in every subgraph that defines it, which this subgraph cannot grant alone.
  it('names the clash when another subgraph takes a JobStatus of its own as an argument', async () => {
    const ci = `extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])
      enum JobStatus { QUEUED PASSED }
      type Pipeline @key(fields: "id") { id: ID! }
      type Query { pipelines(status: JobStatus): [Pipeline!]! }`;
    const composed = composeServices([
      { name: 'training', typeDefs: parse(await servedSdl()), url: 'http://training/graphql' },
      { name: 'directory', typeDefs: parse(RELAY_SDL), url: 'http://directory/graphql' },
      { name: 'ci', typeDefs: parse(ci), url: 'http://ci/graphql' },
    ]);
    const messages = composed.errors?.map((e) => e.message) ?? [];
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.every((m) => m.includes('Enum type "JobStatus"'))).toBe(true);
  });
});
