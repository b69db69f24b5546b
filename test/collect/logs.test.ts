// Logs are optional: a provider with `collect: { logs: true }` has each running job's logs brought
// up to now every sweep (through the store's door, each page a call the budget counts); a provider
// left at the default has none read. On the test's clock, so calls are counted per interval.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, parseProvidersFile } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { runFor } from './helpers.js';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const INTERVAL_MS = 30_000;

describe('collecting logs (optional)', () => {
  let withLogs: BasetenSimulator;
  let without: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let timers: ManualTimers;

  const fleet = { projects: 1, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 1, statuses: ['TRAINING_JOB_RUNNING' as const] };

  beforeAll(async () => {
    timers = new ManualTimers(START);
    const sim = (seed: string) => startBasetenSimulator({ seed, anchorMs: START, now: () => timers.now(), rateLimit: false, fleet });
    withLogs = await sim('collect-logs-on');
    without = await sim('collect-logs-off');
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      [
        { id: 'on', kind: 'BASETEN', baseUrl: withLogs.url, apiKeyEnv: 'ON_KEY', pollIntervalSeconds: INTERVAL_MS / 1000, collect: { logs: true } },
        { id: 'off', kind: 'BASETEN', baseUrl: without.url, apiKeyEnv: 'OFF_KEY', pollIntervalSeconds: INTERVAL_MS / 1000 },
      ],
      {
        config: { collect: { enabled: true } },
        env: { ON_KEY: withLogs.apiKey, OFF_KEY: without.apiKey },
        clock: () => timers.now(),
        liveTimers: timers,
      },
    );
  }, 60_000);

  afterAll(async () => {
    await rt?.close();
    await withLogs?.close();
    await without?.close();
    await db?.drop();
  });

  it("reads every running job's logs each interval where asked, counted in the budget; none by default", async () => {
    await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    const running = withLogs.fleet.jobs.length;
    // The first sweep reads each job's logs from its start (days of lines): the jobs still behind are the backlog.
    expect(withLogs.count('getLogs')).toBeGreaterThan(running);
    expect(rt.collector!.statuses().get('on')!.backlog).toBeGreaterThan(0);
    for (let k = 0; k < 10 && rt.collector!.statuses().get('on')!.backlog > 0; k++) await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    expect(rt.collector!.statuses().get('on')!.backlog).toBe(0);
    // Caught up: one page per running job and interval, from where the last sweep's lines ended.
    const calls0 = withLogs.count('getLogs') + withLogs.count('getMetrics');
    for (let k = 1; k <= 2; k++) {
      const logs0 = withLogs.count('getLogs');
      await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
      expect(withLogs.count('getLogs') - logs0, `interval ${k}`).toBe(running);
    }
    const status = rt.collector!.statuses().get('on')!;
    expect(status.backlog).toBe(0);
    // The budget counted the log pages beside the metrics calls of the last minute.
    expect(status.callsLastMinute).toBeGreaterThanOrEqual(withLogs.count('getLogs') + withLogs.count('getMetrics') - calls0);
    expect(without.count('getLogs')).toBe(0);
    expect(without.count('getMetrics')).toBeGreaterThan(0);
  }, 180_000);

  it("is off by default and turned on by COLLECT_LOGS=on or a provider's collect.logs", () => {
    expect(loadConfig({}).collect?.logs).toBeUndefined();
    expect(loadConfig({ COLLECT_LOGS: 'on' }).collect?.logs).toBe(true);
    expect(() => loadConfig({ COLLECT_LOGS: 'maybe' })).toThrow(/COLLECT_LOGS/);
    const [p] = parseProvidersFile('providers:\n  - { id: bt, kind: BASETEN, apiKeyEnv: K, collect: { logs: true } }\n', 'providers.yaml');
    expect(p!.collect?.logs).toBe(true);
  });
});
