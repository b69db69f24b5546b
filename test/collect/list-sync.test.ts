// Each sweep syncs the provider's job list; a steady list (the same jobs, nobody else writing them)
// is recorded as seen in one statement, not written again: no projects, jobs or status write, the
// sync's time in provider_syncs and on every listed job as before (what the freshness of the job
// list and a job's "seen by a list" read). A list that changed is written whole, its change told.
// Runicorn's list sync, every 2 s, wrote the same jobs in eight statements (docs/collection.md).
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/store/sql-util.js';
import { createTestDatabase } from '../support/database.js';
import { type CollectedBaseten, runFor, startCollectedBaseten, sweepsSettled } from './helpers.js';

const INTERVAL_MS = 30_000;
const LIST_WRITE = /^\s*(insert into projects\b|with w as \(insert into jobs\b|update jobs set status\b|insert into "provider_syncs")/;
/** The sync's reads of jobs: which listed ones are known, the unfinished ones it no longer lists. */
const LIST_READ = /^\s*select .* from "jobs" where .*("jobs"\."id" = any|not \("jobs"\."external_id" = any)/s;

describe("a sweep's job list sync", () => {
  let s: CollectedBaseten;

  beforeAll(async () => {
    s = await startCollectedBaseten(await createTestDatabase(), 'collect-list-sync', { jobsPerProject: 3 }, { intervalMs: INTERVAL_MS });
    await sweepsSettled(s.rt);
  }, 120_000);

  afterAll(() => s?.close());

  /** One interval's sweep: the statements that wrote the list, and every statement. */
  async function sweep() {
    const written: string[] = [];
    const read: string[] = [];
    const unwatch = s.rt.database.watchStatements((text) => {
      if (LIST_WRITE.test(text)) written.push(text.trim().slice(0, 40));
      if (LIST_READ.test(text)) read.push(text.trim().slice(0, 60));
    });
    const before = s.rt.database.statementCount();
    await runFor(s.rt, s.timers, INTERVAL_MS, INTERVAL_MS);
    unwatch();
    return { written, read, statements: s.rt.database.statementCount() - before };
  }

  async function listState() {
    const [sync] = await s.rt.readThrough.repo.providerSyncs(['bt'], 'jobs');
    const jobs = await rowsOf<{ id: string; status: string; seen: number }>(
      s.rt.database.db,
      sql`select id, status, (extract(epoch from seen_at) * 1000)::float8 as seen from jobs where provider_id = 'bt' order by id`,
    );
    return { sync, jobs: jobs.map((j) => ({ ...j, seen: Number(j.seen) })) };
  }

  it('of a steady list writes none of it, and records the sync and the jobs seen at its time', async () => {
    await sweep();
    const steady = await sweep();
    expect(steady.written).toEqual([]);
    expect(steady.read).toEqual([]);
    const { sync, jobs } = await listState();
    expect(sync).toMatchObject({ syncedAt: new Date(s.timers.now()), errorCode: null });
    expect(jobs).toHaveLength(3);
    for (const j of jobs) expect(j.seen, j.id).toBe(s.timers.now());
  }, 120_000);

  it('of a changed list writes it whole and tells the change; the next steady one writes none again', async () => {
    const changes: string[] = [];
    s.rt.store.onStatusChange(({ job, previousStatus }) => changes.push(`${job.id} ${previousStatus} -> ${job.status}`));
    const job = s.sim.fleet.jobs[0]!;
    const res = await fetch(`${s.sim.url}/v1/training_projects/${job.projectId}/jobs/${job.id}/stop`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${s.sim.apiKey}` },
    });
    expect(res.status).toBe(200);
    const changed = await sweep();
    expect(changed.written.length).toBeGreaterThan(0);
    const { sync, jobs } = await listState();
    expect(sync).toMatchObject({ syncedAt: new Date(s.timers.now()), errorCode: null });
    expect(jobs.find((j) => j.id === `bt:job:${job.id}`)?.status).toBe('STOPPED');
    expect(changes).toEqual([`bt:job:${job.id} RUNNING -> STOPPED`]);
    expect((await sweep()).written).toEqual([]);
  }, 120_000);
});
