// The cache policy, observed from outside: upstream calls counted by the simulator, answers
// through GraphQL, data in a real database (PGlite, or Postgres with TEST_DATABASE_URL).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL_POSTGRES_URL } from '../support/database.js';
import { startTestServer, type TestServer } from '../support/runtime.js';

const UTILIZATION = `query($id: ID!) {
  job(id: $id) { id status nodes { id gpus { id utilization(maxPoints: 50) { unit points { timestamp value } freshness { fetchedAt stale } } } } }
}`;

async function pickJob(s: TestServer, status: string): Promise<string> {
  const res = await s.gql(`{ jobs(first: 100, filter: {statuses: [${status}]}) { edges { node { id gpuType } } } }`);
  const job = res.data.jobs.edges.find((e: any) => e.node.gpuType !== null);
  expect(job, `a ${status} job with GPUs in the simulated fleet`).toBeDefined();
  return job.node.id;
}

describe('read-through cache', () => {
  let s: TestServer;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tg-cache-'));

  beforeAll(async () => {
    s = await startTestServer({ dataDir, cachePolicy: { metricsTtlMs: 30_000, listTtlMs: 30_000, detailTtlMs: 15_000 } });
  });
  afterAll(async () => {
    await s.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers a second identical query with zero upstream calls', async () => {
    const id = await pickJob(s, 'RUNNING');
    const first = await s.gql(UTILIZATION, { id });
    expect(first.errors).toBeUndefined();
    const gpus = first.data.job.nodes.flatMap((n: any) => n.gpus);
    expect(gpus.length).toBeGreaterThan(0);
    for (const g of gpus) {
      expect(g.utilization.unit).toBe('RATIO');
      expect(g.utilization.points.length).toBeGreaterThan(0);
      for (const p of g.utilization.points) expect(p.value === null || (p.value >= 0 && p.value <= 1)).toBe(true);
    }
    s.sim.resetStats();
    const second = await s.gql(UTILIZATION, { id });
    expect(second.data).toEqual(first.data);
    expect([...s.sim.stats.values()].reduce((a, b) => a + b, 0)).toBe(0);
  });

  it("fetches a finished job's metrics once ever, however much time passes", async () => {
    const id = await pickJob(s, 'SUCCEEDED');
    s.sim.resetStats();
    const first = await s.gql(UTILIZATION, { id });
    expect(first.errors).toBeUndefined();
    expect(s.sim.count('getMetrics')).toBe(1);
    s.clock.advance(7 * 24 * 3600_000); // a week later: every TTL long expired
    const again = await s.gql(UTILIZATION, { id });
    expect(again.data.job.nodes).toEqual(first.data.job.nodes);
    expect(s.sim.count('getMetrics')).toBe(1);
    s.clock.set(s.clock.now() - 7 * 24 * 3600_000);
  });

  it("refetches a running job's metrics after the TTL, not before", async () => {
    const id = await pickJob(s, 'RUNNING');
    await s.gql(UTILIZATION, { id });
    s.sim.resetStats();
    s.clock.advance(10_000);
    await s.gql(UTILIZATION, { id });
    expect(s.sim.count('getMetrics')).toBe(0);
    s.clock.advance(31_000);
    const later = await s.gql(UTILIZATION, { id });
    expect(later.errors).toBeUndefined();
    expect(s.sim.count('getMetrics')).toBe(1);
    // The refetched window reaches the new "now": the newest point moved forward.
    const newest = later.data.job.nodes[0].gpus[0].utilization.freshness.fetchedAt;
    expect(new Date(newest).getTime()).toBe(s.clock.now());
  });

  it('keeps one resolution per stretch: a coarse history fetch adds no points where a finer fetch already holds them', async () => {
    const id = await pickJob(s, 'RUNNING');
    const window = (from: string, to: string, maxPoints: number) => `query($id: ID!) {
      job(id: $id) { nodes { gpus { id utilization(from: "${from}", to: "${to}", maxPoints: ${maxPoints}) { points { timestamp value } } } } }
    }`;
    const started = (await s.gql(`query($id: ID!) { job(id: $id) { startedAt } }`, { id })).data.job.startedAt as string;
    const now = s.clock.now();
    const recent = window(new Date(now - 10 * 60_000).toISOString(), new Date(now).toISOString(), 500);
    // Ten minutes at the finest step the platform gives (15 s).
    const fine = await s.gql(recent, { id });
    expect(fine.errors).toBeUndefined();
    const finePoints = fine.data.job.nodes[0].gpus[0].utilization.points as { timestamp: string }[];
    expect(finePoints.length).toBeGreaterThan(10);
    // The whole run at a coarse step: the platform answers samples between the 15 s ones too.
    const history = await s.gql(window(started, new Date(now).toISOString(), 120), { id });
    expect(history.errors).toBeUndefined();
    s.sim.resetStats();
    // The ten minutes again, from the cache: the same points, none of the coarse ones among them.
    const again = await s.gql(recent, { id });
    expect(s.sim.count('getMetrics')).toBe(0);
    expect(again.data).toEqual(fine.data);
  });

  it('a running job the platform no longer has becomes UNKNOWN (last status in rawStatus), not running forever', async () => {
    const id = await pickJob(s, 'RUNNING');
    const external = id.split(':').at(-1)!;
    const at = s.sim.fleet.jobs.findIndex((j) => j.id === external);
    expect(at, `${external} in the simulated fleet`).toBeGreaterThanOrEqual(0);
    const [removed] = s.sim.fleet.jobs.splice(at, 1);
    try {
      s.clock.advance(31_000); // past the list TTL: the next list read syncs
      const listed = await s.gql(`{ jobs(first: 100) { edges { node { id status } } } }`);
      expect(listed.errors).toBeUndefined();
      const job = (await s.gql(`query($id: ID!) { job(id: $id) { status rawStatus } }`, { id })).data.job;
      expect(job).toEqual({ status: 'UNKNOWN', rawStatus: 'gone: the platform no longer lists it nor finds it by id (last seen RUNNING)' });
    } finally {
      s.sim.fleet.jobs.splice(at, 0, removed!);
    }
    // Back on the platform's list: the next sync gives it its status again.
    s.clock.advance(31_000);
    await s.gql(`{ jobs(first: 100) { edges { node { id } } } }`);
    expect((await s.gql(`query($id: ID!) { job(id: $id) { status } }`, { id })).data.job.status).toBe('RUNNING');
  });

  it('keeps the cache and the ids across a restart', async () => {
    const id = await pickJob(s, 'SUCCEEDED');
    const before = await s.gql(UTILIZATION, { id });
    const ids = await s.gql(`{ projects { id jobs(first: 100) { edges { node { id } } } } }`);
    await s.stopRuntime();
    await s.restart();
    s.sim.resetStats();
    const after = await s.gql(UTILIZATION, { id });
    expect(after.data).toEqual(before.data);
    expect(s.sim.count('getMetrics')).toBe(0);
    const idsAfter = await s.gql(`{ projects { id jobs(first: 100) { edges { node { id } } } } }`);
    expect(idsAfter.data).toEqual(ids.data);
  });

  it('serves cached metrics as stale with a typed error when the platform fails', async () => {
    const id = await pickJob(s, 'RUNNING');
    await s.gql(UTILIZATION, { id });
    s.clock.advance(60_000);
    s.sim.inject({ kind: 'status', status: 503, route: 'getMetrics|getJob' });
    const res = await s.gql(UTILIZATION, { id });
    const detailed = await s.gql(`query($id: ID!) { job(id: $id) { metrics(names: [GPU_UTILIZATION], scope: GPU) { freshness { stale error { code } } } } }`, {
      id,
    });
    s.sim.clearFaults();
    // The stale parts are reported in errors[] too (issue 8), each with the upstream code.
    expect(res.errors?.length).toBeGreaterThan(0);
    for (const e of res.errors!) expect(e.extensions).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', stale: true });
    const f = res.data.job.nodes[0].gpus[0].utilization.freshness;
    expect(f.stale).toBe(true);
    expect(res.data.job.nodes[0].gpus[0].utilization.points.length).toBeGreaterThan(0);
    expect(detailed.data.job.metrics[0].freshness).toEqual({ stale: true, error: { code: 'UPSTREAM_UNAVAILABLE' } });
  });

  it('fails the field with a typed error when nothing is cached and the platform fails', async () => {
    // The 503s of the test before open the provider's circuit (five failed calls), and an open
    // circuit answers UPSTREAM_UNAVAILABLE without calling: this asks a process whose circuit is closed.
    await s.stopRuntime();
    await s.restart();
    expect(s.runtime.providers.healthOf('bt').circuit).toBe('CLOSED');
    const res0 = await s.gql(`{ jobs(first: 100, filter: {statuses: [FAILED]}) { edges { node { id } } } }`);
    const id = res0.data.jobs.edges[0].node.id;
    s.sim.inject({ kind: 'auth', route: 'getMetrics|getJob' });
    const res = await s.gql(`query($id: ID!) { job(id: $id) { name metrics(names: [GPU_UTILIZATION]) { name } } }`, { id });
    s.sim.clearFaults();
    expect(res.errors?.[0]?.extensions?.code).toBe('UPSTREAM_AUTH');
    expect(JSON.stringify(res)).not.toContain(s.sim.apiKey);
  });

  it.runIf(!REAL_POSTGRES_URL)('uses the PGlite folder given as DATA_DIR [PGlite run: without TEST_DATABASE_URL]', () => {
    expect(s.runtime.database.driver).toBe('pglite');
  });
  it.runIf(REAL_POSTGRES_URL)('uses the real Postgres when DATABASE_URL is set [needs TEST_DATABASE_URL]', () => {
    expect(s.runtime.database.driver).toBe('postgres');
  });
});
