// One GraphQL request costs a fixed number of SQL statements whatever its fan-out, and at most
// one upstream metrics call per job: measured over 5 and 35 jobs x 2 nodes x 8 GPUs (35 jobs ask
// for 1,120 series windows: past DataLoader's batch of 1,000 keys, which made a statement more per
// loader). The cache write that follows a cold answer is counted with it (the test waits for it
// to commit).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

const FLEET_QUERY = `query($first: Int!, $after: String) {
  jobs(first: $first, after: $after, filter: {statuses: [RUNNING]}) {
    pageInfo { endCursor }
    edges { node { id name nodes { name gpus { index model
      utilization(maxPoints: 60) { unit points { timestamp value } summary { avg max } }
      memoryUsed(maxPoints: 60) { unit summary { max } } } } } }
  }
}`;

/**
 * A cold request's statements, writes apart from reads. The topologies and points come in a few
 * waves (one per batch of upstream answers), each written by the same statements whatever its size:
 * those are counted exactly. The reads of each wave (its fetches, nodes, GPUs, series) go through
 * DataLoader, and two waves that land in one tick on a busy machine share one loader batch: a read
 * of a kind then numbers between one and twice the waves plus one (the fetches are read twice a
 * wave, and once before), never more, so reads that grew with the jobs would still fail.
 */
function byKind(texts: readonly string[]): { writes: Record<string, number>; reads: Record<string, number>; waves: number } {
  const writes: Record<string, number> = {};
  const reads: Record<string, number> = {};
  for (const text of texts) {
    const flat = text.replace(/\s+/g, ' ').trim();
    // On PGlite a prepared read is the EXECUTE of its statement, its values inline (sql-util.ts,
    // rowsOfPrepared): a read, of its statement's name. The statement's PREPARE, once per database
    // and text, and the check before it are the database's setup, not the request's.
    if (/^(prepare store_|select 1 from pg_prepared_statements )/.test(flat)) continue;
    const kind = /^execute store_\w+/.exec(flat)?.[0] ?? flat.slice(0, 80);
    const into = kind.startsWith('select ') || kind.startsWith('execute ') ? reads : writes;
    into[kind] = (into[kind] ?? 0) + 1;
  }
  const waves = Object.entries(writes).find(([kind]) => kind.startsWith('insert into series '))?.[1] ?? 0;
  return { writes, reads, waves };
}

describe('fan-out cost', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 40, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 8, statuses: ['TRAINING_JOB_RUNNING'] },
      // The fan-out is the point of this test: 35 jobs x 16 GPUs x 60 points is past the default cost limit.
      securityEnv: { MAX_QUERY_COST: '1000000' },
    });
    await s.gql(`{ jobs(first: 1) { edges { node { id } } } }`); // the job list itself is synced once
  });
  afterAll(() => s.close());

  async function pointCount(): Promise<number> {
    const res = (await s.runtime.database.db.execute('select count(*)::int as n from points' as never)) as any;
    return Number((Array.isArray(res) ? res : res.rows)[0].n);
  }

  async function measure(first: number, after: string | null) {
    const pointsBefore = await pointCount();
    s.sim.resetStats();
    const before = s.runtime.database.statementCount();
    const texts: string[] = [];
    const unwatch = s.runtime.database.watchStatements((text) => texts.push(text));
    const res = await s.gql(FLEET_QUERY, { first, after });
    await s.runtime.readThrough.settle();
    unwatch();
    expect(res.errors, JSON.stringify(res.errors?.slice(0, 2))).toBeUndefined();
    const edges = res.data.jobs.edges;
    expect(edges).toHaveLength(first);
    for (const e of edges) {
      expect(e.node.nodes).toHaveLength(2);
      for (const n of e.node.nodes) {
        expect(n.gpus).toHaveLength(8);
        for (const g of n.gpus) {
          expect(g.utilization.unit).toBe('RATIO');
          expect(g.utilization.points.length).toBeGreaterThan(0);
          expect(g.memoryUsed.unit).toBe('BYTES');
        }
      }
    }
    // Points are written by one COPY and one merge per fetch batch, whatever their volume.
    const statements = s.runtime.database.statementCount() - before;
    const written = (await pointCount()) - pointsBefore;
    return {
      statements,
      ...byKind(texts),
      written,
      metricsCalls: s.sim.count('getMetrics'),
      jobCalls: s.sim.count('getJob'),
      endCursor: res.data.jobs.pageInfo.endCursor as string,
    };
  }

  it('makes the same number of SQL statements for 5 and for 35 jobs, cold and warm', async () => {
    const cold5 = await measure(5, null);
    const cold35 = await measure(35, cold5.endCursor);
    expect(cold35.writes).toEqual(cold5.writes);
    expect(cold5.waves).toBeGreaterThan(0);
    for (const m of [cold5, cold35]) for (const [kind, n] of Object.entries(m.reads)) expect(n, kind).toBeLessThanOrEqual(2 * m.waves + 1);
    expect(Object.keys(cold35.reads).sort()).toEqual(Object.keys(cold5.reads).sort());
    // One metrics call per job, whatever the number of GPUs and series asked of it; it also
    // teaches the nodes. The job detail is not asked: the list just brought it and Baseten's
    // has no nodes (it used to cost one getJob per job).
    expect(cold5.metricsCalls).toBe(5);
    expect(cold35.metricsCalls).toBe(35);
    expect(cold5.jobCalls + cold35.jobCalls).toBe(0);

    const warm5 = await measure(5, null);
    const warm35 = await measure(35, cold5.endCursor);
    // The same kinds of read, and the same bound for 5 jobs as for 35. Not the exact count: on a
    // busy machine two of a warm request's reads can meet in one DataLoader batch, or not (8 against
    // 7 seen under load, never at rest).
    expect(Object.keys(warm35.reads).sort()).toEqual(Object.keys(warm5.reads).sort());
    for (const m of [warm5, warm35]) expect(m.statements).toBeLessThanOrEqual(12);
    expect(warm5.metricsCalls + warm35.metricsCalls + warm5.jobCalls + warm35.jobCalls).toBe(0);
    console.log(
      `fan-out: cold ${cold5.statements} statements in ${cold5.waves} waves (5 jobs, ${cold5.written} points) vs ${cold35.statements} (35 jobs x 2 nodes x 8 GPUs, ${cold35.written} points); warm ${warm5.statements} vs ${warm35.statements}`,
    );
  }, 120_000);
});

describe("a query's series at two resolutions over one window", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
    });
    await s.gql(`{ jobs(first: 1) { edges { node { id } } } }`);
  });
  afterAll(() => s.close());

  it('makes one metrics call per job, at the finer resolution, which serves the coarser field too', async () => {
    // The nodes' look-ahead (the topology's metrics call) once took the first series field below
    // them alone: a call for 20 points, then the 1,000-point field's own call for the same job.
    const query = `{ jobs(first: 3) { edges { node { id gpus { utilization(maxPoints: 20) { points { value } } memoryUsed(maxPoints: 1000) { points { value } } } } } } }`;
    s.sim.resetStats();
    const cold = await s.gql(query);
    await s.runtime.readThrough.settle();
    expect(cold.errors).toBeUndefined();
    for (const e of cold.data.jobs.edges) {
      expect(e.node.gpus).toHaveLength(2);
      for (const g of e.node.gpus) {
        expect(g.utilization.points.length).toBeGreaterThan(0);
        expect(g.utilization.points.length).toBeLessThanOrEqual(20);
        expect(g.memoryUsed.points.length).toBeGreaterThan(g.utilization.points.length);
      }
    }
    expect(s.sim.count('getMetrics')).toBe(3);
    s.sim.resetStats();
    const warm = await s.gql(query);
    expect(warm.data).toEqual(cold.data);
    expect(s.sim.count('getMetrics')).toBe(0);
  }, 120_000);
});
