// A cache write that fails after its upstream fetch (the database went away between the answer and
// the write: a failover, a restart) fails the fill that asked for it and is told to the write-failure
// observers, and leaves no promise rejected unhandled: in a server process one would end it (seen in
// test/reliability/postgres-restart.test.ts, a live poll's write when Postgres was killed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextRequest, startTestServer, type TestServer } from '../support/runtime.js';

describe('a cache write that fails after its fetch', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 2, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
    });
  });
  afterAll(async () => {
    // Its database is closed by the test: the runtime's close may report that.
    await s?.close().catch(() => {});
  });

  it('fails the fill and is reported, with no unhandled rejection', async () => {
    const list = await s.gql(`{ jobs(first: 10) { edges { node { id } } } }`);
    expect(list.errors).toBeUndefined();
    const rt = s.runtime.readThrough;
    const [providerId] = s.runtime.providers.ids();
    const [job] = await rt.repo.unfinishedJobsOf(providerId!);
    expect(job).toBeDefined();
    const metrics = s.runtime.providers.find(providerId!)!.adapter.capabilities.systemMetrics;

    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const failures: unknown[] = [];
    rt.observeWriteFailures((err) => failures.push(err));
    try {
      // The upstream answer is held until the database is gone.
      s.sim.inject({ kind: 'timeout', route: 'getMetrics' });
      const asked = nextRequest(s.sim, 'getMetrics');
      const now = rt.now();
      // A background fill (the live poller's kind): it waits for the write to commit.
      const fill = rt.ensureMetrics([{ job: job!, from: new Date(now.getTime() - 3600_000), to: now, metrics }]);
      const outcome = fill.then(
        () => 'filled',
        (err: Error) => err,
      );
      await asked;
      await s.runtime.database.close();
      s.sim.clearFaults();
      s.sim.release();
      expect(await outcome).toBeInstanceOf(Error);
      // An unhandled rejection is reported after the microtasks of the turn that left it: two turns of the loop.
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
      expect(failures).toHaveLength(1);
      expect(rt.pendingWrites()).toBe(0);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
