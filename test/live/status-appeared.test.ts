// jobStatusChanged announces a new Runicorn run even when a query listed it before the status
// poller saw it (issue 15, "a lost appeared event"): the store claims each change once, whoever
// writes it first, and tells the live hub. Real Runicorn storage written by the simulator's SDK-like
// writer, a real runtime, a real graphql-ws client; waits on events and poll counts, not the clock.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createRun } from '../../src/simulators/runicorn/storage-writer.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';
import { client } from './helpers.js';

describe('jobStatusChanged and a run a query saw first', () => {
  const storage = mkdtempSync(join(tmpdir(), 'runicorn-appeared-'));
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    const first = createRun(storage, { path: 'demo/mnist', alias: 'first', hostname: 'trainer', pid: process.pid, createdAt: Date.now() / 1000 - 60 });
    first.logMetrics({ loss: 1 }, { ts: Date.now() / 1000 - 30, stage: 'train' });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'rc', kind: 'RUNICORN', storageDir: storage, pollIntervalSeconds: 1 }]);
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
    rmSync(storage, { recursive: true, force: true });
  });

  it('announces the new run, with its status, once', async () => {
    const c = client(rt.url);
    const got: { id: string; status: string }[] = [];
    const stop = c.subscribe<{ jobStatusChanged: { id: string; status: string } }>(
      { query: 'subscription { jobStatusChanged { id status } }' },
      { next: (r) => r.data && got.push(r.data.jobStatusChanged), error: () => {}, complete: () => {} },
    );
    try {
      // The status poller has taken its baseline (the runs that were there before).
      await eventually(() => (rt.live.hub.stats().polls['live:status:rc'] ?? 0) >= 2, 30_000, 'two status polls');
      const polled = rt.live.hub.stats().polls['live:status:rc']!;
      const run = createRun(storage, { path: 'demo/mnist', alias: 'second', hostname: 'trainer', pid: process.pid, createdAt: Date.now() / 1000 });
      run.logMetrics({ loss: 2 }, { ts: Date.now() / 1000, stage: 'train' });
      // A query asks for it by id before the poller's next list (a run id handed over by a notebook):
      // the store fetches it from the platform and caches it.
      const res = await rt.app.fetch('http://yoga/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'query($id: ID!) { job(id: $id) { id status } }', variables: { id: `rc:job:${run.id}` } }),
      });
      const newRun = ((await res.json()) as { data: { job: { id: string; status: string } | null } }).data.job;
      expect(newRun, 'the query finds the new run').not.toBeNull();
      await eventually(() => got.some((g) => g.id === newRun!.id), 30_000, 'the announcement of the new run');
      // Two more polls: nobody announces it a second time.
      await eventually(() => rt.live.hub.stats().polls['live:status:rc']! >= polled + 2, 30_000, 'two more status polls');
      expect(got.filter((g) => g.id === newRun!.id)).toEqual([{ id: newRun!.id, status: newRun!.status }]);
    } finally {
      stop();
      await c.dispose();
    }
  }, 90_000);
});
