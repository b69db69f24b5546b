// The embedded demo with the collector on and no client at all: the scrape target and the stored
// history stay current on their own. Time is the test's (the simulators' data, the cache and the
// collector's timers share one clock), so "10 minutes" is ten minutes of intervals, not of waiting.
// The ModelArts and PAI-DLC adapters sign with the server's clock, the test's, which their
// simulators check signatures against (as a platform and a server agree on the time): a fixed
// date, whatever the wall clock says. The fleet is anchored 12 hours before it, as at noon.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollIntervalMs } from '../../src/live/intervals.js';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { gql, runFor, scrapeJobs, sweepsSettled } from './helpers.js';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);

describe('the demo collected with nobody asking', () => {
  const workDir = mkdtempSync(path.join(tmpdir(), 'tg-collect-demo-'));
  let db: TestDatabase;
  let rt: Runtime;
  let timers: ManualTimers;

  beforeAll(async () => {
    db = await createTestDatabase();
    timers = new ManualTimers(START);
    rt = await startRuntimeOn(db, null, {
      demoWorkDir: workDir,
      demoAnchorMs: START - 12 * 3_600_000,
      clock: () => timers.now(),
      liveTimers: timers,
      config: { collect: { enabled: true } },
    });
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    await db?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it("a fresh server's first scrape after one interval has per-GPU gauges", async () => {
    const before = await scrapeJobs(rt);
    expect(before).toEqual([]);
    // One interval of the slowest provider: every collector has swept once.
    const slowest = Math.max(...rt.store.providers.all().map((p) => pollIntervalMs(p)));
    await runFor(rt, timers, slowest, 2000);
    const readings = await scrapeJobs(rt);
    const gpuReadings = readings.filter((r) => r.labels.scope === 'GPU' && r.labels.gpu !== '');
    expect(gpuReadings.length).toBeGreaterThan(0);
    // Every provider with real per-GPU series has them in the scrape.
    for (const p of rt.store.providers.all().filter((x) => x.capabilities.perGpuSeries)) {
      expect(
        gpuReadings.some((r) => r.labels.provider === p.id),
        p.id,
      ).toBe(true);
    }
  }, 300_000);

  it('keeps a reading younger than two poll intervals for every accelerator of every running job through 10 idle minutes', async () => {
    await runFor(rt, timers, 10 * 60_000, 2000);
    await sweepsSettled(rt);
    const now = timers.now();
    const readings = await scrapeJobs(rt);
    const intervalOf = new Map(rt.store.providers.all().map((p) => [p.id, pollIntervalMs(p)]));
    const running: { id: string; provider: { id: string }; gpus: { id: string }[] | null }[] = (
      await gql(rt, '{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id provider { id } gpus { id } } } } }')
    ).data.jobs.edges.map((e: any) => e.node);
    expect(running.length).toBeGreaterThan(0);
    // Jobs with accelerators (a Runicorn run on a CPU has none to read).
    for (const job of running.filter((j) => (j.gpus?.length ?? 0) > 0)) {
      const mine = readings.filter((r) => r.labels.job_id === job.id);
      expect(mine.length, `${job.id} has readings`).toBeGreaterThan(0);
      for (const r of mine) expect(now - r.ts, `${job.id} ${r.labels.family} gpu ${r.labels.gpu}`).toBeLessThan(2 * intervalOf.get(job.provider.id)!);
      const perGpu = mine.filter((r) => r.labels.scope === 'GPU');
      if (perGpu.length > 0) expect(new Set(perGpu.map((r) => `${r.labels.node}/${r.labels.gpu}`)).size).toBe(job.gpus?.length);
    }
    const { data } = await gql(rt, '{ providers { id collection { enabled leading runningJobs lag backlog lastSweepAt callsLastMinute budgetPerMinute } } }');
    for (const p of data.providers) {
      expect(p.collection.enabled).toBe(true);
      expect(p.collection.leading).toBe(true);
      expect(p.collection.backlog).toBe(0);
      expect(p.collection.lastSweepAt).not.toBeNull();
      expect(p.collection.callsLastMinute).toBeLessThanOrEqual(p.collection.budgetPerMinute);
    }
  }, 900_000);
});
