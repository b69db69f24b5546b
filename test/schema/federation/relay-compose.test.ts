// Composable beside any Relay subgraph (issue 45): a supergraph of three subgraphs, this one, a
// Relay-style "directory" that defines its own Query.node and Query.nodes (as every Relay server
// does), and a "ci" subgraph with an enum of its own taken as an argument. Composed with @theguild/federation-composition
// from the SDL this subgraph serves at `_service { sdl }`.
import { composeServices } from '@theguild/federation-composition';
import { buildASTSchema, type GraphQLEnumType, type GraphQLObjectType, graphql, parse, printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { parseSubgraphTypeNames } from '../../../src/domain/subgraph-type-names.js';
import { JOB_STATUSES } from '../../../src/domain/types.js';
import { plainSchema, schema } from '../../../src/schema/index.js';
import { printedSubgraph } from '../../../src/schema/print.js';
import { SubgraphNamesError } from '../../../src/schema/subgraph-names.js';
import { startRuntimeOn } from '../../support/runtime.js';

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

  // Federation demands identical values of an enum any subgraph takes as an argument
  // (ENUM_VALUE_MISMATCH), whatever the other subgraphs do with theirs; SUBGRAPH_TYPE_NAMES gives
  // ours a name of its own in the SDL the server serves, and the plain schema keeps JobStatus.
  const CI_WITH_JOB_STATUS = `extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])
    enum JobStatus { QUEUED PASSED BROKEN }
    type Pipeline @key(fields: "id") { id: ID! status: JobStatus! }
    type Query { pipelines(status: JobStatus): [Pipeline!]! }`;
  const compose = (training: string) =>
    composeServices([
      { name: 'training', typeDefs: parse(training), url: 'http://training/graphql' },
      { name: 'directory', typeDefs: parse(RELAY_SDL), url: 'http://directory/graphql' },
      { name: 'ci', typeDefs: parse(CI_WITH_JOB_STATUS), url: 'http://ci/graphql' },
    ]);

  it('composes beside a subgraph that takes a JobStatus of its own as an argument once ours is renamed in the subgraph SDL', async () => {
    // As served, the clash stands: the setting is what lifts it.
    const clash = compose(await servedSdl()).errors?.map((e) => e.message) ?? [];
    expect(clash.length).toBeGreaterThan(0);
    expect(clash.every((m) => m.includes('Enum type "JobStatus"'))).toBe(true);

    const composed = compose(printedSubgraph(parseSubgraphTypeNames('JobStatus:TrainingJobStatus')));
    expect(composed.errors?.map((e) => e.message) ?? []).toEqual([]);
    const supergraph = buildASTSchema(parse(composed.supergraphSdl!));
    const ours = supergraph.getType('TrainingJobStatus') as GraphQLEnumType;
    const theirs = supergraph.getType('JobStatus') as GraphQLEnumType;
    expect(ours.getValues().map((v) => v.name)).toEqual([...JOB_STATUSES]);
    expect(theirs.getValues().map((v) => v.name)).toEqual(['QUEUED', 'PASSED', 'BROKEN']);
    expect(String((supergraph.getType('Job') as GraphQLObjectType).getFields().status!.type)).toBe('TrainingJobStatus!');
    expect(String(supergraph.getQueryType()!.getFields().pipelines!.args[0]!.type)).toBe('JobStatus');
    // Our filter keeps its own name and values.
    expect(supergraph.getType('JobStatusFilter')).toBeDefined();
    // The plain schema a client without a gateway reads is unchanged.
    expect(printSchema(plainSchema)).toContain('enum JobStatus {');
    expect(printSchema(plainSchema)).not.toContain('TrainingJobStatus');
  });

  it('refuses to rename a type a router could name in a request to this server', () => {
    const refusal = (setting: string) => {
      try {
        printedSubgraph(parseSubgraphTypeNames(setting));
      } catch (err) {
        expect(err).toBeInstanceOf(SubgraphNamesError);
        return (err as Error).message;
      }
      return 'renamed';
    };
    // An argument's type: the router names it in its variables' types.
    expect(refusal('JobStatusFilter:CiStatusFilter')).toMatch(/JobStatusFilter is taken as input by JobFilter\.statuses/);
    expect(refusal('MetricUnit:TrainingMetricUnit')).toBe('renamed');
    // Entities, interfaces and input objects: named in fragments, __typename, _entities, variables.
    expect(refusal('Job:TrainingJob')).toMatch(/Job is not an enum or scalar/);
    expect(refusal('Node:TrainingNode')).toMatch(/Node is not an enum or scalar/);
    expect(refusal('JobFilter:TrainingJobFilter')).toMatch(/JobFilter is not an enum or scalar/);
    expect(refusal('String:Text')).toMatch(/built-in scalar/);
    expect(refusal('Nope:Other')).toMatch(/no type Nope/);
    expect(refusal('JobStatus:Job')).toMatch(/already has a type Job/);
    expect(refusal('JobStatus:_Status')).toMatch(/reserve names/);
    expect(() => parseSubgraphTypeNames('JobStatus')).toThrow(/not Type:NewName/);
    expect(() => parseSubgraphTypeNames('JobStatus:A,JobStatus:B')).toThrow(/renamed twice/);
  });

  it('takes the names from SUBGRAPH_TYPE_NAMES, and a server refuses to start with one it may not serve', async () => {
    expect(loadConfig({ SUBGRAPH_TYPE_NAMES: 'JobStatus:TrainingJobStatus' }).subgraphTypeNames).toEqual(new Map([['JobStatus', 'TrainingJobStatus']]));
    expect(loadConfig({}).subgraphTypeNames).toEqual(new Map());
    expect(() => loadConfig({ SUBGRAPH_TYPE_NAMES: 'JobStatus=TrainingJobStatus' })).toThrow(ConfigError);
    // Refused before the server opens a database or starts a provider.
    const start = startRuntimeOn({ databaseUrl: null, dataDir: 'never-opened' }, [], {
      config: { subgraphTypeNames: new Map([['JobStatusFilter', 'CiStatusFilter']]) },
    });
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow(/JobStatusFilter is taken as input/);
  });
});
