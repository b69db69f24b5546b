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

/** A point row as COPY takes it: [series_id, key, ts, step, value]. */
type CopyRow = readonly [number, number, string | null, number | null, number | null];

/** COPY's text format: tab-separated, \\N for null; numbers and ISO times need no escaping. */
function* copyText(rows: readonly CopyRow[], per = 5000): Generator<string> {
  for (let i = 0; i < rows.length; i += per) {
    let text = '';
    for (const r of rows.slice(i, i + per)) {
      text += `${r[0]}\t${r[1]}\t${r[2] ?? '\\N'}\t${r[3] ?? '\\N'}\t${r[4] ?? '\\N'}\n`;
    }
    yield text;
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
  const statement = (table: string, from: string) => `copy ${table} (series_id, key, ts, step, value) from ${from}`;
  if (typeof client.unsafe === 'function') {
    return async (table, rows) => {
      session!.logger?.logQuery(statement(table, 'stdin'), []);
      const stream = (await client.unsafe(statement(table, 'stdin')).writable()) as Writable;
      await pipeline(Readable.from(copyText(rows)), stream);
    };
  }
  if (typeof client.query === 'function') {
    return async (table, rows) => {
      session!.logger?.logQuery(statement(table, "'/dev/blob'"), []);
      await client.query(statement(table, "'/dev/blob'"), [], { blob: new Blob([...copyText(rows, 50_000)]) });
    };
  }
  return null;
}

/** Postgres' unique_violation (23505), as postgres.js and PGlite report it. */
export function isUniqueViolation(err: unknown): boolean {
  for (let e: any = err; e; e = e.cause) if (e.code === '23505') return true;
  return false;
}
