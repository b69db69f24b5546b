// Projects, jobs and their summaries: bulk upserts through jsonb_to_recordset (one statement per
// table per batch, whatever the fan-out), status claims, and set-based reads keyed by id lists.
import { createHash } from 'node:crypto';
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { jobGlobalId, projectGlobalId } from '../domain/ids.js';
import { summaryModePattern } from '../domain/metric-catalog.js';
import type { JobLabel, JobRecord, ProjectRecord } from '../domain/types.js';
import type { RepoContext } from './repo-context.js';
import type { JobRow, JobSummaryRow, ProjectRow, WrittenRange } from './repo-types.js';
import { chunks, rowsOf, textArray } from './sql-util.js';
import * as t from './tables.js';
import { rawPoints } from './raw-points.js';

/** A project row as the catalog's upsert writes it (its `seen_at` aside). */
type ProjectWriteRow = { id: string; external_id: string; name: string; created_at: string | null };

/** The project rows of a catalog: the listed projects, and those only visible through its jobs. */
function projectRowsOf(providerId: string, projects: readonly ProjectRecord[], jobs: readonly JobRecord[]): ProjectWriteRow[] {
  const projectRows = new Map<string, ProjectWriteRow>();
  for (const p of projects) {
    projectRows.set(p.externalId, {
      id: projectGlobalId(providerId, p.externalId),
      external_id: p.externalId,
      name: p.name,
      created_at: p.createdAt?.toISOString() ?? null,
    });
  }
  // Platforms whose projects are only visible through jobs (workspaces, namespaces, paths).
  for (const j of jobs) {
    if (!projectRows.has(j.projectExternalId)) {
      projectRows.set(j.projectExternalId, {
        id: projectGlobalId(providerId, j.projectExternalId),
        external_id: j.projectExternalId,
        name: j.projectName ?? j.projectExternalId,
        created_at: null,
      });
    }
  }
  return [...projectRows.values()];
}

/**
 * Writes a provider's projects and jobs in two statements (plus chunks for huge fleets); returns
 * the ids of the jobs this call inserted (not those it updated). `listed`: this is the provider's
 * whole job list (a list sync), remembered once committed (ListedCatalogs), so that the same list
 * found again is first offered to touchListedCatalog.
 */
export async function upsertCatalog(
  ctx: RepoContext,
  providerId: string,
  projects: ProjectRecord[],
  jobs: JobRecord[],
  seenAt: Date,
  listed = false,
): Promise<Set<string>> {
  const projectRows = projectRowsOf(providerId, projects, jobs);
  const jobRows = jobRowsOf(providerId, jobs, seenAt);
  const catalogs = ctx.state.listedCatalogs;
  // Whatever happens below, what was remembered no longer says what was written last.
  if (listed) catalogs.forget(providerId);
  await upsertProjects(ctx, providerId, projectRows, seenAt);
  const inserted = await writeJobRows(ctx, providerId, jobRows, seenAt, null);
  await writeReportedSummaries(ctx, providerId, jobs);
  if (listed) {
    const sig = catalogSig(projectRows, jobRows, reportedSummaryRows(providerId, jobs));
    ctx.onCommit(() => catalogs.remember(providerId, sig));
  }
  return inserted;
}

/**
 * What a list sync's upserts set (the time it was seen aside): two syncs with the same signature
 * write the same values. A digest, not the text: Baseten's list of 830 jobs is half a megabyte.
 */
function catalogSig(projects: readonly ProjectWriteRow[], jobs: readonly JobWriteRow[], summaries: readonly SummaryWriteRow[]): string {
  return createHash('sha256')
    .update(JSON.stringify([projects, jobs, summaries]))
    .digest('base64');
}

/**
 * A list sync of the list this process last wrote whole (upsertCatalog, `listed`), in one
 * statement instead of the write's six: when every listed job and project is stored as the
 * write's upserts would leave it (whoever wrote it since: a detail or topology write, another
 * replica) and the platform's reported summaries too, the rows get the time they were seen
 * (`seen_at`, which the write sets) and `provider_syncs` records the sync (as recordProviderSync
 * does): all the write would have changed. Then nothing changed status and no job is new, so there
 * is nothing to announce. Returns, in the same statement, the ids of at most `unlistedLimit` of the
 * provider's unfinished jobs the list does not hold (what unlistedUnfinishedJobsOf reads), or null
 * (and forgets the list) when anything differs (a row missing, an emptied database, a value another
 * writer set that the list's write would set back): the caller writes the list whole.
 */
export async function touchListedCatalog(
  ctx: RepoContext,
  providerId: string,
  projects: ProjectRecord[],
  jobs: JobRecord[],
  seenAt: Date,
  unlistedLimit: number,
): Promise<{ unlisted: string[] } | null> {
  const catalogs = ctx.state.listedCatalogs;
  const projectRows = projectRowsOf(providerId, projects, jobs);
  const jobRows = jobRowsOf(providerId, jobs, seenAt);
  const summaries = reportedSummaryRows(providerId, jobs);
  const sig = catalogSig(projectRows, jobRows, summaries);
  if (!catalogs.matches(providerId, sig)) return null;
  // One statement whatever the list's length: past a chunk, the whole write.
  if (jobRows.length > JOB_ROWS_PER_STATEMENT || projectRows.length > PROJECT_ROWS_PER_STATEMENT) return null;
  const at = sql`${seenAt.toISOString()}::timestamptz`;
  const unchanged = (alias: string, updates: readonly (readonly [string, SQL])[]) =>
    sql.join(
      updates.map(([column, value]) => sql`${sql.raw(`${alias}.${column}`)} is not distinct from ${value}`),
      sql` and `,
    );
  const rows = await rowsOf<{ kind: 'synced' | 'unlisted'; id: string }>(
    ctx.db,
    sql`
    with j as (
      update jobs set seen_at = ${at}
      from jsonb_to_recordset(${JSON.stringify(jobRows)}::jsonb) as ${JOB_ROW_RECORD}
      where jobs.id = x.id and jobs.provider_id = ${providerId} and ${unchanged('jobs', jobUpdates('x'))}
      returning jobs.id
    ), p as (
      update projects set seen_at = ${at}
      from jsonb_to_recordset(${JSON.stringify(projectRows)}::jsonb) as ${PROJECT_ROW_RECORD}
      where projects.id = x.id and projects.provider_id = ${providerId} and ${unchanged('projects', projectUpdates('x'))}
      returning projects.id
    ), s as (
      -- the reported summaries writeReportedSummaries' update would leave as they are
      select count(*) as n from job_summaries
      join jsonb_to_recordset(${JSON.stringify(summaries)}::jsonb) as ${SUMMARY_ROW_RECORD} on job_summaries.job_id = x.job_id and job_summaries.name = x.name
      where ${unchanged('job_summaries', summaryUpdates('x'))}
    ), r as (
      insert into provider_syncs (provider_id, dataset, synced_at, attempted_at, error_code, error_message)
      select ${providerId}, 'jobs', ${at}, ${at}, null, null
      where (select count(*) from j) = ${jobRows.length} and (select count(*) from p) = ${projectRows.length}
        and (select n from s) = ${summaries.length}
      on conflict (provider_id, dataset) do update set synced_at = excluded.synced_at, attempted_at = excluded.attempted_at,
        error_code = excluded.error_code, error_message = excluded.error_message
      returning provider_id
    ), u as (
      -- unlistedUnfinishedJobsOf's ids, which the sync asks next: most often none
      select id from jobs
      where provider_id = ${providerId} and status in ('PENDING', 'RUNNING')
        and not (external_id = any(${textArray(jobRows.map((j) => j.external_id))}))
      limit ${unlistedLimit}
    )
    select 'synced' as kind, provider_id as id from r
    union all select 'unlisted', id from u`,
  );
  if (rows.some((r) => r.kind === 'synced')) return { unlisted: rows.filter((r) => r.kind === 'unlisted').map((r) => r.id) };
  // The rows it did touch got the time they were seen, which the whole write sets again.
  catalogs.forget(providerId);
  return null;
}

/** Project rows per statement. */
const PROJECT_ROWS_PER_STATEMENT = 5000;
const PROJECT_ROW_RECORD = sql.raw('x(id text, external_id text, name text, created_at timestamptz)');

/** What the projects' upsert sets on a stored row (`n`: the new row's alias), its `seen_at` aside: the touch's test of a row is the same expressions. */
function projectUpdates(n: string): [string, SQL][] {
  const x = (column: string) => sql.raw(`${n}.${column}`);
  return [
    ['name', x('name')],
    ['created_at', sql`coalesce(${x('created_at')}, projects.created_at)`],
  ];
}

async function upsertProjects(ctx: RepoContext, providerId: string, rows: readonly ProjectWriteRow[], seenAt: Date) {
  for (const part of chunks([...rows], PROJECT_ROWS_PER_STATEMENT)) {
    await ctx.db.execute(sql`
      insert into projects (id, provider_id, external_id, name, created_at, seen_at)
      select x.id, ${providerId}, x.external_id, x.name, x.created_at, ${seenAt.toISOString()}::timestamptz
      from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as ${PROJECT_ROW_RECORD}
      on conflict (id) do update set ${assignments(projectUpdates('excluded'))}, seen_at = excluded.seen_at`);
  }
}

/** `column = value, ...` of an upsert's update. */
function assignments(updates: readonly (readonly [string, SQL])[]): SQL {
  return sql.join(
    updates.map(([column, value]) => sql`${sql.raw(column)} = ${value}`),
    sql`, `,
  );
}

/**
 * Upserts jobs; returns the ids of those this call inserted. Of two concurrent writers of a new
 * job only one inserts it (the other's row conflicts and updates), so "new" is told once.
 */
export async function upsertJobs(ctx: RepoContext, providerId: string, jobs: readonly JobRecord[], seenAt: Date, detailFetched = false): Promise<Set<string>> {
  const inserted = await writeJobRows(ctx, providerId, jobRowsOf(providerId, jobs, seenAt), seenAt, detailFetched ? seenAt : null);
  await writeReportedSummaries(ctx, providerId, jobs);
  return inserted;
}

/** A job row as the upsert writes it (its `seen_at` and `detail_fetched_at` aside). */
type JobWriteRow = ReturnType<typeof jobRowsOf>[number];

function jobRowsOf(providerId: string, jobs: readonly JobRecord[], seenAt: Date) {
  return jobs.map((j) => ({
    id: jobGlobalId(providerId, j.externalId),
    project_id: projectGlobalId(providerId, j.projectExternalId),
    external_id: j.externalId,
    name: j.name,
    status: j.status,
    raw_status: j.rawStatus,
    created_at: j.createdAt?.toISOString() ?? null,
    started_at: j.startedAt?.toISOString() ?? null,
    started_at_source: j.startedAt ? (j.startedAtSource ?? 'PLATFORM') : null,
    finished_at: j.finishedAt?.toISOString() ?? null,
    gpu_type: j.gpuType,
    gpu_count: j.gpuCount,
    accelerator_kind: j.acceleratorKind ?? null,
    failure_reason: j.failureReason ?? null,
    console_url: j.consoleUrl ?? null,
    restart_count: j.restartCount ?? null,
    owner: j.owner ?? null,
    // undefined = this answer does not carry labels (a list without them keeps the detail's)
    labels: j.labels === undefined ? null : labelObject(j.labels ?? []),
    config: j.config ?? null,
    image: j.image ?? null,
    command: j.command ?? null,
    sort_at: (j.createdAt ?? j.startedAt ?? seenAt).toISOString(),
  }));
}

/** Job rows per statement. */
const JOB_ROWS_PER_STATEMENT = 2000;
const JOB_ROW_RECORD = sql.raw(`x(
        id text, project_id text, external_id text, name text, status text, raw_status text, created_at timestamptz,
        started_at timestamptz, started_at_source text, finished_at timestamptz, gpu_type text, gpu_count int, accelerator_kind text,
        failure_reason text, console_url text, restart_count int, owner text, labels jsonb, config jsonb, image text,
        command text, sort_at timestamptz)`);

/**
 * What the jobs' upsert sets on a stored row (`jobs`; `n`: the new row's alias), its `seen_at` and
 * `detail_fetched_at` aside: touchListedCatalog tests a row with the same expressions.
 */
function jobUpdates(n: string): [string, SQL][] {
  const x = (column: string) => sql.raw(`${n}.${column}`);
  // A creation standing in for a start never replaces the first metric point the cache found after it.
  const keepsFirstMetric = sql`${x('started_at_source')} = 'CREATION' and jobs.started_at_source = 'FIRST_METRIC'`;
  const keep = (column: string) => sql`coalesce(${x(column)}, ${sql.raw(`jobs.${column}`)})`;
  return [
    ['project_id', x('project_id')],
    ['name', x('name')],
    ['status', x('status')],
    ['raw_status', x('raw_status')],
    ['created_at', x('created_at')],
    ['started_at', sql`case when ${keepsFirstMetric} then jobs.started_at else coalesce(${x('started_at')}, jobs.started_at) end`],
    ['started_at_source', sql`case when ${x('started_at')} is null or (${keepsFirstMetric}) then jobs.started_at_source else ${x('started_at_source')} end`],
    // A list that does not know a finished job's end (Runicorn's viewer) keeps the one the detail gave.
    [
      'finished_at',
      sql`case when ${x('finished_at')} is null and ${x('status')} in ('SUCCEEDED', 'FAILED', 'STOPPED') then jobs.finished_at else ${x('finished_at')} end`,
    ],
    ['gpu_type', keep('gpu_type')],
    // A list that does not know the GPU total must not erase one learned from the topology.
    ['gpu_count', keep('gpu_count')],
    ['accelerator_kind', keep('accelerator_kind')],
    // The reason belongs to the current status: a job that runs again has none.
    ['failure_reason', x('failure_reason')],
    ['console_url', keep('console_url')],
    // A list that does not carry restarts, labels, config ... keeps what the detail said.
    ['restart_count', keep('restart_count')],
    ['owner', keep('owner')],
    ['labels', keep('labels')],
    ['config', keep('config')],
    ['image', keep('image')],
    ['command', keep('command')],
    ['sort_at', x('sort_at')],
  ];
}

/** The job rows' upsert; returns the ids of the rows it inserted. */
async function writeJobRows(
  ctx: RepoContext,
  providerId: string,
  rows: readonly JobWriteRow[],
  seenAt: Date,
  detailFetchedAt: Date | null,
): Promise<Set<string>> {
  const inserted = new Set<string>();
  const detailAt = detailFetchedAt?.toISOString() ?? null;
  for (const part of chunks([...rows], JOB_ROWS_PER_STATEMENT)) {
    // Only the inserted rows come back: a write of known jobs reads none.
    const written = await rowsOf<{ id: string }>(
      ctx.db,
      sql`
      with w as (insert into jobs (id, provider_id, project_id, external_id, name, status, raw_status, created_at, started_at,
                        started_at_source, finished_at, gpu_type, gpu_count, accelerator_kind, failure_reason, console_url, restart_count,
                        owner, labels, config, image, command, sort_at, seen_at, detail_fetched_at)
      select x.id, ${providerId}, x.project_id, x.external_id, x.name, x.status, x.raw_status, x.created_at, x.started_at,
             x.started_at_source, x.finished_at, x.gpu_type, x.gpu_count, x.accelerator_kind, x.failure_reason, x.console_url, x.restart_count,
             x.owner, x.labels, x.config, x.image, x.command, x.sort_at, ${seenAt.toISOString()}::timestamptz, ${detailAt}::timestamptz
      from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as ${JOB_ROW_RECORD}
      on conflict (id) do update set ${assignments(jobUpdates('excluded'))},
        seen_at = excluded.seen_at, detail_fetched_at = coalesce(excluded.detail_fetched_at, jobs.detail_fetched_at)
      returning id, (xmax = 0) as inserted)
      select id from w where inserted`,
    );
    for (const w of written) inserted.add(w.id);
  }
  return inserted;
}

const SUMMARY_ROW_RECORD = sql.raw('x(job_id text, name text, best_value float8, best_step bigint, mode text)');

/** A reported summary row as writeReportedSummaries writes it. */
type SummaryWriteRow = ReturnType<typeof reportedSummaryRows>[number];

function reportedSummaryRows(providerId: string, jobs: readonly JobRecord[]) {
  return jobs.flatMap((j) =>
    (j.reportedSummary ?? []).map((r) => ({
      job_id: jobGlobalId(providerId, j.externalId),
      name: r.name,
      best_value: r.bestValue,
      best_step: r.bestStep,
      mode: r.mode,
    })),
  );
}

/** The best values a platform reports beside its jobs (Runicorn's best metric): one statement. */
async function writeReportedSummaries(ctx: RepoContext, providerId: string, jobs: readonly JobRecord[]) {
  const rows = reportedSummaryRows(providerId, jobs);
  if (rows.length === 0) return;
  await ctx.db.execute(sql`
    insert into job_summaries (job_id, name, best_value, best_step, mode, best_source)
    select x.job_id, x.name, x.best_value, x.best_step, x.mode, 'platform'
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as ${SUMMARY_ROW_RECORD}
    on conflict (job_id, name) do update set ${assignments(summaryUpdates('excluded'))}`);
}

/** What writeReportedSummaries sets on a stored summary (`n`: the new row's alias): touchListedCatalog tests a row with the same expressions. */
function summaryUpdates(n: string): [string, SQL][] {
  const x = (column: string) => sql.raw(`${n}.${column}`);
  return [
    ['best_value', x('best_value')],
    ['best_step', x('best_step')],
    ['mode', sql`coalesce(${x('mode')}, job_summaries.mode)`],
    ['best_source', sql`'platform'`],
  ];
}

/**
 * Waits for, then holds until the transaction ends, the right to write these jobs' training
 * points and summaries: refreshSummaries keeps a summary from the stored one and what its own
 * write covered, so two writers of one job (a query's fetch on one replica, the collector's on
 * another) must not both start from the summary neither has yet updated, or the second would
 * commit one without the first's points. In job order, one statement; the statements after it see
 * what the writer before committed.
 */
export async function lockJobSummaries(ctx: RepoContext, jobIds: readonly string[]) {
  if (jobIds.length === 0) return;
  await ctx.db.execute(sql`
    select count(pg_advisory_xact_lock(k)) from (
      select distinct hashtextextended('job_summaries:' || id, 0) as k from unnest(${textArray(jobIds)}) as id order by 1
    ) s`);
}

/**
 * Rebuilds the summaries of the given jobs' training metrics, in one statement, per metric name
 * across its stages (as W&B keys a summary): latest = the point with the highest step (then
 * time), with its stage; best = the highest or lowest value by the metric's mode (the platform's
 * where it named one, else the name's convention, else none: a best is never guessed). A best the
 * platform reported is kept over a computed one.
 *
 * `written`: the stretches of keys the write before this one covered (a collector's sweep of a
 * long run adds its last minutes to millions of stored steps). Every point outside them was
 * already weighed and is unchanged, so the stored latest and best stand for them: a metric is
 * summarized from those two and the points inside the stretches, not its whole history again.
 * Where a stretch holds the stored latest's or best's step (a sweep's overlap holds the latest),
 * that point may have changed: the stretch's own latest or best takes its place when it is at
 * least as far or as good, since nothing outside can beat the old one. Summarized whole: a metric
 * with no summary yet or no stored latest (a platform's best alone), with a time-keyed series
 * (retention may have dropped its raw points), or whose stored latest or best was overwritten by
 * a nearer or worse one. Without `written`: every metric whole (test/store/summaries.test.ts
 * holds the two equal).
 */
export async function refreshSummaries(ctx: RepoContext, jobIds: readonly string[], written?: readonly WrittenRange[]) {
  if (jobIds.length === 0) return;
  const ranges = JSON.stringify((written ?? []).map((w) => ({ series_id: w.seriesId, lo: w.lo, hi: w.hi })));
  const jobs = textArray(jobIds);
  const finite = (v: SQL) => sql`${v} is not null and ${v} <> 'NaN'::float8 and ${v} not in ('Infinity'::float8, '-Infinity'::float8)`;
  const mode = (name: SQL, stored: SQL) =>
    sql`coalesce(${stored}, case when ${name} ~* ${summaryModePattern('MIN')} then 'MIN' when ${name} ~* ${summaryModePattern('MAX')} then 'MAX' end)`;
  // A value as a number where lower is better, by the mode.
  const rank = (m: SQL, v: SQL) => sql`(case when ${m} = 'MAX' then -${v} else ${v} end)`;
  await ctx.db.execute(sql`
    with written as (
      select * from jsonb_to_recordset(${ranges}::jsonb) as w(series_id bigint, lo bigint, hi bigint)
    ),
    names as (
      select distinct s.job_id, s.name from series s where s.job_id = any(${jobs}) and s.kind = 'training'
    ),
    ins as (
      select s.job_id, s.name, s.stage, p.step, p.ts, p.value
      from written w join series s on s.id = w.series_id
        cross join lateral ${rawPoints(sql`w.series_id`, sql`w.lo`, sql`w.hi`)} p
      where s.kind = 'training' and s.job_id = any(${jobs}) and ${finite(sql`p.value`)}
    ),
    ins_latest as (
      select distinct on (job_id, name) job_id, name, step, ts from ins order by job_id, name, step desc nulls last, ts desc nulls last
    ),
    state as (
      select n.job_id, n.name, js.job_id is not null as summarized, js.latest_step, js.latest_at, js.best_value, js.best_step,
        ${mode(sql`n.name`, sql`js.mode`)} as mode,
        coalesce(hit.latest, false) as latest_hit, js.best_source = 'series' and coalesce(hit.best, false) as best_hit,
        exists (select 1 from series s where s.job_id = n.job_id and s.name = n.name and s.kind = 'training' and s.keyed_by <> 'step') as by_time
      from names n left join job_summaries js using (job_id, name)
        -- Whether a stretch written of the metric's series holds the step of its stored latest or best.
        left join lateral (
          select bool_or(js.latest_step between w.lo and w.hi) as latest, bool_or(js.best_step between w.lo and w.hi) as best
          from series s join written w on w.series_id = s.id where s.job_id = n.job_id and s.name = n.name
        ) hit on true
    ),
    ins_best as (
      select distinct on (i.job_id, i.name) i.job_id, i.name, i.value, i.step
      from ins i join state st using (job_id, name) where st.mode is not null
      order by i.job_id, i.name, ${rank(sql`st.mode`, sql`i.value`)}, i.step nulls last
    ),
    whole as (
      select st.job_id, st.name from state st
        left join ins_latest il using (job_id, name) left join ins_best ib using (job_id, name)
      where ${written === undefined}::boolean or not st.summarized or st.latest_step is null or st.by_time
        or (st.latest_hit and (il.step is null or il.step < st.latest_step
          or (il.step = st.latest_step and st.latest_at is not null and (il.ts is null or il.ts < st.latest_at))))
        or (st.best_hit and (ib.value is null or ${rank(sql`st.mode`, sql`ib.value`)} > ${rank(sql`st.mode`, sql`st.best_value`)}
          or (${rank(sql`st.mode`, sql`ib.value`)} = ${rank(sql`st.mode`, sql`st.best_value`)} and ib.step > st.best_step)))
    ),
    pts as (
      select s.job_id, s.name, s.stage, p.step, p.ts, p.value, false as stored_best
      from whole wh join series s on s.job_id = wh.job_id and s.name = wh.name cross join lateral ${rawPoints(sql`s.id`)} p
      where s.kind = 'training' and ${finite(sql`p.value`)}
      union all
      select i.job_id, i.name, i.stage, i.step, i.ts, i.value, false
      from ins i where not exists (select 1 from whole wh where wh.job_id = i.job_id and wh.name = i.name)
      union all
      -- The stored latest, where no stretch held its step: a point still stored as it was.
      select js.job_id, js.name, js.stage, js.latest_step, js.latest_at, js.latest_value, false
      from state st join job_summaries js using (job_id, name)
      where not st.latest_hit and not exists (select 1 from whole wh where wh.job_id = st.job_id and wh.name = st.name)
      union all
      -- The stored best computed from the points, where no stretch held its step: a candidate for
      -- best only (its stage and time are not kept).
      select js.job_id, js.name, null, js.best_step, null, js.best_value, true
      from state st join job_summaries js using (job_id, name)
      where not st.best_hit and js.best_source = 'series' and js.best_value is not null
        and not exists (select 1 from whole wh where wh.job_id = st.job_id and wh.name = st.name)
    ),
    latest as (
      select distinct on (job_id, name) job_id, name, stage, value, step, ts
      from pts where not stored_best order by job_id, name, step desc nulls last, ts desc nulls last
    ),
    modes as (
      select l.job_id, l.name, ${mode(sql`l.name`, sql`js.mode`)} as mode, js.best_source
      from latest l left join job_summaries js on js.job_id = l.job_id and js.name = l.name
    ),
    best as (
      select distinct on (p.job_id, p.name) p.job_id, p.name, p.value, p.step
      from pts p join modes m using (job_id, name)
      where m.mode is not null
      order by p.job_id, p.name, ${rank(sql`m.mode`, sql`p.value`)}, p.step nulls last
    )
    insert into job_summaries (job_id, name, stage, latest_value, latest_step, latest_at, best_value, best_step, mode, best_source)
    select l.job_id, l.name, l.stage, l.value, l.step, l.ts, b.value, b.step, m.mode, case when b.value is null then null else 'series' end
    from latest l join modes m using (job_id, name) left join best b using (job_id, name)
    on conflict (job_id, name) do update set stage = excluded.stage, latest_value = excluded.latest_value,
      latest_step = excluded.latest_step, latest_at = excluded.latest_at, mode = coalesce(job_summaries.mode, excluded.mode),
      best_value = case when job_summaries.best_source = 'platform' then job_summaries.best_value else excluded.best_value end,
      best_step = case when job_summaries.best_source = 'platform' then job_summaries.best_step else excluded.best_step end,
      best_source = case when job_summaries.best_source = 'platform' then 'platform' else excluded.best_source end`);
}

export async function summariesOfJobs(ctx: RepoContext, jobIds: readonly string[]): Promise<JobSummaryRow[]> {
  if (jobIds.length === 0) return [];
  return ctx.read(() =>
    ctx.db
      .select()
      .from(t.jobSummaries)
      .where(inArray(t.jobSummaries.jobId, [...jobIds]))
      .orderBy(t.jobSummaries.jobId, t.jobSummaries.name)
      .execute(),
  );
}

/**
 * Sets the status of known jobs and returns those whose status changed, with the previous one.
 * The UPDATE's WHERE is re-checked on the latest row version, so of two concurrent writers of the
 * same change (two pollers, two replicas) only one gets the row back.
 */
export async function claimStatusChanges(ctx: RepoContext, claims: readonly { id: string; status: string }[]): Promise<Map<string, string>> {
  const changed = new Map<string, string>();
  if (claims.length === 0) return changed;
  const rows = await rowsOf<{ id: string; previous: string }>(
    ctx.db,
    sql`update jobs set status = x.status
        from jsonb_to_recordset(${JSON.stringify(claims)}::jsonb) as x(id text, status text), jobs as old
        where jobs.id = x.id and old.id = x.id and jobs.status is distinct from x.status
        returning jobs.id, old.status as previous`,
  );
  for (const r of rows) changed.set(r.id, r.previous);
  return changed;
}

/** A provider's jobs the cache holds as not finished (the ones a vanished upstream job would leave behind). */
export async function unfinishedJobsOf(ctx: RepoContext, providerId: string): Promise<JobRow[]> {
  return ctx.db
    .select()
    .from(t.jobs)
    .where(and(eq(t.jobs.providerId, providerId), inArray(t.jobs.status, ['PENDING', 'RUNNING'])));
}

/**
 * At most `limit` of a provider's jobs the cache holds as not finished whose external id is not
 * among `listed`: a complete job list's leftovers, found by the database instead of reading every
 * unfinished job back each sync (Runicorn's list is synced every 2 s).
 */
export async function unlistedUnfinishedJobsOf(ctx: RepoContext, providerId: string, listed: readonly string[], limit: number): Promise<JobRow[]> {
  return ctx.db
    .select()
    .from(t.jobs)
    .where(and(eq(t.jobs.providerId, providerId), inArray(t.jobs.status, ['PENDING', 'RUNNING']), sql`not (${t.jobs.externalId} = any(${textArray(listed)}))`))
    .limit(limit);
}

/**
 * Jobs the platform no longer has: UNKNOWN, with the reason and the last status seen in
 * raw_status. Claimed like a status change: returns the ids this writer changed, with their
 * previous status.
 */
export async function markGone(ctx: RepoContext, jobs: readonly { id: string; status: string }[], at: Date): Promise<Map<string, string>> {
  const changed = new Map<string, string>();
  if (jobs.length === 0) return changed;
  const claims = jobs.map((j) => ({ id: j.id, previous: j.status, raw: `gone: the platform no longer lists it nor finds it by id (last seen ${j.status})` }));
  const rows = await rowsOf<{ id: string; previous: string }>(
    ctx.db,
    sql`update jobs set status = 'UNKNOWN', raw_status = x.raw, detail_fetched_at = ${at.toISOString()}::timestamptz
        from jsonb_to_recordset(${JSON.stringify(claims)}::jsonb) as x(id text, previous text, raw text), jobs as old
        where jobs.id = x.id and old.id = x.id and jobs.status = x.previous
          -- a job already marked gone is not gone again (nor announced twice)
          and coalesce(old.raw_status, '') not like 'gone:%'
        returning jobs.id, old.status as previous`,
  );
  for (const r of rows) changed.set(r.id, r.previous);
  return changed;
}

export async function jobsByIds(ctx: RepoContext, ids: readonly string[]): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  return ctx.read(() => ctx.reads.jobsByIds.execute({ ids: [...ids] }));
}

/** Which of these jobs the cache holds (their ids only: a sync asks it of every listed job). */
export async function knownJobIds(ctx: RepoContext, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await ctx.read(() => ctx.reads.knownJobIds.execute({ ids: [...ids] }));
  return new Set(rows.map((r) => r.id));
}

export async function projectsByIds(ctx: RepoContext, ids: readonly string[]): Promise<ProjectRow[]> {
  if (ids.length === 0) return [];
  return ctx.read(() => ctx.reads.projectsByIds.execute({ ids: [...ids] }));
}

export async function projectsOf(ctx: RepoContext, providerIds: readonly string[]): Promise<ProjectRow[]> {
  if (providerIds.length === 0) return [];
  return ctx.read(() =>
    ctx.db
      .select()
      .from(t.projects)
      .where(inArray(t.projects.providerId, [...providerIds]))
      .orderBy(t.projects.providerId, t.projects.name, t.projects.id)
      .execute(),
  );
}

/** Labels as the jobs table keeps them: one JSON object, key -> value (null for a bare tag). */
export function labelObject(labels: readonly JobLabel[]): Record<string, string | null> {
  return Object.fromEntries(labels.map((l) => [l.key, l.value]));
}
