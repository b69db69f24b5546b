// Queries run on graphql-jit (server/plugins/use-query-jit.ts). The reference is graphql-js: the
// same questions, asked of a second runtime on the same simulator (on PostgreSQL the same database) with
// GRAPHQL_EXECUTOR=graphql-js, must get the same answers, errors, paths and codes included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { startRuntimeOn, startTestServer, type TestServer } from '../support/runtime.js';

let s: TestServer;
let reference: Runtime;

beforeAll(async () => {
  s = await startTestServer();
  reference = await startRuntimeOn(s.db, [{ id: 'bt', kind: 'BASETEN', baseUrl: s.sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 10 }], {
    config: { executor: 'graphql-js' },
    env: { BT_KEY: s.sim.apiKey },
    clock: s.clock.now,
  });
});
afterAll(async () => {
  await reference?.close();
  await s?.close();
});

async function text(rt: Runtime, query: string, variables?: Record<string, unknown>): Promise<string> {
  const res = await rt.app.fetch('http://yoga/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return `${res.status} ${await res.text()}`;
}

/**
 * Asks both executors, after a first asking that fills the cache: the same
 * status and JSON, and the same bytes when there are no errors (with errors, graphql-js writes
 * `errors` before `data`; the order of an object's keys means nothing in JSON).
 */
async function same(query: string, variables?: Record<string, unknown>): Promise<string> {
  // Both read the cache as it stands once this question's fetch is written: a cold answer's
  // summaries are computed from the fetched points in JavaScript, a warm one's in SQL, and a float
  // average may differ in its last digit with the summation order (seen on PostgreSQL).
  // (On PGlite each runtime has a database of its own: both are filled.)
  await text(s.runtime, query, variables);
  await text(reference, query, variables);
  await Promise.all([s.runtime.readThrough.settle(), reference.readThrough.settle()]);
  // The cost estimate reads what each process knows of the jobs (store/job-shapes.ts): the one that
  // wrote a topology knows it at once, the other at its next reload. The actual cost is compared.
  const withoutEstimates = (t: string) =>
    t
      .replace(/"(estimated|cost)":\d+/g, '"$1":0')
      .replace(/could hold [\d,]+ values/g, 'could hold N values')
      .replace(/\(\d+ known\)/g, '(N known)')
      // Each process's circuit breaker opens at its own wall-clock instant: the 503s of the errors
      // case open both (a job asked by id is read again once a list TTL passed, a fifth failed call),
      // and they stay open for the cases after it.
      .replace(/not calling this platform until [\dT:.Z-]+/g, 'not calling this platform until T')
      .replace(/"retryAfterSeconds":\d+/g, '"retryAfterSeconds":0');
  const jit = withoutEstimates(await text(s.runtime, query, variables));
  const js = withoutEstimates(await text(reference, query, variables));
  expect(jit.slice(0, 4)).toBe(js.slice(0, 4));
  expect(JSON.parse(jit.slice(4))).toEqual(JSON.parse(js.slice(4)));
  if (!js.includes('"errors"')) expect(jit).toBe(js);
  return jit;
}

const DASHBOARD = /* GraphQL */ `
  query Dashboard($first: Int!, $maxPoints: Int = 12) {
    jobs(first: $first) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { cursor node { __typename id name status gpuType createdAt startedAt finishedAt
        provider { id kind name simulated }
        project { id name }
        nodes { id name gpus { id index model
          utilization(maxPoints: $maxPoints) { unit points { timestamp value } timestamps values summary { avg max last } freshness { stale } }
        } }
        metrics(maxPoints: 5) { id name scope unit node { id } gpu { index } points { timestamp value } }
      } }
    }
  }`;

/** Executes one query through a runtime's envelop, as yoga does, and returns the raw result object. */
async function executeIn(rt: Runtime, query: string): Promise<Record<string, unknown>> {
  const request = new Request('http://yoga/graphql', { method: 'POST' });
  const { parse, validate, contextFactory, execute, schema } = rt.app.getEnveloped({ request, params: { query } } as never);
  const document = parse(query);
  expect(validate(schema, document)).toEqual([]);
  return (await execute({ schema, document, contextValue: await contextFactory() })) as Record<string, unknown>;
}

describe('graphql-jit answers as graphql-js does', () => {
  it('queries run compiled on the default runtime, and on graphql-js on the reference', async () => {
    // graphql-jit marks its results with the compiled query's serialiser. An answer without
    // errors carries the limits plugin's instead (its text serialised once), so ask for one with.
    const failing = '{ providers { id } job(id: "baseten:job:none") { id } }';
    const compiled = await executeIn(s.runtime, failing);
    expect(compiled.errors).toHaveLength(1);
    expect(typeof compiled.stringify).toBe('function');
    expect((await executeIn(reference, failing)).stringify).toBeUndefined();
  });

  it('a dashboard: lists, nested objects, scalars (DateTime, Duration, floats), enums, columns and summaries', async () => {
    const body = await same(DASHBOARD, { first: 8 });
    expect(body).toContain('"points":[{"timestamp"');
    expect(body).not.toContain('"errors"');
  });

  it('interfaces, fragments, aliases, __typename, variables with defaults and directives', async () => {
    const list = JSON.parse((await same('{ jobs(first: 3) { edges { node { id } } } }')).slice(4));
    const id = list.data.jobs.edges[0].node.id as string;
    await same(
      `query($id: ID!, $withNodes: Boolean = false) {
        a: node(id: $id) { __typename id ... on Job { name ...J } }
        b: job(id: $id) { id nodes @include(if: $withNodes) { name } status @skip(if: $withNodes) }
        providers { ...P }
      }
      fragment J on Job { status project { name } }
      fragment P on Provider { id kind name }`,
      { id },
    );
    await same('query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }', { ids: [id, 'bt:job:nope', 'not-an-id'] });
  });

  it('errors: unknown ids, bad arguments, a failing platform with stale data, an over-limit answer', async () => {
    await same('{ job(id: "bt:job:does-not-exist") { id name } }');
    await same('{ job(id: "garbage") { id } }');
    await same('{ jobs(first: -1) { totalCount } }');
    await same('query($first: Int!) { jobs(first: $first) { totalCount } }', { first: 'ten' });
    await same('{ jobs(first: 100) { edges { node { nodes { gpus { utilization(maxPoints: 5000) { points { value } } } } } } } }');
    const list = JSON.parse((await same(`{ jobs(first: 20, filter: { statuses: [RUNNING] }) { edges { node { id } } } }`)).slice(4));
    const running = list.data.jobs.edges[0].node.id as string;
    const utilization = `query($id: ID!) { job(id: $id) { name nodes { gpus { utilization(maxPoints: 5) { points { value } freshness { stale error { code } } } } } } }`;
    await same(utilization, { id: running });
    s.clock.advance(60_000);
    s.sim.inject({ kind: 'status', status: 503, route: 'getMetrics|getJob' });
    try {
      const stale = await same(utilization, { id: running });
      expect(stale).toContain('"stale":true');
      expect(stale).toContain('UPSTREAM_UNAVAILABLE');
    } finally {
      s.sim.clearFaults();
    }
  });

  it('federation: _service and _entities', async () => {
    const list = JSON.parse((await same('{ jobs(first: 2) { edges { node { id } } } }')).slice(4));
    const ids = list.data.jobs.edges.map((e: { node: { id: string } }) => e.node.id);
    await same('{ _service { sdl } }');
    await same(`query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Job { id name status } } }`, {
      r: [...ids.map((id: string) => ({ __typename: 'Job', id })), { __typename: 'Job', id: 'bt:job:nope' }],
    });
  });

  it('introspection', async () => {
    await same('{ __schema { queryType { name } types { name kind fields(includeDeprecated: true) { name args { name defaultValue } } } } }');
    await same('{ __type(name: "Job") { name interfaces { name } } }');
  });
});
