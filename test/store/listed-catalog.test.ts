// A list sync of the list this process last wrote whole is one statement (touchListedCatalog):
// the rows get the time they were seen and provider_syncs the sync, and nothing else changes,
// because the touch goes ahead only where every listed row is stored as the list's write would
// leave it. Whatever another writer changed that the write would set back (a detail's failure
// reason, another replica's older view, a platform best), or a row gone (an emptied database),
// and the touch writes nothing of the list nor its sync: the caller writes the list whole.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { JobRecord, ProjectRecord } from '../../src/domain/types.js';
import type { JobRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { runningJob } from '../support/job-records.js';

const suite = useTestRepository();

const T0 = new Date('2026-11-20T12:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

function catalog(pid: string, over: Partial<JobRecord> = {}): { projects: ProjectRecord[]; jobs: JobRecord[] } {
  const job = (n: number) => runningJob(`j${n}`, at(-3600), { name: `job ${n}`, startedAt: at(-3500), ...over });
  return { projects: [{ externalId: 'p1', name: `${pid} project` }], jobs: [job(1), job(2), job(3)] };
}

async function write(pid: string, c: ReturnType<typeof catalog>, when: Date) {
  await suite.repo.upsertCatalog(pid, c.projects, c.jobs, when, true);
  await suite.repo.recordProviderSync({ providerId: pid, dataset: 'jobs', syncedAt: when, attemptedAt: when, errorCode: null, errorMessage: null });
}

async function touch(pid: string, c: ReturnType<typeof catalog>, when: Date) {
  const before = suite.db.statementCount();
  const touched = await suite.repo.touchListedCatalog(pid, c.projects, c.jobs, when, 20);
  return { touched: touched !== null, statements: suite.db.statementCount() - before, unlisted: touched?.unlisted };
}

/** The provider's stored job, project and summary rows, each as text, the time a list saw them aside; and those times. */
async function stored(pid: string) {
  const ms = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::float8`);
  const jobs = await rowsOf<{ row: string; seen: number }>(
    suite.db.db,
    sql`select (to_jsonb(j) - 'seen_at')::text as row, ${ms('j.seen_at')} as seen from jobs j where provider_id = ${pid} order by id`,
  );
  const projects = await rowsOf<{ row: string; seen: number }>(
    suite.db.db,
    sql`select (to_jsonb(p) - 'seen_at')::text as row, ${ms('p.seen_at')} as seen from projects p where provider_id = ${pid} order by id`,
  );
  const summaries = await rowsOf<{ row: string }>(
    suite.db.db,
    sql`select to_jsonb(s)::text as row from job_summaries s where job_id like ${`${pid}:%`} order by job_id, name`,
  );
  const [sync] = await suite.repo.providerSyncs([pid], 'jobs');
  return {
    rows: { jobs: jobs.map((r) => r.row), projects: projects.map((r) => r.row), summaries: summaries.map((r) => r.row) },
    seen: [...jobs, ...projects].map((r) => Number(r.seen)),
    syncedAt: sync?.syncedAt?.getTime() ?? null,
    sync,
  };
}

async function jobRow(id: string): Promise<JobRow> {
  return (await suite.repo.jobsByIds([id]))[0]!;
}

describe('touching a job list this process wrote whole', () => {
  it('is one statement: the rows are seen and the sync recorded at the new time, every other stored value as it was', async () => {
    const c = catalog('lc1');
    expect(await touch('lc1', c, at(0))).toMatchObject({ touched: false, statements: 0 });
    await write('lc1', c, at(0));
    const before = await stored('lc1');
    expect(await touch('lc1', c, at(2))).toEqual({ touched: true, statements: 1, unlisted: [] });
    const after = await stored('lc1');
    expect(after.rows).toEqual(before.rows);
    expect(after.seen).toEqual(before.seen.map(() => at(2).getTime()));
    expect(after.syncedAt).toBe(at(2).getTime());
    expect(after.sync).toMatchObject({ attemptedAt: at(2), errorCode: null, errorMessage: null });
    // Written whole at the same time instead, the rows would be the same.
    await write('lc1', c, at(2));
    expect((await stored('lc1')).rows).toEqual(after.rows);
  });

  it('clears an error the last attempt left, as a good sync does', async () => {
    const c = catalog('lc2');
    await write('lc2', c, at(0));
    await suite.repo.recordProviderSync({
      providerId: 'lc2',
      dataset: 'jobs',
      syncedAt: null,
      attemptedAt: at(1),
      errorCode: 'UPSTREAM_UNAVAILABLE',
      errorMessage: '503',
    });
    expect((await touch('lc2', c, at(2))).touched).toBe(true);
    expect((await stored('lc2')).sync).toMatchObject({ syncedAt: at(2), attemptedAt: at(2), errorCode: null, errorMessage: null });
  });

  it('is not tried for a list other than the one last written (no statement)', async () => {
    await write('lc3', catalog('lc3'), at(0));
    expect(await touch('lc3', catalog('lc3', { status: 'SUCCEEDED', finishedAt: at(1) }), at(2))).toMatchObject({ touched: false, statements: 0 });
  });

  it('writes nothing where another writer stored a value the list would set back (a detail, another replica), and is then forgotten', async () => {
    const c = catalog('lc4');
    await write('lc4', c, at(0));
    // A detail said why the job stopped; the list (which does not know) writes the reason back to none.
    await suite.repo.upsertJobs('lc4', [{ ...c.jobs[1]!, failureReason: 'OOM' }], at(1), true);
    const before = await stored('lc4');
    expect(await touch('lc4', c, at(2))).toMatchObject({ touched: false, statements: 1 });
    const after = await stored('lc4');
    expect(after.rows).toEqual(before.rows);
    expect(after.syncedAt).toBe(at(0).getTime());
    expect(await touch('lc4', c, at(3))).toMatchObject({ touched: false, statements: 0 });
    // The caller writes the list whole, as before, and the next sync of it is a touch again.
    await write('lc4', c, at(3));
    expect((await jobRow('lc4:job:j2')).failureReason).toBeNull();
    expect((await touch('lc4', c, at(4))).touched).toBe(true);

    // Another replica's write of an older view of the list (a name since changed).
    await rowsOf(suite.db.db, sql`update jobs set name = 'job 1 (old)' where id = 'lc4:job:j1'`);
    expect((await touch('lc4', c, at(5))).touched).toBe(false);
    await write('lc4', c, at(5));
    expect((await jobRow('lc4:job:j1')).name).toBe('job 1');
  });

  it('goes ahead where another writer stored only what the list keeps (a topology, a detail time)', async () => {
    const c = catalog('lc5');
    await write('lc5', c, at(0));
    const job = await jobRow('lc5:job:j1');
    await suite.repo.writeTopology(
      'lc5',
      [{ job, nodes: [{ externalId: 'n0', name: 'n0', gpus: [{ index: 0, model: 'H100', memoryTotalBytes: 80e9 }] }] }],
      at(1),
    );
    await rowsOf(suite.db.db, sql`update jobs set detail_fetched_at = ${at(1).toISOString()}::timestamptz, owner = 'ada' where id = 'lc5:job:j2'`);
    const before = await stored('lc5');
    expect((await touch('lc5', c, at(2))).touched).toBe(true);
    expect((await stored('lc5')).rows).toEqual(before.rows);
    expect((await jobRow('lc5:job:j1')).gpuCount).toBe(1);
  });

  it('writes nothing where a row is gone (a database emptied under the server)', async () => {
    const c = catalog('lc6');
    await write('lc6', c, at(0));
    await rowsOf(suite.db.db, sql`delete from jobs where id = 'lc6:job:j3'`);
    expect((await touch('lc6', c, at(2))).touched).toBe(false);
    expect((await stored('lc6')).syncedAt).toBe(at(0).getTime());
    await write('lc6', c, at(2));
    expect((await stored('lc6')).rows.jobs).toHaveLength(3);

    await rowsOf(suite.db.db, sql`delete from projects where provider_id = 'lc6'`);
    expect((await touch('lc6', c, at(3))).touched).toBe(false);
  });

  it("checks the platform's reported bests: kept where only the series' latest changed, written where the best did", async () => {
    const c = catalog('lc7', { reportedSummary: [{ name: 'val_acc', bestValue: 0.91, bestStep: 120, mode: 'MAX' }] });
    await write('lc7', c, at(0));
    await rowsOf(suite.db.db, sql`update job_summaries set latest_value = 0.5, latest_step = 130 where job_id = 'lc7:job:j1'`);
    expect((await touch('lc7', c, at(2))).touched).toBe(true);
    await rowsOf(suite.db.db, sql`update job_summaries set best_value = 0.95 where job_id = 'lc7:job:j2'`);
    expect((await touch('lc7', c, at(3))).touched).toBe(false);
    await rowsOf(suite.db.db, sql`delete from job_summaries where job_id = 'lc7:job:j3'`);
    await write('lc7', c, at(3));
    expect((await touch('lc7', c, at(4))).touched).toBe(true);
    await rowsOf(suite.db.db, sql`delete from job_summaries where job_id = 'lc7:job:j3'`);
    expect((await touch('lc7', c, at(5))).touched).toBe(false);
  });

  it("answers, in its statement, the provider's unfinished jobs the list does not hold (the sync's leftover check)", async () => {
    const c = catalog('lc9');
    await write('lc9', c, at(0));
    // Found by id (a platform that lists only recent jobs), then finished; and one still running.
    await suite.repo.upsertJobs(
      'lc9',
      [
        { ...c.jobs[0]!, externalId: 'old1' },
        { ...c.jobs[0]!, externalId: 'old2', status: 'SUCCEEDED', finishedAt: at(1) },
      ],
      at(1),
      true,
    );
    expect(await touch('lc9', c, at(2))).toEqual({ touched: true, statements: 1, unlisted: ['lc9:job:old1'] });
  });

  it('does not take a list whose write rolled back for one written', async () => {
    const c = catalog('lc8');
    await write('lc8', c, at(0));
    const failed = new Error('rolled back');
    await expect(
      suite.repo.transaction(async (tx) => {
        await tx.upsertCatalog('lc8', c.projects, c.jobs, at(1), true);
        throw failed;
      }),
    ).rejects.toBe(failed);
    expect(await touch('lc8', c, at(2))).toMatchObject({ touched: false, statements: 0 });
  });
});
