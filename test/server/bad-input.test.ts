// Bad input answers with a coded GraphQL error and the server keeps serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

describe('bad input', () => {
  let s: TestServer;
  let jobId: string;
  beforeAll(async () => {
    s = await startTestServer();
    const res = await s.gql(`{ jobs(first: 1, filter: {statuses: [SUCCEEDED]}) { edges { node { id } } } }`);
    jobId = res.data.jobs.edges[0].node.id;
  });
  afterAll(() => s.close());

  const cases: [string, string, Record<string, unknown>, string, (data: any) => void][] = [
    ['an unknown job id', `query($id: ID!) { job(id: $id) { id } }`, { id: 'bt:job:does-not-exist' }, 'NOT_FOUND', (d) => expect(d.job).toBeNull()],
    ['a job id of an unconfigured provider', `query($id: ID!) { job(id: $id) { id } }`, { id: 'nope:job:x' }, 'NOT_FOUND', (d) => expect(d.job).toBeNull()],
    ['a malformed id', `query($id: ID!) { job(id: $id) { id } }`, { id: 'garbage' }, 'BAD_ID', (d) => expect(d.job).toBeNull()],
    ['a project id where a job id belongs', `query($id: ID!) { job(id: $id) { id } }`, { id: 'bt:project:x' }, 'BAD_ID', (d) => expect(d.job).toBeNull()],
    ['an unknown project id', `query($id: ID!) { project(id: $id) { id } }`, { id: 'bt:project:nope' }, 'NOT_FOUND', (d) => expect(d.project).toBeNull()],
    ['from after to', `query($id: ID!) { job(id: $id) { metrics(from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z") { name } } }`, {}, 'BAD_INPUT', () => {}],
    ['maxPoints 0', `query($id: ID!) { job(id: $id) { metrics(maxPoints: 0) { name } } }`, {}, 'BAD_INPUT', () => {}],
    ['maxPoints negative', `query($id: ID!) { job(id: $id) { gpus { utilization(maxPoints: -5) { name } } } }`, {}, 'BAD_INPUT', () => {}],
    ['maxPoints above the cap', `query($id: ID!) { job(id: $id) { metrics(maxPoints: 10000001) { name } } }`, {}, 'BAD_INPUT', () => {}],
    // As a variable: a literal first: 100000 is refused earlier, by the cost limit (QUERY_TOO_COSTLY).
    ['first above the page cap', `query($n: Int) { jobs(first: $n) { edges { node { id } } } }`, { n: 100000 }, 'BAD_INPUT', (d) => expect(d).toBeNull()],
    ['first negative', `{ jobs(first: -1) { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a malformed cursor', `{ jobs(first: 5, after: "not-a-cursor") { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a cursor of the right encoding but wrong content', `{ jobs(first: 5, after: "eyJhIjoxfQ") { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a DateTime without a zone', `query($id: ID!) { job(id: $id) { metrics(from: "2026-01-01 10:00") { name } } }`, {}, 'BAD_INPUT', () => {}],
    ['a DateTime variable that is not a date', `query($id: ID!, $f: DateTime) { job(id: $id) { metrics(from: $f) { name } } }`, { f: 'yesterday' }, 'BAD_INPUT', () => {}],
    ['an unknown enum value', `query($id: ID!) { job(id: $id) { metrics(names: [GPU_FOO]) { name } } }`, {}, 'GRAPHQL_VALIDATION_FAILED', () => {}],
    ['an unknown field', `{ jobs { edges { node { nope } } } }`, {}, 'GRAPHQL_VALIDATION_FAILED', () => {}],
    ['a too long name filter', `{ jobs(filter: {nameContains: "${'x'.repeat(300)}"}) { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a malformed project id in a filter', `{ jobs(filter: {projectId: "x"}) { edges { node { id } } } }`, {}, 'BAD_ID', () => {}],
  ];

  for (const [what, query, vars, code, check] of cases) {
    it(`answers ${what} with ${code}`, async () => {
      const res = await s.gql(query, { id: jobId, ...vars });
      expect(res.errors?.length, JSON.stringify(res)).toBeGreaterThan(0);
      expect(res.errors![0]!.extensions?.code).toBe(code);
      if (res.data !== undefined) check(res.data);
      // and the server keeps serving
      const ok = await s.gql(`{ providers { id } }`);
      expect(ok.data.providers).toEqual([{ id: 'bt' }]);
    });
  }

  it('answers a body that is not JSON with a 400 and a message', async () => {
    const res = await s.runtime.app.fetch('http://yoga/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query": ' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.errors[0].message).toMatch(/JSON/i);
  });
});
