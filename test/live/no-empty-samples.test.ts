// A Runicorn run has no system metrics (storage mode): its jobUtilization feed polls, finds nothing,
// and sends nothing (it sent an empty sample every poll, issue 45), until the run finishes and the
// final sample goes out. Real Runicorn storage, a real runtime whose feeds poll when the test moves
// their clock, a real graphql-ws client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createRun } from '../../src/simulators/runicorn/storage-writer.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers, stepFeeds } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';
import { client, POLL_FIELDS, subscribeUtilization } from './helpers.js';

describe('jobUtilization of a run without system metrics', () => {
  const storage = mkdtempSync(join(tmpdir(), 'runicorn-no-metrics-'));
  const timers = new ManualTimers();
  const run = createRun(storage, { path: 'demo/mnist', alias: 'quiet', hostname: 'trainer', pid: process.pid, createdAt: Date.now() / 1000 - 60 });
  run.logMetrics({ loss: 1 }, { ts: Date.now() / 1000 - 30, stage: 'train' });
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'rc', kind: 'RUNICORN', storageDir: storage, pollIntervalSeconds: 2 }], { liveTimers: timers });
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
    rmSync(storage, { recursive: true, force: true });
  });

  it('sends nothing while there is nothing, then the final sample when the run ends', async () => {
    const jobId = `rc:job:${run.id}`;
    const topic = `live:utilization:${jobId}`;
    const hub = rt.live.hub;
    const published: { type: string; final?: boolean }[] = [];
    const off = hub.bus.on(topic, (p) => published.push(p as { type: string }));
    const c = client(rt.url);
    const sub = subscribeUtilization(c, jobId, POLL_FIELDS);
    try {
      await eventually(() => hub.stats().feeds === 1, 30_000, 'the feed');
      // Five polls of a running run: each one is a finished step, and none published a sample.
      for (let k = 0; k < 5; k++) {
        await stepFeeds(hub, topic, timers, 2000);
      }
      expect(hub.stats().polls[topic]).toBeGreaterThanOrEqual(5);
      expect(published.filter((p) => p.type === 'sample')).toEqual([]);

      // Something to say: the run ended. Its final sample goes out and the stream completes.
      run.finish(Date.now() / 1000);
      // Polls until one reads the new status (the run's status file is read through the cache).
      for (let k = 0; k < 20 && !published.some((p) => p.type === 'end'); k++) {
        await stepFeeds(hub, topic, timers, 2000);
      }
      await eventually(() => sub.completed, 30_000, 'the stream to complete');
      expect(sub.samples.map((s) => s.final)).toEqual([true]);
      expect(published.filter((p) => p.type === 'sample')).toHaveLength(1);
      expect(sub.errors).toEqual([]);
    } finally {
      off();
      sub.stop();
      await c.dispose();
    }
  }, 120_000);
});
