// Viewer mode through the whole server (issue 38, against the real viewer's behaviour): a finished
// run's end learned from its detail survives the next list sync; a run asked by id that finished
// since the last list says so without waiting for a list query; a deleted running run is announced
// gone once, with the status it was last seen in; a deleted run's logs are no longer served.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/server/runtime.js';
import { createRun } from '../../../src/simulators/runicorn/storage-writer.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { graphqlData, postGraphql, startRuntimeOn } from '../../support/runtime.js';

const NOW = Math.floor(Date.now() / 1000);
let dir: string;
let viewer: RunicornViewerHandle;
let db: TestDatabase;
let rt: Runtime;
const events: string[] = [];

const gql = graphqlData(() => rt.url);
const JOB = 'query($id: ID!) { job(id: $id) { status rawStatus finishedAt nodes { name } } }';
const idOf = (runId: string) => `rc:job:${runId}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runicorn-lifecycle-'));
  viewer = await startRunicornViewer({ storageDir: dir });
  db = await createTestDatabase();
  // Every list and detail is due at each ask: the sync that used to wipe finishedAt runs every time.
  rt = await startRuntimeOn(db, [{ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 10 }], {
    cachePolicy: { listTtlMs: 0, detailTtlMs: 0 },
  });
  rt.readThrough.onStatusChange((c) => events.push(`${c.job.externalId}:${c.previousStatus}->${c.job.status}:${c.job.rawStatus}`));
}, 120_000);
afterAll(async () => {
  await rt?.close();
  await viewer?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('viewer-mode job lifecycle', () => {
  it("a finished run's end, learned from job(id), survives the next list sync", async () => {
    const run = createRun(dir, { path: 'life/done', createdAt: NOW - 3600, hostname: 'trainer', pid: 99_999_999 });
    run.logMetrics({ loss: 1 }, { ts: NOW - 1800, stage: 'train' });
    run.finish(NOW - 1700);
    await gql('{ jobs(first: 50) { edges { node { id } } } }');
    // The detail (asked for the nodes) gives the end: the time of the last metric event.
    await gql(JOB, { id: idOf(run.id) });
    await rt.readThrough.writesSettled();
    const byId = await gql(JOB, { id: idOf(run.id) });
    expect(byId.job.finishedAt).toBe(new Date((NOW - 1800) * 1000).toISOString());
    await gql('{ jobs(first: 50) { edges { node { id } } } }');
    await rt.readThrough.writesSettled();
    const again = await gql('{ jobs(first: 50) { edges { node { id finishedAt } } } }');
    const listed = again.jobs.edges.map((e: any) => e.node).find((n: any) => n.id === idOf(run.id));
    expect(listed.finishedAt).toBe(new Date((NOW - 1800) * 1000).toISOString());
  });

  it('a run asked by id that finished since the last list says FINISHED, not RUNNING', async () => {
    const run = createRun(dir, { path: 'life/ends', createdAt: NOW - 600, hostname: 'elsewhere', pid: process.pid });
    run.logMetrics({ loss: 1 }, { ts: NOW - 300, stage: 'train' });
    await gql('{ jobs(first: 50) { edges { node { id status } } } }');
    expect((await gql(JOB, { id: idOf(run.id) })).job.status).toBe('RUNNING');
    run.finish(NOW - 60);
    expect((await gql(JOB, { id: idOf(run.id) })).job.status).toBe('SUCCEEDED');
  });

  it('a deleted running run is announced gone once, with the status it was last seen in', async () => {
    const run = createRun(dir, { path: 'life/deleted', createdAt: NOW - 600, hostname: 'elsewhere', pid: process.pid });
    run.logText('before the delete', NOW - 500);
    await gql('{ jobs(first: 50) { edges { node { id status } } } }');
    await rt.readThrough.writesSettled();
    events.length = 0;
    run.markDeleted(NOW);
    await gql('{ jobs(first: 50) { edges { node { id status } } } }');
    await postGraphql(rt.url, JOB, { id: idOf(run.id) });
    await gql('{ jobs(first: 50) { edges { node { id status } } } }');
    await rt.readThrough.writesSettled();
    const mine = events.filter((e) => e.startsWith(run.id));
    expect(mine, mine.join('\n')).toHaveLength(1);
    expect(mine[0]).toMatch(/:RUNNING->UNKNOWN:gone: .*\(last seen RUNNING\)$/);
  });
});
