// The collector collects a sweep's running jobs in groups, each through the store's batched
// read-through (one set of statements for the group): a steady sweep of 16 running jobs makes
// the same number of SQL statements as one of 4 (one group each at 16 at once; 30 statements on
// PGlite, where collecting job by job made 81 and 285), while each job still costs its own
// metrics call. Each job's outcome is its own: one job's failed call leaves
// only that job in the backlog, the rest of its group collected. On the test's clock, so a step
// of one interval is exactly one sweep.
import { afterAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase } from '../support/database.js';
import { type CollectedBaseten, gql, runFor, startCollectedBaseten, sweepsSettled } from './helpers.js';

const INTERVAL_MS = 30_000;
const AT_ONCE = 16;

type Setup = CollectedBaseten;

async function start(jobs: number): Promise<Setup> {
  return startCollectedBaseten(
    await createTestDatabase(),
    `collect-groups-${jobs}`,
    { jobsPerProject: jobs, gpusPerNode: 2 },
    {
      intervalMs: INTERVAL_MS,
      provider: { collect: { maxConcurrent: AT_ONCE } },
      runtime: {
        // A pool whose half holds a whole group.
        config: { databasePoolSize: 2 * AT_ONCE },
        // One try per call: the injected failure is the job's, not hidden by a retry.
        resilience: { retries: 0 },
      },
    },
  );
}

async function stop(s: Setup | null) {
  await s?.close();
}

/** Statements and metrics calls of one steady sweep (after the first, which reaches back and learns the topology). */
async function steadySweep({ sim, rt, timers }: Setup) {
  await sweepsSettled(rt);
  await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
  const statements0 = rt.database.statementCount();
  const metrics0 = sim.count('getMetrics');
  // The series rows the sweep sent: the first sweep stored them, and they are as the platform gives them still.
  let seriesUpserts = 0;
  const unwatch = rt.database.watchStatements((text) => {
    if (/^\s*insert into series\b/.test(text)) seriesUpserts++;
  });
  await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
  unwatch();
  return { statements: rt.database.statementCount() - statements0, metricsCalls: sim.count('getMetrics') - metrics0, seriesUpserts };
}

async function collection(rt: Runtime) {
  const res = await gql(rt, '{ providers { collection { runningJobs backlog lastError { code } } } }');
  expect(res.errors).toBeUndefined();
  return res.data.providers[0].collection as { runningJobs: number; backlog: number; lastError: { code: string } | null };
}

/** The running jobs whose GPU utilization was fetched at `at` (the store's fetch records). */
async function fetchedAt(rt: Runtime, at: number): Promise<Set<string>> {
  const ids = (await rt.readThrough.repo.collectionTargets('bt', null)).unfinished.map((j) => j.id);
  const rows = await rt.readThrough.repo.fetchesOf(ids, ['metric:GPU_UTILIZATION']);
  return new Set(rows.filter((r) => r.fetchedAt.getTime() === at).map((r) => r.jobId));
}

describe('collecting running jobs in groups', () => {
  let small: Setup | null = null;
  let large: Setup | null = null;

  afterAll(async () => {
    await stop(small);
    await stop(large);
  });

  it("a sweep's statements do not grow with its running jobs; each job still has its own call", async () => {
    small = await start(4);
    const four = await steadySweep(small);
    await stop(small);
    small = null;
    large = await start(16);
    const sixteen = await steadySweep(large);
    console.log(`collect groups: a steady sweep of 4 running jobs ${JSON.stringify(four)}, of 16 ${JSON.stringify(sixteen)}`);
    expect(four.metricsCalls).toBe(4);
    expect(sixteen.metricsCalls).toBe(16);
    expect(sixteen.statements).toBe(four.statements);
    expect(four.seriesUpserts + sixteen.seriesUpserts).toBe(0);
    expect(await collection(large.rt)).toMatchObject({ runningJobs: 16, backlog: 0, lastError: null });
  }, 180_000);

  it("one job's failed call fails that job alone: the rest of its group is collected, and it is the next sweep", async () => {
    const { sim, rt, timers } = large!;
    await sweepsSettled(rt);
    // The group's first metrics call to arrive fails (503, no retry); the other 15 are answered.
    sim.inject({ kind: 'status', status: 503, route: 'getMetrics', times: 1 });
    await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    const collected = await fetchedAt(rt, timers.now());
    expect(collected.size).toBe(15);
    const failed = await collection(rt);
    expect(failed).toMatchObject({ runningJobs: 16, backlog: 1, lastError: { code: 'UPSTREAM_UNAVAILABLE' } });

    const metrics0 = sim.count('getMetrics');
    await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    expect(sim.count('getMetrics')).toBe(metrics0 + 16);
    expect((await fetchedAt(rt, timers.now())).size).toBe(16);
    expect(await collection(rt)).toMatchObject({ backlog: 0, lastError: null });
  }, 120_000);
});
