// A budget the platform will accept: 30 calls a minute against 200 running jobs. The simulator
// counts every call per minute of the test's clock; the budget is never exceeded, the watched
// job's feed is never late, and what could not be collected is reported as backlog.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client, POLL_FIELDS, subscribeUtilization } from '../live/helpers.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers, stepFeeds } from '../support/manual-timers.js';
import { startClockedBaseten } from '../support/clocked-baseten.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';
import { gql, sweepsSettled } from './helpers.js';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const INTERVAL_MS = 30_000;
const BUDGET = 30;

describe('a per-minute call budget', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let timers: ManualTimers;
  const perMinute = new Map<number, number>();

  beforeAll(async () => {
    timers = new ManualTimers(START);
    sim = await startClockedBaseten('collect-budget', timers, { jobsPerProject: 200 });
    sim.events.on('request', () => {
      const minute = Math.floor(timers.now() / 60_000);
      perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
    });
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      [
        {
          id: 'bt',
          kind: 'BASETEN',
          baseUrl: sim.url,
          apiKeyEnv: 'BT_KEY',
          pollIntervalSeconds: INTERVAL_MS / 1000,
          collect: { callsPerMinute: BUDGET, maxConcurrent: 4 },
        },
      ],
      { config: { collect: { enabled: true } }, env: { BT_KEY: sim.apiKey }, clock: () => timers.now(), liveTimers: timers },
    );
  }, 60_000);

  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('is never exceeded, keeps the watched job on time and reports the backlog', async () => {
    await sweepsSettled(rt);
    const watched = `bt:job:${sim.fleet.jobs[199]!.id}`;
    const c = client(rt.url);
    const sub = subscribeUtilization(c, watched, POLL_FIELDS);
    await eventually(() => sub.samples.length >= 1, 30_000, 'the first sample');
    const topic = `live:utilization:${watched}`;
    for (let k = 1; k <= 10; k++) {
      const before = sub.samples.length;
      await stepFeeds(rt.live.hub, topic, timers, INTERVAL_MS);
      await sweepsSettled(rt);
      // Never late: a sample each interval, from a poll of this interval.
      await eventually(() => sub.samples.length > before, 30_000, `the watched job's sample ${k}`);
      expect(Date.parse(sub.samples.at(-1)!.to)).toBe(timers.now());
    }
    const counts = [...perMinute.values()];
    console.log(`collect budget: calls per simulated minute ${counts.join(', ')} (budget ${BUDGET})`);
    expect(counts.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...counts)).toBeLessThanOrEqual(BUDGET);
    // The budget is used, not left idle, minute after minute.
    expect(Math.min(...counts.slice(1, -1))).toBeGreaterThan(BUDGET / 2);
    const { data } = await gql(rt, '{ providers { collection { runningJobs backlog budgetPerMinute callsLastMinute lag } } }');
    const col = data.providers[0].collection;
    console.log(`collect budget: ${JSON.stringify(col)}`);
    expect(col.runningJobs).toBe(200);
    expect(col.budgetPerMinute).toBe(BUDGET);
    expect(col.backlog).toBeGreaterThan(100);
    expect(col.callsLastMinute).toBeLessThanOrEqual(BUDGET);
    expect(col.lag).toBeGreaterThan(0);
    const metrics = await (await fetch(`${rt.url}/metrics`)).text();
    expect(metrics).toMatch(/training_graph_collection_backlog_jobs\{provider="bt"\} [1-9]\d*/);
    sub.stop();
    await c.dispose();
  }, 300_000);
});
