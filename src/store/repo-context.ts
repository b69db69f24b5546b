// What every dataset module of the repository (repo-*.ts) works through: one database handle's
// view (db, the operation it reads for, whether it is inside a transaction), the statements
// prepared once per handle, and the transaction that runs again when Postgres ends it as a
// deadlock victim. Repository (repository.ts) is the facade over these modules.
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { RequestScope } from '../domain/request-scope.js';
import { issueReadFor, type Db } from './db.js';
import { JobShapes } from './job-shapes.js';
import { isTransactionConflict, readRowsFor } from './sql-util.js';
import * as t from './tables.js';

/** Runs of a write transaction Postgres ends as a deadlock victim before its error is the caller's. */
const TRANSACTION_ATTEMPTS = 3;

/** A placeholder for a text[] parameter: one parameter whatever the number of ids (both drivers bind a JS array). */
export const ids = (name: string) => sql`${sql.placeholder(name)}::text[]`;

/**
 * The reads every warm request makes (a job list's sync check and page, a job page's topology,
 * series and fetch records), built once per database handle and sent as prepared statements: the
 * SQL is not rebuilt by drizzle's query builder per request, and on PostgreSQL the statement is
 * parsed once per connection and answered in one round trip (an unprepared statement with
 * parameters costs postgres.js a Describe round trip first). Id lists bind as one text[], so the
 * statement is the same for any number of ids.
 */
function readBuilders(db: Db) {
  return {
    providerSyncs: () =>
      db
        .select()
        .from(t.providerSyncs)
        .where(and(sql`${t.providerSyncs.providerId} = any(${ids('ids')})`, eq(t.providerSyncs.dataset, sql.placeholder('dataset'))))
        .prepare('provider_syncs'),
    jobsByIds: () =>
      db
        .select()
        .from(t.jobs)
        .where(sql`${t.jobs.id} = any(${ids('ids')})`)
        .prepare('jobs_by_ids'),
    knownJobIds: () =>
      db
        .select({ id: t.jobs.id })
        .from(t.jobs)
        .where(sql`${t.jobs.id} = any(${ids('ids')})`)
        .prepare('known_job_ids'),
    projectsByIds: () =>
      db
        .select()
        .from(t.projects)
        .where(sql`${t.projects.id} = any(${ids('ids')})`)
        .prepare('projects_by_ids'),
    nodesOfJobs: () =>
      db
        .select()
        .from(t.nodes)
        .where(sql`${t.nodes.jobId} = any(${ids('ids')})`)
        .orderBy(t.nodes.jobId, t.nodes.ord)
        .prepare('nodes_of_jobs'),
    gpusOfJobs: () =>
      db
        .select()
        .from(t.gpus)
        .where(sql`${t.gpus.jobId} = any(${ids('ids')})`)
        .orderBy(t.gpus.nodeId, t.gpus.idx)
        .prepare('gpus_of_jobs'),
    seriesOfJobs: () =>
      db
        .select()
        .from(t.series)
        .where(and(sql`${t.series.jobId} = any(${ids('ids')})`, eq(t.series.kind, sql.placeholder('kind'))))
        .orderBy(t.series.jobId, t.series.name, t.series.nodeId, t.series.gpuId, t.series.id)
        .prepare('series_of_jobs'),
    fetchesOf: () =>
      db
        .select()
        .from(t.fetches)
        .where(and(sql`${t.fetches.jobId} = any(${ids('ids')})`, sql`${t.fetches.dataset} = any(${ids('datasets')})`))
        .orderBy(desc(t.fetches.fetchedAt))
        .prepare('fetches_of'),
  };
}

type ReadBuilders = ReturnType<typeof readBuilders>;
export type PreparedReads = { readonly [K in keyof ReadBuilders]: ReturnType<ReadBuilders[K]> };

/**
 * Each read prepared on first use: a transaction's view has a handle of its own (its statements
 * prepared for its connection), and the one read it makes (a write's fetch records) built all
 * eight with drizzle's query builder each time: 104 ms a minute of the collector's server at
 * 1,000 jobs (docs/collection.md).
 */
function preparedReads(db: Db): PreparedReads {
  const build = readBuilders(db);
  const made: Partial<Record<keyof ReadBuilders, unknown>> = {};
  const reads = {} as PreparedReads;
  for (const name of Object.keys(build) as (keyof ReadBuilders)[]) {
    Object.defineProperty(reads, name, { enumerable: true, get: () => (made[name] ??= build[name]()) });
  }
  return reads;
}

export type PreparedJobQuery = { execute(values: Record<string, unknown>): Promise<Record<string, unknown>[]> };

/** Series rows this process remembered at most (SeriesRows); past it the oldest are forgotten, and written again when next fetched. */
const SERIES_ROWS_REMEMBERED = 200_000;

/**
 * The series rows this process knows are stored as it would write them: by series key, the row's
 * id and what an upsert of it would update (raw name, unit, scope, meta). A series row is never
 * deleted (retention drops its points and rollups, not the row), so an id once committed stays
 * the series'; writeSeriesRows sends only the rows it does not know or that changed. The
 * collector's every group wrote its 200-odd series rows again each sweep (a JSON parameter, 200
 * rows returned, a new row version each): docs/collection.md. Remembered only once committed
 * (RepoContext.transaction), so a rolled-back insert is never taken for a stored row.
 */
export class SeriesRows {
  private readonly rows = new Map<string, { id: number; sig: string }>();

  /** The id of the series stored with this signature (seriesRowSig), or undefined when unknown or different. */
  idOf(key: string, sig: string): number | undefined {
    const row = this.rows.get(key);
    return row && row.sig === sig ? row.id : undefined;
  }

  remember(key: string, id: number, sig: string): void {
    this.rows.delete(key);
    this.rows.set(key, { id, sig });
    if (this.rows.size > SERIES_ROWS_REMEMBERED)
      for (const oldest of this.rows.keys()) if (this.rows.delete(oldest) && this.rows.size <= SERIES_ROWS_REMEMBERED) break;
  }

  get size(): number {
    return this.rows.size;
  }
}

/**
 * What each provider's job list was when this process last wrote it whole (a list sync), once
 * committed: the signature of what the sync's upserts set, the time it was seen aside. A sync that
 * finds the same list asks the database to touch it instead (repo-jobs.ts, touchListedCatalog):
 * Runicorn's list sync wrote the same jobs every 2 s in eight statements (docs/collection.md).
 * Only a hint: the touch itself checks that the rows are stored as the write would leave them.
 */
export class ListedCatalogs {
  private readonly sigs = new Map<string, string>();

  matches(providerId: string, sig: string): boolean {
    return this.sigs.get(providerId) === sig;
  }

  remember(providerId: string, sig: string): void {
    this.sigs.set(providerId, sig);
  }

  forget(providerId: string): void {
    this.sigs.delete(providerId);
  }
}

/** What every view of one database handle shares (Repository.within): statements prepared once, PGlite's statistics bookkeeping. */
export class HandleState {
  constructor(
    /** The jobs' sizes the query-cost estimate reads (job-shapes.ts); a transaction's view shares them. */
    readonly shapes = new JobShapes(),
    /** The series rows known stored (SeriesRows); a transaction's view shares them. */
    readonly seriesRows = new SeriesRows(),
    /** The job lists known written whole (ListedCatalogs); a transaction's view shares them. */
    readonly listedCatalogs = new ListedCatalogs(),
    /** In a transaction's view: what to do once it commits (run by RepoContext.transaction); null outside one. */
    readonly afterCommit: (() => void)[] | null = null,
  ) {}
  prepared: PreparedReads | null = null;
  /** Job pages and counts of the plain filter shapes (preparedFilterShape), prepared once per shape. */
  readonly jobQueries = new Map<string, PreparedJobQuery>();
  /** Points written since the planner's statistics were last refreshed, and the table's rows then (PGlite only). */
  pointsSinceAnalyze = 0;
  pointsAtAnalyze = 0;
}

/** A view of one database handle, for one operation (within) or inside one transaction. */
export class RepoContext {
  constructor(
    readonly db: Db,
    readonly inTransaction = false,
    readonly state = new HandleState(),
    /** The operation this view reads for (within): its reads are cancelled when it is abandoned. */
    readonly scope?: RequestScope,
    /** Where a job list's page is read (Database.shortReads); in a transaction, the transaction. */
    readonly shortReads: Db = db,
  ) {}

  /** The same view reading for `scope` (undefined: the shared handle, background work). */
  within(scope: RequestScope | undefined): RepoContext {
    if (scope === this.scope) return this;
    return new RepoContext(this.db, this.inTransaction, this.state, scope, this.shortReads);
  }

  /** Issues a read for this view's operation; `issue` must call `.execute()` (store/db.ts, issueReadFor). */
  read<T>(issue: () => Promise<T>): Promise<T> {
    return issueReadFor(this.scope, issue);
  }

  /** A raw read's rows, issued for this view's operation. */
  rows<T>(query: SQL): Promise<T[]> {
    return readRowsFor<T>(this.scope, this.db, query);
  }

  /** rows, as a prepared statement (sql-util.ts, rowsOfPrepared): for a read planned longer than it runs. */
  preparedRows<T>(query: SQL): Promise<T[]> {
    return readRowsFor<T>(this.scope, this.db, query, true);
  }

  /** The rows of `table` whose `column` is one of `values` (none for no values), read for this view's operation. */
  async whereIn<T extends PgTable>(table: T, column: PgColumn, values: readonly string[]): Promise<T['$inferSelect'][]> {
    if (values.length === 0) return [];
    return this.read(() =>
      this.db
        .select()
        .from(table as PgTable)
        .where(inArray(column, [...values]))
        .execute(),
    ) as Promise<T['$inferSelect'][]>;
  }

  /** Runs `done` once what this view wrote is committed: at once outside a transaction. */
  onCommit(done: () => void): void {
    if (this.inTransaction && this.state.afterCommit) this.state.afterCommit.push(done);
    else done();
  }

  get reads(): PreparedReads {
    return (this.state.prepared ??= preparedReads(this.db));
  }

  /**
   * Runs writes that belong together in one transaction: a batch's points and the record that
   * they were fetched commit together or not at all, so a crash or a lost connection mid-write
   * never leaves a range marked as fetched with its points missing.
   */
  async transaction<T>(work: (ctx: RepoContext) => Promise<T>): Promise<T> {
    const run = async () => {
      const afterCommit: (() => void)[] = [];
      const out = await this.db.transaction((tx) =>
        work(new RepoContext(tx as unknown as Db, true, new HandleState(this.state.shapes, this.state.seriesRows, this.state.listedCatalogs, afterCommit))),
      );
      // A nested transaction (a savepoint) commits with the outer one.
      if (this.inTransaction) this.state.afterCommit?.push(...afterCommit);
      else for (const done of afterCommit) done();
      return out;
    };
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
}
