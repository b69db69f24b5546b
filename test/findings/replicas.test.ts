// One replica evaluates: two runtimes on one Postgres, each with the evaluator on, take turns by
// the lease (`findings:evaluate`); when the leader stops, the other takes over within two
// intervals. Real Postgres only: two PGlite databases in memory are two databases.
import { afterAll, beforeAll, expect, it, describe } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { evaluationsSettled } from './helpers.js';

const run = process.env.TEST_DATABASE_URL ? describe : describe.skip;
const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const INTERVAL = 60_000;

run('the findings evaluator across two replicas [needs TEST_DATABASE_URL]', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  const timers = new ManualTimers(START);
  let a: Runtime;
  let b: Runtime;

  beforeAll(async () => {
    sim = await startBasetenSimulator({ seed: 'findings-replicas', anchorMs: START, now: () => timers.now(), rateLimit: false });
    db = await createTestDatabase();
    const start = () =>
      startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY' }], {
        env: { BT_KEY: sim.apiKey },
        clock: () => timers.now(),
        liveTimers: timers,
        config: { findings: { enabled: true, intervalSeconds: INTERVAL / 1000 } },
      });
    a = await start();
    b = await start();
  }, 120_000);

  afterAll(async () => {
    await a?.close().catch(() => {});
    await b?.close();
    await sim?.close();
    await db?.drop();
  });

  const settle = async (...rts: Runtime[]) => {
    for (const rt of rts) await evaluationsSettled(rt);
  };

  it('exactly one evaluates each interval; the other takes over when it stops', async () => {
    await settle(a, b);
    for (let i = 0; i < 5; i++) {
      timers.advance(INTERVAL / 2);
      await settle(a, b);
    }
    const [leader, other] = a.findings!.leading ? [a, b] : [b, a];
    expect(leader.findings!.leading).toBe(true);
    expect(other.findings!.leading).toBe(false);
    expect(other.findings!.evaluations).toBe(0);
    expect(leader.findings!.evaluations).toBeGreaterThanOrEqual(3);
    await leader.close();
    for (let i = 0; i < 4; i++) {
      timers.advance(INTERVAL / 2);
      await settle(other);
    }
    expect(other.findings!.leading).toBe(true);
    expect(other.findings!.evaluations).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
