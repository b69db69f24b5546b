// The fleet query costs the same number of SQL statements over 1 job as over 9 jobs (2 nodes x 4
// GPUs each), cold (fetching through the read-through path; bulk point chunks aside) and warm,
// and asks upstream at most once per job.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../../src/store/sql-util.js';
import { ANCHOR, startTestServer, type TestServer } from '../../support/runtime.js';
import { IDLE_QUERY, USAGE_QUERY } from './queries.js';

const VARS = { from: new Date(ANCHOR - 2 * 3600_000).toISOString(), to: new Date(ANCHOR - 20 * 60_000).toISOString(), threshold: 0.5, min: 'PT2M' };

describe('fleet query cost', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Jobs are named <project>-run-1 ... -run-9: "run-1" selects one of them.
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 9, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 4, statuses: ['TRAINING_JOB_RUNNING'] },
    });
    await s.gql(`{ jobs(first: 1) { edges { node { id } } } }`); // the job list itself is synced once
  });
  afterAll(() => s.close());

  const pointCount = async () => Number((await rowsOf<{ n: number }>(s.runtime.database.db, sql`select count(*)::int as n from points`))[0]!.n);

  async function run(filter: Record<string, unknown> | null, jobs: number) {
    s.sim.resetStats();
    const pointsBefore = await pointCount();
    const before = s.runtime.database.statementCount();
    const res = await s.gql(IDLE_QUERY, { ...VARS, filter });
    const statements = s.runtime.database.statementCount() - before;
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    expect(res.data.fleet.jobCount).toBe(jobs);
    const usage = await s.gql(USAGE_QUERY, { from: VARS.from, to: VARS.to, filter });
    expect(usage.errors, JSON.stringify(usage.errors)).toBeUndefined();
    // Points are written by one COPY (and merge) per fetch batch, whatever their volume.
    expect(await pointCount()).toBeGreaterThanOrEqual(pointsBefore);
    return {
      sql: statements,
      metricsCalls: s.sim.count('getMetrics'),
      gpuHours: usage.data.fleet.utilization.total.allocatedGpuHours as number,
    };
  }

  it('is a fixed number of statements whatever the fleet size', async () => {
    const smallCold = await run({ nameContains: 'run-1' }, 1);
    const smallWarm = await run({ nameContains: 'run-1' }, 1);
    const largeCold = await run(null, 9);
    const largeWarm = await run(null, 9);
    expect(largeCold.sql).toBe(smallCold.sql);
    expect(largeWarm.sql).toBe(smallWarm.sql);
    // Warm idle question: list sync state, the window's jobs, fetch records, the jobs re-read, the
    // idle statement, and one batched read each of nodes and GPUs for the answer's fields.
    expect(largeWarm.sql).toBeLessThanOrEqual(7);
    expect(smallCold.metricsCalls).toBe(1);
    // The job already asked for is cached: one call for each of the other eight.
    expect(largeCold.metricsCalls).toBe(8);
    expect(largeWarm.metricsCalls).toBe(0);
    expect(largeCold.gpuHours).toBeCloseTo(9 * 8 * (100 / 60), 9);
    console.log(`fleet query statements: cold ${largeCold.sql}, warm ${largeWarm.sql} (1 and 9 jobs alike)`);
  }, 120_000);
});
