// Made-up ids cannot drive the platform's calls (issue 44, item 5). A provider-scoped token sends
// the three patterns that once cost thousands of upstream calls in seconds: compareRuns of 20
// made-up ids, Query.nodes of 100, and CSV exports of made-up ids, each with new ids every time
// (so no negative cache can answer them). Each pattern runs under its own token on a clock that
// stands still: the simulator's request log shows at most the default budget (20 lookups) per
// token, however many ids it sent; the ids over budget answer RATE_LIMITED with retryAfterSeconds,
// one field each; another token is still served; the bucket refills as the clock moves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { DEFAULT_LOOKUP_BUDGET } from '../../src/store/lookup-budget.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ANCHOR, manualClock, startRuntimeOn } from '../support/runtime.js';

const TOKENS = {
  admin: 'admin-token-0123456789abcdef',
  compare: 'compare-token-0123456789abcdef',
  nodes: 'nodes-token-0123456789abcdef',
  csv: 'csv-token-0123456789abcdef',
};
const BUDGET = DEFAULT_LOOKUP_BUDGET.burst;

const COMPARE = `query($ids: [ID!]!) {
  compareRuns(jobIds: $ids, metrics: [{ training: "loss" }]) { runs { jobId job { id } error { code message } } } }`;
const NODES = 'query($ids: [ID!]!) { nodes(ids: $ids) { id } }';

describe('upstream lookups of made-up ids are bounded per token', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  const clock = manualClock(ANCHOR);
  let serial = 0;
  const madeUp = (n: number) => Array.from({ length: n }, () => `forged-${serial++}`);
  const upstreamCalls = () => [...sim.stats.values()].reduce((a, b) => a + b, 0);

  async function gql(token: string, query: string, variables?: Record<string, unknown>) {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as { data?: any; errors?: { message: string; path?: unknown[]; extensions?: any }[] };
  }

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'budget',
      anchorMs: ANCHOR,
      now: clock.now,
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 2, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2 },
    });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 5 }], {
      config: {
        security: loadSecurityConfig({
          API_TOKENS: JSON.stringify([
            { name: 'admin', token: TOKENS.admin },
            { name: 'compare', token: TOKENS.compare, providers: ['bt'] },
            { name: 'nodes', token: TOKENS.nodes, providers: ['bt'] },
            { name: 'csv', token: TOKENS.csv, providers: ['bt'] },
          ]),
        }),
      },
      env: { BT_KEY: sim.apiKey },
      clock: clock.now,
    });
    // The job list is synced (and stays fresh: the clock stands still), so every call below is a lookup by id.
    const list = await gql(TOKENS.admin, '{ jobs(first: 10) { edges { node { id } } } }');
    expect(list.errors).toBeUndefined();
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('compareRuns of 20 made-up ids, ten times: at most the budget of upstream calls', async () => {
    sim.resetStats();
    const codes = new Map<string, number>();
    for (let i = 0; i < 10; i++) {
      const res = await gql(TOKENS.compare, COMPARE, { ids: madeUp(20).map((k) => `bt:job:${k}`) });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      for (const run of res.data.compareRuns.runs) codes.set(run.error.code, (codes.get(run.error.code) ?? 0) + 1);
    }
    expect(upstreamCalls()).toBeLessThanOrEqual(BUDGET);
    // The first 20 were looked up (and not found); every later one was refused, run by run.
    expect(codes.get('NOT_FOUND')).toBe(BUDGET);
    expect(codes.get('RATE_LIMITED')).toBe(200 - BUDGET);
  });

  it('Query.nodes of 100 made-up job, node and GPU ids, five times: at most the budget, RATE_LIMITED per id with retry info', async () => {
    sim.resetStats();
    let limited = 0;
    for (let i = 0; i < 5; i++) {
      const ids = madeUp(100).map((k, j) => (j % 3 === 0 ? `bt:job:${k}` : j % 3 === 1 ? `bt:node:${k}#n0` : `bt:gpu:${k}#n0#0`));
      const res = await gql(TOKENS.nodes, NODES, { ids });
      expect(res.data.nodes).toHaveLength(100);
      for (const e of res.errors ?? []) {
        expect(e.extensions?.code).toBe('RATE_LIMITED');
        expect(e.extensions?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
        expect(e.path?.[0]).toBe('nodes');
        expect(res.data.nodes[e.path?.[1] as number]).toBeNull();
        limited++;
      }
    }
    expect(upstreamCalls()).toBeLessThanOrEqual(BUDGET);
    expect(limited).toBe(500 - BUDGET);
  });

  it('CSV exports of made-up ids, fifty of them: at most the budget, then 429 with Retry-After', async () => {
    sim.resetStats();
    const statuses = new Map<number, number>();
    let retryAfter: string | null = null;
    for (const k of madeUp(50)) {
      const res = await fetch(`${rt.url}/export/jobs/${encodeURIComponent(`bt:job:${k}`)}/metrics.csv`, {
        headers: { authorization: `Bearer ${TOKENS.csv}` },
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 429) retryAfter ??= res.headers.get('retry-after');
    }
    expect(upstreamCalls()).toBeLessThanOrEqual(BUDGET);
    expect(statuses.get(404)).toBe(BUDGET);
    expect(statuses.get(429)).toBe(50 - BUDGET);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  it("one token's spent budget is not another's, and it refills as time passes", async () => {
    sim.resetStats();
    const admin = await gql(TOKENS.admin, 'query($id: ID!) { job(id: $id) { id } }', { id: `bt:job:${madeUp(1)[0]}` });
    expect(admin.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(upstreamCalls()).toBe(1);

    const spent = await gql(TOKENS.compare, 'query($id: ID!) { job(id: $id) { id } }', { id: `bt:job:${madeUp(1)[0]}` });
    expect(spent.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(upstreamCalls()).toBe(1);

    clock.advance(60_000);
    const refilled = await gql(TOKENS.compare, NODES, { ids: madeUp(BUDGET + 5).map((k) => `bt:job:${k}`) });
    expect(upstreamCalls()).toBe(1 + DEFAULT_LOOKUP_BUDGET.perMinute);
    expect(refilled.errors).toHaveLength(5);
  });
});
