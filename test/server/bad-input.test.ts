// Bad input answers with a coded GraphQL error and the server keeps serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

function deepList(depth: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

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
    [
      'from after to',
      `query($id: ID!) { job(id: $id) { metrics(from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z") { name } } }`,
      {},
      'BAD_INPUT',
      () => {},
    ],
    ['maxPoints 0', `query($id: ID!) { job(id: $id) { metrics(maxPoints: 0) { name } } }`, {}, 'BAD_INPUT', () => {}],
    ['maxPoints negative', `query($id: ID!) { job(id: $id) { gpus { utilization(maxPoints: -5) { name } } } }`, {}, 'BAD_INPUT', () => {}],
    ['maxPoints above the cap', `query($id: ID!) { job(id: $id) { metrics(maxPoints: 10000001) { name } } }`, {}, 'BAD_INPUT', () => {}],
    ['first above the page cap', `query($n: Int) { jobs(first: $n) { edges { node { id } } } }`, { n: 501 }, 'BAD_INPUT', (d) => expect(d).toBeNull()],
    // What the answer could hold is counted from variables as from literals, before anything runs.
    [
      'first: 100000 as a variable',
      `query($n: Int) { jobs(first: $n) { edges { node { id metrics(maxPoints: 100) { values } } } } }`,
      { n: 100000 },
      'QUERY_TOO_COSTLY',
      (d) => expect(d).toBeNull(),
    ],
    [
      'first: 100000 as a literal',
      `{ jobs(first: 100000) { edges { node { id metrics(maxPoints: 100) { values } } } } }`,
      {},
      'QUERY_TOO_COSTLY',
      (d) => expect(d).toBeNull(),
    ],
    [
      'maxPoints as a variable times nested lists',
      `query($p: Int) { jobs(first: 50) { edges { node { nodes { gpus { utilization(maxPoints: $p) { points { timestamp value } } } } } } } }`,
      { p: 10000 },
      'QUERY_TOO_COSTLY',
      (d) => expect(d).toBeNull(),
    ],
    ['a NUL byte in an id', `query($v: ID!) { job(id: $v) { id } }`, { v: 'bt:job:a\u0000b' }, 'BAD_INPUT', () => {}],
    ['a NUL byte in a literal name filter', `{ jobs(filter: {nameContains: "a\\u0000b"}) { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a NUL byte in a cursor', `query($c: String) { jobs(first: 5, after: $c) { edges { node { id } } } }`, { c: 'abc\u0000' }, 'BAD_INPUT', () => {}],
    ['a year-0000 date', `query($id: ID!) { job(id: $id) { metrics(from: "0000-01-01T00:00:00Z") { name } } }`, {}, 'BAD_INPUT', () => {}],
    ['2026-02-30', `query($id: ID!, $f: DateTime) { job(id: $id) { metrics(from: $f) { name } } }`, { f: '2026-02-30T00:00:00Z' }, 'BAD_INPUT', () => {}],
    [
      'a cursor past the date range',
      `query($c: String) { jobs(first: 5, after: $c) { edges { node { id } } } }`,
      { c: Buffer.from(JSON.stringify([8.64e15, 'bt:job:x'])).toString('base64url') },
      'BAD_INPUT',
      () => {},
    ],
    ['a 3,000-deep list variable', `query($r: [_Any!]!) { _entities(representations: $r) { __typename } }`, { r: [deepList(3000)] }, 'BAD_INPUT', () => {}],
    [
      'a 3,000-deep list literal',
      `{ jobs(filter: {providerIds: ${'['.repeat(3000)}"bt"${']'.repeat(3000)}}) { edges { node { id } } } }`,
      {},
      'BAD_INPUT',
      () => {},
    ],
    [
      'a fleet window of a century',
      `{ fleet(from: "1990-01-01T00:00:00Z", to: "2090-01-01T00:00:00Z") { jobCount } }`,
      {},
      'BAD_INPUT',
      (d) => expect(d).toBeNull(),
    ],
    ['first negative', `{ jobs(first: -1) { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a malformed cursor', `{ jobs(first: 5, after: "not-a-cursor") { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a cursor of the right encoding but wrong content', `{ jobs(first: 5, after: "eyJhIjoxfQ") { edges { node { id } } } }`, {}, 'BAD_INPUT', () => {}],
    ['a DateTime without a zone', `query($id: ID!) { job(id: $id) { metrics(from: "2026-01-01 10:00") { name } } }`, {}, 'BAD_INPUT', () => {}],
    [
      'a DateTime variable that is not a date',
      `query($id: ID!, $f: DateTime) { job(id: $id) { metrics(from: $f) { name } } }`,
      { f: 'yesterday' },
      'BAD_INPUT',
      () => {},
    ],
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

  it('says what was too costly, never "Syntax Error"', async () => {
    const res = await s.gql(`query($n: Int) { jobs(first: $n) { edges { node { id metrics(maxPoints: 100) { values } } } } }`, { n: 100000 });
    expect(res.errors![0]!.message).toMatch(/jobs\(first 100000\)/);
    expect(res.errors![0]!.message).not.toMatch(/Syntax Error/);
  });

  it('answers a body that is not JSON with a 400 and a message', async () => {
    const res = await s.runtime.app.fetch('http://yoga/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query": ' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.errors[0].message).toMatch(/JSON/i);
  });
});
