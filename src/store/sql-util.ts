// Small helpers for raw SQL that behaves the same on postgres.js and PGlite: array parameters
// travel as one JSON text parameter (drizzle would otherwise expand an array into a param list).
import { sql, type SQL } from 'drizzle-orm';
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
