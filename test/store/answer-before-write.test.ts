// A cold query is answered from what upstream returned, before its cache write commits; the
// answer must be the one the cache gives afterwards, point for point (downsampled buckets,
// aggregations, summaries). On Postgres the write is held back for real: another connection
// locks `fetches`, so the transaction that records the fetch with its points cannot commit until
// the answer is in. (PGlite has one connection: there the write may commit first; the answers
// must still agree.)
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SimRequest } from '../../src/simulators/kit.js';
import { startTestServer, type TestServer } from '../support/runtime.js';

const SERIES = `points { timestamp value } summary { count min max avg last firstAt lastAt }`;
const QUERY = `query($id: ID!) {
  job(id: $id) {
    nodes { name
      gpus { index
        avg: utilization(maxPoints: 7) { ${SERIES} timestamps steps values }
        max: utilization(maxPoints: 11, aggregation: MAX) { ${SERIES} }
        last: memoryUsed(maxPoints: 5, aggregation: LAST) { ${SERIES} }
        raw: memoryUtilization(maxPoints: 120) { ${SERIES} }
      }
      metrics(scope: NODE, maxPoints: 13, aggregation: MIN) { name ${SERIES} }
    }
  }
}`;

describe('an answer given before its cache write commits', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
    });
  });
  afterAll(() => s.close());

  /** Forgets every job's metrics and topology (the writes under way first); the first job's id. */
  async function coldFirstJob(): Promise<string> {
    await s.runtime.readThrough.settle();
    await s.runtime.database.db.execute('truncate points, series, fetches, nodes, gpus' as never);
    await s.runtime.database.db.execute('update jobs set topology_fetched_at = null' as never);
    const list = await s.gql(`{ jobs(first: 1) { edges { node { id } } } }`);
    return list.data.jobs.edges[0].node.id as string;
  }

  it('returns the same points as the same query answered warm', async () => {
    const list = await s.gql(`{ jobs(first: 1) { edges { node { id } } } }`);
    const id = list.data.jobs.edges[0].node.id as string;
    const dbUrl = s.runtime.database.driver === 'postgres' ? s.db.databaseUrl! : null;
    const holder = dbUrl ? postgres(dbUrl, { max: 1, onnotice: () => {} }) : null;
    // Runs `check` inside the transaction that holds the lock, once the answer is in.
    let inside: ((check: (tx: postgres.TransactionSql) => Promise<void>) => Promise<void>) | null = null;
    let holding: Promise<unknown> | null = null;
    if (holder) {
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      let handover!: (check: (tx: postgres.TransactionSql) => Promise<void>) => void;
      const checkGiven = new Promise<(tx: postgres.TransactionSql) => Promise<void>>((resolve) => (handover = resolve));
      holding = holder.begin(async (tx) => {
        await tx.unsafe('lock table fetches in exclusive mode');
        locked();
        await (await checkGiven)(tx);
      });
      inside = async (check) => {
        handover(check);
        await holding;
      };
      await isLocked;
    }
    s.sim.resetStats();
    const cold = await s.gql(QUERY, { id });
    expect(cold.errors, JSON.stringify(cold.errors)).toBeUndefined();
    expect(s.sim.count('getMetrics')).toBe(1);
    if (inside) {
      // The answer is in while its write still waits: nothing of it is committed yet.
      await inside(async (tx) => {
        const [fetches] = await tx.unsafe('select count(*)::int as n from fetches where job_id = $1', [id]);
        const [points] = await tx.unsafe('select count(*)::int as n from points p join series s on s.id = p.series_id where s.job_id = $1', [id]);
        expect(fetches!.n).toBe(0);
        expect(points!.n).toBe(0);
      });
      await holder!.end();
    }
    await s.runtime.readThrough.settle();
    s.sim.resetStats();
    const warm = await s.gql(QUERY, { id });
    expect([...s.sim.stats.values()].reduce((a, b) => a + b, 0)).toBe(0);
    const gpus = cold.data.job.nodes.flatMap((n: any) => n.gpus);
    expect(gpus.length).toBe(4);
    for (const g of gpus) {
      expect(g.avg.points.length).toBe(7);
      // The columnar form is the same points.
      expect(g.avg.timestamps).toEqual(g.avg.points.map((p: any) => new Date(p.timestamp).getTime()));
      expect(g.avg.values).toEqual(g.avg.points.map((p: any) => p.value));
      expect(g.avg.steps).toEqual(g.avg.points.map(() => null));
      expect(g.raw.points.length).toBeGreaterThan(11);
      expect(g.avg.summary.count).toBeGreaterThan(0);
    }
    // Points, buckets and every statistic match exactly, averages too: the cache's SQL sums a
    // window or a bucket in key order, as the held points are summed (Repository.summariesOf,
    // Repository.pointsOf).
    expect(cold.data).toEqual(warm.data);
  }, 120_000);

  it('does so for a list of jobs answered wave by wave as their bodies arrive', async () => {
    const LIST = `{ jobs(first: 10) { edges { node { id nodes { name gpus { index
      avg: utilization(maxPoints: 7) { ${SERIES} }
      last: memoryUsed(maxPoints: 5, aggregation: LAST) { ${SERIES} } } } } } } }`;
    await s.runtime.readThrough.settle();
    // Cold again, all three jobs (each one its own wave: METRICS_WAVES is more than 3).
    await s.runtime.database.db.execute('truncate points, series, fetches, nodes, gpus' as never);
    await s.runtime.database.db.execute('update jobs set topology_fetched_at = null' as never);
    s.sim.resetStats();
    const cold = await s.gql(LIST);
    expect(cold.errors, JSON.stringify(cold.errors)).toBeUndefined();
    expect(s.sim.count('getMetrics')).toBe(3);
    await s.runtime.readThrough.settle();
    s.sim.resetStats();
    const warm = await s.gql(LIST);
    expect(s.sim.count('getMetrics')).toBe(0);
    expect(cold.data.jobs.edges).toHaveLength(3);
    for (const e of cold.data.jobs.edges) expect(e.node.nodes.flatMap((n: any) => n.gpus)).toHaveLength(4);
    expect(cold.data).toEqual(warm.data);
  }, 120_000);

  it("answers with a later fetch's points too, where another request's write still holds the series alone", async () => {
    // A chart of the whole run is fetched and its write held (locked out on Postgres): the series
    // are held alone. A finer window of the same series is fetched next; its write adds to them,
    // so its answer waits for that write and reads both, as the cache answers afterwards. (It once
    // took the first write's points alone: 6 coarse points for 40 fine ones.)
    const id = await coldFirstJob();
    const now = s.clock.now();
    const FINE = `query($id: ID!) { job(id: $id) { nodes { gpus { utilization(from: "${new Date(now - 10 * 60_000).toISOString()}", to: "${new Date(now).toISOString()}", maxPoints: 500) { points { timestamp value } } } } } }`;
    const dbUrl = s.runtime.database.driver === 'postgres' ? s.db.databaseUrl! : null;
    const holder = dbUrl ? postgres(dbUrl, { max: 1, onnotice: () => {} }) : null;
    let unlock: () => void = () => {};
    let holding: Promise<unknown> = Promise.resolve();
    if (holder) {
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const released = new Promise<void>((resolve) => (unlock = resolve));
      holding = holder.begin(async (tx) => {
        await tx.unsafe('lock table fetches in exclusive mode');
        locked();
        await released;
      });
      await isLocked;
    }
    try {
      s.sim.resetStats();
      const whole = await s.gql(`query($id: ID!) { job(id: $id) { nodes { gpus { utilization(maxPoints: 50) { points { timestamp } } } } } }`, { id });
      expect(whole.errors, JSON.stringify(whole.errors)).toBeUndefined();
      const fine = s.gql(FINE, { id });
      // Its fetch is in and being written (on Postgres both writes wait on the lock).
      await vi.waitFor(() => expect(s.sim.count('getMetrics')).toBe(2), { timeout: 30_000, interval: 5 });
      await vi.waitFor(() => expect(s.runtime.readThrough.pendingWrites()).toBeGreaterThanOrEqual(holder ? 2 : 0), { timeout: 30_000, interval: 5 });
      unlock();
      await holding;
      const answered = await fine;
      expect(answered.errors, JSON.stringify(answered.errors)).toBeUndefined();
      await s.runtime.readThrough.settle();
      s.sim.resetStats();
      const warm = await s.gql(FINE, { id });
      expect(s.sim.count('getMetrics')).toBe(0);
      const gpus = answered.data.job.nodes.flatMap((n: any) => n.gpus);
      expect(gpus.length).toBe(4);
      // Ten minutes at the platform's finest step (15 s): forty samples at least.
      for (const g of gpus) expect(g.utilization.points.length).toBeGreaterThanOrEqual(40);
      expect(answered.data).toEqual(warm.data);
    } finally {
      unlock();
      await holding;
      await holder?.end();
    }
  }, 120_000);

  it('answers a series two of its fields fetch at two steps once both fetches are in', async () => {
    // A GPU's utilization at 20 points and the job's GPU series at 2,000, over one past window: one
    // coarse fetch (the topology's, for the GPU's field) and one fine fetch add to the same series.
    // The fine one is held upstream until the coarse one is written; the GPU's answer must then
    // wait for the fine one and read both, as the next request reads them. (It once answered from
    // the coarse fetch's held points alone: 7 points in 18-minute buckets, and 19-minute buckets
    // of the fine ones on the next request, which Apollo reports as data loss.)
    const id = await coldFirstJob();
    const now = s.clock.now();
    const window = { from: new Date(now - 2 * 3600_000).toISOString(), to: new Date(now - 30 * 60_000).toISOString() };
    const BOTH = `query($id: ID!, $from: DateTime, $to: DateTime) { job(id: $id) {
      gpus { id utilization(maxPoints: 20, from: $from, to: $to) { points { timestamp value } summary { count avg max } } }
      metrics(names: [GPU_UTILIZATION], scope: GPU, maxPoints: 2000, from: $from, to: $to) { gpu { id } points { timestamp value } }
    } }`;
    const stepOf = (req: SimRequest) => Number(req.query.get('step_seconds') ?? (req.body as { step_seconds?: number } | undefined)?.step_seconds);
    const fine = (req: SimRequest) => req.route === 'getMetrics' && stepOf(req) < 60;
    let fineArrived = false;
    const onRequest = (_route: string, req: SimRequest) => {
      if (fine(req)) fineArrived = true;
    };
    s.sim.events.on('request', onRequest);
    s.sim.inject({ kind: 'timeout', route: 'getMetrics', match: fine, times: 1 });
    const writesBefore = s.runtime.readThrough.settledWrites();
    try {
      s.sim.resetStats();
      const cold = s.gql(BOTH, { id, ...window });
      // The coarse fetch is written while the fine one waits upstream.
      await vi.waitFor(() => expect(fineArrived && s.runtime.readThrough.settledWrites() > writesBefore).toBe(true), { timeout: 60_000, interval: 5 });
      expect(s.sim.count('getMetrics')).toBe(2);
      s.sim.release();
      const answered = await cold;
      expect(answered.errors, JSON.stringify(answered.errors)).toBeUndefined();
      await s.runtime.readThrough.settle();
      s.sim.resetStats();
      const warm = await s.gql(BOTH, { id, ...window });
      expect(s.sim.count('getMetrics')).toBe(0);
      const gpus = answered.data.job.gpus as { utilization: { points: unknown[] } }[];
      expect(gpus.length).toBe(4);
      for (const g of gpus) expect(g.utilization.points.length).toBeGreaterThan(10);
      expect(answered.data).toEqual(warm.data);
    } finally {
      s.sim.events.off('request', onRequest);
      s.sim.clearFaults();
      s.sim.release();
    }
  }, 120_000);
});
