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
    const res = await s.gql(FLEET_QUERY, { first, after });
    await s.runtime.readThrough.settle();
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
      written,
      metricsCalls: s.sim.count('getMetrics'),
      jobCalls: s.sim.count('getJob'),
      endCursor: res.data.jobs.pageInfo.endCursor as string,
    };
  }

  it('makes the same number of SQL statements for 5 and for 35 jobs, cold and warm', async () => {
    const cold5 = await measure(5, null);
    const cold35 = await measure(35, cold5.endCursor);
    expect(cold35.statements).toBe(cold5.statements);
    // One metrics call per job, whatever the number of GPUs and series asked of it; it also
    // teaches the nodes. The job detail is not asked: the list just brought it and Baseten's
    // has no nodes (it used to cost one getJob per job).
    expect(cold5.metricsCalls).toBe(5);
    expect(cold35.metricsCalls).toBe(35);
    expect(cold5.jobCalls + cold35.jobCalls).toBe(0);

    const warm5 = await measure(5, null);
    const warm35 = await measure(35, cold5.endCursor);
    expect(warm35.statements).toBe(warm5.statements);
    expect(warm5.metricsCalls + warm35.metricsCalls + warm5.jobCalls + warm35.jobCalls).toBe(0);
    expect(warm35.statements).toBeLessThanOrEqual(12);
    console.log(
      `fan-out: cold ${cold5.statements} statements (5 jobs, ${cold5.written} points) vs ${cold35.statements} (35 jobs x 2 nodes x 8 GPUs, ${cold35.written} points); warm ${warm5.statements} vs ${warm35.statements}`,
    );
  }, 120_000);
});
