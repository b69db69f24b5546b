// What a monitor reads of one provider's collection, and what the lease does, on the test's clock
// (the simulator's data, the cache and the collector's timers share it): lastError says what the
// latest sweep met and clears once a sweep goes clean; a replica whose lease another took stops
// polling at its next renewal (a third of an interval), aborting the calls it has under way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import type { ManualTimers } from '../support/manual-timers.js';
import { ANCHOR as START } from '../support/runtime.js';
import { createTestDatabase } from '../support/database.js';
import { type CollectedBaseten, gql, runFor, startCollectedBaseten, sweepsSettled } from './helpers.js';

const INTERVAL_MS = 30_000;
const COLLECTION = /* GraphQL */ `{ providers { id collection { leading backlog lastError { code message } lastErrorAt } } }`;

async function collection(rt: Runtime) {
  const res = await gql(rt, COLLECTION);
  expect(res.errors).toBeUndefined();
  return res.data.providers.find((p: { id: string }) => p.id === 'bt').collection as {
    leading: boolean;
    backlog: number;
    lastError: { code: string; message: string } | null;
    lastErrorAt: string | null;
  };
}

describe("a provider's collection as a monitor sees it", () => {
  let bt: CollectedBaseten;
  let sim: BasetenSimulator;
  let rt: Runtime;
  let timers: ManualTimers;

  beforeAll(async () => {
    bt = await startCollectedBaseten(
      await createTestDatabase(),
      'collect-collector',
      { jobsPerProject: 1, gpusPerNode: 2 },
      // One try per call: the injected failure is the sweep's, not hidden by a retry.
      { intervalMs: INTERVAL_MS, runtime: { resilience: { retries: 0 } } },
    );
    ({ sim, rt, timers } = bt);
  }, 60_000);

  afterAll(() => bt?.close());

  it('lastError is set by a sweep that failed, with when, and cleared by the next clean one', async () => {
    await sweepsSettled(rt);
    expect(await collection(rt)).toMatchObject({ leading: true, backlog: 0, lastError: null, lastErrorAt: null });

    sim.inject({ kind: 'status', status: 503, route: 'getMetrics', times: 1 });
    await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    const failed = await collection(rt);
    expect(failed.lastError?.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(failed.lastErrorAt).toBe(new Date(START + INTERVAL_MS).toISOString());
    expect(failed.backlog).toBe(1);

    const metrics0 = sim.count('getMetrics');
    await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    expect(sim.count('getMetrics')).toBe(metrics0 + 1);
    expect(await collection(rt)).toMatchObject({ leading: true, backlog: 0, lastError: null, lastErrorAt: null });
  }, 120_000);

  it('a replica whose lease another took stops within a third of an interval, its call under way aborted, and polls no more', async () => {
    await sweepsSettled(rt);
    // The sweep's metrics call is held by the platform: the sweep is under way when the lease goes.
    sim.inject({ kind: 'timeout', route: 'getMetrics' });
    const held = nextEvent(sim, 'request', 'getMetrics');
    timers.advance(INTERVAL_MS);
    await held;
    expect((await collection(rt)).leading).toBe(true);

    // Another replica takes the lease, as one whose clock says it ran out would (a stalled holder).
    const late = new Date(timers.now() + 2 * INTERVAL_MS);
    expect(await rt.readThrough.repo.tryLease('collect:bt', 'another-replica', late, new Date(late.getTime() + 100 * INTERVAL_MS))).toBe(true);

    // The next renewal (a third of an interval on) finds it taken: the call under way is dropped.
    const dropped = nextEvent(sim, 'abandoned', 'getMetrics');
    timers.advance(INTERVAL_MS / 3);
    await dropped;
    await sweepsSettled(rt);
    expect((await collection(rt)).leading).toBe(false);

    sim.clearFaults();
    sim.release();
    const metrics0 = sim.count('getMetrics');
    const list0 = sim.count('listJobs');
    await runFor(rt, timers, 3 * INTERVAL_MS, INTERVAL_MS / 4);
    expect(sim.count('getMetrics')).toBe(metrics0);
    expect(sim.count('listJobs')).toBe(list0);
    expect((await collection(rt)).leading).toBe(false);
  }, 120_000);
});

/** Resolves on the simulator's next `event` ('request' or 'abandoned') of `route` (subscribe before causing it). */
function nextEvent(sim: BasetenSimulator, event: 'request' | 'abandoned', route: string): Promise<void> {
  return new Promise((resolve) => {
    const on = (r: string) => {
      if (r !== route) return;
      sim.events.off(event, on);
      resolve();
    };
    sim.events.on(event, on);
  });
}
