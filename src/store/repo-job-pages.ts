// The providers, their job-list records, and job pages and counts: keyset-paged in one statement
// each, the plain filter shapes prepared once per database handle (Repository's job lists).
import { and, asc, desc, eq, getTableColumns, inArray, sql } from 'drizzle-orm';
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
import { ids, type PreparedJobQuery, type RepoContext } from './repo-context.js';
import {
  JOB_LIST_FIELDS,
  type JobPageColumns,
  type JobPageQuery,
  type JobPageRow,
  type OrderedJobListRow,
  type OrderedJobRow,
  type ProviderSyncRow,
} from './repo-types.js';
import { toDate } from './sql-util.js';
import * as t from './tables.js';

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

/** Orders whose key is a column expression without values (DURATION binds an instant, SUMMARY a metric name). */
function orderKeyIsConstant(order: JobOrder): boolean {
  return order.by === 'CREATED' || order.by === 'NAME' || order.by === 'STARTED' || order.by === 'ACCELERATOR_COUNT';
}

export async function upsertProviders(ctx: RepoContext, rows: { id: string; kind: string; name: string; simulated: boolean }[]) {
  if (rows.length === 0) return;
  await ctx.db
    .insert(t.providers)
    .values(rows.map((r) => ({ ...r, updatedAt: new Date() })))
    .onConflictDoUpdate({
      target: t.providers.id,
      set: { kind: sql`excluded.kind`, name: sql`excluded.name`, simulated: sql`excluded.simulated`, updatedAt: sql`excluded.updated_at` },
    });
}

export async function providerSyncs(ctx: RepoContext, providerIds: readonly string[], dataset: string): Promise<ProviderSyncRow[]> {
  if (providerIds.length === 0) return [];
  return ctx.read(() => ctx.reads.providerSyncs.execute({ ids: [...providerIds], dataset }));
}

/**
 * Makes the next read of these providers' job lists sync, whatever the TTL says: the demo's
 * simulators are new at every start (their running runs too), so the list a previous process
 * cached describes another fleet.
 */
export async function expireJobLists(ctx: RepoContext, providerIds: readonly string[]) {
  if (providerIds.length === 0) return;
  await ctx.db
    .update(t.providerSyncs)
    .set({ syncedAt: null })
    .where(and(inArray(t.providerSyncs.providerId, [...providerIds]), eq(t.providerSyncs.dataset, 'jobs')));
}

export async function recordProviderSync(ctx: RepoContext, row: ProviderSyncRow) {
  await ctx.db
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

/** A job page as read: its query with the defaults applied, its direction as the SQL order's. */
interface PageRead<C extends JobPageColumns> {
  filter: JobFilter;
  limit: number;
  cursor: JobCursor | null;
  ascending: boolean;
  order: JobOrder;
  columns: C;
}

function pageRead<C extends JobPageColumns>(q: JobPageQuery<C>): PageRead<C> {
  const order = q.order ?? DEFAULT_JOB_ORDER;
  const ascending = (order.direction === 'ASC') !== ((q.direction ?? 'forward') === 'backward');
  return { filter: q.filter, limit: q.limit, cursor: q.cursor, ascending, order, columns: q.columns ?? ('all' as C) };
}

/**
 * jobsPage of a plain filter (preparedFilterShape) in a statement prepared once per shape; with
 * `syncsOf`, these providers' job-list records come beside the page (read in the same
 * statement, so the page and the records are one snapshot). null for any other filter or order.
 */
async function preparedPage<C extends JobPageColumns>(
  ctx: RepoContext,
  syncsOf: readonly string[] | null,
  { filter, limit, cursor, ascending, order, columns }: PageRead<C>,
): Promise<{ rows: JobPageRow<C>[]; syncs: ProviderSyncRow[] | null } | null> {
  const shape = preparedFilterShape(filter);
  if (shape === null || !orderKeyIsConstant(order)) return null;
  const cursorKey = cursor ? preparedCursorKey(order, cursor.key) : null;
  const name = `page|${shape}|${order.by}|${ascending ? 'asc' : 'desc'}|${cursor ? (cursorKey === null ? 'null' : 'key') : ''}|${syncsOf ? 'syncs' : ''}|${columns}`;
  let query = ctx.state.jobQueries.get(name);
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
    const page = ctx.shortReads
      .select({ ...getTableColumns(t.jobs), orderKey: sql<unknown>`${key}`.as('order_key') })
      .from(t.jobs)
      .where(cond.length ? and(...cond) : undefined)
      .orderBy(...(ascending ? [sql`${key} asc`, asc(t.jobs.id)] : [sql`${key} desc`, desc(t.jobs.id)]))
      .limit(sql.placeholder('limit') as never)
      .as('p');
    const dir = sql.raw(ascending ? 'asc' : 'desc');
    // On its own small client (Database.shortReads): pages of many users go out pipelined.
    query = ctx.shortReads
      .select({
        rows: sql<unknown>`coalesce(json_agg(${columns === 'list' ? JOB_LIST_ARRAY : JOB_ARRAY} order by p.order_key ${dir}, p.id ${dir}), '[]'::json)`.as(
          'rows',
        ),
        ...(syncsOf ? { listSyncs: syncs.as('list_syncs') } : {}),
      })
      .from(page)
      .prepare(name.replace(/\W+/g, '_')) as unknown as PreparedJobQuery;
    ctx.state.jobQueries.set(name, query);
  }
  const values = {
    ...preparedFilterValues(filter),
    limit: limit + 1,
    ...(cursor ? { cursorKey: cursorKey ?? undefined, cursorId: cursor.id } : {}),
    ...(syncsOf ? { syncProviderIds: [...syncsOf] } : {}),
  };
  const [result] = (await ctx.read(() => query!.execute(values))) as { rows: unknown; listSyncs?: ProviderSyncJson[] | string }[];
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
export async function jobsPageWithListSyncs<C extends JobPageColumns = 'all'>(
  ctx: RepoContext,
  providerIds: readonly string[],
  q: JobPageQuery<C>,
): Promise<{ rows: JobPageRow<C>[]; syncs: ProviderSyncRow[] | null } | null> {
  return preparedPage(ctx, providerIds, pageRead(q));
}

/** `columns: 'list'` reads JOB_LIST_FIELDS where a prepared statement can (whole rows otherwise). */
export async function jobsPage<C extends JobPageColumns = 'all'>(ctx: RepoContext, q: JobPageQuery<C>): Promise<JobPageRow<C>[]> {
  const read = pageRead(q);
  const prepared = await preparedPage(ctx, null, read);
  if (prepared) return prepared.rows;
  const { filter, limit, cursor, ascending, order } = read;
  const cond = jobFilterConditions(filter);
  const key = orderKeySql(order);
  if (cursor) {
    cond.push(sql`(${key}, ${t.jobs.id}) ${sql.raw(ascending ? '>' : '<')} (${cursorKeySql(order, cursor.key)}, ${cursor.id})`);
  }
  const rows = await ctx.read(() =>
    ctx.db
      .select({ ...getTableColumns(t.jobs), orderKey: sql<unknown>`${key}`.as('order_key') })
      .from(t.jobs)
      .where(cond.length ? and(...cond) : undefined)
      .orderBy(...(ascending ? [sql`${key} asc`, asc(t.jobs.id)] : [sql`${key} desc`, desc(t.jobs.id)]))
      .limit(limit + 1)
      .execute(),
  );
  return rows.map(({ orderKey, ...job }) => ({ ...job, orderKey: cursorKeyOf(order, orderKey) }));
}

export async function jobsCount(ctx: RepoContext, filter: JobFilter): Promise<number> {
  const shape = preparedFilterShape(filter);
  if (shape !== null) {
    const name = `count|${shape}`;
    let query = ctx.state.jobQueries.get(name);
    if (!query) {
      const cond = preparedFilterConditions(filter);
      query = ctx.db
        .select({ n: sql<number>`count(*)::int` })
        .from(t.jobs)
        .where(cond.length ? and(...cond) : undefined)
        .prepare(name.replace(/\W+/g, '_')) as unknown as PreparedJobQuery;
      ctx.state.jobQueries.set(name, query);
    }
    const [row] = await ctx.read(() => query.execute(preparedFilterValues(filter)));
    return Number(row?.n ?? 0);
  }
  const cond = jobFilterConditions(filter);
  const [row] = await ctx.read(() =>
    ctx.db
      .select({ n: sql<number>`count(*)::int` })
      .from(t.jobs)
      .where(cond.length ? and(...cond) : undefined)
      .execute(),
  );
  return Number(row?.n ?? 0);
}
