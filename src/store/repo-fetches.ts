// What was fetched and when: fetch records (coverage), fetch errors, training progress, and the
// collector's bookkeeping (its targets, jobs collected whole, leases).
import { and, asc, inArray, sql, type SQL } from 'drizzle-orm';
import { startFromFirstPoints, startFromFirstPointsSql } from './repo-point-writes.js';
import type { RepoContext } from './repo-context.js';
import type { FetchErrorRow, FetchRow, JobRow, ProgressRow } from './repo-types.js';
import { rowsOf } from './sql-util.js';
import * as t from './tables.js';

export async function fetchesOf(ctx: RepoContext, jobIds: readonly string[], datasets: readonly string[]): Promise<FetchRow[]> {
  if (jobIds.length === 0 || datasets.length === 0) return [];
  return ctx.read(() => ctx.reads.fetchesOf.execute({ ids: [...jobIds], datasets: [...datasets] }));
}

/**
 * Records fetched ranges and drops the older records they make redundant. A range that starts
 * inside an older record of the same dataset (at the same or a finer step) extends back to that
 * record's start: an incremental fetch (a poller's or the collector's, from its last reach on)
 * then leaves one record per job and metric that says the whole span is held, instead of one per
 * interval, and a query over the span finds it covered. A coarser older record it starts inside
 * (a long job's first fetch) is extended too, at its own step, beside the finer one. The older
 * part keeps its points; what was past when it was fetched does not change upstream.
 */
export async function recordFetches(ctx: RepoContext, rows: Omit<FetchRow, 'id'>[]) {
  if (rows.length === 0) return;
  await ctx.db.execute(sql`${recordFetchesCtes(rows)} select 1`);
}

/**
 * What a points write records once its points are in, in one statement: the fetch records
 * (recordFetches), the fetch errors of the same jobs and datasets cleared (clearFetchErrors), and
 * the start of `startJobIds` taken from their first stored point (startFromFirstPoints; it reads
 * the points the write's earlier statements stored). Three statements before: the collector makes
 * one such write per group and sweep (docs/collection.md).
 */
export async function recordFetched(ctx: RepoContext, rows: Omit<FetchRow, 'id'>[], startJobIds: readonly string[]) {
  if (rows.length === 0) return startFromFirstPoints(ctx, startJobIds);
  const keys = JSON.stringify(rows.map((r) => ({ job_id: r.jobId, dataset: r.dataset })));
  await ctx.db.execute(sql`${recordFetchesCtes(rows)},
    ce as (
      delete from fetch_errors e using jsonb_to_recordset(${keys}::jsonb) as k(job_id text, dataset text)
      where e.job_id = k.job_id and e.dataset = k.dataset
    ), sf as (${startFromFirstPointsSql(startJobIds)})
    select 1`);
}

/** recordFetches' statement up to its last CTE (`i`, the insert), for a statement to end. */
function recordFetchesCtes(rows: Omit<FetchRow, 'id'>[]): SQL {
  const payload = rows.map((r) => ({
    job_id: r.jobId,
    dataset: r.dataset,
    range_from: r.rangeFrom.toISOString(),
    range_to: r.rangeTo.toISOString(),
    fetched_at: r.fetchedAt.toISOString(),
    step_seconds: r.stepSeconds,
    final: r.final,
  }));
  const json = JSON.stringify(payload);
  return sql`
    with x as (
      select * from jsonb_to_recordset(${json}::jsonb) as x(job_id text, dataset text, range_from timestamptz,
        range_to timestamptz, fetched_at timestamptz, step_seconds int, final boolean)
    ),
    fine as (
      select x.job_id, x.dataset, least(x.range_from, coalesce((
          select min(f.range_from) from fetches f
          where f.job_id = x.job_id and f.dataset = x.dataset and f.step_seconds <= x.step_seconds
            and f.range_from <= x.range_from and f.range_to >= x.range_from), x.range_from)) as range_from,
        x.range_to, x.fetched_at, x.step_seconds, x.final
      from x
    ),
    coarse as (
      select fine.job_id, fine.dataset, least(fine.range_from, c.range_from) as range_from, fine.range_to, fine.fetched_at, c.step_seconds, fine.final
      from fine join lateral (
        select min(f.range_from) as range_from, max(f.step_seconds) as step_seconds from fetches f
        where f.job_id = fine.job_id and f.dataset = fine.dataset and f.step_seconds > fine.step_seconds
          and f.range_from <= fine.range_from and f.range_to >= fine.range_from
      ) c on c.step_seconds is not null
    ),
    e as (select * from fine union all select * from coarse),
    d as (
      delete from fetches f using e
      where f.job_id = e.job_id and f.dataset = e.dataset and f.range_from >= e.range_from and f.range_to <= e.range_to
        and f.step_seconds >= e.step_seconds
      returning f.id
    ),
    i as (
      insert into fetches (job_id, dataset, range_from, range_to, fetched_at, step_seconds, final)
      select job_id, dataset, range_from, range_to, fetched_at, step_seconds, final from e
    )`;
}

export async function fetchErrorsOf(ctx: RepoContext, jobIds: readonly string[], datasets: readonly string[]): Promise<FetchErrorRow[]> {
  if (jobIds.length === 0 || datasets.length === 0) return [];
  return ctx.read(() =>
    ctx.db
      .select()
      .from(t.fetchErrors)
      .where(and(inArray(t.fetchErrors.jobId, [...jobIds]), inArray(t.fetchErrors.dataset, [...datasets])))
      .execute(),
  );
}

/**
 * In key order, and outside a caller's transaction in one of its own: two fills recording the
 * same jobs' errors at once deadlocked on Postgres (one answered INTERNAL, seen in a CI
 * rehearsal's `schema/platforms`); rows taken in one order wait instead of crossing, and a
 * deadlock victim runs again (RepoContext.transaction).
 */
export async function recordFetchErrors(ctx: RepoContext, rows: FetchErrorRow[]): Promise<void> {
  if (rows.length === 0) return;
  if (!ctx.inTransaction) return ctx.transaction((tx) => recordFetchErrors(tx, rows));
  // One order for every writer (as writeSeriesRows orders by series_key): job, then dataset.
  const key = (r: FetchErrorRow) => `${r.jobId}\u0000${r.dataset}`;
  const ordered = [...rows].sort((a, b) => (key(a) < key(b) ? -1 : 1));
  await ctx.db
    .insert(t.fetchErrors)
    .values(ordered)
    .onConflictDoUpdate({
      target: [t.fetchErrors.jobId, t.fetchErrors.dataset],
      set: { failedAt: sql`excluded.failed_at`, code: sql`excluded.code`, message: sql`excluded.message` },
    });
}

export async function clearFetchErrors(ctx: RepoContext, keys: { jobId: string; dataset: string }[]) {
  if (keys.length === 0) return;
  await ctx.db.execute(sql`
    delete from fetch_errors e using jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) as x("jobId" text, dataset text)
    where e.job_id = x."jobId" and e.dataset = x.dataset`);
}

/**
 * What a provider's collector keeps: its unfinished jobs, and its finished jobs not yet fetched
 * whole whose end is after `keptSince` (the platform's retention), oldest end first; and how
 * many finished jobs were lost to retention before they could be.
 */
export async function collectionTargets(
  ctx: RepoContext,
  providerId: string,
  keptSince: Date | null,
): Promise<{ unfinished: JobRow[]; finished: JobRow[]; expired: number }> {
  const unfinishedStatus = sql`${t.jobs.status} in ('PENDING', 'RUNNING')`;
  const pending = sql`${t.jobs.providerId} = ${providerId} and not (${unfinishedStatus})
    and not exists (select 1 from collected_jobs c where c.job_id = ${t.jobs.id})`;
  const kept = keptSince ? sql`coalesce(${t.jobs.finishedAt}, ${t.jobs.seenAt}) >= ${keptSince.toISOString()}::timestamptz` : sql`true`;
  // The unfinished and the finished ones in one read (a sweep's, every 2 s on Runicorn).
  const rows = await ctx.db
    .select()
    .from(t.jobs)
    .where(sql`(${t.jobs.providerId} = ${providerId} and ${unfinishedStatus}) or (${pending} and ${kept})`)
    .orderBy(sql`coalesce(${t.jobs.finishedAt}, ${t.jobs.seenAt}) asc`, asc(t.jobs.id));
  const unfinished: JobRow[] = [];
  const finished: JobRow[] = [];
  for (const row of rows) (row.status === 'PENDING' || row.status === 'RUNNING' ? unfinished : finished).push(row);
  let expired = 0;
  if (keptSince) {
    const [row] = await rowsOf<{ n: number | string }>(
      ctx.db,
      sql`select count(*) as n from jobs where ${pending} and coalesce(${t.jobs.finishedAt}, ${t.jobs.seenAt}) < ${keptSince.toISOString()}::timestamptz`,
    );
    expired = Number(row?.n ?? 0);
  }
  return { unfinished, finished, expired };
}

/** Marks finished jobs as fetched whole: the collector leaves them alone from now on, across restarts. */
export async function markCollected(ctx: RepoContext, jobIds: readonly string[], at: Date) {
  if (jobIds.length === 0) return;
  await ctx.db
    .insert(t.collectedJobs)
    .values(jobIds.map((jobId) => ({ jobId, completedAt: at })))
    .onConflictDoNothing();
}

/** Whether these jobs were fetched whole (markCollected). */
export async function collectedOf(ctx: RepoContext, jobIds: readonly string[]): Promise<Set<string>> {
  if (jobIds.length === 0) return new Set();
  const rows = await ctx.db
    .select({ jobId: t.collectedJobs.jobId })
    .from(t.collectedJobs)
    .where(inArray(t.collectedJobs.jobId, [...jobIds]));
  return new Set(rows.map((r) => r.jobId));
}

/**
 * Takes or renews the lease `name` for `holder` until `expiresAt`: granted when nobody holds it,
 * the holder is this one, or the last holder let it expire (by `now`). One statement, so two
 * replicas asking at once cannot both get it.
 */
export async function tryLease(ctx: RepoContext, name: string, holder: string, now: Date, expiresAt: Date): Promise<boolean> {
  const rows = await rowsOf<{ holder: string }>(
    ctx.db,
    sql`insert into collect_leases (name, holder, expires_at) values (${name}, ${holder}, ${expiresAt.toISOString()}::timestamptz)
        on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
        where collect_leases.holder = excluded.holder or collect_leases.expires_at < ${now.toISOString()}::timestamptz
        returning holder`,
  );
  return rows.length > 0;
}

export async function releaseLease(ctx: RepoContext, name: string, holder: string) {
  await ctx.db.execute(sql`delete from collect_leases where name = ${name} and holder = ${holder}`);
}

export function progressOf(ctx: RepoContext, jobIds: readonly string[]): Promise<ProgressRow[]> {
  return ctx.whereIn(t.progress, t.progress.jobId, jobIds);
}

export async function writeProgress(ctx: RepoContext, rows: ProgressRow[]) {
  if (rows.length === 0) return;
  await ctx.db
    .insert(t.progress)
    .values(rows)
    .onConflictDoUpdate({
      target: t.progress.jobId,
      set: {
        iteration: sql`excluded.iteration`,
        targetIteration: sql`excluded.target_iteration`,
        rate: sql`excluded.rate`,
        updatedAt: sql`excluded.updated_at`,
        fetchedAt: sql`excluded.fetched_at`,
      },
    });
}
