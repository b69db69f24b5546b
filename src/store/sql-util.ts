// Small helpers for raw SQL that behaves the same on postgres.js and PGlite: array parameters
// travel as one JSON text parameter (drizzle would otherwise expand an array into a param list).
import { sql, type SQL } from 'drizzle-orm';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import type { Db } from './db.js';

export function textArray(values: readonly string[]): SQL {
  return sql`array(select jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;
}

export async function rowsOf<T>(db: Db, query: SQL): Promise<T[]> {
  const res = (await db.execute(query)) as unknown;
  return (Array.isArray(res) ? res : ((res as { rows: T[] }).rows ?? [])) as T[];
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

/** A point row as COPY takes it: [series_id, key, ts (epoch ms), step, value]. */
type CopyRow = readonly [number, number, number | null, number | null, number | null];

/** COPY's binary signature, flags and header extension length (PostgreSQL docs, "COPY", Binary Format). */
const BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** Binary timestamps count microseconds from 2000-01-01T00:00:00Z. */
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);
/** One row at most: its field count, series_id, key, ts (int8) and value (float8) with their lengths, step (int4) with its length. */
const MAX_ROW_BYTES = 2 + 4 * (4 + 8) + (4 + 4);

/**
 * COPY's binary format: numbers travel as the bytes Postgres stores, so neither side formats or
 * parses text (a float's shortest decimal and an ISO instant per point were most of the write's
 * CPU here, and timestamptz parsing most of Postgres'). Chunks of `per` rows; the trailer ends
 * the last one.
 */
function* copyBinary(rows: readonly CopyRow[], per = 5000): Generator<Buffer> {
  for (let i = 0; i === 0 || i < rows.length; i += per) {
    const last = i + per >= rows.length;
    const n = Math.min(per, rows.length - i);
    const buf = Buffer.allocUnsafe((i === 0 ? BINARY_HEADER.length : 0) + n * MAX_ROW_BYTES + (last ? 2 : 0));
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let o = 0;
    if (i === 0) o += BINARY_HEADER.copy(buf, 0);
    // An int8 as two 32-bit words (exact for every safe integer, negative ones in two's complement),
    // without a BigInt per value.
    const int8 = (v: number) => {
      const hi = Math.floor(v / 4294967296);
      view.setInt32(o, 8);
      view.setInt32(o + 4, hi);
      view.setUint32(o + 8, v - hi * 4294967296);
      o += 12;
    };
    const int4 = (v: number) => {
      view.setInt32(o, 4);
      view.setInt32(o + 4, v);
      o += 8;
    };
    const float8 = (v: number) => {
      view.setInt32(o, 8);
      view.setFloat64(o + 4, v);
      o += 12;
    };
    const nul = () => {
      view.setInt32(o, -1);
      o += 4;
    };
    for (let j = i; j < i + n; j++) {
      const r = rows[j]!;
      view.setInt16(o, 5);
      o += 2;
      int8(r[0]);
      int8(r[1]);
      if (r[2] === null) nul();
      else int8((r[2] - PG_EPOCH_MS) * 1000);
      if (r[3] === null) nul();
      else int4(r[3]);
      if (r[4] === null) nul();
      else float8(r[4]);
    }
    if (last) {
      view.setInt16(o, -1);
      o += 2;
    }
    yield buf.subarray(0, o);
  }
}

/**
 * COPY FROM STDIN of point rows into a table, on the connection (or transaction) `db` runs on:
 * postgres.js streams them, PGlite reads them as one blob. null: the driver has no COPY.
 * Counted as one statement, like every other.
 */
export function copierOf(db: Db): ((table: 'points' | 'points_stage', rows: readonly CopyRow[]) => Promise<void>) | null {
  const session = (db as unknown as { session?: { client?: any; logger?: { logQuery(q: string, p: unknown[]): void } } }).session;
  const client = session?.client;
  if (!client) return null;
  const statement = (table: string, from: string) => `copy ${table} (series_id, key, ts, step, value) from ${from} with (format binary)`;
  if (typeof client.unsafe === 'function') {
    return async (table, rows) => {
      session!.logger?.logQuery(statement(table, 'stdin'), []);
      const stream = (await client.unsafe(statement(table, 'stdin')).writable()) as Writable;
      await pipeline(Readable.from(copyBinary(rows)), stream);
    };
  }
  if (typeof client.query === 'function') {
    return async (table, rows) => {
      session!.logger?.logQuery(statement(table, "'/dev/blob'"), []);
      await client.query(statement(table, "'/dev/blob'"), [], { blob: new Blob([...copyBinary(rows, 50_000)] as unknown as BlobPart[]) });
    };
  }
  return null;
}

/** Postgres' unique_violation (23505), as postgres.js and PGlite report it. */
export function isUniqueViolation(err: unknown): boolean {
  for (let e: any = err; e; e = e.cause) if (e.code === '23505') return true;
  return false;
}
