// The collector's first sweep (every running job's history) and the server's start: the server is
// ready and answers while that sweep is still under way, and the sweep holds at most its share of
// the database pool (half, at least 2: one collection, a group of jobs or a list sync, per
// connection), so requests keep the rest. The platform holds the sweep's metrics calls, so
// "under way" is a fact here, not a race.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startClockedBaseten } from '../support/clocked-baseten.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';
import { gql, sweepsSettled } from './helpers.js';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const POOL = 4;
const PROVIDERS = ['bt1', 'bt2', 'bt3'];

describe("the server's start with the collector on", () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let timers: ManualTimers;

  beforeAll(async () => {
    timers = new ManualTimers(START);
    sim = await startClockedBaseten('collect-startup', timers, { jobsPerProject: 8 });
    // Every metrics call is held until released: the first sweep cannot end.
    sim.inject({ kind: 'timeout', route: 'getMetrics' });
    db = await createTestDatabase();
    // Three providers (one org seen thrice), 4 jobs at once each, collected in groups of 4: 3
    // collections would start unbounded.
    rt = await startRuntimeOn(
      db,
      PROVIDERS.map((id) => ({ id, kind: 'BASETEN' as const, baseUrl: sim.url, apiKeyEnv: 'BT_KEY', pollIntervalSeconds: 30 })),
      {
        env: { BT_KEY: sim.apiKey },
        config: { collect: { enabled: true, maxConcurrent: 4 }, databasePoolSize: POOL },
        clock: () => timers.now(),
        liveTimers: timers,
      },
    );
  }, 60_000);

  afterAll(async () => {
    sim?.clearFaults();
    sim?.release();
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('is ready and answers while the first sweep is under way, which holds at most half the pool', async () => {
    const collector = rt.collector!;
    // The third provider's group waits for one of the two slots; its metrics calls cannot start.
    await eventually(
      () => collector.slots().waiting === PROVIDERS.length - POOL / 2 && sim.count('getMetrics') === (POOL / 2) * 4,
      30_000,
      'the first sweep to fill its share of the pool',
    );
    expect(collector.slots()).toEqual({ inUse: POOL / 2, waiting: PROVIDERS.length - POOL / 2, max: POOL / 2 });
    expect(sim.count('getMetrics')).toBe((POOL / 2) * 4);

    const ready = await fetch(`${rt.url}/readyz`);
    expect(ready.status).toBe(200);
    const answer = await gql(rt, `{ jobs(first: 5) { totalCount } providers { id collection { lastSweepAt } } }`);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.jobs.totalCount).toBe(8 * PROVIDERS.length);
    expect(answer.data.providers.map((p: { collection: { lastSweepAt: string | null } }) => p.collection.lastSweepAt)).toEqual(PROVIDERS.map(() => null));
    expect(collector.busy()).toBe(true);

    // Let go, the sweep ends, every job collected, two groups at a time.
    sim.clearFaults();
    sim.release();
    await sweepsSettled(rt);
    expect(sim.count('getMetrics')).toBe(8 * PROVIDERS.length);
    expect(collector.slots()).toEqual({ inUse: 0, waiting: 0, max: POOL / 2 });
  }, 120_000);
});
