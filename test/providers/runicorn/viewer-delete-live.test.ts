// Deleting a running run while it is watched live (issue 38, as reported against the real viewer):
// a list sync finds the run gone and marks it UNKNOWN; then the live feed's next poll reads the job
// again (refreshJob), finds it gone too, and used to mark the already-gone row a second time: a
// second UNKNOWN announcement and a stored reason "(last seen UNKNOWN)". Viewer simulator, a real
// runtime whose feeds poll when the test moves their clock, real graphql-ws clients.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/server/runtime.js';
import { createRun } from '../../../src/simulators/runicorn/storage-writer.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { rowsOf } from '../../../src/store/sql-util.js';
import { client, POLL_FIELDS, subscribeUtilization } from '../../live/helpers.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { ManualTimers, stepFeeds } from '../../support/manual-timers.js';
import { postGraphql, startRuntimeOn } from '../../support/runtime.js';
import { eventually } from '../../support/wait.js';

const NOW = Math.floor(Date.now() / 1000);
const LIST = '{ jobs(first: 50) { edges { node { id status } } } }';

describe('a running run deleted while watched live', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runicorn-delete-live-'));
  const timers = new ManualTimers();
  let viewer: RunicornViewerHandle;
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    viewer = await startRunicornViewer({ storageDir: dir });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 10, pollIntervalSeconds: 2 }], {
      cachePolicy: { listTtlMs: 0, detailTtlMs: 0 },
      liveTimers: timers,
    });
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await viewer?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is announced UNKNOWN once, on the hub and to a jobStatusChanged subscriber, and stored as last seen RUNNING', async () => {
    const run = createRun(dir, { path: 'live/deleted', createdAt: NOW - 600, hostname: 'elsewhere', pid: process.pid });
    run.logText('before the delete', NOW - 500);
    const jobId = `rc:job:${run.id}`;
    const listed = await postGraphql(rt.url, LIST);
    expect(listed.errors, JSON.stringify(listed.errors)).toBeUndefined();
    expect(listed.data.jobs.edges.find((e: any) => e.node.id === jobId)?.node.status).toBe('RUNNING');
    await rt.readThrough.writesSettled();

    const hub = rt.live.hub;
    const topic = `live:utilization:${jobId}`;
    const onHub: { previousStatus: string | null; status: string; rawStatus: string | null }[] = [];
    const off = hub.bus.on('live:status:rc', (p: any) => {
      if (p.type === 'status' && p.job.id === jobId) onHub.push({ previousStatus: p.previousStatus, status: p.job.status, rawStatus: p.job.rawStatus });
    });
    const c = client(rt.url);
    const watched = subscribeUtilization(c, jobId, POLL_FIELDS);
    const heard: { status: string; rawStatus: string | null }[] = [];
    const stopStatus = c.subscribe<{ jobStatusChanged: { id: string; status: string; rawStatus: string | null } }>(
      { query: 'subscription { jobStatusChanged { id status rawStatus } }' },
      {
        next: (r) => {
          const j = r.data?.jobStatusChanged;
          if (j?.id === jobId) heard.push({ status: j.status, rawStatus: j.rawStatus });
        },
        error: () => {},
        complete: () => {},
      },
    );
    try {
      await eventually(() => hub.stats().feeds === 2 || undefined, 30_000, 'the utilization and status feeds');
      // The watcher's next poll reads the job while the run is still there.
      await stepFeeds(hub, topic, timers, 2000);

      run.markDeleted(NOW);
      // A list sync: the run is no longer listed nor found by id, so it is gone.
      const after = await postGraphql(rt.url, LIST);
      expect(after.errors, JSON.stringify(after.errors)).toBeUndefined();
      await eventually(() => onHub.length >= 1 || undefined, 30_000, 'the gone announcement');
      // The watcher's next poll reads the gone job again.
      await stepFeeds(hub, topic, timers, 2000);
      await rt.readThrough.writesSettled();
      // One more list sync: nothing more to say (the watcher's feed ended: its job is gone).
      await postGraphql(rt.url, LIST);
      await rt.readThrough.writesSettled();
      // The subscriber hears every announcement the hub published.
      await eventually(() => heard.length >= onHub.length || undefined, 30_000, 'the subscriber to hear them');
      const [row] = await rowsOf<{ status: string; raw_status: string }>(rt.database.db, sql`select status, raw_status from jobs where id = ${jobId}`);

      expect(onHub, JSON.stringify(onHub)).toHaveLength(1);
      expect(onHub[0]).toMatchObject({ previousStatus: 'RUNNING', status: 'UNKNOWN' });
      expect(heard, JSON.stringify(heard)).toHaveLength(1);
      expect(heard[0]!.rawStatus).toMatch(/^gone: .*\(last seen RUNNING\)$/);
      expect(row).toMatchObject({ status: 'UNKNOWN' });
      expect(row!.raw_status).toMatch(/\(last seen RUNNING\)$/);
    } finally {
      off();
      watched.stop();
      stopStatus();
      await c.dispose();
    }
  }, 60_000);
});
