// Small helpers for raw SQL that behaves the same on postgres.js and PGlite: array parameters
// travel as one JSON text parameter (drizzle would otherwise expand an array into a param list).
import { sql, type SQL } from 'drizzle-orm';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import type { RequestScope } from '../domain/request-scope.js';
import { issueReadFor, type Db } from './db.js';

export function textArray(values: readonly string[]): SQL {
  return sql`array(select jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;
}

/**
 * Reads and deletes of a batch of series' rows by index ranges only (compaction and retention). `idsRows(table, key, ids, cut)`:
 * the rows of `table` (`points` by key, a rollup by bucket) of series `ids` (a JSON array) before
 * `cut`, one primary-key range a series; `rangeRowsWhere(table, key, ranges, lo, hi, also)`: a
 * condition on row `m` of `table` that holds for the rows of CTE `ranges` (series_id and the range
 * [lo, hi) of `key` as SQL over its row `d`, lo null for none, and `also` over row `x`), as `ctid = any(...)`
 * gathered by one range a row of `ranges`, so the delete fetches those rows by their ctid.
 * Planned as joins, both scanned the whole table each batch: the planner guessed 100 ids or
 * ranges (a function's rows, a CTE's) and hash-joined them to a sequential scan. With 8.6M points
 * in `points` a batch of 20 series spent 0.6 s reading its days and 1.2 s deleting them, where
 * their ranges take 0.1 s each; a first compaction after an upgrade, every batch scanning all of
 * history, grew with batches x history (bench:history's 50M build: 3,520 s on PostgreSQL).
 * `offset 0` keeps each lateral a subquery of its own, run per row with its range's index scan.
 * Compaction holds its table's lock, so no row moves under it. Retention does not: a row that a
 * concurrent write updates after the delete's snapshot has a new ctid, so it survives the batch
 * (hidden behind the series' cut all the same) and the next run deletes it.
 */
export function idsRows(table: string, key: string, ids: readonly number[], cut: number): SQL {
  return sql`jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) as ids(id) cross join lateral (
          select x.* from ${sql.raw(table)} x
          where x.series_id = ids.id::bigint and x.${sql.raw(key)} < ${cut} offset 0)`;
}

export function rangeRowsWhere(table: string, key: string, ranges: string, lo: SQL | null, hi: SQL, also: SQL = sql`true`): SQL {
  const from = lo === null ? sql`true` : sql`x.${sql.raw(key)} >= ${lo}`;
  return sql`m.ctid = any (array(select x.ctid from ${sql.raw(ranges)} d cross join lateral (
          select x.ctid from ${sql.raw(table)} x
          where x.series_id = d.series_id and ${from} and x.${sql.raw(key)} < ${hi} and ${also} offset 0) x))`;
}

export async function rowsOf<T>(db: Db, query: SQL): Promise<T[]> {
  // `.execute()`, not `await db.execute(query)`: the statement is issued now, not in a later
  // microtask, so a read issued for a request is known as its (store/db.ts, issueReadFor).
  return rowsIn<T>(await db.execute(query).execute());
}

/** The rows of a driver's result: postgres.js gives them as the result, PGlite under `rows`. */
function rowsIn<T>(res: unknown): T[] {
  return (Array.isArray(res) ? res : ((res as { rows: T[] }).rows ?? [])) as T[];
}

/** What rowsOfPrepared reaches on drizzle's handle: its session and dialect (public fields of PgDatabase and its transactions). */
interface PreparingDb {
  session: { prepareQuery(query: { sql: string; params: unknown[] }, fields: undefined, name: string, arrayMode: boolean): { execute(): Promise<unknown> } };
  dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
}

/**
 * rowsOf as a prepared statement, which PostgreSQL plans once per connection and text and may then
 * keep as a generic plan: on postgres.js a named one of the extended protocol; on PGlite, whose
 * query() has no statement names, an SQL `PREPARE` once per database and text and an `EXECUTE`
 * with the values as literals (embeddedPrepared). For a statement whose planning is most of its
 * cost, in one of a few texts (pointsAt's first: a 30-day read from the 1-hour rollup planned in
 * 5 ms and ran in 3; prepared, 19 -> 8 ms on PostgreSQL; on PGlite a 30-day read of 1,000 raw
 * points planned its two statements in 6.4 of its 16.5 ms). Invalidation is PostgreSQL's: a
 * partition created or dropped replans it.
 */
export async function rowsOfPrepared<T>(db: Db, query: SQL): Promise<T[]> {
  const d = db as unknown as PreparingDb;
  const q = d.dialect.sqlToQuery(query);
  const embedded = embeddedClientOf(db);
  if (embedded) {
    const execute = await embeddedPrepared(db, embedded, q);
    if (execute) return rowsIn<T>(await db.execute(sql.raw(execute)).execute());
  }
  return rowsIn<T>(await d.session.prepareQuery(q, undefined, 'prepared', false).execute());
}

/** The statements PREPAREd, or being PREPAREd, by the client that ran them (a PGlite, or one of its transactions): their names by text. */
const PREPARED = new WeakMap<object, Map<string, Promise<string>>>();

/**
 * The `EXECUTE` of `q` on PGlite, PREPAREd first where this database does not hold its text's
 * statement. Named by the text's hash, so a transaction's handle finds what the database
 * prepared: pg_prepared_statements is asked first. Two reads of one text at once share one
 * preparation. A PREPARE that finds the name taken (42P05: the database prepared it between the
 * check and the PREPARE, in a transaction of its own) counts as done; no transaction can be
 * open across that gap, as PGlite runs one at a time. Values are quoted literals, each taken by
 * the input function of its parameter's type, as the extended protocol's text values are. null
 * (the plain path) for a value with no such text here (an array, an object, bytes).
 */
async function embeddedPrepared(db: Db, client: object, q: { sql: string; params: unknown[] }): Promise<string | null> {
  const literals: string[] = [];
  for (const v of q.params) {
    if (v === null || v === undefined) literals.push('null');
    else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') literals.push(quoted(String(v)));
    else if (v instanceof Date) literals.push(quoted(v.toISOString()));
    else return null;
  }
  let known = PREPARED.get(client);
  if (!known) PREPARED.set(client, (known = new Map()));
  let ready = known.get(q.sql);
  if (!ready) {
    ready = (async () => {
      const name = `store_${createHash('sha1').update(q.sql).digest('hex').slice(0, 24)}`;
      const held = rowsIn(await db.execute(sql`select 1 from pg_prepared_statements where name = ${name}`).execute());
      if (held.length > 0) return name;
      try {
        await db.execute(sql.raw(`prepare ${name} as ${q.sql}`)).execute();
      } catch (err) {
        if (!hasCode(err, '42P05')) throw err;
      }
      return name;
    })();
    known.set(q.sql, ready);
    const forget = known;
    ready.catch(() => forget.delete(q.sql));
  }
  const name = await ready;
  return literals.length === 0 ? `execute ${name}` : `execute ${name}(${literals.join(', ')})`;
}

/** Whether `err` (or an error it wraps: drizzle wraps the driver's as `cause`) is one of PostgreSQL's `codes`, as postgres.js and PGlite report them. */
function hasCode(err: unknown, ...codes: string[]): boolean {
  for (let e: any = err; e; e = e.cause) if (codes.includes(e.code)) return true;
  return false;
}

/** A string literal (standard_conforming_strings is on: only the quote is doubled). */
const quoted = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** rowsOf issued for `scope`: its statement is cancelled if the operation is abandoned (db.ts, issueReadFor). */
export function readRowsFor<T>(scope: RequestScope | undefined, db: Db, query: SQL, prepared = false): Promise<T[]> {
  return issueReadFor(scope, () => (prepared ? rowsOfPrepared<T>(db, query) : rowsOf<T>(db, query)));
}

/** Splits a bulk write so one statement stays well under Postgres' parameter and memory limits. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function toDate(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  const d = new Date(v as string);
  return Number.isNaN(d.getTime()) ? null : d;
}

/**
 * Points to write, as columns: rows [start, end) of each run belong to its series. NaN stands for
 * null in ts, step and value (values are finite or null). No object per point from the adapter's
 * columns to COPY's bytes: a cold dashboard writes millions.
 */
export interface PointBatch {
  readonly length: number;
  readonly key: Float64Array;
  /** Epoch ms. */
  readonly ts: Float64Array;
  readonly step: Float64Array;
  readonly value: Float64Array;
  readonly runs: readonly PointRun[];
}

export interface PointRun {
  seriesId: number;
  start: number;
  end: number;
}

/** A point row: [series_id, key, ts (epoch ms), step, value]. */
export type PointRowTuple = readonly [number, number, number | null, number | null, number | null];

/** Rows as a batch (in their order; a run per stretch of one series). */
export function pointBatchOfRows(rows: readonly PointRowTuple[]): PointBatch {
  const n = rows.length;
  const key = new Float64Array(n);
  const ts = new Float64Array(n);
  const step = new Float64Array(n);
  const value = new Float64Array(n);
  const runs: PointRun[] = [];
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    const run = runs[runs.length - 1];
    if (run?.seriesId === r[0]) run.end = i + 1;
    else runs.push({ seriesId: r[0], start: i, end: i + 1 });
    key[i] = r[1];
    ts[i] = r[2] ?? Number.NaN;
    step[i] = r[3] ?? Number.NaN;
    value[i] = r[4] ?? Number.NaN;
  }
  return { length: n, key, ts, step, value, runs };
}

/** COPY's binary signature, flags and header extension length (PostgreSQL docs, "COPY", Binary Format). */
const BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** Binary timestamps count microseconds from 2000-01-01T00:00:00Z. */
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);
/** One row at most: its field count, series_id, key, ts (int8) and value (float8) with their lengths, step (int4) with its length. */
const MAX_ROW_BYTES = 2 + 4 * (4 + 8) + (4 + 4);

/**
 * One chunk of COPY's binary format being written: the header first in the first chunk, each
 * row its field count and then its fields (length-prefixed, -1 for null), the trailer last in
 * the last chunk. `bytes`: at most what the chunk's rows take.
 */
class BinaryChunk {
  private readonly buf: Buffer;
  private readonly view: DataView;
  private o = 0;
  constructor(
    bytes: number,
    first: boolean,
    private readonly last: boolean,
  ) {
    this.buf = Buffer.allocUnsafe((first ? BINARY_HEADER.length : 0) + bytes + (last ? 2 : 0));
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    if (first) this.o = BINARY_HEADER.copy(this.buf, 0);
  }
  row(fields: number): void {
    this.view.setInt16(this.o, fields);
    this.o += 2;
  }
  null(): void {
    this.view.setInt32(this.o, -1);
    this.o += 4;
  }
  /** An int8 as two 32-bit words (exact for every safe integer, negative ones in two's complement), without a BigInt per value. */
  int8(v: number): void {
    const hi = Math.floor(v / 4294967296);
    this.view.setInt32(this.o, 8);
    this.view.setInt32(this.o + 4, hi);
    this.view.setUint32(this.o + 8, v - hi * 4294967296);
    this.o += 12;
  }
  int4(v: number): void {
    this.view.setInt32(this.o, 4);
    this.view.setInt32(this.o + 4, v);
    this.o += 8;
  }
  /** NaN is null. */
  float8(v: number): void {
    if (Number.isNaN(v)) {
      this.null();
      return;
    }
    this.view.setInt32(this.o, 8);
    this.view.setFloat64(this.o + 4, v);
    this.o += 12;
  }
  bool(v: boolean): void {
    this.view.setInt32(this.o, 1);
    this.view.setUint8(this.o + 4, v ? 1 : 0);
    this.o += 5;
  }
  /** The chunk as written (with the trailer when it is the last). */
  done(): Buffer {
    if (this.last) {
      this.view.setInt16(this.o, -1);
      this.o += 2;
    }
    return this.buf.subarray(0, this.o);
  }
}

/**
 * COPY's binary format: numbers travel as the bytes Postgres stores, so neither side formats or
 * parses text (a float's shortest decimal and an ISO instant per point were most of the write's
 * CPU here, and timestamptz parsing most of Postgres'). The batches' runs in turn, in chunks of
 * about `per` rows; the trailer ends the last one.
 */
function* copyBinary(batches: readonly PointBatch[], per = 5000): Generator<Buffer> {
  // Every batch's runs in turn: [batch, run].
  const all = batches.flatMap((b) => b.runs.map((run) => [b, run] as const));
  let first = true;
  // Chunks of whole runs' slices: [run index, row] where the next chunk starts.
  let r = 0;
  let row = all[0]?.[1].start ?? 0;
  do {
    let n = 0;
    const slices: [PointBatch, number, number, number][] = [];
    while (r < all.length && n < per) {
      const [batch, run] = all[r]!;
      const take = Math.min(run.end - row, per - n);
      if (take > 0) slices.push([batch, run.seriesId, row, row + take]);
      n += take;
      row += take;
      if (row >= run.end) {
        r++;
        row = all[r]?.[1].start ?? 0;
      }
    }
    const out = new BinaryChunk(n * MAX_ROW_BYTES, first, r >= all.length);
    first = false;
    for (const [{ key, ts, step, value }, seriesId, from, to] of slices) {
      for (let j = from; j < to; j++) {
        out.row(5);
        out.int8(seriesId);
        out.int8(key[j]!);
        const t = ts[j]!;
        if (Number.isNaN(t)) out.null();
        else out.int8((t - PG_EPOCH_MS) * 1000);
        const st = step[j]!;
        if (Number.isNaN(st)) out.null();
        else out.int4(st);
        out.float8(value[j]!);
      }
    }
    yield out.done();
  } while (r < all.length);
}

/**
 * Rollup rows as columns (Repository.rollUp): buckets of series at 1 minute or 1 hour computed
 * from a batch in memory, or (`computed` 0, hours only) hours to recompute from `points`. NaN
 * stands for null in min, max, sum and last. No object per row: a batch of sparse samples has
 * two rows per point.
 */
export class RollupRows {
  length = 0;
  readonly computed: Uint8Array;
  readonly seriesId: Float64Array;
  readonly bucket: Float64Array;
  readonly n: Int32Array;
  readonly min: Float64Array;
  readonly max: Float64Array;
  readonly sum: Float64Array;
  readonly last: Float64Array;
  constructor(
    readonly hourly: boolean,
    capacity: number,
  ) {
    this.computed = new Uint8Array(capacity);
    this.seriesId = new Float64Array(capacity);
    this.bucket = new Float64Array(capacity);
    this.n = new Int32Array(capacity);
    this.min = new Float64Array(capacity);
    this.max = new Float64Array(capacity);
    this.sum = new Float64Array(capacity);
    this.last = new Float64Array(capacity);
  }
  /** Appends an empty bucket (n 0, nulls); returns its index. */
  open(seriesId: number, bucket: number): number {
    const i = this.length++;
    this.computed[i] = 1;
    this.seriesId[i] = seriesId;
    this.bucket[i] = bucket;
    this.n[i] = 0;
    this.min[i] = this.max[i] = this.sum[i] = this.last[i] = Number.NaN;
    return i;
  }
  /** Keeps, in place and in order, the rows `keep` says yes to. */
  retain(keep: (seriesId: number, bucket: number) => boolean): void {
    let kept = 0;
    for (let i = 0; i < this.length; i++) {
      if (!keep(this.seriesId[i]!, this.bucket[i]!)) continue;
      if (kept !== i) {
        for (const column of [this.computed, this.seriesId, this.bucket, this.n, this.min, this.max, this.sum, this.last]) column[kept] = column[i]!;
      }
      kept++;
    }
    this.length = kept;
  }
}

/** One rollup row at most: field count, two bools, two int8, an int4 and four float8 with their lengths. */
const MAX_ROLLUP_ROW_BYTES = 2 + 2 * (4 + 1) + 2 * (4 + 8) + (4 + 4) + 4 * (4 + 8);

/**
 * Rollup rows in COPY's binary format (the floats' own bytes: the sums stay exact), `per` rows a
 * chunk: with `computed` and `hourly` first where `staged` (rollup_stage), else a rollup table's row.
 */
function* copyRollupsBinary(parts: readonly RollupRows[], staged: boolean, per = 5000): Generator<Buffer> {
  const total = parts.reduce((n, p) => n + p.length, 0);
  let part = 0;
  let r = 0;
  let done = 0;
  do {
    const n = Math.min(per, total - done);
    const out = new BinaryChunk(n * MAX_ROLLUP_ROW_BYTES, done === 0, done + n >= total);
    for (let k = 0; k < n; k++, r++, done++) {
      while (r >= parts[part]!.length) {
        part++;
        r = 0;
      }
      const x = parts[part]!;
      if (staged) {
        out.row(9);
        out.bool(x.computed[r] === 1);
        out.bool(x.hourly);
      } else out.row(7);
      out.int8(x.seriesId[r]!);
      out.int8(x.bucket[r]!);
      out.int4(x.n[r]!);
      out.float8(x.min[r]!);
      out.float8(x.max[r]!);
      out.float8(x.sum[r]!);
      out.float8(x.last[r]!);
    }
    yield out.done();
  } while (done < total);
}

/**
 * A binary COPY FROM STDIN sender on the connection (or transaction) `db` runs on: postgres.js
 * streams the chunks, PGlite reads them as one blob. null: the driver has no COPY. Counted as one
 * statement, like every other.
 */
function copySenderOf(db: Db): ((target: string, chunks: (per: number) => Iterable<Buffer>) => Promise<void>) | null {
  const session = (db as unknown as { session?: { client?: any; logger?: { logQuery(q: string, p: unknown[]): void } } }).session;
  const client = session?.client;
  if (!client) return null;
  const statement = (target: string, from: string) => `copy ${target} from ${from} with (format binary)`;
  if (typeof client.unsafe === 'function') {
    return async (target, chunks) => {
      session!.logger?.logQuery(statement(target, 'stdin'), []);
      const stream = (await client.unsafe(statement(target, 'stdin')).writable()) as Writable;
      await pipeline(Readable.from(chunks(5000)), stream);
    };
  }
  if (typeof client.query === 'function') {
    return async (target, chunks) => {
      session!.logger?.logQuery(statement(target, "'/dev/blob'"), []);
      await client.query(statement(target, "'/dev/blob'"), [], { blob: new Blob([...chunks(50_000)] as unknown as BlobPart[]) });
    };
  }
  return null;
}

/** COPY of point rows into a table (binary, copyBinary). null: the driver has no COPY. */
export function copierOf(db: Db): ((table: 'points' | 'points_stage', batches: readonly PointBatch[]) => Promise<void>) | null {
  const send = copySenderOf(db);
  if (!send) return null;
  return (table, batches) => send(`${table} (series_id, key, ts, step, value)`, (per) => copyBinary(batches, per));
}

/**
 * COPY of rollup rows into the temp table rollup_stage (Repository.rollUp), or straight into a
 * rollup table (their `computed` and `hourly` left out). null: the driver has no COPY.
 */
export function rollupCopierOf(db: Db): ((table: 'rollup_stage' | 'points_1m' | 'points_1h', parts: readonly RollupRows[]) => Promise<void>) | null {
  const send = copySenderOf(db);
  if (!send) return null;
  return (table, parts) =>
    table === 'rollup_stage'
      ? send('rollup_stage (computed, hourly, series_id, bucket, n, min, max, sum, last)', (per) => copyRollupsBinary(parts, true, per))
      : send(`${table} (series_id, bucket, n, min, max, sum, last)`, (per) => copyRollupsBinary(parts, false, per));
}

/**
 * PGlite's own client, where `db` runs on PGlite (postgres.js has `unsafe`; PGlite only `query`);
 * null on PostgreSQL. Statements sent through it bypass drizzle and its statement log.
 */
export function embeddedClientOf(db: Db): { query(statement: string): Promise<unknown> } | null {
  const client = (db as unknown as { session?: { client?: { unsafe?: unknown; query?: unknown } } }).session?.client;
  return client && typeof client.unsafe !== 'function' && typeof client.query === 'function'
    ? (client as { query(statement: string): Promise<unknown> })
    : null;
}

/**
 * Postgres' deadlock_detected (40P01) or serialization_failure (40001): two transactions met over
 * the same rows and Postgres ended one of them; run again, it finds the other's rows committed.
 */
export function isTransactionConflict(err: unknown): boolean {
  return hasCode(err, '40P01', '40001');
}

/** Postgres' unique_violation (23505), as postgres.js and PGlite report it. */
export function isUniqueViolation(err: unknown): boolean {
  return hasCode(err, '23505');
}
