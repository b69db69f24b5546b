// The contract as its users meet it: Apollo Client's InMemoryCache and urql's Graphcache
// normalising a dashboard's answers with no type configuration, a subscription sample landing in
// the series the cache already holds, Apollo's PersistedQueryLink (APQ), and node(id:) answering
// every kind of entity. Real clients, real HTTP and graphql-ws against a running server.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApolloClient, ApolloLink, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { Client as UrqlClient, fetchExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client as wsClient, runningJobId, startSim, startTestRuntime, waitFor } from '../live/helpers.js';

/**
 * Every object of the schema has an id (values a content-derived one, src/schema/value-id.ts): only
 * the connection plumbing stays embedded in its parent, which both caches know without configuration.
 */
export const EMBEDDED_TYPES = ['JobConnection', 'JobEdge', 'PageInfo'];

const DASHBOARD = /* GraphQL */ `
  query Dashboard($jobId: ID!) {
    providers { id kind name simulated health { id state consecutiveFailures } }
    jobs(first: 3) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges {
        cursor
        node {
          id name status provider { id name } project { id name }
          nodes { id name gpus { id index model } }
        }
      }
    }
    job(id: $jobId) {
      id name status
      gpus { id index node { id name } utilization(maxPoints: 20) { id unit scope points { id timestamp value } summary { id avg max } freshness { id stale } } }
      metrics(names: [GPU_UTILIZATION], scope: GPU, maxPoints: 2000) { id name scope gpu { id } points { id timestamp value } }
    }
  }
`;

const EVERY_VALUE = /* GraphQL */ `
  query EveryValue($jobId: ID!, $from: DateTime!, $to: DateTime!) {
    fleet(from: $from, to: $to) {
      id jobCount
      idleGpus { id job { id } intervals { id from to } }
      utilization { id total { id usedGpuHours } byProvider { id provider { id } usedGpuHours } }
      jobs { id job { id } wasteGpuHours }
      problems { id code message }
    }
    job(id: $jobId) {
      id
      progress { id fraction freshness { id stale error { id code } } }
      logs(first: 5) { id lines { id message cursor } gaps { id lines } nextCursor }
    }
  }
`;

const SERIES = /* GraphQL */ `
  fragment Series on MetricSeries { id points { id timestamp value } }
`;

const LIVE = /* GraphQL */ `
  subscription Live($jobId: ID!) {
    jobUtilization(jobId: $jobId, names: [GPU_UTILIZATION], scope: GPU, maxPoints: 2000) {
      id polledAt
      series { id name scope gpu { id } points { id timestamp value } }
    }
  }
`;

let sim: BasetenSimulator;
let rt: Runtime;
let jobId: string;
let warnings: string[];

beforeAll(async () => {
  sim = await startSim();
  rt = await startTestRuntime(sim, 1);
  jobId = runningJobId(sim);
}, 240_000);
afterAll(async () => {
  await rt?.close();
  await sim?.close();
});

beforeEach(() => {
  warnings = [];
  for (const level of ['warn', 'error'] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void warnings.push(args.map(String).join(' ')));
  }
});
afterEach(() => vi.restoreAllMocks());

function apollo(opts: { persisted?: boolean } = {}) {
  const http = new HttpLink({ uri: `${rt.url}/graphql` });
  const ws = new GraphQLWsLink(wsClient(rt.url));
  const transport = ApolloLink.split(
    ({ query }) => query.definitions.some((d) => d.kind === 'OperationDefinition' && d.operation === 'subscription'),
    ws,
    http,
  );
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const link = opts.persisted ? ApolloLink.from([new PersistedQueryLink({ sha256 }), transport]) : transport;
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

describe('Apollo Client', () => {
  it('normalises every entity with no type policies and no warnings', async () => {
    const client = apollo();
    const { data } = await client.query({ query: gql(DASHBOARD), variables: { jobId } });
    expect(data).toBeDefined();
    // A second, overlapping answer merges into the same entries without data-loss warnings.
    await client.query({ query: gql(DASHBOARD), variables: { jobId }, fetchPolicy: 'network-only' });
    const stored = client.cache.extract() as Record<string, Record<string, unknown>>;
    const typesStored = new Set(Object.keys(stored).map((k) => k.split(':')[0]));
    for (const type of ['Provider', 'Job', 'Project', 'ComputeNode', 'Gpu', 'MetricSeries']) expect(typesStored, type).toContain(type);
    // Nothing is left embedded but the connection plumbing: every other object inside an entry is a reference.
    const embedded = new Set<string>();
    const walk = (v: unknown) => {
      if (Array.isArray(v)) return v.forEach(walk);
      if (v && typeof v === 'object') {
        const o = v as Record<string, unknown>;
        if (typeof o.__typename === 'string') embedded.add(o.__typename);
        Object.values(o).forEach(walk);
      }
    };
    for (const entry of Object.values(stored)) for (const value of Object.values(entry)) walk(value);
    for (const type of embedded) expect(EMBEDDED_TYPES, type).toContain(type);
    for (const type of ['ProviderHealth', 'MetricPoint', 'MetricSummary', 'Freshness']) expect(typesStored, type).toContain(type);
    expect(warnings).toEqual([]);
    client.stop();
  });

  it('a subscription sample lands in the series the query put in the cache', async () => {
    const client = apollo();
    const { data } = await client.query<any>({ query: gql(DASHBOARD), variables: { jobId } });
    const queried = data.job.metrics as { id: string; points: { timestamp: string }[] }[];
    expect(queried.length).toBeGreaterThan(0);
    const samples: any[] = [];
    const sub = client.subscribe<any>({ query: gql(LIVE), variables: { jobId } }).subscribe({ next: (r) => r.data && samples.push(r.data.jobUtilization) });
    await waitFor(() => samples.length >= 1, 60_000, 'a live sample');
    sub.unsubscribe();
    const sample = samples[0];
    expect(sample.series.length).toBeGreaterThan(0);
    for (const s of sample.series) {
      // The same id the query's series has, so it is the same cache entry...
      expect(
        queried.some((q) => q.id === s.id),
        s.id,
      ).toBe(true);
      // ... and that entry now holds the sample's points.
      const cached = client.cache.readFragment<any>({ id: client.cache.identify({ __typename: 'MetricSeries', id: s.id }), fragment: gql(SERIES) });
      expect(cached.points).toEqual(s.points);
    }
    expect(warnings).toEqual([]);
    client.stop();
  }, 120_000);

  it("Apollo's PersistedQueryLink works: the hash alone after the first time (APQ)", async () => {
    const client = apollo({ persisted: true });
    const query = gql`query Apq { providers { id kind } }`;
    const first = await client.query<any>({ query, fetchPolicy: 'network-only' });
    const second = await client.query<any>({ query, fetchPolicy: 'network-only' });
    expect(first.data.providers).toEqual(second.data.providers);
    expect(first.data.providers.length).toBeGreaterThan(0);

    // The protocol on the wire: unknown hash -> PersistedQueryNotFound, then registered, then the hash alone answers.
    const text = 'query ApqWire { providers { id } }';
    const hash = createHash('sha256').update(text).digest('hex');
    const ask = async (body: object) =>
      (await fetch(`${rt.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
    const extensions = { persistedQuery: { version: 1, sha256Hash: hash } };
    const unknown = await ask({ extensions });
    expect(unknown.errors?.[0]?.message).toBe('PersistedQueryNotFound');
    expect((await ask({ query: text, extensions })).data.providers.length).toBeGreaterThan(0);
    expect((await ask({ extensions })).data.providers.length).toBeGreaterThan(0);
    // A text that does not match its hash is refused.
    expect((await ask({ query: 'query Other { providers { kind } }', extensions })).errors?.length).toBeGreaterThan(0);
    expect(warnings).toEqual([]);
    client.stop();
  });
});

describe('urql Graphcache', () => {
  it('normalises the same answers with no keys config, and warns about nothing', async () => {
    const client = new UrqlClient({ url: `${rt.url}/graphql`, exchanges: [cacheExchange({}), fetchExchange] });
    const first = await client.query(DASHBOARD, { jobId }).toPromise();
    expect(first.error).toBeUndefined();
    // Answered from the normalised cache alone.
    const again = await client.query(DASHBOARD, { jobId }, { requestPolicy: 'cache-only' }).toPromise();
    expect(again.data).toEqual(first.data);
    // The rest of the graph's values: the fleet's roll-ups, progress, a log page.
    const now = new Date();
    const rest = await client.query(EVERY_VALUE, { jobId, from: new Date(now.getTime() - 6 * 3600_000).toISOString(), to: now.toISOString() }).toPromise();
    expect(rest.error).toBeUndefined();
    expect(rest.data.fleet.utilization.total.id).toMatch(/^GpuHours:/);
    // Graphcache warns for every object it cannot key (and for anything else it dislikes): none.
    expect(warnings).toEqual([]);
  });
});

describe('Relay node(id:)', () => {
  it('answers every kind of entity by the id its own field gave', async () => {
    const ask = async (query: string, variables: object = {}) =>
      (
        await fetch(`${rt.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })
      ).json();
    const listed = await ask(
      `query ($jobId: ID!) { providers { id } projects { id } job(id: $jobId) { id nodes { id } gpus { id } metrics(names: [GPU_UTILIZATION], maxPoints: 7) { id } trainingMetrics { id } } }`,
      { jobId },
    );
    expect(listed.errors).toBeUndefined();
    const job = listed.data.job;
    const ids: [string, string][] = [
      ['Provider', listed.data.providers[0].id],
      ['Project', listed.data.projects[0].id],
      ['Job', job.id],
      ['ComputeNode', job.nodes[0].id],
      ['Gpu', job.gpus[0].id],
      ['MetricSeries', job.metrics[0].id],
    ];
    const res = await ask(`query ($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, { ids: ids.map(([, id]) => id) });
    expect(res.errors).toBeUndefined();
    expect(res.data.nodes).toEqual(ids.map(([__typename, id]) => ({ __typename, id })));
    // The series refetched by id is the series as first asked: same window, same points.
    const series = await ask(`query ($id: ID!) { node(id: $id) { ... on MetricSeries { id name points { timestamp value } } } }`, { id: job.metrics[0].id });
    const direct = await ask(
      `query ($jobId: ID!) { job(id: $jobId) { metrics(names: [GPU_UTILIZATION], maxPoints: 7) { id name points { timestamp value } } } }`,
      { jobId },
    );
    expect(direct.data.job.metrics.find((m: { id: string }) => m.id === job.metrics[0].id)).toEqual(series.data.node);
    // Ids this graph did not issue are null, not errors.
    const unknown = await ask(`{ nodes(ids: ["nope", "bt:job:missing", "bt:series:AAAA", "zz:gpu:x#y#0"]) { id } }`);
    expect(unknown.errors).toBeUndefined();
    expect(unknown.data.nodes).toEqual([null, null, null, null]);
  });
});

describe('relay-compiler', () => {
  it('accepts @refetchable on Job against schema/schema.graphql, and the refetch query it writes runs', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tg-relay-'));
    try {
      mkdirSync(path.join(dir, 'src', '__generated__'), { recursive: true });
      copyFileSync(path.resolve(import.meta.dirname, '../../schema/schema.graphql'), path.join(dir, 'schema.graphql'));
      writeFileSync(
        path.join(dir, 'relay.config.json'),
        JSON.stringify({ src: './src', schema: './schema.graphql', language: 'typescript', artifactDirectory: './src/__generated__' }),
      );
      writeFileSync(
        path.join(dir, 'src', 'JobCard.ts'),
        [
          "import { graphql } from 'react-relay';",
          'export const fragment = graphql`',
          '  fragment JobCard_job on Job @refetchable(queryName: "JobCardRefetchQuery") {',
          '    id name status',
          '    metrics(names: [GPU_UTILIZATION], maxPoints: 10) { id name points { timestamp value } }',
          '  }',
          '`;',
        ].join('\n'),
      );
      const bin = path.resolve(import.meta.dirname, '../../node_modules/.bin/relay-compiler');
      execFileSync(bin, [], { cwd: dir, stdio: 'pipe' });
      const artifact = readFileSync(path.join(dir, 'src', '__generated__', 'JobCardRefetchQuery.graphql.ts'), 'utf8');
      const text = JSON.parse(/"text": ("(?:[^"\\]|\\.)*")/.exec(artifact)![1]!) as string;
      expect(text).toContain('node(id: $id)');
      // The query Relay will send to refetch a Job by id, sent as Relay would.
      const res = await (
        await fetch(`${rt.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: text, variables: { id: jobId } }),
        })
      ).json();
      expect(res.errors).toBeUndefined();
      expect(res.data.node).toMatchObject({ __typename: 'Job', id: jobId });
      expect(res.data.node.metrics.length).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
