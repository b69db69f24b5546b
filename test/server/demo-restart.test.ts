// `npm start` again on the same data: the demo's simulators start afresh (new running runs), and the
// cache kept from the first process must not show the first process's running runs as running.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';

describe('the embedded demo restarted on its kept data', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tg-demo-restart-'));
  let db: TestDatabase;
  let rt: Runtime | null = null;

  const start = async () => {
    const workDir = path.join(dataDir, 'demo');
    return startRuntimeOn(db, null, { demoWorkDir: workDir });
  };
  const running = async (r: Runtime) => {
    const res = await r.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ jobs(first: 200, filter: { statuses: [RUNNING], providerIds: ["runicorn-demo"] }) { edges { node { id status } } } }' }),
    });
    const body = (await res.json()) as { data: { jobs: { edges: { node: { id: string } }[] } }; errors?: unknown };
    expect(body.errors).toBeUndefined();
    return body.data.jobs.edges.map((e) => e.node.id);
  };
  const status = async (r: Runtime, id: string) => {
    const res = await r.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'query($id: ID!) { job(id: $id) { status rawStatus } }', variables: { id } }),
    });
    return ((await res.json()) as { data: { job: { status: string; rawStatus: string } } }).data.job;
  };

  afterAll(async () => {
    await rt?.close();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("lists only this process's running runs, and says the earlier ones are gone", async () => {
    db = await createTestDatabase(path.join(dataDir, 'db'));
    rt = await start();
    const before = await running(rt);
    expect(before.length).toBeGreaterThan(0);
    await rt.close();
    rt = await start();
    const after = await running(rt);
    expect(after.length).toBeGreaterThan(0);
    const vanished = before.filter((id) => !after.includes(id));
    // The demo's live run is made anew at each start; the earlier one is no longer on the platform.
    expect(vanished.length).toBeGreaterThan(0);
    for (const id of vanished) {
      expect(await status(rt, id)).toEqual({ status: 'UNKNOWN', rawStatus: 'gone: the platform no longer lists it nor finds it by id (last seen RUNNING)' });
    }
  }, 120_000);
});
