// Every SQL statement the graph runs lives here: bulk upserts through jsonb_to_recordset (one
// statement per table per batch, whatever the fan-out) and set-based reads keyed by id lists.
import { and, asc, desc, eq, getTableColumns, inArray, sql, type SQL } from 'drizzle-orm';
import { gpuGlobalId, jobGlobalId, nodeGlobalId, projectGlobalId } from '../domain/ids.js';
import { summaryModePattern } from '../domain/metric-catalog.js';
import type { ScrapeLabelSource } from '../domain/scrape-families.js';
import type { Aggregation, JobLabel, JobRecord, NodeRecord, PointColumns, ProjectRecord, SeriesData } from '../domain/types.js';
import { issueReadFor, type Database, type Db } from './db.js';
import type { RequestScope } from '../domain/request-scope.js';
import { DomainError } from '../domain/errors.js';
import {
  chunks,
  copierOf,
  embeddedClientOf,
  isTransactionConflict,
  isUniqueViolation,
  pointBatchOfRows,
  readRowsFor,
  rowsOf,
  textArray,
  toDate,
  type PointBatch,
  type PointRun,
} from './sql-util.js';
import {
  cursorKeyOf,
  cursorKeySql,
  DEFAULT_JOB_ORDER,
  jobFilterConditions,
  orderKeySql,
  preparedCursorKey,
  preparedCursorKeySql,
  preparedFilterConditions,
  preparedFilterShape,
  preparedFilterValues,
  type JobCursor,
  type JobFilter,
  type JobOrder,
} from './job-filter.js';
import * as t from './tables.js';
import { JobShapes } from './job-shapes.js';

export type JobRow = typeof t.jobs.$inferSelect;
export type ProjectRow = typeof t.projects.$inferSelect;
export type NodeRow = typeof t.nodes.$inferSelect;
export type GpuRow = typeof t.gpus.$inferSelect;
export type SeriesRow = typeof t.series.$inferSelect;
export type FetchRow = typeof t.fetches.$inferSelect;
export type ProviderRow = typeof t.providers.$inferSelect;
export type ProviderSyncRow = typeof t.providerSyncs.$inferSelect;
export type FetchErrorRow = typeof t.fetchErrors.$inferSelect;
export type ProgressRow = typeof t.progress.$inferSelect;
export type JobSummaryRow = typeof t.jobSummaries.$inferSelect;

/** A numeric SQL array as a driver returns it: parsed, or in Postgres' text form. */
type NumberArray = readonly (number | string | null)[] | string;

/**
 * The numbers of a numeric SQL array (int or float8; NULL elements as null). postgres.js parses a
 * NULL element through the number parser, as NaN: stored values are finite or null (the adapters
 * map NaN to null), so NaN here is a NULL.
 */
function numbersOf(a: NumberArray): (number | null)[] {
  const items = typeof a === 'string' ? (a === '{}' ? [] : a.slice(1, -1).split(',')) : a;
  return items.map((x) => {
    if (x === null || x === 'NULL') return null;
    const n = Number(x);
    return Number.isNaN(n) ? null : n;
  });
}

export interface PointRow {
  seriesId: number;
  /** Named as MetricPoint's field, which is then a plain property read (see src/schema/index.ts). */
  timestamp: Date | null;
  step: number | null;
  value: number | null;
}

export interface SeriesWindow {
  seriesId: number;
  from: Date | null;
  to: Date | null;
  /** 'time' (the key is epoch ms): the window is applied to the indexed key instead of ts. */
  keyedBy?: 'time' | 'step';
}

const MIN_KEY = sql.raw('(-9223372036854775807)::bigint');
const MAX_KEY = sql.raw('9223372036854775807::bigint');

export interface SummaryRow {
  seriesId: number;
  /** Position of its window in the request. */
  index: number;
  count: number;
  min: number | null;
  max: number | null;
  avg: number | null;
  last: number | null;
  firstAt: Date | null;
  lastAt: Date | null;
}

/** What latestReadings reads: metric names, providers and projects (null = all), the freshness bound, the cap. */
export interface LatestReadingsQuery {
  names: readonly string[];
  providerIds: readonly string[];
  projectIds: readonly string[] | null;
  since: Date;
  limit: number;
}

/** What comparePoints reads: jobs, metric names by kind, the axis, the grid size, an optional time window. */
export interface ComparisonQuery {
  jobIds: readonly string[];
  training: readonly string[];
  system: readonly string[];
  axis: 'STEP' | 'TIME' | 'RELATIVE_TIME';
  buckets: number;
  aggregation: Aggregation;
  from: Date | null;
  to: Date | null;
}

/** One (job, metric, bucket) of a comparison: the bucket's x on the shared grid and the aggregated value. */
export interface ComparisonRow {
  jobId: string;
  kind: 'training' | 'system';
  name: string;
  unit: string;
  bucket: number;
  x: number;
  value: number | null;
  points: number;
}

/** The latest reading of one accelerator series of a running job, with its labels. */
export interface LatestReadingRow extends ScrapeLabelSource {
  ts: Date;
  value: number;
}

/** What accelSeriesInWindow reads: metric names, providers and projects (null = all), the window, the cap. */
export interface AccelSeriesQuery {
  names: readonly string[];
  providerIds: readonly string[];
  projectIds: readonly string[] | null;
  from: Date;
  to: Date;
  limit: number;
  /** false: `points` is only 1 (it has points there), read with an index probe instead of a count (label and series listings). */
  countPoints?: boolean;
}

/** An accelerator series with points in a window: its id, its point count there, and what its labels are made of. */
export interface AccelSeriesRow extends ScrapeLabelSource {
  seriesId: number;
  points: number;
}

/** A job as an ordered page lists it: with its key in that order (what its cursor holds). */
export type OrderedJobRow = JobRow & { orderKey: number | string | null };

/**
 * The columns a job list reads when its selection needs no more of each job (see
 * `listColumnsSuffice` in src/schema/job-connection.ts): its identity, name and status. sortAt is
 * the default order's key (its cursor). Everything else a job page asks for reads whole rows.
 */
export const JOB_LIST_FIELDS = ['id', 'providerId', 'externalId', 'name', 'status', 'rawStatus', 'sortAt'] as const;
/** A job as a list page reads it with JOB_LIST_FIELDS only. */
export type OrderedJobListRow = Pick<JobRow, (typeof JOB_LIST_FIELDS)[number]> & { orderKey: number | string | null };
/** Which columns a job page reads: whole rows, or JOB_LIST_FIELDS. */
export type JobPageColumns = 'all' | 'list';
/** A job page's row for the columns it read. */
export type JobPageRow<C extends JobPageColumns> = C extends 'list' ? OrderedJobListRow : OrderedJobRow;

/** Rows per bulk point statement: statements grow with data volume only, by this divisor. */
export const POINTS_PER_STATEMENT = 50_000;
/** Runs of a write transaction Postgres ends as a deadlock victim before its error is the caller's. */
const TRANSACTION_ATTEMPTS = 3;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/** The start of the bucket of `width` ms holding `key` (epoch ms), on UTC boundaries, before 1970 too. */
export function bucketOf(key: number, width: number): number {
  return key - (((key % width) + width) % width);
}

/**
 * A window reads a rollup only when its raw points are many (pointsAt): up to this many in the
 * window (and 10 x maxPoints), raw points answer as they always did, equal-width buckets and all;
 * a series' thousand points cost about a millisecond, and short windows keep their detail. Above
 * it the raw read grows with the samples (bench:history, 15-s samples: a fleet read of 1,000
 * series x 2,000 points took 18x its 1-hour rollup rows).
 */
export const ROLLUP_ABOVE_POINTS = 1_000;
/**
 * A rolled window whose raw equal-width bucket would be at least this wide (ms) reads the 1-hour
 * rollup, else the 1-minute one. With the rollup read only where that bucket is at least half a
 * minute, the answer's buckets (merged k at a time to stay within maxPoints) are never fewer than
 * half of maxPoints: the detail asked for, from fewer than 30 x maxPoints 1-minute rows.
 */
export const HOURLY_FROM_MS = 30 * MINUTE_MS;

/** SQL: the start of the `width`-ms bucket of `expr` (a bigint column; null stays the lowest key). */
function bucketSql(expr: string, width: number | string): SQL {
  return sql.raw(`case when ${expr} is null then (-9223372036854775807)::bigint else ${expr} - ((${expr} % ${width}) + ${width}) % ${width} end`);
}

/** A rollup row's columns from the points `p` of its bucket (key, value): migrations/0007 backfills with the same. */
const ROLLUP_AGGREGATES = sql.raw(`count(p.value)::int, min(p.value), max(p.value), sum(p.value order by p.key),
  (array_agg(p.value order by p.key desc) filter (where p.value is not null))[1]`);

/** The fewest points written since the last ANALYZE that make PGlite refresh its statistics (maintainStatistics). */
export const ANALYZE_AFTER_POINTS = 10_000;

export function seriesKey(jobId: string, s: Pick<SeriesData, 'kind' | 'name' | 'source' | 'stage'>, nodeId: string | null, gpuId: string | null) {
  return [jobId, s.kind, s.name, s.source, s.stage ?? '', nodeId ?? '', gpuId ?? ''].join('|');
}

/** The windows as a relation (idx, series_id, k_from, k_to, t_from, t_to), bound as one JSON parameter. */
function windowsSql(windows: readonly SeriesWindow[]): SQL {
  const json = JSON.stringify(
    windows.map((w, idx) => {
      const from = w.from?.getTime() ?? null;
      const to = w.to?.getTime() ?? null;
      return w.keyedBy === 'time'
        ? [idx, w.seriesId, from, to, null, null, true]
        : [idx, w.seriesId, null, null, w.from?.toISOString() ?? null, w.to?.toISOString() ?? null, false];
    }),
  );
  return sql`select (r->>0)::int as idx, (r->>1)::bigint as series_id, (r->>2)::bigint as k_from, (r->>3)::bigint as k_to,
    (r->>4)::timestamptz as t_from, (r->>5)::timestamptz as t_to, (r->>6)::boolean as timed
    from jsonb_array_elements(${json}::jsonb) as r`;
}

/**
 * For a system series `s`: it reads the job's own devices, at the finest scope the job has for
 * that metric (per GPU where there are GPU series, else per node, else the job), never a whole
 * node's or host's readings (meta nodeWide / hostWide). What "a job's GPU utilization" means when
 * runs are compared or scraped: its GPUs, not GPUs and their node aggregates mixed.
 */
const OWN_DEVICES_AT_FINEST_SCOPE = sql.raw(`not coalesce((s.meta->>'nodeWide')::boolean, false) and not coalesce((s.meta->>'hostWide')::boolean, false)
  and s.scope = (select case when bool_or(s2.scope = 'GPU') then 'GPU' when bool_or(s2.scope = 'NODE') then 'NODE' else 'JOB' end
    from series s2 where s2.job_id = s.job_id and s2.kind = 'system' and s2.name = s.name
      and not coalesce((s2.meta->>'nodeWide')::boolean, false) and not coalesce((s2.meta->>'hostWide')::boolean, false))`);

/** A series' points as three arrays in key order (ts as epoch ms, steps, vals), from the rows of `rows`. */
function pointArrays(rows: string, orderBy: string): SQL {
  return sql.raw(`array_agg(floor(extract(epoch from ${rows}.ts) * 1000)::float8 order by ${orderBy}) as ts,
    array_agg(${rows}.step order by ${orderBy}) as steps,
    array_agg(${rows}.value::float8 order by ${orderBy}) as vals`);
}

/** A placeholder for a text[] parameter: one parameter whatever the number of ids (both drivers bind a JS array). */
const ids = (name: string) => sql`${sql.placeholder(name)}::text[]`;

/**
 * The reads every warm request makes (a job list's sync check and page, a job page's topology,
 * series and fetch records), built once per database handle and sent as prepared statements: the
 * SQL is not rebuilt by drizzle's query builder per request, and on PostgreSQL the statement is
 * parsed once per connection and answered in one round trip (an unprepared statement with
 * parameters costs postgres.js a Describe round trip first). Id lists bind as one text[], so the
 * statement is the same for any number of ids.
 */
function preparedReads(db: Db) {
  return {
    providerSyncs: db
      .select()
      .from(t.providerSyncs)
      .where(and(sql`${t.providerSyncs.providerId} = any(${ids('ids')})`, eq(t.providerSyncs.dataset, sql.placeholder('dataset'))))
      .prepare('provider_syncs'),
    jobsByIds: db
      .select()
      .from(t.jobs)
      .where(sql`${t.jobs.id} = any(${ids('ids')})`)
      .prepare('jobs_by_ids'),
    projectsByIds: db
      .select()
      .from(t.projects)
      .where(sql`${t.projects.id} = any(${ids('ids')})`)
      .prepare('projects_by_ids'),
    nodesOfJobs: db
      .select()
      .from(t.nodes)
      .where(sql`${t.nodes.jobId} = any(${ids('ids')})`)
      .orderBy(t.nodes.jobId, t.nodes.ord)
      .prepare('nodes_of_jobs'),
    gpusOfJobs: db
      .select()
      .from(t.gpus)
      .where(sql`${t.gpus.jobId} = any(${ids('ids')})`)
      .orderBy(t.gpus.nodeId, t.gpus.idx)
      .prepare('gpus_of_jobs'),
    seriesOfJobs: db
      .select()
      .from(t.series)
      .where(and(sql`${t.series.jobId} = any(${ids('ids')})`, eq(t.series.kind, sql.placeholder('kind'))))
      .orderBy(t.series.jobId, t.series.name, t.series.nodeId, t.series.gpuId, t.series.id)
      .prepare('series_of_jobs'),
    fetchesOf: db
      .select()
      .from(t.fetches)
      .where(and(sql`${t.fetches.jobId} = any(${ids('ids')})`, sql`${t.fetches.dataset} = any(${ids('datasets')})`))
      .orderBy(desc(t.fetches.fetchedAt))
      .prepare('fetches_of'),
  };
}

/** A provider_syncs row as json_build_object writes it (times as ISO text). */
interface ProviderSyncJson {
  providerId: string;
  dataset: string;
  syncedAt: string | null;
  attemptedAt: string | null;
  errorCode: string | null;
  errorMessage: string | null;
}

/** A json column's value: drivers hand it over parsed, or as its text. */
function jsonValue<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

function syncRowOf(j: ProviderSyncJson): ProviderSyncRow {
  return { ...j, syncedAt: toDate(j.syncedAt), attemptedAt: toDate(j.attemptedAt) } as ProviderSyncRow;
}

/**
 * The jobs table's columns in one order: a job page comes back as JSON arrays in this order
 * (positions instead of 25 key names per job) with instants as epoch milliseconds (a Date from
 * a number instead of parsing ISO text: seven instants per job), mapped to the JobRow drizzle
 * would have built.
 */
const JOB_COLUMNS = Object.entries(getTableColumns(t.jobs)).map(([field, column]) => ({
  field,
  name: column.name,
  instant: column.columnType === 'PgTimestamp',
}));

/**
 * A job as one JSON array of JOB_COLUMNS' values, then the page's order key. Epoch ms rounded
 * down, as a Date made from the ISO text drops the microseconds.
 */
const jobArrayOf = (columns: typeof JOB_COLUMNS) =>
  sql.raw(`json_build_array(${columns.map((c) => (c.instant ? `floor(extract(epoch from p."${c.name}") * 1000)` : `p."${c.name}"`)).join(', ')}, p.order_key)`);
const JOB_ARRAY = jobArrayOf(JOB_COLUMNS);

/**
 * JOB_LIST_FIELDS' columns, in JOB_COLUMNS' order. Building each job's JSON was most of the list
 * statement's cost in Postgres: with 25 columns it served 17,000 pages/s under pgbench on this
 * machine, with these 34,000 (issue 22; the database shares the server's cores).
 */
const JOB_LIST_COLUMNS = JOB_COLUMNS.filter((c) => (JOB_LIST_FIELDS as readonly string[]).includes(c.field));
const JOB_LIST_ARRAY = jobArrayOf(JOB_LIST_COLUMNS);

/**
 * A job row (with its order key still null) from a JSON array in JOB_COLUMNS' order. Generated once
 * from the table's columns as one object literal: the loop it replaces stored 25 computed keys
 * per job (megamorphic keyed stores into an object that changed shape 25 times), 35 µs per page
 * of 21 jobs against 7 µs (the Dates are most of what is left).
 */
const rowOfArrayFor = (columns: typeof JOB_COLUMNS) =>
  new Function(
    'a',
    `return { ${columns.map((c, i) => `${JSON.stringify(c.field)}: ${c.instant ? `a[${i}] == null ? null : new Date(a[${i}])` : `a[${i}] ?? null`}`).join(', ')}, orderKey: null };`,
  );
const jobRowOfArray = rowOfArrayFor(JOB_COLUMNS) as (a: readonly unknown[]) => OrderedJobRow;
const jobListRowOfArray = rowOfArrayFor(JOB_LIST_COLUMNS) as (a: readonly unknown[]) => OrderedJobListRow;

type PreparedJobQuery = { execute(values: Record<string, unknown>): Promise<Record<string, unknown>[]> };

/** Orders whose key is a column expression without values (DURATION binds an instant, SUMMARY a metric name). */
function orderKeyIsConstant(order: JobOrder): boolean {
  return order.by === 'CREATED' || order.by === 'NAME' || order.by === 'STARTED' || order.by === 'ACCELERATOR_COUNT';
}

/** What every view of one database handle shares (Repository.within): statements prepared once, PGlite's statistics bookkeeping. */
class HandleState {
  /** The jobs' sizes the query-cost estimate reads (job-shapes.ts); a transaction's view shares them. */
  constructor(readonly shapes = new JobShapes()) {}
  prepared: ReturnType<typeof preparedReads> | null = null;
  /** Job pages and counts of the plain filter shapes (preparedFilterShape), prepared once per shape. */
  readonly jobQueries = new Map<string, PreparedJobQuery>();
  /** Points written since the planner's statistics were last refreshed, and the table's rows then (PGlite only). */
  pointsSinceAnalyze = 0;
  pointsAtAnalyze = 0;
}

export class Repository {
  /** Repository.of opens the door; views (within) and transactions are made from a repository. */
  private constructor(
    readonly db: Db,
    private readonly inTransaction = false,
    private readonly state = new HandleState(),
    /** The operation this view reads for (within): its reads are cancelled when it is abandoned. */
    private readonly scope?: RequestScope,
    /** Where a job list's page is read (Database.shortReads); in a transaction, the transaction. */
    private readonly shortReads: Db = db,
  ) {}

  /** The repository of an opened database, its job pages read through its short-read client. */
  static of(database: Pick<Database, 'db' | 'shortReads'>): Repository {
    return new Repository(database.db, false, new HandleState(), undefined, database.shortReads);
  }

  /** What the store knows of each job's size, reloaded from the tables when old (in the background). */
  shapes(): JobShapes {
    this.state.shapes.refreshIfOld(this.db);
    return this.state.shapes;
  }

  /** Reloads the jobs' sizes from the tables now (after the tables were emptied, say). */
  reloadShapes(): Promise<void> {
    return this.state.shapes.load(this.db);
  }

  /**
   * The same repository reading for one operation: a statement it issues is cancelled when the
   * operation is abandoned (time-out, client gone). Undefined: the shared handle (background work).
   */
  within(scope: RequestScope | undefined): Repository {
    if (scope === this.scope) return this;
    return new Repository(this.db, this.inTransaction, this.state, scope, this.shortReads);
  }

  /** Issues a read for this view's operation; `issue` must call `.execute()` (store/db.ts, issueReadFor). */
  private read<T>(issue: () => Promise<T>): Promise<T> {
    return issueReadFor(this.scope, issue);
  }

  /** A raw read's rows, issued for this view's operation. */
  private rows<T>(query: SQL): Promise<T[]> {
    return readRowsFor<T>(this.scope, this.db, query);
  }

  private get reads(): ReturnType<typeof preparedReads> {
    return (this.state.prepared ??= preparedReads(this.db));
  }

  /**
   * Runs writes that belong together in one transaction: a batch's points and the record that
   * they were fetched commit together or not at all, so a crash or a lost connection mid-write
   * never leaves a range marked as fetched with its points missing.
   */
  async transaction<T>(work: (repo: Repository) => Promise<T>): Promise<T> {
    const run = () => this.db.transaction((tx) => work(new Repository(tx as unknown as Db, true, new HandleState(this.state.shapes))));
    if (this.inTransaction) return run();
    // Concurrent writers of the same jobs (a query's fill, a live feed's, the collector's) upsert
    // shared rows; Postgres may end one as a deadlock victim. The writes are idempotent upserts:
    // the victim runs again instead of failing its request with INTERNAL.
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (err) {
        if (attempt >= TRANSACTION_ATTEMPTS || !isTransactionConflict(err)) throw err;
      }
    }
  }

  // ---- providers ----------------------------------------------------------------------------

  async upsertProviders(rows: { id: string; kind: string; name: string; simulated: boolean }[]) {
    if (rows.length === 0) return;
    await this.db
      .insert(t.providers)
      .values(rows.map((r) => ({ ...r, updatedAt: new Date() })))
      .onConflictDoUpdate({
        target: t.providers.id,
        set: { kind: sql`excluded.kind`, name: sql`excluded.name`, simulated: sql`excluded.simulated`, updatedAt: sql`excluded.updated_at` },
      });
  }

  async providerSyncs(providerIds: readonly string[], dataset: string): Promise<ProviderSyncRow[]> {
    if (providerIds.length === 0) return [];
    return this.read(() => this.reads.providerSyncs.execute({ ids: [...providerIds], dataset }));
  }

  /**
   * Makes the next read of these providers' job lists sync, whatever the TTL says: the demo's
   * simulators are new at every start (their running runs too), so the list a previous process
   * cached describes another fleet.
   */
  async expireJobLists(providerIds: readonly string[]) {
    if (providerIds.length === 0) return;
    await this.db
      .update(t.providerSyncs)
      .set({ syncedAt: null })
      .where(and(inArray(t.providerSyncs.providerId, [...providerIds]), eq(t.providerSyncs.dataset, 'jobs')));
  }

  async recordProviderSync(row: ProviderSyncRow) {
    await this.db
      .insert(t.providerSyncs)
      .values(row)
      .onConflictDoUpdate({
        target: [t.providerSyncs.providerId, t.providerSyncs.dataset],
        set: {
          // A failed attempt keeps the last good sync time: it is what the cached data is as of.
          syncedAt: row.syncedAt ? sql`excluded.synced_at` : t.providerSyncs.syncedAt,
          attemptedAt: sql`excluded.attempted_at`,
          errorCode: sql`excluded.error_code`,
          errorMessage: sql`excluded.error_message`,
        },
      });
  }

  // ---- projects and jobs --------------------------------------------------------------------

  /** Writes a provider's projects and jobs in two statements (plus chunks for huge fleets). */
  /** Upserts projects and jobs; returns the ids of the jobs this call inserted (not those it updated). */
  async upsertCatalog(providerId: string, projects: ProjectRecord[], jobs: JobRecord[], seenAt: Date): Promise<Set<string>> {
    const projectRows = new Map<string, { id: string; external_id: string; name: string; created_at: string | null }>();
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
    await this.upsertProjects(providerId, [...projectRows.values()], seenAt);
    return this.upsertJobs(providerId, jobs, seenAt);
  }

  private async upsertProjects(providerId: string, rows: { id: string; external_id: string; name: string; created_at: string | null }[], seenAt: Date) {
    for (const part of chunks(rows, 5000)) {
      await this.db.execute(sql`
        insert into projects (id, provider_id, external_id, name, created_at, seen_at)
        select x.id, ${providerId}, x.external_id, x.name, x.created_at, ${seenAt.toISOString()}::timestamptz
        from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as x(id text, external_id text, name text, created_at timestamptz)
        on conflict (id) do update set name = excluded.name, created_at = coalesce(excluded.created_at, projects.created_at),
          seen_at = excluded.seen_at`);
    }
  }

  /**
   * Upserts jobs; returns the ids of those this call inserted. Of two concurrent writers of a new
   * job only one inserts it (the other's row conflicts and updates), so "new" is told once.
   */
  async upsertJobs(providerId: string, jobs: readonly JobRecord[], seenAt: Date, detailFetched = false): Promise<Set<string>> {
    const inserted = new Set<string>();
    const rows = jobs.map((j) => ({
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
    const detailAt = detailFetched ? seenAt.toISOString() : null;
    for (const part of chunks(rows, 2000)) {
      const written = await rowsOf<{ id: string; inserted: boolean }>(
        this.db,
        sql`
        insert into jobs (id, provider_id, project_id, external_id, name, status, raw_status, created_at, started_at,
                          started_at_source, finished_at, gpu_type, gpu_count, accelerator_kind, failure_reason, console_url, restart_count,
                          owner, labels, config, image, command, sort_at, seen_at, detail_fetched_at)
        select x.id, ${providerId}, x.project_id, x.external_id, x.name, x.status, x.raw_status, x.created_at, x.started_at,
               x.started_at_source, x.finished_at, x.gpu_type, x.gpu_count, x.accelerator_kind, x.failure_reason, x.console_url, x.restart_count,
               x.owner, x.labels, x.config, x.image, x.command, x.sort_at, ${seenAt.toISOString()}::timestamptz, ${detailAt}::timestamptz
        from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as x(
          id text, project_id text, external_id text, name text, status text, raw_status text, created_at timestamptz,
          started_at timestamptz, started_at_source text, finished_at timestamptz, gpu_type text, gpu_count int, accelerator_kind text,
          failure_reason text, console_url text, restart_count int, owner text, labels jsonb, config jsonb, image text,
          command text, sort_at timestamptz)
        on conflict (id) do update set
          project_id = excluded.project_id, name = excluded.name, status = excluded.status, raw_status = excluded.raw_status,
          created_at = excluded.created_at,
          -- a creation standing in for a start never replaces the first metric point the cache found after it
          started_at = case when excluded.started_at_source = 'CREATION' and jobs.started_at_source = 'FIRST_METRIC'
                            then jobs.started_at else coalesce(excluded.started_at, jobs.started_at) end,
          started_at_source = case when excluded.started_at is null or (excluded.started_at_source = 'CREATION' and jobs.started_at_source = 'FIRST_METRIC')
                                   then jobs.started_at_source else excluded.started_at_source end,
          -- a list that does not know a finished job's end (Runicorn's viewer) keeps the one the detail gave
          finished_at = case when excluded.finished_at is null and excluded.status in ('SUCCEEDED', 'FAILED', 'STOPPED')
                             then jobs.finished_at else excluded.finished_at end,
          gpu_type = coalesce(excluded.gpu_type, jobs.gpu_type),
          -- a list that does not know the GPU total must not erase one learned from the topology
          gpu_count = coalesce(excluded.gpu_count, jobs.gpu_count),
          accelerator_kind = coalesce(excluded.accelerator_kind, jobs.accelerator_kind),
          -- the reason belongs to the current status: a job that runs again has none
          failure_reason = excluded.failure_reason,
          console_url = coalesce(excluded.console_url, jobs.console_url),
          -- a list that does not carry restarts must not erase what the detail said
          restart_count = coalesce(excluded.restart_count, jobs.restart_count),
          -- a list that carries less than the detail (no labels, no config) keeps what the detail said
          owner = coalesce(excluded.owner, jobs.owner), labels = coalesce(excluded.labels, jobs.labels),
          config = coalesce(excluded.config, jobs.config), image = coalesce(excluded.image, jobs.image),
          command = coalesce(excluded.command, jobs.command),
          sort_at = excluded.sort_at, seen_at = excluded.seen_at,
          detail_fetched_at = coalesce(excluded.detail_fetched_at, jobs.detail_fetched_at)
        returning id, (xmax = 0) as inserted`,
      );
      for (const w of written) if (w.inserted === true || (w.inserted as unknown) === 't') inserted.add(w.id);
    }
    await this.writeReportedSummaries(providerId, jobs);
    return inserted;
  }

  /** The best values a platform reports beside its jobs (Runicorn's best metric): one statement. */
  private async writeReportedSummaries(providerId: string, jobs: readonly JobRecord[]) {
    const rows = jobs.flatMap((j) =>
      (j.reportedSummary ?? []).map((r) => ({
        job_id: jobGlobalId(providerId, j.externalId),
        name: r.name,
        best_value: r.bestValue,
        best_step: r.bestStep,
        mode: r.mode,
      })),
    );
    if (rows.length === 0) return;
    await this.db.execute(sql`
      insert into job_summaries (job_id, name, best_value, best_step, mode, best_source)
      select x.job_id, x.name, x.best_value, x.best_step, x.mode, 'platform'
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(job_id text, name text, best_value float8, best_step bigint, mode text)
      on conflict (job_id, name) do update set best_value = excluded.best_value, best_step = excluded.best_step,
        mode = coalesce(excluded.mode, job_summaries.mode), best_source = 'platform'`);
  }

  /**
   * Rebuilds the summaries of the given jobs' training metrics from their stored points, in one
   * statement, per metric name across its stages (as W&B keys a summary): latest = the point with
   * the highest step (then time), with its stage; best = the highest or lowest
   * value by the metric's mode (the platform's where it named one, else the name's convention, else
   * none: a best is never guessed). A best the platform reported is kept over a computed one.
   */
  async refreshSummaries(jobIds: readonly string[]) {
    if (jobIds.length === 0) return;
    await this.db.execute(sql`
      with pts as (
        select s.job_id, s.name, s.stage, p.step, p.ts, p.value
        from series s join points p on p.series_id = s.id
        where s.job_id = any(${textArray(jobIds)}) and s.kind = 'training' and p.value is not null
          and p.value <> 'NaN'::float8 and p.value not in ('Infinity'::float8, '-Infinity'::float8)
      ),
      latest as (
        select distinct on (job_id, name) job_id, name, stage, value, step, ts
        from pts order by job_id, name, step desc nulls last, ts desc nulls last
      ),
      modes as (
        select l.job_id, l.name,
          coalesce(js.mode, case when l.name ~* ${summaryModePattern('MIN')} then 'MIN'
            when l.name ~* ${summaryModePattern('MAX')} then 'MAX' end) as mode, js.best_source
        from latest l left join job_summaries js on js.job_id = l.job_id and js.name = l.name
      ),
      best as (
        select distinct on (p.job_id, p.name) p.job_id, p.name, p.value, p.step
        from pts p join modes m using (job_id, name)
        where m.mode is not null
        order by p.job_id, p.name,
          case when m.mode = 'MAX' then -p.value else p.value end, p.step nulls last
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

  /**
   * Several jobs' metrics on one shared grid, in one statement: the points of the selected series
   * (training series by name; system series by name, the job's own devices at their finest scope,
   * node- and host-wide readings left out) are placed on one axis (step, epoch ms, or seconds since
   * each job's start), the axis' whole range is cut into `buckets` equal-width buckets, and each
   * (job, metric, bucket) is aggregated. A bucket's x is its first point's x across all runs, so a
   * sparse step axis keeps the real steps.
   */
  async comparePoints(q: ComparisonQuery): Promise<ComparisonRow[]> {
    if (q.jobIds.length === 0 || (q.training.length === 0 && q.system.length === 0)) return [];
    const x =
      q.axis === 'STEP'
        ? sql`p.step::float8`
        : q.axis === 'TIME'
          ? sql`extract(epoch from p.ts)::float8 * 1000`
          : sql`extract(epoch from (p.ts - coalesce(j.started_at, j.created_at)))::float8`;
    const agg =
      q.aggregation === 'MIN'
        ? sql`min(value)`
        : q.aggregation === 'MAX'
          ? sql`max(value)`
          : q.aggregation === 'LAST'
            ? sql`(array_agg(value order by x desc))[1]`
            : sql`avg(value)`;
    const rows = await this.rows<ComparisonRow>(
      sql`
      with sel as (
        select s.id, s.job_id, s.kind, s.name, s.unit from series s
        where s.job_id = any(${textArray(q.jobIds)})
          and ((s.kind = 'training' and s.name = any(${textArray(q.training)}))
            or (s.kind = 'system' and s.name = any(${textArray(q.system)}) and ${OWN_DEVICES_AT_FINEST_SCOPE}))
      ),
      pts as (
        select sel.job_id, sel.kind, sel.name, sel.unit, ${x} as x, p.value
        from sel join points p on p.series_id = sel.id join jobs j on j.id = sel.job_id
        where p.value is not null and p.value <> 'NaN'::float8
          and (${q.from?.toISOString() ?? null}::timestamptz is null or p.ts >= ${q.from?.toISOString() ?? null}::timestamptz)
          and (${q.to?.toISOString() ?? null}::timestamptz is null or p.ts <= ${q.to?.toISOString() ?? null}::timestamptz)
      ),
      placed as (select * from pts where x is not null),
      bounds as (select min(x) as lo, max(x) as hi from placed),
      bk as (
        select p.job_id, p.kind, p.name, p.unit, p.x, p.value,
          least(width_bucket(p.x, b.lo, case when b.hi > b.lo then b.hi else b.lo + 1 end, ${q.buckets}::int), ${q.buckets}::int) as bucket
        from placed p cross join bounds b
      )
      select job_id as "jobId", kind, name, min(unit) as unit, bucket::int as bucket,
        min(min(x)) over (partition by bucket) as x, ${agg}::float8 as value, count(*)::int as points
      from bk group by job_id, kind, name, bucket
      order by bucket, job_id, kind, name`,
    );
    return rows.map((r) => ({ ...r, x: Number(r.x), value: r.value === null ? null : Number(r.value), bucket: Number(r.bucket), points: Number(r.points) }));
  }

  /**
   * The latest reading of each accelerator series of every RUNNING job, in one statement: the
   * job's own devices at their finest scope (per GPU where the platform has it, else per node;
   * node- and host-wide readings left out), with the labels a scrape needs. Readings older than
   * `since` are counted, not returned; at most `limit` + 1 rows (the extra one says there are more).
   */
  async latestReadings(q: LatestReadingsQuery) {
    const rows = await this.rows<LatestReadingRow & { stale_count: number | string }>(
      sql`
      with sel as (
        select s.id, s.job_id, s.name, s.scope, s.node_id, s.gpu_id from series s join jobs j on j.id = s.job_id
        where j.status = 'RUNNING' and j.provider_id = any(${textArray(q.providerIds)})
          and (${q.projectIds === null} or j.project_id = any(${textArray(q.projectIds ?? [])}))
          and s.kind = 'system' and s.name = any(${textArray(q.names)}) and ${OWN_DEVICES_AT_FINEST_SCOPE}
      ),
      latest as (
        select sel.*, p.ts, p.value from sel
        join lateral (select x.ts, x.value from points x where x.series_id = sel.id and x.value is not null order by x.key desc limit 1) p on true
      ),
      counts as (select count(*) filter (where ts < ${q.since.toISOString()}::timestamptz) as stale_count from latest)
      select c.stale_count, r.* from counts c left join lateral (
        select f.name, f.scope, j.provider_id as "providerId", j.id as "jobId", j.name as "jobName", pr.name as "projectName",
          n.name as "nodeName", g.idx as "gpuIndex", coalesce(g.model, j.gpu_type) as model, j.accelerator_kind as "acceleratorKind",
          f.ts, f.value
        from latest f join jobs j on j.id = f.job_id left join projects pr on pr.id = j.project_id
          left join nodes n on n.id = f.node_id left join gpus g on g.id = f.gpu_id
        where f.ts >= ${q.since.toISOString()}::timestamptz
        order by j.provider_id, j.id, n.name nulls first, g.idx nulls first, f.name
        limit ${q.limit + 1}) r on true`,
    );
    return {
      // With nothing fresh, the one row carries only the count.
      rows: rows
        .filter((r) => r.name !== null)
        .map(({ stale_count: _s, ...r }) => ({ ...r, ts: toDate(r.ts)!, value: Number(r.value), gpuIndex: r.gpuIndex === null ? null : Number(r.gpuIndex) })),
      stale: Number(rows[0]?.stale_count ?? 0),
    };
  }

  /**
   * The accelerator series of any job (any status: the whole history) of these providers and
   * projects with at least one point in [from, to], labelled as latestReadings labels them, each
   * with its point count in the window (what reading them would cost), in one statement; at most
   * `limit` + 1 rows (the extra one says there are more).
   */
  async accelSeriesInWindow(q: AccelSeriesQuery): Promise<AccelSeriesRow[]> {
    const from = q.from.getTime();
    const to = q.to.getTime();
    const rows = await this.rows<AccelSeriesRow>(
      sql`
      with sel as (
        select s.id, s.job_id, s.name, s.scope, s.node_id, s.gpu_id,
          ${
            q.countPoints === false
              ? sql`(exists (select 1 from points x where x.series_id = s.id and x.key between ${from} and ${to} and x.value is not null))::int`
              : sql`(select count(*) from points x where x.series_id = s.id and x.key between ${from} and ${to} and x.value is not null)`
          } as n
        from series s join jobs j on j.id = s.job_id
        where j.provider_id = any(${textArray(q.providerIds)})
          and (${q.projectIds === null} or j.project_id = any(${textArray(q.projectIds ?? [])}))
          and s.kind = 'system' and s.keyed_by = 'time' and s.name = any(${textArray(q.names)}) and ${OWN_DEVICES_AT_FINEST_SCOPE}
      )
      select f.id as "seriesId", f.n as "points", f.name, f.scope, j.provider_id as "providerId", j.id as "jobId", j.name as "jobName",
        pr.name as "projectName", n.name as "nodeName", g.idx as "gpuIndex", coalesce(g.model, j.gpu_type) as model,
        j.accelerator_kind as "acceleratorKind"
      from sel f join jobs j on j.id = f.job_id left join projects pr on pr.id = j.project_id
        left join nodes n on n.id = f.node_id left join gpus g on g.id = f.gpu_id
      where f.n > 0
      order by f.id
      limit ${q.limit + 1}`,
    );
    return rows.map((r) => ({
      ...r,
      seriesId: Number(r.seriesId),
      points: Number(r.points),
      gpuIndex: r.gpuIndex === null ? null : Number(r.gpuIndex),
    }));
  }

  /** Every non-null point of these time-keyed series in [from, to] (ms), as two arrays per series in time order, in one statement. */
  async rawPointsInWindow(seriesIds: readonly number[], from: Date, to: Date): Promise<{ seriesId: number; ts: number[]; values: number[] }[]> {
    if (seriesIds.length === 0) return [];
    const rows = await this.rows<{ seriesId: number | string; ts: (number | string)[]; values: (number | string)[] }>(
      sql`select x.series_id as "seriesId", array_agg(x.key::float8 order by x.key) as ts, array_agg(x.value order by x.key) as values
        from points x
        where x.series_id = any(array(select jsonb_array_elements_text(${JSON.stringify(seriesIds)}::jsonb)::bigint))
          and x.key between ${from.getTime()} and ${to.getTime()} and x.value is not null
        group by x.series_id`,
    );
    return rows.map((r) => ({ seriesId: Number(r.seriesId), ts: r.ts.map(Number), values: r.values.map(Number) }));
  }

  /**
   * The Prometheus query API's read (src/promql): every non-null point of these time-keyed series
   * in [from, to] (ms), in time order, in one statement that reads each series along its primary
   * key (no sort of the whole window, unlike rawPointsInWindow's GROUP BY) and stops sending once
   * `maxPoints` are sent: the series that crosses the limit is the last one, and `total` says how
   * many points the sent series hold. Keys and values travel as the 8-byte floats they are
   * (float8send, one hex string per series and column): printing and parsing 2.9 M numbers as text
   * arrays took over twice as long (bench/promql.ts reads 1.44 M points per query), and the bits
   * arrive as stored. Hex text, not bytea: PGlite decodes a bytea result in JavaScript, three times
   * slower than Buffer's hex decoder (1.44 M points: 9-16 s against 3-5 s).
   */
  async promPointsInWindow(
    seriesIds: readonly number[],
    from: number,
    to: number,
    maxPoints: number,
  ): Promise<{ series: { seriesId: number; ts: Float64Array; values: Float64Array }[]; total: number }> {
    if (seriesIds.length === 0) return { series: [], total: 0 };
    const rows = await this.rows<{ seriesId: number | string; ts: string | null; values: string | null; total: number | string }>(
      sql`select q."seriesId", encode(q.ts, 'hex') as ts, encode(q.values, 'hex') as values, q.total from (
          select s.id as "seriesId", a.ts, a.values, a.n, sum(a.n) over (order by s.ord) as total
          from unnest(array(select jsonb_array_elements_text(${JSON.stringify(seriesIds)}::jsonb)::bigint)) with ordinality as s(id, ord)
          cross join lateral (
            select string_agg(float8send(p.key::float8), ''::bytea) as ts, string_agg(float8send(p.value), ''::bytea) as values, count(*) as n
            from (select x.key, x.value from points x where x.series_id = s.id and x.key between ${from} and ${to} and x.value is not null order by x.key) p
          ) a
        ) q
        where q.total - q.n <= ${maxPoints}
        order by q.total`,
    );
    let total = 0;
    const series = rows.map((r) => {
      total = Math.max(total, Number(r.total));
      return { seriesId: Number(r.seriesId), ...inKeyOrder(float8s(r.ts), float8s(r.values)) };
    });
    return { series, total };
  }

  async summariesOfJobs(jobIds: readonly string[]): Promise<JobSummaryRow[]> {
    if (jobIds.length === 0) return [];
    return this.read(() =>
      this.db
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
  async claimStatusChanges(claims: readonly { id: string; status: string }[]): Promise<Map<string, string>> {
    const changed = new Map<string, string>();
    if (claims.length === 0) return changed;
    const rows = await rowsOf<{ id: string; previous: string }>(
      this.db,
      sql`update jobs set status = x.status
          from jsonb_to_recordset(${JSON.stringify(claims)}::jsonb) as x(id text, status text), jobs as old
          where jobs.id = x.id and old.id = x.id and jobs.status is distinct from x.status
          returning jobs.id, old.status as previous`,
    );
    for (const r of rows) changed.set(r.id, r.previous);
    return changed;
  }

  /** A provider's jobs the cache holds as not finished (the ones a vanished upstream job would leave behind). */
  async unfinishedJobsOf(providerId: string): Promise<JobRow[]> {
    return this.db
      .select()
      .from(t.jobs)
      .where(and(eq(t.jobs.providerId, providerId), inArray(t.jobs.status, ['PENDING', 'RUNNING'])));
  }

  /**
   * Jobs the platform no longer has: UNKNOWN, with the reason and the last status seen in
   * raw_status. Claimed like a status change: returns the ids this writer changed, with their
   * previous status.
   */
  async markGone(jobs: readonly { id: string; status: string }[], at: Date): Promise<Map<string, string>> {
    const changed = new Map<string, string>();
    if (jobs.length === 0) return changed;
    const claims = jobs.map((j) => ({ id: j.id, previous: j.status, raw: `gone: the platform no longer lists it nor finds it by id (last seen ${j.status})` }));
    const rows = await rowsOf<{ id: string; previous: string }>(
      this.db,
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

  async jobsByIds(ids: readonly string[]): Promise<JobRow[]> {
    if (ids.length === 0) return [];
    return this.read(() => this.reads.jobsByIds.execute({ ids: [...ids] }));
  }

  async projectsByIds(ids: readonly string[]): Promise<ProjectRow[]> {
    if (ids.length === 0) return [];
    return this.read(() => this.reads.projectsByIds.execute({ ids: [...ids] }));
  }

  async projectsOf(providerIds: readonly string[]): Promise<ProjectRow[]> {
    if (providerIds.length === 0) return [];
    return this.read(() =>
      this.db
        .select()
        .from(t.projects)
        .where(inArray(t.projects.providerId, [...providerIds]))
        .orderBy(t.projects.providerId, t.projects.name, t.projects.id)
        .execute(),
    );
  }

  /**
   * Up to `limit + 1` jobs in `order` (ties by id) strictly after `cursor`, or, going backward,
   * the `limit + 1` strictly before it (nearest first), each with its order key (for its cursor).
   * Keyset-paged in one statement, so deep pages cost the same as the first, for any number of jobs.
   */
  /**
   * jobsPage of a plain filter (preparedFilterShape) in a statement prepared once per shape; with
   * `syncsOf`, these providers' job-list records come beside the page (read in the same
   * statement, so the page and the records are one snapshot). null for any other filter or order.
   */
  private async preparedPage<C extends JobPageColumns>(
    syncsOf: readonly string[] | null,
    filter: JobFilter,
    limit: number,
    cursor: JobCursor | null,
    ascending: boolean,
    order: JobOrder,
    columns: C,
  ): Promise<{ rows: JobPageRow<C>[]; syncs: ProviderSyncRow[] | null } | null> {
    const shape = preparedFilterShape(filter);
    if (shape === null || !orderKeyIsConstant(order)) return null;
    const cursorKey = cursor ? preparedCursorKey(order, cursor.key) : null;
    const name = `page|${shape}|${order.by}|${ascending ? 'asc' : 'desc'}|${cursor ? (cursorKey === null ? 'null' : 'key') : ''}|${syncsOf ? 'syncs' : ''}|${columns}`;
    let query = this.state.jobQueries.get(name);
    if (!query) {
      const cond = preparedFilterConditions(filter);
      const key = orderKeySql(order);
      if (cursor) {
        const at = cursorKey === null ? cursorKeySql(order, null) : preparedCursorKeySql(order);
        cond.push(sql`(${key}, ${t.jobs.id}) ${sql.raw(ascending ? '>' : '<')} (${at}, ${sql.placeholder('cursorId')})`);
      }
      const syncs = sql<ProviderSyncJson[]>`(select coalesce(json_agg(json_build_object('providerId', ps.provider_id, 'dataset', ps.dataset,
          'syncedAt', ps.synced_at, 'attemptedAt', ps.attempted_at, 'errorCode', ps.error_code, 'errorMessage', ps.error_message)), '[]'::json)
        from provider_syncs ps where ps.provider_id = any(${ids('syncProviderIds')}) and ps.dataset = 'jobs')`;
      // The page comes back as one JSON array (with the list records beside it): a row per job
      // cost postgres.js a parse per column (25 of them, seven instants), more than the page's
      // SQL; JSON.parse and one mapping per job cost less than half of it (issue 22). Each job
      // is an array of its values (JOB_ARRAY): keys and ISO instants were most of the rest.
      const page = this.shortReads
        .select({ ...getTableColumns(t.jobs), orderKey: sql<unknown>`${key}`.as('order_key') })
        .from(t.jobs)
        .where(cond.length ? and(...cond) : undefined)
        .orderBy(...(ascending ? [sql`${key} asc`, asc(t.jobs.id)] : [sql`${key} desc`, desc(t.jobs.id)]))
        .limit(sql.placeholder('limit') as never)
        .as('p');
      const dir = sql.raw(ascending ? 'asc' : 'desc');
      // On its own small client (Database.shortReads): pages of many users go out pipelined.
      query = this.shortReads
        .select({
          rows: sql<unknown>`coalesce(json_agg(${columns === 'list' ? JOB_LIST_ARRAY : JOB_ARRAY} order by p.order_key ${dir}, p.id ${dir}), '[]'::json)`.as(
            'rows',
          ),
          ...(syncsOf ? { listSyncs: syncs.as('list_syncs') } : {}),
        })
        .from(page)
        .prepare(name.replace(/\W+/g, '_')) as unknown as PreparedJobQuery;
      this.state.jobQueries.set(name, query);
    }
    const values = {
      ...preparedFilterValues(filter),
      limit: limit + 1,
      ...(cursor ? { cursorKey: cursorKey ?? undefined, cursorId: cursor.id } : {}),
      ...(syncsOf ? { syncProviderIds: [...syncsOf] } : {}),
    };
    const [result] = (await this.read(() => query!.execute(values))) as { rows: unknown; listSyncs?: ProviderSyncJson[] | string }[];
    const json = jsonValue<unknown[][]>(result!.rows);
    const ofArray = columns === 'list' ? jobListRowOfArray : jobRowOfArray;
    const keyAt = columns === 'list' ? JOB_LIST_COLUMNS.length : JOB_COLUMNS.length;
    const rows = json.map((a) => {
      const row = ofArray(a);
      // CREATED orders by sort_at, which the row holds already as a Date (no second parse of its text).
      row.orderKey = cursorKeyOf(order, order.by === 'CREATED' ? row.sortAt : a[keyAt]);
      return row as JobPageRow<C>;
    });
    // As before the page came as one value: no list records with an empty page.
    const listed = rows.length > 0 ? result!.listSyncs : undefined;
    const syncs = syncsOf && listed !== undefined ? jsonValue<ProviderSyncJson[]>(listed).map(syncRowOf) : null;
    return { rows, syncs };
  }

  /**
   * jobsPage together with the job-list records of `providerIds` (one statement), for a plain
   * filter; syncs is null when the page is empty. null for other filters (read them apart).
   */
  async jobsPageWithListSyncs<C extends JobPageColumns = 'all'>(
    providerIds: readonly string[],
    filter: JobFilter,
    limit: number,
    cursor: JobCursor | null,
    direction: 'forward' | 'backward' = 'forward',
    order: JobOrder = DEFAULT_JOB_ORDER,
    columns: C = 'all' as C,
  ): Promise<{ rows: JobPageRow<C>[]; syncs: ProviderSyncRow[] | null } | null> {
    const ascending = (order.direction === 'ASC') !== (direction === 'backward');
    return this.preparedPage(providerIds, filter, limit, cursor, ascending, order, columns);
  }

  /** `columns: 'list'` reads JOB_LIST_FIELDS where a prepared statement can (whole rows otherwise). */
  async jobsPage<C extends JobPageColumns = 'all'>(
    filter: JobFilter,
    limit: number,
    cursor: JobCursor | null,
    direction: 'forward' | 'backward' = 'forward',
    order: JobOrder = DEFAULT_JOB_ORDER,
    columns: C = 'all' as C,
  ): Promise<JobPageRow<C>[]> {
    const ascending = (order.direction === 'ASC') !== (direction === 'backward');
    const prepared = await this.preparedPage(null, filter, limit, cursor, ascending, order, columns);
    if (prepared) return prepared.rows;
    const cond = jobFilterConditions(filter);
    const key = orderKeySql(order);
    if (cursor) {
      cond.push(sql`(${key}, ${t.jobs.id}) ${sql.raw(ascending ? '>' : '<')} (${cursorKeySql(order, cursor.key)}, ${cursor.id})`);
    }
    const rows = await this.read(() =>
      this.db
        .select({ ...getTableColumns(t.jobs), orderKey: sql<unknown>`${key}`.as('order_key') })
        .from(t.jobs)
        .where(cond.length ? and(...cond) : undefined)
        .orderBy(...(ascending ? [sql`${key} asc`, asc(t.jobs.id)] : [sql`${key} desc`, desc(t.jobs.id)]))
        .limit(limit + 1)
        .execute(),
    );
    return rows.map(({ orderKey, ...job }) => ({ ...job, orderKey: cursorKeyOf(order, orderKey) }));
  }

  async jobsCount(filter: JobFilter): Promise<number> {
    const shape = preparedFilterShape(filter);
    if (shape !== null) {
      const name = `count|${shape}`;
      let query = this.state.jobQueries.get(name);
      if (!query) {
        const cond = preparedFilterConditions(filter);
        query = this.db
          .select({ n: sql<number>`count(*)::int` })
          .from(t.jobs)
          .where(cond.length ? and(...cond) : undefined)
          .prepare(name.replace(/\W+/g, '_')) as unknown as PreparedJobQuery;
        this.state.jobQueries.set(name, query);
      }
      const [row] = await this.read(() => query.execute(preparedFilterValues(filter)));
      return Number(row?.n ?? 0);
    }
    const cond = jobFilterConditions(filter);
    const [row] = await this.read(() =>
      this.db
        .select({ n: sql<number>`count(*)::int` })
        .from(t.jobs)
        .where(cond.length ? and(...cond) : undefined)
        .execute(),
    );
    return Number(row?.n ?? 0);
  }

  // ---- topology -----------------------------------------------------------------------------

  /** Replaces the nodes and GPUs of the given jobs (three statements for any number of jobs). */
  async writeTopology(providerId: string, entries: { job: JobRow; nodes: NodeRecord[] }[], at: Date) {
    if (entries.length === 0) return;
    // In job order: two writers of overlapping jobs lock their rows in the same order.
    entries = [...entries].sort((a, b) => (a.job.id < b.job.id ? -1 : a.job.id > b.job.id ? 1 : 0));
    const nodeRows: { id: string; job_id: string; external_id: string; name: string; ord: number }[] = [];
    const gpuRows: { id: string; job_id: string; node_id: string; idx: number; model: string | null; mem: number | null }[] = [];
    const totals: { id: string; gpu_count: number }[] = [];
    for (const { job, nodes } of entries) {
      let total = 0;
      nodes.forEach((n, ord) => {
        const nodeId = nodeGlobalId(providerId, job.externalId, n.externalId);
        nodeRows.push({ id: nodeId, job_id: job.id, external_id: n.externalId, name: n.name, ord });
        for (const g of n.gpus) {
          total++;
          gpuRows.push({
            id: gpuGlobalId(providerId, job.externalId, n.externalId, g.index),
            job_id: job.id,
            node_id: nodeId,
            idx: g.index,
            model: g.model,
            mem: g.memoryTotalBytes,
          });
        }
      });
      totals.push({ id: job.id, gpu_count: total });
      this.state.shapes.learnTopology(
        job.id,
        nodes.length,
        total,
        nodes.reduce((m, n) => Math.max(m, n.gpus.length), 0),
      );
    }
    const jobIds = entries.map((e) => e.job.id);
    // Nodes that vanished upstream (a rescheduled pod) are dropped; their series stay, keyed by job.
    await this.db.execute(sql`delete from nodes where job_id = any(${textArray(jobIds)})
      and not (id = any(${textArray(nodeRows.map((n) => n.id))}))`);
    await this.db.execute(sql`delete from gpus where job_id = any(${textArray(jobIds)})
      and not (id = any(${textArray(gpuRows.map((g) => g.id))}))`);
    if (nodeRows.length) {
      await this.db.execute(sql`
        insert into nodes (id, job_id, external_id, name, ord)
        select * from jsonb_to_recordset(${JSON.stringify(nodeRows)}::jsonb) as x(id text, job_id text, external_id text, name text, ord int)
        on conflict (id) do update set name = excluded.name, ord = excluded.ord`);
    }
    for (const part of chunks(gpuRows, 10_000)) {
      await this.db.execute(sql`
        insert into gpus (id, job_id, node_id, idx, model, memory_total_bytes)
        select * from jsonb_to_recordset(${JSON.stringify(part)}::jsonb)
          as x(id text, job_id text, node_id text, idx int, model text, mem float8)
        on conflict (id) do update set model = excluded.model, memory_total_bytes = excluded.memory_total_bytes`);
    }
    await this.db.execute(sql`
      update jobs set topology_fetched_at = ${at.toISOString()}::timestamptz,
        gpu_count = case when x.gpu_count > 0 then x.gpu_count else jobs.gpu_count end
      from jsonb_to_recordset(${JSON.stringify(totals)}::jsonb) as x(id text, gpu_count int)
      where jobs.id = x.id`);
  }

  async nodesOfJobs(jobIds: readonly string[]): Promise<NodeRow[]> {
    if (jobIds.length === 0) return [];
    return this.read(() => this.reads.nodesOfJobs.execute({ ids: [...jobIds] }));
  }

  async nodesByIds(ids: readonly string[]): Promise<NodeRow[]> {
    if (ids.length === 0) return [];
    return this.read(() =>
      this.db
        .select()
        .from(t.nodes)
        .where(inArray(t.nodes.id, [...ids]))
        .execute(),
    );
  }

  async gpusOfJobs(jobIds: readonly string[]): Promise<GpuRow[]> {
    if (jobIds.length === 0) return [];
    return this.read(() => this.reads.gpusOfJobs.execute({ ids: [...jobIds] }));
  }

  async gpusByIds(ids: readonly string[]): Promise<GpuRow[]> {
    if (ids.length === 0) return [];
    return this.read(() =>
      this.db
        .select()
        .from(t.gpus)
        .where(inArray(t.gpus.id, [...ids]))
        .execute(),
    );
  }

  // ---- series and points --------------------------------------------------------------------

  /**
   * Upserts series and their points: one statement for the series, one merge for the points.
   * Points are idempotent (keyed by series and time/step), so replaying a fetch changes nothing.
   */
  async writeSeries(providerId: string, entries: { job: JobRow; series: SeriesData[] }[]) {
    const ids = await this.writeSeriesRows(providerId, entries);
    await this.writePoints(pointBatch(providerId, entries, ids).batch);
  }

  /**
   * Upserts the series themselves (not their points), SERIES_PER_STATEMENT per statement; returns
   * their ids by series key. An entry's `identities`, where given, are its series' seriesIdentity in
   * their order (worked out already as the fetch arrived).
   */
  async writeSeriesRows(
    providerId: string,
    entries: { job: JobRow; series: SeriesData[]; identities?: readonly SeriesIdentity[] }[],
  ): Promise<Map<string, number>> {
    const seriesRows = new Map<string, Record<string, unknown>>();
    for (const { job, series, identities } of entries) {
      const system = series.filter((s) => s.kind === 'system').length;
      if (system > 0) this.state.shapes.learnSeries(job.id, 'systemSeries', system);
      if (system < series.length) this.state.shapes.learnSeries(job.id, 'trainingSeries', series.length - system);
      for (let i = 0; i < series.length; i++) {
        const s = series[i]!;
        const { key, nodeId, gpuId } = identities?.[i] ?? seriesIdentity(providerId, job, s);
        seriesRows.set(key, {
          series_key: key,
          job_id: job.id,
          node_id: nodeId,
          gpu_id: gpuId,
          kind: s.kind,
          name: s.name,
          raw_name: s.rawName,
          unit: s.unit,
          scope: s.scope,
          source: s.source,
          stage: s.stage,
          keyed_by: s.keyedBy,
          meta: s.meta,
        });
      }
    }
    const ids = new Map<string, number>();
    // In key order: two writers of overlapping series lock their rows in the same order.
    const ordered = [...seriesRows.values()].sort((a, b) => ((a.series_key as string) < (b.series_key as string) ? -1 : 1));
    for (const part of chunks(ordered, SERIES_PER_STATEMENT)) {
      const rows = await rowsOf<{ id: number; series_key: string }>(
        this.db,
        sql`
        insert into series (series_key, job_id, node_id, gpu_id, kind, name, raw_name, unit, scope, source, stage, keyed_by, meta)
        select * from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as x(series_key text, job_id text, node_id text,
          gpu_id text, kind text, name text, raw_name text, unit text, scope text, source text, stage text, keyed_by text, meta jsonb)
        on conflict (series_key) do update set raw_name = excluded.raw_name, unit = excluded.unit, scope = excluded.scope,
          meta = excluded.meta
        returning id::float8 as id, series_key`,
      );
      for (const r of rows) ids.set(r.series_key, Number(r.id));
    }
    return ids;
  }

  /**
   * Where a job's platform gives no start (its creation stands in), the first metric point the
   * cache holds is a closer one: startedAt becomes the earliest stored point of the job at or after
   * its creation (FIRST_METRIC), and moves earlier when an earlier point is stored. One statement.
   */
  async startFromFirstPoints(jobIds: readonly string[]): Promise<void> {
    if (jobIds.length === 0) return;
    await this.db.execute(sql`
      update jobs set started_at = f.first_at, started_at_source = 'FIRST_METRIC'
      from (select s.job_id, min(fp.ts) as first_at
            from series s
            cross join lateral (select p.ts from points p where p.series_id = s.id and p.ts is not null order by p.key limit 1) fp
            where s.job_id = any(array(select jsonb_array_elements_text(${JSON.stringify(jobIds)}::jsonb)))
            group by s.job_id) f
      where jobs.id = f.job_id
        and (jobs.started_at_source = 'CREATION' or (jobs.started_at_source = 'FIRST_METRIC' and f.first_at < jobs.started_at))
        and (jobs.created_at is null or f.first_at >= jobs.created_at)`);
  }

  /**
   * Bulk point upsert: COPY into a per-connection staging table, then one merge into `points`
   * (bench: the jsonb decode + upsert ran at 0.40x of COPY). Points the caller expects to be new
   * (a series never fetched before) are copied straight into `points` under a savepoint, and fall
   * back to the merge when one already exists (another replica got there first). Runs in the
   * caller's transaction, or in its own. Drivers without COPY use the jsonb upsert.
   */
  async writePoints(points: PointBatch | readonly PointWriteRow[], opts: { expectNew?: boolean } = {}): Promise<void> {
    const rows = Array.isArray(points) ? pointBatchOfRows(points as readonly PointWriteRow[]) : (points as PointBatch);
    await this.writePointBatches([rows], opts);
  }

  /** writePoints of several batches (of distinct series) in one COPY: a fetch's batch is built as it arrives. */
  async writePointBatches(batches: readonly PointBatch[], opts: { expectNew?: boolean } = {}): Promise<void> {
    const withPoints = batches.filter((b) => b.length > 0);
    if (withPoints.length === 0) return;
    const copier = copierOf(this.db);
    if (!copier) {
      for (const part of chunks(withPoints.flatMap(rowsOfBatch), POINTS_PER_STATEMENT)) await this.upsertPointsJson(part);
      await this.rollUp(withPoints);
      return;
    }
    if (!this.inTransaction) return this.transaction((repo) => repo.writePointBatches(withPoints, opts));
    if (opts.expectNew) {
      try {
        await this.db.transaction((tx) => copierOf(tx as unknown as Db)!('points', withPoints));
        await this.rollUp(withPoints);
        return;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
    }
    await this.db.execute(sql`create temp table if not exists points_stage
      (series_id bigint, key bigint, ts timestamptz, step int, value float8) on commit delete rows`);
    await copier('points_stage', withPoints);
    await this.db.execute(sql`insert into points (series_id, key, ts, step, value)
      select series_id, key, ts, step, value from points_stage
      on conflict (series_id, key) do update set ts = excluded.ts, step = excluded.step, value = excluded.value`);
    await this.db.execute(sql`truncate points_stage`);
    await this.rollUp(withPoints);
  }

  /**
   * Keeps the 1-minute and 1-hour rollups of the hours a write touched, in the write's transaction
   * and one statement whatever the batch: each touched hour of a time-keyed series is read back
   * from `points` once (one index range) and both rollups' rows of it are recomputed and upserted.
   * Recomputing instead of adding the batch's sums makes a re-write of the same points change
   * nothing, a changed value replace its old one, and each sum the raw points' own, in key order
   * (sum / n is their avg to the last digit). Its price is reading back the rest of each touched
   * hour: a collector's write of the last minute re-reads up to an hour of that series
   * (docs/history.md has the measured cost). Step-keyed series (training metrics) have no time
   * buckets: the join on `series` leaves them out.
   */
  private async rollUp(batches: readonly PointBatch[]): Promise<void> {
    const touched: number[][] = [];
    for (const b of batches) {
      for (const run of b.runs) {
        let last = Number.NaN;
        for (let i = run.start; i < run.end; i++) {
          const hour = bucketOf(b.key[i]!, HOUR_MS);
          if (hour !== last) touched.push([run.seriesId, (last = hour)]);
        }
      }
    }
    await this.db.execute(sql`
      with h as materialized (
        select distinct (r->>0)::bigint as series_id, (r->>1)::bigint as hour
        from jsonb_array_elements(${JSON.stringify(touched)}::jsonb) as r
      ), p as materialized (
        select h.series_id, h.hour, x.key - ((x.key % 60000) + 60000) % 60000 as minute, x.key, x.value
        from h join series s on s.id = h.series_id and s.keyed_by = 'time'
        cross join lateral (select pt.key, pt.value from points pt
          where pt.series_id = h.series_id and pt.key >= h.hour and pt.key < h.hour + 3600000 order by pt.key) x
      ), m as (
        insert into points_1m (series_id, bucket, n, min, max, sum, last)
        select series_id, minute, ${ROLLUP_AGGREGATES} from p group by series_id, minute
        on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last
      )
      insert into points_1h (series_id, bucket, n, min, max, sum, last)
      select series_id, hour, ${ROLLUP_AGGREGATES} from p group by series_id, hour
      on conflict (series_id, bucket) do update set n = excluded.n, min = excluded.min, max = excluded.max, sum = excluded.sum, last = excluded.last`);
  }

  /**
   * Retention of raw points, one batch: the points before `before` (epoch ms) of the next `batch`
   * time-keyed series of a provider that have any (ids above `after`, in id order) are deleted, and those series
   * that lost any remember the cut (`raw_before`, never moved back). One statement, its own
   * transaction: each batch is a few index ranges of the primary key (series, key < before), so
   * no statement scans the table or holds its row locks for long, and vacuum can reclaim a batch's
   * rows while the next runs. The rollups are kept (they were kept on write). Returns the last
   * series id of the batch (null: no series left) and the points deleted.
   */
  async dropRawPointsBatch(providerId: string, before: number, after: number, batch: number): Promise<{ last: number | null; deleted: number }> {
    const [row] = await rowsOf<{ last: number | string | null; deleted: number | string }>(
      this.db,
      sql`
      with s as materialized (
        -- Series with raw points before the cut: one index probe each for the rest (a finished
        -- job's series, dropped long ago, costs that and no statement of its own).
        select s.id from series s join jobs j on j.id = s.job_id
        where j.provider_id = ${providerId} and s.keyed_by = 'time' and s.id > ${after}
          and exists (select 1 from points x where x.series_id = s.id and x.key < ${before})
        order by s.id limit ${batch}
      ), d as (
        delete from points p using s where p.series_id = s.id and p.key < ${before} returning p.series_id
      ), u as (
        update series set raw_before = greatest(coalesce(raw_before, ${before}), ${before})
        where id in (select distinct series_id from d) returning 1
      )
      select (select max(id) from s)::float8 as last, (select count(*) from d)::float8 as deleted, (select count(*) from u) as marked`,
    );
    return { last: row?.last == null ? null : Number(row.last), deleted: Number(row?.deleted ?? 0) };
  }

  /**
   * Autoanalyze's part where nothing else plays it. PGlite has no autovacuum, so its planner never
   * learns how many points and series there are and plans the warm reads for empty tables (the
   * fleet statement re-ran a per-series aggregate 640 times). Called after a points write
   * commits: once the points written since the last ANALYZE pass autovacuum's own rule (50 rows
   * plus 10% of the table), with a floor of ANALYZE_AFTER_POINTS so that small writes never pay
   * for it, `analyze points, series` runs. It is maintenance, as autovacuum is on PostgreSQL (where
   * this does nothing): sent on PGlite's own client, outside drizzle, so it is not one of the
   * statements a request's work is counted in (test/store/batching.test.ts).
   */
  async maintainStatistics(pointsWritten: number): Promise<boolean> {
    const client = embeddedClientOf(this.db);
    if (!client || this.inTransaction) return false;
    this.state.pointsSinceAnalyze += pointsWritten;
    const due = Math.max(ANALYZE_AFTER_POINTS, 50 + 0.1 * this.state.pointsAtAnalyze);
    if (this.state.pointsSinceAnalyze < due) return false;
    this.state.pointsSinceAnalyze = 0;
    await client.query('analyze points, series');
    const counted = (await client.query(`select reltuples::float8 as n from pg_class where relname = 'points'`)) as { rows: { n: number }[] };
    this.state.pointsAtAnalyze = Math.max(0, counted.rows[0]?.n ?? 0);
    return true;
  }

  private async upsertPointsJson(part: readonly PointWriteRow[]) {
    await this.db.execute(sql`
      insert into points (series_id, key, ts, step, value)
      select (r->>0)::bigint, (r->>1)::bigint, to_timestamp((r->>2)::float8 / 1000), (r->>3)::int, (r->>4)::float8
      from jsonb_array_elements(${JSON.stringify(part)}::jsonb) as r
      on conflict (series_id, key) do update set ts = excluded.ts, step = excluded.step, value = excluded.value`);
  }

  async seriesOfJobs(jobIds: readonly string[], kind: 'system' | 'training'): Promise<SeriesRow[]> {
    if (jobIds.length === 0) return [];
    return this.read(() => this.reads.seriesOfJobs.execute({ ids: [...jobIds], kind }));
  }

  /**
   * Points of many series in one statement, each in its own window, downsampled in SQL to at most
   * `maxPoints` per series: a series with few enough points comes back raw, a larger one in
   * equal-width buckets of its key (time or step) aggregated by `aggregation`, each bucket
   * stamped with its first point.
   */
  async pointsOf(windows: readonly SeriesWindow[], maxPoints: number, aggregation: Aggregation): Promise<PointRow[]> {
    return (await this.pointsAt(windows, maxPoints, aggregation)).points;
  }

  /**
   * pointsOf, and the resolution each series was answered at: a long window of a time-keyed series
   * whose raw points are many (more than ROLLUP_ABOVE_POINTS and 10 x maxPoints, counted from the
   * 1-hour rollup) is read from a rollup instead of its raw points, as is a window reaching before
   * the series' raw points were dropped by retention, when the raw equal-width bucket would be half
   * a minute or more. The rollup is the 1-hour one when that bucket would be 30 minutes or more,
   * else the 1-minute one (HOURLY_FROM_MS); its buckets are answered
   * as stored when they number at most maxPoints (min, max, count, last and avg = sum / count equal
   * the raw points' to the last digit), else merged k at a time (avg = the sum of their sums / their
   * count). `resolutions` holds the bucket width in seconds of each series read from a rollup;
   * series read from raw points are absent. One statement, as before.
   */
  async pointsAt(
    windows: readonly SeriesWindow[],
    maxPoints: number,
    aggregation: Aggregation,
  ): Promise<{ points: PointRow[]; resolutions: Map<number, number> }> {
    if (windows.length === 0) return { points: [], resolutions: new Map() };
    const agg =
      aggregation === 'MIN'
        ? sql`min(pt.value)`
        : aggregation === 'MAX'
          ? sql`max(pt.value)`
          : aggregation === 'LAST'
            ? sql`(array_agg(pt.value order by pt.key desc))[1]`
            : sql`avg(pt.value)`;
    // The key range of each window comes from the primary-key index ends. Each series' first
    // maxPoints + 1 points in the window are then read once, in key order, into arrays: a series
    // with no more than maxPoints is answered from them as is (no count first and a second read of
    // the same points: a warm dashboard read each of its million points twice); a larger one is read
    // with one index range scan per bucket, so its points arrive in key order and nothing is sorted
    // or spilled (bench: 1M points, 0.99 s -> ~0.35 s). The per-series CTEs are materialised so
    // their subqueries run once per series, never per point. Each bucket aggregates a subquery
    // ordered by key (the index's order, no sort), so an average sums as downsampleHeld does
    // whatever plan the statistics choose: a bitmap scan reads in heap order, which merged points
    // leave unlike key order (test/store/bucket-order.test.ts). PostgreSQL keeps a lone
    // subquery's order into its aggregate; `avg(... order by key)` would sort each bucket again
    // (1M points: 0.23 -> 0.47 s on PostgreSQL 15; the subquery costs 3-4%).
    const inWindow = (a: string) => sql.raw(`(w.t_from is null or ${a}.ts >= w.t_from) and (w.t_to is null or ${a}.ts <= w.t_to)`);
    // One row per series with its points as arrays (instants as epoch ms): a dashboard reads about
    // a million points, and a row per point cost the drivers a row's parsing each (PGlite, whose
    // protocol is parsed in JavaScript, took 3.3x the hand-written floor over rows; postgres.js parses
    // each column of each row).
    const ragg =
      aggregation === 'MIN'
        ? sql`min(u.min)`
        : aggregation === 'MAX'
          ? sql`max(u.max)`
          : aggregation === 'LAST'
            ? sql`(array_agg(u.last order by u.bucket desc) filter (where u.n > 0))[1]`
            : sql`sum(u.sum order by u.bucket) / sum(u.n)`;
    const rollUpAbove = Math.max(ROLLUP_ABOVE_POINTS, 10 * maxPoints);
    const rows = await this.rows<{ series_id: number | string; ts: NumberArray; steps: NumberArray; vals: NumberArray; res: number | string | null }>(
      sql`
      with w as materialized (${windowsSql(windows)}),
      e as materialized (
        select w.*, e.lo, e.hi, e.rn, s.raw_before from w left join series s on s.id = w.series_id cross join lateral (
          select
            case when w.t_from is null and w.t_to is null
              then (select x.key from points x where x.series_id = w.series_id and x.key >= coalesce(w.k_from, ${MIN_KEY}) order by x.key limit 1)
              else (select min(x.key) from points x where x.series_id = w.series_id and ${inWindow('x')}) end as lo,
            case when w.t_from is null and w.t_to is null
              then (select x.key from points x where x.series_id = w.series_id and x.key <= coalesce(w.k_to, ${MAX_KEY}) order by x.key desc limit 1)
              else (select max(x.key) from points x where x.series_id = w.series_id and ${inWindow('x')}) end as hi,
            -- The samples of the window's hours, from the 1-hour rollup (what decides a rollup read).
            case when w.timed then (select coalesce(sum(h.n), 0) from points_1h h where h.series_id = w.series_id
              and h.bucket >= ${bucketSql('w.k_from', HOUR_MS)} and h.bucket <= coalesce(w.k_to, ${MAX_KEY})) else 0 end as rn
        ) e
        where e.lo is not null or e.rn > 0
      ), b as materialized (
        select e.*, coalesce(e.timed and e.rn > 0 and (e.raw_before > coalesce(e.k_from, ${MIN_KEY})
          or (e.rn > ${rollUpAbove} and (e.hi - e.lo + 1)::float8 / ${maxPoints} >= ${MINUTE_MS / 2})), false) as rolled
        from e
      ), firsts as materialized (
        select w.*, greatest(1, ceil((w.hi - w.lo + 1)::float8 / ${maxPoints}))::bigint as width, f.n, f.ts, f.steps, f.vals
        from b as w cross join lateral (
          select count(*) as n, ${pointArrays('r', 'r.key')}
          from (select pt.key, pt.ts, pt.step, pt.value from points pt
            where pt.series_id = w.series_id and pt.key between w.lo and w.hi and ${inWindow('pt')}
            order by pt.key limit ${maxPoints + 1}) r
        ) f
        where not w.rolled
      ), bucketed as (
        select w.series_id, w.lo + g * w.width as k, x.ts, x.step, x.value
        from firsts as w
        cross join lateral generate_series(0, ((w.hi - w.lo) / w.width)::int) as g
        cross join lateral (
          select min(pt.ts) as ts, min(pt.step) as step, ${agg}::float8 as value, count(*) as c from (
            select pt.key, pt.ts, pt.step, pt.value from points pt
            where pt.series_id = w.series_id and pt.key >= w.lo + g * w.width and pt.key < w.lo + (g + 1) * w.width and ${inWindow('pt')}
            order by pt.key
          ) pt
        ) x
        where w.n > ${maxPoints} and x.c > 0
      ), ends as materialized (
        -- A rolled window's extent: its raw points', or where raw points were dropped before the
        -- window's start, from its first 1-minute bucket; the rollup (r, ms) by the raw bucket width.
        select v.series_id, v.lo, v.hi, case when (v.hi - v.lo + 1)::float8 / ${maxPoints} >= ${HOURLY_FROM_MS} then ${HOUR_MS} else ${MINUTE_MS} end::bigint as r
        from (
          select b.series_id,
            case when b.lo is null or b.raw_before > coalesce(b.k_from, ${MIN_KEY})
              then (select m.bucket from points_1m m where m.series_id = b.series_id and m.bucket >= ${bucketSql('b.k_from', MINUTE_MS)} order by m.bucket limit 1)
              else b.lo end as lo,
            coalesce(b.hi, (select m.bucket from points_1m m where m.series_id = b.series_id and m.bucket <= coalesce(b.k_to, ${MAX_KEY}) order by m.bucket desc limit 1)) as hi
          from b where b.rolled
        ) v
        where v.lo is not null
      ), rw as materialized (
        -- Buckets of width r x k from the window's first r-bucket: k the fewest that give at most maxPoints.
        select x.*, x.r * greatest(1, ceil((x.hi_r - x.base + x.r)::float8 / (x.r * ${maxPoints})))::bigint as width
        from (select ends.series_id, ends.r, ${bucketSql('ends.lo', 'ends.r')} as base, ${bucketSql('ends.hi', 'ends.r')} as hi_r from ends) x
      ), rolled as (
        select rw.series_id, rw.width, rw.base + v.i * rw.width as k, v.value
        from rw cross join lateral (
          select (u.bucket - rw.base) / rw.width as i, ${ragg}::float8 as value
          from (
            select m.bucket, m.n, m.min, m.max, m.sum, m.last from points_1m m
              where rw.r = ${MINUTE_MS} and m.series_id = rw.series_id and m.bucket between rw.base and rw.hi_r
            union all
            select h.bucket, h.n, h.min, h.max, h.sum, h.last from points_1h h
              where rw.r = ${HOUR_MS} and h.series_id = rw.series_id and h.bucket between rw.base and rw.hi_r
          ) u
          group by 1
          having sum(u.n) > 0
        ) v
      )
      select series_id::float8 as series_id, ts, steps, vals, null::float8 as res from firsts where n between 1 and ${maxPoints}
      union all
      select series_id::float8, ${pointArrays('bucketed', 'k')}, null::float8
      from bucketed
      group by series_id
      union all
      select series_id::float8, array_agg(k::float8 order by k), array_agg(null::int order by k), array_agg(value order by k), max(width) / 1000.0::float8
      from rolled
      group by series_id
      order by series_id`,
    );
    // The series of a job share their instants: one Date per instant in an answer.
    const dates = new Map<number, Date>();
    const out: PointRow[] = [];
    const resolutions = new Map<number, number>();
    for (const r of rows) {
      const seriesId = Number(r.series_id);
      if (r.res !== null) resolutions.set(seriesId, Number(r.res));
      const ts = numbersOf(r.ts);
      const steps = numbersOf(r.steps);
      const vals = numbersOf(r.vals);
      for (let i = 0; i < ts.length; i++) {
        const ms = ts[i]!;
        let d: Date | null = null;
        if (ms !== null) {
          d = dates.get(ms) ?? null;
          if (d === null) dates.set(ms, (d = new Date(ms)));
        }
        out.push({ seriesId, timestamp: d, step: steps[i]!, value: vals[i]! });
      }
    }
    return { points: out, resolutions };
  }

  /**
   * Statistics of many series over their own windows, in one statement. The average sums in key
   * order, as summarizeHeld does: a float sum depends on its order, and in scan order two reads of
   * the same points could differ in the last digit whenever the plan changed (and a warm answer
   * from the one given before the write).
   */
  async summariesOf(windows: readonly SeriesWindow[]): Promise<SummaryRow[]> {
    if (windows.length === 0) return [];
    const rows = await this.rows<Record<string, unknown>>(
      sql`
      with w as (${windowsSql(windows)})
      select w.idx, count(pt.value)::int as count, min(pt.value) as min, max(pt.value) as max, avg(pt.value order by pt.key)::float8 as avg,
        (array_agg(pt.value order by pt.key desc) filter (where pt.value is not null))[1] as last, min(pt.ts) as first_at, max(pt.ts) as last_at
      from w join points pt on pt.series_id = w.series_id
        and (w.k_from is null or pt.key >= w.k_from) and (w.k_to is null or pt.key <= w.k_to)
        and (w.t_from is null or pt.ts >= w.t_from) and (w.t_to is null or pt.ts <= w.t_to)
      group by w.idx`,
    );
    return rows.map((r) => ({
      seriesId: windows[Number(r.idx)]!.seriesId,
      index: Number(r.idx),
      count: Number(r.count),
      min: r.min === null ? null : Number(r.min),
      max: r.max === null ? null : Number(r.max),
      avg: r.avg === null ? null : Number(r.avg),
      last: r.last === null ? null : Number(r.last),
      firstAt: toDate(r.first_at),
      lastAt: toDate(r.last_at),
    }));
  }

  // ---- fetch bookkeeping --------------------------------------------------------------------

  async fetchesOf(jobIds: readonly string[], datasets: readonly string[]): Promise<FetchRow[]> {
    if (jobIds.length === 0 || datasets.length === 0) return [];
    return this.read(() => this.reads.fetchesOf.execute({ ids: [...jobIds], datasets: [...datasets] }));
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
  async recordFetches(rows: Omit<FetchRow, 'id'>[]) {
    if (rows.length === 0) return;
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
    await this.db.execute(sql`
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
      )
      insert into fetches (job_id, dataset, range_from, range_to, fetched_at, step_seconds, final)
      select job_id, dataset, range_from, range_to, fetched_at, step_seconds, final from e`);
  }

  // ---- collection ---------------------------------------------------------------------------

  /**
   * What a provider's collector keeps: its unfinished jobs, and its finished jobs not yet fetched
   * whole whose end is after `keptSince` (the platform's retention), oldest end first; and how
   * many finished jobs were lost to retention before they could be.
   */
  async collectionTargets(providerId: string, keptSince: Date | null): Promise<{ unfinished: JobRow[]; finished: JobRow[]; expired: number }> {
    const unfinished = await this.unfinishedJobsOf(providerId);
    const pending = sql`${t.jobs.providerId} = ${providerId} and ${t.jobs.status} not in ('PENDING', 'RUNNING')
      and not exists (select 1 from collected_jobs c where c.job_id = ${t.jobs.id})`;
    const kept = keptSince ? sql`coalesce(${t.jobs.finishedAt}, ${t.jobs.seenAt}) >= ${keptSince.toISOString()}::timestamptz` : sql`true`;
    const finished = await this.db
      .select()
      .from(t.jobs)
      .where(sql`${pending} and ${kept}`)
      .orderBy(sql`coalesce(${t.jobs.finishedAt}, ${t.jobs.seenAt}) asc`, asc(t.jobs.id));
    let expired = 0;
    if (keptSince) {
      const [row] = await rowsOf<{ n: number | string }>(
        this.db,
        sql`select count(*) as n from jobs where ${pending} and coalesce(${t.jobs.finishedAt}, ${t.jobs.seenAt}) < ${keptSince.toISOString()}::timestamptz`,
      );
      expired = Number(row?.n ?? 0);
    }
    return { unfinished, finished, expired };
  }

  /** Marks finished jobs as fetched whole: the collector leaves them alone from now on, across restarts. */
  async markCollected(jobIds: readonly string[], at: Date) {
    if (jobIds.length === 0) return;
    await this.db
      .insert(t.collectedJobs)
      .values(jobIds.map((jobId) => ({ jobId, completedAt: at })))
      .onConflictDoNothing();
  }

  /** Whether these jobs were fetched whole (markCollected). */
  async collectedOf(jobIds: readonly string[]): Promise<Set<string>> {
    if (jobIds.length === 0) return new Set();
    const rows = await this.db
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
  async tryLease(name: string, holder: string, now: Date, expiresAt: Date): Promise<boolean> {
    const rows = await rowsOf<{ holder: string }>(
      this.db,
      sql`insert into collect_leases (name, holder, expires_at) values (${name}, ${holder}, ${expiresAt.toISOString()}::timestamptz)
          on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
          where collect_leases.holder = excluded.holder or collect_leases.expires_at < ${now.toISOString()}::timestamptz
          returning holder`,
    );
    return rows.length > 0;
  }

  async releaseLease(name: string, holder: string) {
    await this.db.execute(sql`delete from collect_leases where name = ${name} and holder = ${holder}`);
  }

  async fetchErrorsOf(jobIds: readonly string[], datasets: readonly string[]): Promise<FetchErrorRow[]> {
    if (jobIds.length === 0 || datasets.length === 0) return [];
    return this.read(() =>
      this.db
        .select()
        .from(t.fetchErrors)
        .where(and(inArray(t.fetchErrors.jobId, [...jobIds]), inArray(t.fetchErrors.dataset, [...datasets])))
        .execute(),
    );
  }

  async recordFetchErrors(rows: FetchErrorRow[]) {
    if (rows.length === 0) return;
    await this.db
      .insert(t.fetchErrors)
      .values(rows)
      .onConflictDoUpdate({
        target: [t.fetchErrors.jobId, t.fetchErrors.dataset],
        set: { failedAt: sql`excluded.failed_at`, code: sql`excluded.code`, message: sql`excluded.message` },
      });
  }

  async clearFetchErrors(keys: { jobId: string; dataset: string }[]) {
    if (keys.length === 0) return;
    await this.db.execute(sql`
      delete from fetch_errors e using jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) as x("jobId" text, dataset text)
      where e.job_id = x."jobId" and e.dataset = x.dataset`);
  }

  // ---- progress -----------------------------------------------------------------------------

  async progressOf(jobIds: readonly string[]): Promise<ProgressRow[]> {
    if (jobIds.length === 0) return [];
    return this.read(() =>
      this.db
        .select()
        .from(t.progress)
        .where(inArray(t.progress.jobId, [...jobIds]))
        .execute(),
    );
  }

  async writeProgress(rows: ProgressRow[]) {
    if (rows.length === 0) return;
    await this.db
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
}

/**
 * Series per statement, reading or writing: the series rows one upsert writes (writeSeriesRows),
 * and the series windows one points or summary read takes (store/loaders.ts batches them). Either
 * travels as one JSON parameter, so no parameter limit applies; the bound only caps one
 * statement's input (20,000 series rows: about 7 MB of JSON). DataLoader's batch of 1,000 keys
 * made a dashboard of 500 jobs x 4 GPUs (2,000 series) a statement more per loader than one of 50
 * jobs; upserts of 5,000 rows made a cold request for 500 jobs of 2 nodes x 2 GPUs (14,000 series)
 * two statements more than one for 50 jobs.
 */
export const SERIES_PER_STATEMENT = 20_000;

/** A series' identity in the cache: its key (series_key) and the global ids of its node and GPU. */
export interface SeriesIdentity {
  key: string;
  nodeId: string | null;
  gpuId: string | null;
}

export function seriesIdentity(providerId: string, job: Pick<JobRow, 'id' | 'externalId'>, s: SeriesData): SeriesIdentity {
  const nodeId = s.nodeExternalId ? nodeGlobalId(providerId, job.externalId, s.nodeExternalId) : null;
  const gpuId = s.nodeExternalId && s.gpuIndex !== null ? gpuGlobalId(providerId, job.externalId, s.nodeExternalId, s.gpuIndex) : null;
  return { key: seriesKey(job.id, s, nodeId, gpuId), nodeId, gpuId };
}

/** A point as it is written: `ts` in epoch milliseconds. */
export type PointWriteRow = [seriesId: number, key: number, ts: number | null, step: number | null, value: number | null];

/** Big-endian 8-byte floats (what float8send writes), in hex, as numbers. */
function float8s(hex: string | null): Float64Array {
  if (!hex) return new Float64Array(0);
  const bytes = Buffer.from(hex, 'hex');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float64Array(bytes.byteLength / 8);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(i * 8);
  return out;
}

/**
 * The points in key order. string_agg keeps its ordered subquery's order (PostgreSQL does, though
 * SQL does not promise it; an ORDER BY inside the aggregate would sort every series again): checked
 * here in one pass, and sorted in the rare case it is not so.
 */
function inKeyOrder(ts: Float64Array, values: Float64Array): { ts: Float64Array; values: Float64Array } {
  let sorted = true;
  for (let i = 1; i < ts.length && sorted; i++) sorted = ts[i - 1]! <= ts[i]!;
  if (sorted) return { ts, values };
  const order = Array.from(ts.keys()).sort((a, b) => ts[a]! - ts[b]!);
  return { ts: Float64Array.from(order, (i) => ts[i]!), values: Float64Array.from(order, (i) => values[i]!) };
}

/** A batch's rows one by one (the jsonb upsert of drivers without COPY). */
function rowsOfBatch(b: PointBatch): PointWriteRow[] {
  const out: PointWriteRow[] = [];
  const num = (x: number) => (Number.isNaN(x) ? null : x);
  for (const run of b.runs) for (let i = run.start; i < run.end; i++) out.push([run.seriesId, b.key[i]!, num(b.ts[i]!), num(b.step[i]!), num(b.value[i]!)]);
  return out;
}

/**
 * The points of fetched series as one batch of columns: each series' points in one run, sorted by
 * key, one per key (a later point of the same key wins, across the entries too); points without
 * a key (no time, or no step for a step-keyed series) are left out. Points come in key order
 * almost always: only a series whose keys do not rise is sorted. No object per point: a cold
 * dashboard's batch holds millions, and the answer is shaped from these runs while they are written.
 */
export function pointBatch(
  providerId: string,
  entries: { job: JobRow; series: SeriesData[] }[],
  ids: ReadonlyMap<string, number>,
): { batch: PointBatch; runs: Map<number, PointRun> } {
  const { batch, runs } = pointBatchByKey(providerId, entries);
  return { batch, runs: withSeriesIds(runs, ids) };
}

/**
 * Gives a batch's runs (by series key, from pointBatchByKey) their series ids, by series key
 * (writeSeriesRows' answer); returns them by id.
 */
export function withSeriesIds(runs: ReadonlyMap<string, PointRun>, ids: ReadonlyMap<string, number>): Map<number, PointRun> {
  const byId = new Map<number, PointRun>();
  for (const [key, run] of runs) {
    const id = ids.get(key);
    if (id === undefined) throw new DomainError('INTERNAL', `no series row for ${key}`);
    run.seriesId = id;
    byId.set(id, run);
  }
  return byId;
}

/**
 * pointBatch before the series have ids: the runs by series key, each with seriesId 0 until
 * withSeriesIds. What a fetch's points need of the cache's answer is only their series' ids, so
 * the batch can be built as the fetch arrives, while the others are awaited.
 */
export function pointBatchByKey(
  providerId: string,
  entries: { job: JobRow; series: SeriesData[] }[],
): { batch: PointBatch; runs: Map<string, PointRun>; identities: SeriesIdentity[] } {
  const parts = new Map<string, { c: PointColumns; byStep: boolean }[]>();
  // Each series' identity, in the entries' order: writeSeriesRows and the caller need them too.
  const identities: SeriesIdentity[] = [];
  let total = 0;
  for (const { job, series } of entries) {
    for (const s of series) {
      const identity = seriesIdentity(providerId, job, s);
      identities.push(identity);
      const key = identity.key;
      const c = columnsOf(s);
      total += c.length;
      const list = parts.get(key);
      if (list) list.push({ c, byStep: s.keyedBy === 'step' });
      else parts.set(key, [{ c, byStep: s.keyedBy === 'step' }]);
    }
  }
  const key = new Float64Array(total);
  const ts = new Float64Array(total);
  const step = new Float64Array(total);
  const value = new Float64Array(total);
  const runs = new Map<string, PointRun>();
  let n = 0;
  const put = (c: PointColumns, i: number, k: number) => {
    key[n] = k;
    ts[n] = c.ts[i]!;
    step[n] = c.step ? c.step[i]! : Number.NaN;
    value[n] = c.value[i]!;
    n++;
  };
  for (const [identity, list] of parts) {
    const start = n;
    let rising = list.length === 1;
    if (rising) {
      const { c, byStep } = list[0]!;
      const keys = byStep ? c.step : c.ts;
      let last = -Infinity;
      for (let i = 0; keys && i < c.length; i++) {
        const k = keys[i]!;
        if (Number.isNaN(k)) continue;
        if (k <= last) {
          rising = false;
          n = start;
          break;
        }
        last = k;
        put(c, i, k);
      }
    }
    if (!rising) {
      // Every keyed point in arrival order, sorted by key (stable): the last of equal keys wins.
      const order: { k: number; c: PointColumns; i: number }[] = [];
      for (const { c, byStep } of list) {
        const keys = byStep ? c.step : c.ts;
        for (let i = 0; keys && i < c.length; i++) if (!Number.isNaN(keys[i]!)) order.push({ k: keys[i]!, c, i });
      }
      order.sort((x, y) => x.k - y.k);
      for (let j = 0; j < order.length; j++) {
        const o = order[j]!;
        if (j + 1 < order.length && order[j + 1]!.k === o.k) continue;
        put(o.c, o.i, o.k);
      }
    }
    runs.set(identity, { seriesId: 0, start, end: n });
  }
  const batch: PointBatch = {
    length: n,
    key: key.subarray(0, n),
    ts: ts.subarray(0, n),
    step: step.subarray(0, n),
    value: value.subarray(0, n),
    runs: [...runs.values()],
  };
  return { batch, runs, identities };
}

/** A series' points as columns: the adapter's own, or made from its SeriesPoints. */
export function columnsOf(s: SeriesData): PointColumns {
  if (s.columns) return s.columns;
  const n = s.points.length;
  const ts = new Float64Array(n);
  const step = new Float64Array(n);
  const value = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const p = s.points[i]!;
    ts[i] = p.timestamp ? p.timestamp.getTime() : Number.NaN;
    step[i] = p.step ?? Number.NaN;
    value[i] = p.value ?? Number.NaN;
  }
  return { length: n, ts, step, value };
}

/** Labels as the jobs table keeps them: one JSON object, key -> value (null for a bare tag). */
export function labelObject(labels: readonly JobLabel[]): Record<string, string | null> {
  return Object.fromEntries(labels.map((l) => [l.key, l.value]));
}
