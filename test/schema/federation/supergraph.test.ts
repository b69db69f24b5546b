// This subgraph in a typical company supergraph, through Hive Gateway: composed with a Relay-style
// "directory" subgraph (its own `Node` interface, connections with a `@shareable PageInfo`, and an
// owner on our Project) and a "ci" subgraph with a `JobStatus` enum of its own (and a pipeline on
// our Job), then asked one query that crosses all three.
import http from 'node:http';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { composeServices } from '@theguild/federation-composition';
import { parse } from 'graphql';
import { createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/runtime.js';
import { close, listen, post } from './helpers.js';

const DIRECTORY_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key", "@shareable"])

  interface Node {
    id: ID!
  }

  type PageInfo @shareable {
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
    endCursor: String
  }

  type Team implements Node @key(fields: "id") {
    id: ID!
    name: String!
    members(first: Int, after: String): MemberConnection!
  }

  type Member implements Node @key(fields: "id") {
    id: ID!
    login: String!
  }

  type MemberConnection {
    edges: [MemberEdge!]!
    pageInfo: PageInfo!
  }

  type MemberEdge {
    cursor: String!
    node: Member!
  }

  type Project @key(fields: "id") {
    id: ID!
    owner: Team
  }

  type Query {
    teams: [Team!]!
  }
`;

const CI_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])

  enum JobStatus {
    QUEUED
    RUNNING
    PASSED
    BROKEN
  }

  type Pipeline @key(fields: "id") {
    id: ID!
    status: JobStatus!
  }

  type Job @key(fields: "id") {
    id: ID!
    pipeline: Pipeline
  }

  type Query {
    pipelines: [Pipeline!]!
  }
`;

let s: TestServer;
const servers: http.Server[] = [];
let gatewayUrl: string;
let supergraphSdl: string;
let ownerOf: Map<string, string>;

beforeAll(async () => {
  s = await startTestServer({ fleet: { projects: 2, jobsPerProject: 3, emptyProjects: 0 } });
  const listed = await s.gql('{ projects { id } }');
  expect(listed.errors).toBeUndefined();
  const projectIds: string[] = listed.data.projects.map((p: { id: string }) => p.id);
  ownerOf = new Map(projectIds.map((id, i) => [id, i % 2 === 0 ? 'team-vision' : 'team-speech']));

  const members = { 'team-vision': ['ada', 'grace', 'linus'], 'team-speech': ['ken'] } as Record<string, string[]>;
  const team = (id: string) => ({ id, name: id === 'team-vision' ? 'Vision' : 'Speech' });
  const directory = await listen(
    http.createServer(
      createYoga({
        logging: false,
        schema: buildSubgraphSchema([
          {
            typeDefs: parse(DIRECTORY_SDL),
            resolvers: {
              Node: { __resolveType: (o: { login?: string }) => (o.login ? 'Member' : 'Team') },
              Query: { teams: () => Object.keys(members).map(team) },
              Team: {
                __resolveReference: (ref: { id: string }) => team(ref.id),
                members: (t: { id: string }, args: { first?: number }) => {
                  const all = members[t.id]!.map((login) => ({ id: `member:${login}`, login }));
                  const page = all.slice(0, args.first ?? all.length);
                  return {
                    edges: page.map((m) => ({ cursor: m.id, node: m })),
                    pageInfo: {
                      hasNextPage: page.length < all.length,
                      hasPreviousPage: false,
                      startCursor: page[0]?.id ?? null,
                      endCursor: page.at(-1)?.id ?? null,
                    },
                  };
                },
              },
              Project: {
                __resolveReference: (ref: { id: string }) => ref,
                owner: (p: { id: string }) => (ownerOf.has(p.id) ? team(ownerOf.get(p.id)!) : null),
              },
            },
          },
        ]),
      }),
    ),
  );
  servers.push(directory.server);
  const ci = await listen(
    http.createServer(
      createYoga({
        logging: false,
        schema: buildSubgraphSchema([
          {
            typeDefs: parse(CI_SDL),
            resolvers: {
              Query: { pipelines: () => [] },
              Job: { __resolveReference: (ref: { id: string }) => ref, pipeline: (j: { id: string }) => ({ id: `pipeline:${j.id}`, status: 'PASSED' }) },
            },
          },
        ]),
      }),
    ),
  );
  servers.push(ci.server);

  const subgraphUrl = `${s.runtime.url}/graphql`;
  const service = await post<{ _service: { sdl: string } }>(subgraphUrl, '{ _service { sdl } }');
  expect(service.errors).toBeUndefined();
  const composed = composeServices([
    { name: 'training', typeDefs: parse(service.data!._service.sdl), url: subgraphUrl },
    { name: 'directory', typeDefs: parse(DIRECTORY_SDL), url: directory.url },
    { name: 'ci', typeDefs: parse(CI_SDL), url: ci.url },
  ]);
  expect(composed.errors?.map((e) => e.message) ?? []).toEqual([]);
  supergraphSdl = composed.supergraphSdl!;
  const gateway = await listen(http.createServer(createGatewayRuntime({ supergraph: supergraphSdl, logging: false, maskedErrors: false })));
  servers.push(gateway.server);
  gatewayUrl = gateway.url;
}, 240_000);

afterAll(async () => {
  for (const server of servers) await close(server);
  await s?.close();
});

describe('a three-subgraph supergraph', () => {
  it('composes: one Node interface, one PageInfo, and both JobStatus enums merged for output', () => {
    expect(supergraphSdl).toMatch(/interface Node\b/);
    expect(supergraphSdl.match(/^type PageInfo\b/gm)).toHaveLength(1);
    // Output-only in both subgraphs, so the values are united (ours are all there).
    const jobStatus = /enum JobStatus[^{]*\{([^}]*)\}/.exec(supergraphSdl)![1]!;
    for (const v of ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'UNKNOWN', 'QUEUED', 'PASSED']) expect(jobStatus).toContain(v);
  });

  it('keeps the demand-control costs (@cost, @listSize) for a router to charge', () => {
    expect(supergraphSdl).toMatch(/\): \[MetricSeries!\][^\n]*@cost\(weight: 10\)/);
    expect(supergraphSdl).toMatch(/\): JobConnection![^\n]*@listSize\(/);
    expect(supergraphSdl).toContain('slicingArguments: ["first", "last"]');
  });

  it('answers one query across all three subgraphs', async () => {
    const res = await post(
      gatewayUrl,
      /* GraphQL */ `
        query Across {
          jobs(first: 6, filter: { statuses: [RUNNING, SUCCEEDED, FAILED, STOPPED, PENDING] }) {
            pageInfo { hasNextPage endCursor }
            edges {
              node {
                id
                name
                status
                project { id owner { name members(first: 2) { edges { node { login } } pageInfo { hasNextPage } } } }
                pipeline { id status }
              }
            }
          }
        }
      `,
    );
    expect(res.errors).toBeUndefined();
    const jobs = res.data.jobs.edges.map((e: any) => e.node);
    expect(jobs.length).toBeGreaterThan(0);
    for (const job of jobs) {
      expect(['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'UNKNOWN']).toContain(job.status);
      expect(job.pipeline).toEqual({ id: `pipeline:${job.id}`, status: 'PASSED' });
      const owner = ownerOf.get(job.project.id) === 'team-vision' ? 'Vision' : 'Speech';
      expect(job.project.owner.name).toBe(owner);
      expect(job.project.owner.members.pageInfo.hasNextPage).toBe(owner === 'Vision');
    }
  });

  it("resolves this subgraph's Node ids through node(id:) behind the gateway", async () => {
    const listed = await post(gatewayUrl, '{ jobs(first: 1) { nodes { id name } } }');
    const job = listed.data.jobs.nodes[0];
    const res = await post(gatewayUrl, 'query ($id: ID!) { node(id: $id) { id ... on Job { name } } }', { id: job.id });
    expect(res.errors).toBeUndefined();
    expect(res.data.node).toEqual({ id: job.id, name: job.name });
  });
});
