// This server as a Federation v2 subgraph behind a real gateway: composed with a small "teams"
// subgraph of the test's own (a team owns projects; it extends Project by id with `owner`),
// served through Hive Gateway's runtime on loopback in front of a running server that reads the
// Baseten simulator, and queried across both subgraphs.
import http from 'node:http';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { composeServices } from '@theguild/federation-composition';
import { parse } from 'graphql';
import { createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeIds as nodeIdsOf, rankKeys } from '../../../src/simulators/baseten/fleet.js';
import { startTestServer, type GqlResult, type TestServer } from '../../support/runtime.js';
import { close, listen, post } from './helpers.js';

interface Team {
  id: string;
  name: string;
  projectIds: string[];
}

const TEAMS_SDL = /* GraphQL */ `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])

  type Query {
    teams: [Team!]!
  }

  type Team {
    id: ID!
    name: String!
    projects: [Project!]!
  }

  type Project @key(fields: "id") {
    id: ID!
    owner: Team
  }
`;

function startTeamsSubgraph(teams: Team[]) {
  const schema = buildSubgraphSchema([
    {
      typeDefs: parse(TEAMS_SDL),
      resolvers: {
        Query: { teams: () => teams },
        Team: { projects: (t: Team) => t.projectIds.map((id) => ({ id })) },
        Project: {
          __resolveReference: (ref: { id: string }) => ref,
          owner: (p: { id: string }) => teams.find((t) => t.projectIds.includes(p.id)) ?? null,
        },
      },
    },
  ]);
  return listen(http.createServer(createYoga({ schema, logging: false })));
}

const JOB_ENTITIES = /* GraphQL */ `
  query ($representations: [_Any!]!) {
    _entities(representations: $representations) {
      ... on Job { id name status project { id name } provider { id } }
    }
  }
`;

let s: TestServer;
let subgraphUrl: string;
let teamsServer: http.Server | undefined;
let gatewayServer: http.Server | undefined;
let gatewayUrl: string;
let supergraphSdl: string;
let teams: Team[];
let projects: { id: string; name: string }[];
let jobIds: string[];

async function allJobIds(): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  do {
    const res: GqlResult = await s.gql(
      `query ($after: String) { jobs(first: 100, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
      {
        after,
      },
    );
    expect(res.errors).toBeUndefined();
    ids.push(...res.data.jobs.edges.map((e: { node: { id: string } }) => e.node.id));
    after = res.data.jobs.pageInfo.hasNextPage ? res.data.jobs.pageInfo.endCursor : null;
  } while (after);
  return ids;
}

beforeAll(async () => {
  s = await startTestServer({ fleet: { projects: 4, jobsPerProject: 30, emptyProjects: 0 } });
  subgraphUrl = `${s.runtime.url}/graphql`;

  const listed = await s.gql('{ projects { id name } }');
  expect(listed.errors).toBeUndefined();
  projects = listed.data.projects;
  jobIds = await allJobIds();

  teams = [
    { id: 'team-vision', name: 'Vision', projectIds: [projects[0]!.id, projects[1]!.id] },
    { id: 'team-speech', name: 'Speech', projectIds: [projects[2]!.id] },
  ];
  const teamsSubgraph = await startTeamsSubgraph(teams);
  teamsServer = teamsSubgraph.server;

  // The training subgraph's SDL as a gateway's tooling reads it: `_service { sdl }` over HTTP.
  const service = await post<{ _service: { sdl: string } }>(subgraphUrl, '{ _service { sdl } }');
  expect(service.errors).toBeUndefined();
  const composed = composeServices([
    { name: 'training', typeDefs: parse(service.data!._service.sdl), url: subgraphUrl },
    { name: 'teams', typeDefs: parse(TEAMS_SDL), url: teamsSubgraph.url },
  ]);
  expect(composed.errors?.map((e) => e.message) ?? []).toEqual([]);
  supergraphSdl = composed.supergraphSdl!;

  const gateway = createGatewayRuntime({ supergraph: supergraphSdl, logging: false, maskedErrors: false });
  const served = await listen(http.createServer(gateway));
  gatewayServer = served.server;
  gatewayUrl = served.url;
});

afterAll(async () => {
  await close(gatewayServer);
  await close(teamsServer);
  await s?.close();
});

describe('composition', () => {
  it('keys every entity of this subgraph by id in the supergraph, and Project in both', () => {
    const keyedIn = (type: string) =>
      [...supergraphSdl.matchAll(new RegExp(`type ${type}\\b[^{]*`, 'g'))].flatMap((m) =>
        [...m[0].matchAll(/@join__type\(graph: (\w+), key: "([^"]*)"\)/g)].map((k) => `${k[1]} ${k[2]}`),
      );
    for (const type of ['Provider', 'Job', 'ComputeNode', 'Gpu']) expect(keyedIn(type), type).toEqual(['TRAINING id']);
    expect(keyedIn('Project').sort()).toEqual(['TEAMS id', 'TRAINING id']);
  });
});

describe('through the gateway', () => {
  it('answers a query that starts in the teams subgraph with data from both', async () => {
    const res = await post(
      gatewayUrl,
      `{ teams { name projects { id name provider { kind } jobs(first: 2) { edges { node { name status } } } owner { id } } } }`,
    );
    expect(res.errors).toBeUndefined();
    const vision = res.data.teams.find((t: { name: string }) => t.name === 'Vision');
    expect(vision.projects.map((p: { id: string }) => p.id)).toEqual(teams[0]!.projectIds);
    for (const project of vision.projects) {
      expect(project.name).toBe(projects.find((p) => p.id === project.id)!.name);
      expect(project.provider.kind).toBe('BASETEN');
      expect(project.jobs.edges).toHaveLength(2);
      expect(project.owner.id).toBe('team-vision');
    }
  });

  it('answers a query that starts in this subgraph with the owning team from the other', async () => {
    const res = await post(
      gatewayUrl,
      `query ($projectId: ID) { jobs(first: 3, filter: { projectId: $projectId }) { edges { node { id name project { name owner { name } } } } } }`,
      { projectId: projects[2]!.id },
    );
    expect(res.errors).toBeUndefined();
    const jobs = res.data.jobs.edges.map((e: any) => e.node);
    expect(jobs).toHaveLength(3);
    for (const job of jobs) expect(job.project).toEqual({ name: projects[2]!.name, owner: { name: 'Speech' } });

    // A project no team claims has no owner, and that is not an error.
    const unowned = await post(gatewayUrl, `query ($id: ID!) { project(id: $id) { name owner { name } } }`, { id: projects[3]!.id });
    expect(unowned.errors).toBeUndefined();
    expect(unowned.data.project).toEqual({ name: projects[3]!.name, owner: null });
  });
});

describe('_entities on this subgraph', () => {
  /** Jobs that have started by the test clock, so the platform reports their nodes. */
  const startedJobs = () => s.sim.fleet.jobs.filter((j) => j.startedAtMs !== null && j.startedAtMs <= s.clock.now() && j.nodeCount > 0);

  async function resolveJobs(ids: string[]) {
    const before = s.runtime.database.statementCount();
    const res = await post(subgraphUrl, JOB_ENTITIES, { representations: ids.map((id) => ({ __typename: 'Job', id })) });
    return { res, statements: s.runtime.database.statementCount() - before };
  }

  it('resolves a batch of 100 Jobs with the same few SQL statements as 10', async () => {
    expect(jobIds.length).toBeGreaterThanOrEqual(100);
    const ten = await resolveJobs(jobIds.slice(0, 10));
    const hundred = await resolveJobs(jobIds.slice(0, 100));
    expect(ten.res.errors).toBeUndefined();
    expect(hundred.res.errors).toBeUndefined();
    expect(hundred.res.data._entities.map((j: { id: string }) => j.id)).toEqual(jobIds.slice(0, 100));
    for (const job of hundred.res.data._entities) {
      expect(job.provider.id).toBe('bt');
      expect(projects.map((p) => p.id)).toContain(job.project.id);
    }
    console.info(`_entities statements: 10 jobs -> ${ten.statements}, 100 jobs -> ${hundred.statements}`);
    // One statement for the jobs, one for their projects.
    expect(hundred.statements).toBeLessThanOrEqual(2);
    expect(hundred.statements).toBe(ten.statements);
  });

  it('resolves unknown ids to null for those representations only', async () => {
    const known = jobIds.slice(0, 3);
    const unknown = ['bt:job:no-such-job', 'elsewhere:job:1', 'not an id', projects[0]!.id];
    const { res } = await resolveJobs([known[0]!, ...unknown.slice(0, 2), known[1]!, ...unknown.slice(2), known[2]!]);
    expect(res.errors).toBeUndefined();
    expect(res.data._entities.map((j: { id: string } | null) => j?.id ?? null)).toEqual([known[0], null, null, known[1], null, null, known[2]]);
  });

  it('resolves nodes and GPUs whose job topology is not cached yet, fetching it once', async () => {
    const job = startedJobs()[0]!;
    const jobId = `bt:job:${job.id}`;
    const nodeIds = nodeIdsOf(job).map((n) => `bt:node:${job.id}#${n}`);
    const gpuIds = nodeIdsOf(job).flatMap((n) => rankKeys(job).map((r) => `bt:gpu:${job.id}#${n}#${r}`));
    const detailCalls = s.sim.count('getJob');
    const metricsCalls = s.sim.count('getMetrics');
    const res = await post(
      subgraphUrl,
      `query ($representations: [_Any!]!) {
        _entities(representations: $representations) { ... on ComputeNode { id job { id } } ... on Gpu { id job { id } } }
      }`,
      { representations: [...nodeIds.map((id) => ({ __typename: 'ComputeNode', id })), ...gpuIds.map((id) => ({ __typename: 'Gpu', id }))] },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data._entities.map((e: { id: string }) => e.id)).toEqual([...nodeIds, ...gpuIds]);
    for (const e of res.data._entities) expect(e.job.id).toBe(jobId);
    // Baseten reveals nodes only through metrics: one metrics call teaches the topology, no job detail.
    expect(s.sim.count('getJob') - detailCalls).toBe(0);
    expect(s.sim.count('getMetrics') - metricsCalls).toBe(1);

    const listed = await s.gql(`query ($id: ID!) { job(id: $id) { nodes { id } gpus { id } } }`, { id: jobId });
    expect(listed.data.job.nodes.map((n: { id: string }) => n.id).sort()).toEqual([...nodeIds].sort());
    expect(listed.data.job.gpus.map((g: { id: string }) => g.id).sort()).toEqual([...gpuIds].sort());
  });

  it('resolves each entity type by id, and unknown ones of each type to null', async () => {
    const job = startedJobs()[1]!;
    const withTopology = await s.gql(`query ($id: ID!) { job(id: $id) { nodes { id } gpus { id } } }`, { id: `bt:job:${job.id}` });
    expect(withTopology.errors).toBeUndefined();
    const nodeId: string = withTopology.data.job.nodes[0].id;
    const gpuId: string = withTopology.data.job.gpus[0].id;
    const res = await post(
      subgraphUrl,
      `query ($representations: [_Any!]!) {
        _entities(representations: $representations) {
          __typename
          ... on Provider { id kind }
          ... on Project { id name }
          ... on Job { id }
          ... on ComputeNode { id name }
          ... on Gpu { id index }
        }
      }`,
      {
        representations: [
          { __typename: 'Provider', id: 'bt' },
          { __typename: 'Project', id: projects[1]!.id },
          { __typename: 'Job', id: jobIds[5] },
          { __typename: 'ComputeNode', id: nodeId },
          { __typename: 'Gpu', id: gpuId },
          { __typename: 'Provider', id: 'missing' },
          { __typename: 'Project', id: 'bt:project:missing' },
          { __typename: 'ComputeNode', id: `${jobIds[0]!.replace(':job:', ':node:')}#missing` },
          { __typename: 'Gpu', id: `${gpuId}99` },
        ],
      },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data._entities.slice(0, 5).map((e: { __typename: string; id: string }) => [e.__typename, e.id])).toEqual([
      ['Provider', 'bt'],
      ['Project', projects[1]!.id],
      ['Job', jobIds[5]],
      ['ComputeNode', nodeId],
      ['Gpu', gpuId],
    ]);
    expect(res.data._entities.slice(5)).toEqual([null, null, null, null]);
  });
});

// SUBGRAPH_TYPE_NAMES=JobStatus:TrainingJobStatus beside a "ci" subgraph whose own JobStatus (other
// values) is an argument type: composed from `_service { sdl }` over HTTP, and Job.status read
// through the gateway, from a root field of ours and through _entities, answers as the subgraph does.
describe('with JobStatus renamed in the subgraph SDL', () => {
  const CI_SDL = /* GraphQL */ `
    extend schema @link(url: "https://specs.apollo.dev/federation/v2.6", import: ["@key"])

    enum JobStatus {
      QUEUED
      PASSED
    }

    type Job @key(fields: "id", resolvable: false) {
      id: ID!
    }

    type Pipeline {
      id: ID!
      status: JobStatus!
      trainingJob: Job
    }

    type Query {
      pipelines(status: JobStatus): [Pipeline!]!
    }
  `;
  let renamed: TestServer;
  let ciServer: http.Server | undefined;
  let renamedGateway: http.Server | undefined;
  let url: string;
  let trainingJobIds: string[];

  beforeAll(async () => {
    renamed = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 6, emptyProjects: 0 },
      config: { subgraphTypeNames: new Map([['JobStatus', 'TrainingJobStatus']]) },
    });
    const listed = await renamed.gql('{ jobs(first: 6) { edges { node { id } } } }');
    expect(listed.errors).toBeUndefined();
    trainingJobIds = listed.data.jobs.edges.map((e: { node: { id: string } }) => e.node.id);
    const pipelines = trainingJobIds.map((id, i) => ({ id: `p${i}`, status: i % 2 ? 'PASSED' : 'QUEUED', trainingJob: { id } }));
    const ciSchema = buildSubgraphSchema([
      {
        typeDefs: parse(CI_SDL),
        resolvers: { Query: { pipelines: (_: unknown, args: { status?: string }) => pipelines.filter((p) => !args.status || p.status === args.status) } },
      },
    ]);
    const ci = await listen(http.createServer(createYoga({ schema: ciSchema, logging: false })));
    ciServer = ci.server;

    const trainingUrl = `${renamed.runtime.url}/graphql`;
    const service = await post<{ _service: { sdl: string } }>(trainingUrl, '{ _service { sdl } }');
    expect(service.errors).toBeUndefined();
    const composed = composeServices([
      { name: 'training', typeDefs: parse(service.data!._service.sdl), url: trainingUrl },
      { name: 'ci', typeDefs: parse(CI_SDL), url: ci.url },
    ]);
    expect(composed.errors?.map((e) => e.message) ?? []).toEqual([]);
    const gateway = await listen(http.createServer(createGatewayRuntime({ supergraph: composed.supergraphSdl!, logging: false, maskedErrors: false })));
    renamedGateway = gateway.server;
    url = gateway.url;
  });

  afterAll(async () => {
    await close(renamedGateway);
    await close(ciServer);
    await renamed?.close();
  });

  it('answers Job.status through the gateway as the subgraph does, while plain clients still see JobStatus', async () => {
    const direct = await renamed.gql(`query ($id: ID!) { job(id: $id) { status } }`, { id: trainingJobIds[0] });
    const plainName = await renamed.gql('{ __type(name: "JobStatus") { name } renamed: __type(name: "TrainingJobStatus") { name } }');
    expect(plainName.data).toEqual({ __type: { name: 'JobStatus' }, renamed: null });

    const root = await post(url, `query ($id: ID!) { job(id: $id) { id status } }`, { id: trainingJobIds[0] });
    expect(root.errors).toBeUndefined();
    expect(root.data.job).toEqual({ id: trainingJobIds[0], status: direct.data.job.status });

    // The other subgraph's JobStatus as an argument, and ours fetched through _entities beside it.
    const across = await post(url, `{ pipelines(status: PASSED) { id status trainingJob { id status } } }`);
    expect(across.errors).toBeUndefined();
    expect(across.data.pipelines).toHaveLength(3);
    for (const p of across.data.pipelines) {
      expect(p.status).toBe('PASSED');
      const own = await renamed.gql(`query ($id: ID!) { job(id: $id) { status } }`, { id: p.trainingJob.id });
      expect(p.trainingJob.status).toBe(own.data.job.status);
    }
    const statuses = await post(url, '{ __type(name: "TrainingJobStatus") { enumValues { name } } }');
    expect(statuses.data.__type.enumValues.map((v: { name: string }) => v.name)).toContain('RUNNING');
  });
});
