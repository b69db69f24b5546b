// Opens the cache database: embedded PGlite in a folder when no DATABASE_URL is given, a real
// Postgres through postgres.js otherwise. Both get the same drizzle schema and migrations.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import * as tables from './tables.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof tables>;

export interface Database {
  db: Db;
  driver: 'pglite' | 'postgres';
  /** Statements sent since open; tests and the benchmark read it to prove batching. */
  statementCount(): number;
  close(): Promise<void>;
}

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

export interface OpenOptions {
  databaseUrl?: string | null;
  /** A folder for PGlite's files, or 'memory://' for an in-memory database. */
  dataDir?: string;
  /** postgres.js pool size; two cores serve well with a small pool. */
  maxConnections?: number;
}

/**
 * postgres.js waits before reconnecting a closed slot, by default 3^n/100 s after n failed attempts
 * of the pool, up to 20 s: after an outage of a few seconds queries sat in that wait long after
 * Postgres was back. Capped at 2 s, with jitter so the slots do not all reconnect at once.
 */
export function reconnectBackoffSeconds(failedAttempts: number): number {
  return Math.min(2, 0.05 * 2 ** failedAttempts) * (0.5 + Math.random() / 2);
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  let statements = 0;
  const logger = {
    logQuery: () => {
      statements++;
    },
  };
  if (opts.databaseUrl) {
    const { default: postgres } = await import('postgres');
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const { migrate } = await import('drizzle-orm/postgres-js/migrator');
    const client = postgres(opts.databaseUrl, {
      max: opts.maxConnections ?? 10,
      onnotice: () => {},
      prepare: true,
      // JIT compiles for large cost estimates; on these short statements it cost ~1 s per query
      // (the downsample's per-bucket index scans run in 0.2 s, JIT added 1.07 s).
      connection: { jit: 'off' },
      backoff: reconnectBackoffSeconds,
      // A login that has not finished in 10 s is not going to; the request gets CACHE_UNAVAILABLE.
      connect_timeout: 10,
    });
    const db = drizzle(client, { schema: tables, logger });
    await migrate(db, { migrationsFolder: MIGRATIONS_DIR });
    return {
      db: db as unknown as Db,
      driver: 'postgres',
      statementCount: () => statements,
      close: () => client.end({ timeout: 5 }),
    };
  }
  // PGlite first: drizzle's PGlite driver imports it too, and loadPglite says what to do without it.
  const { openPglite } = await import('./pglite.js');
  const client = await openPglite(opts.dataDir ?? './.data');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  const db = drizzle(client, { schema: tables, logger });
  await migrate(db, { migrationsFolder: MIGRATIONS_DIR });
  return {
    db: db as unknown as Db,
    driver: 'pglite',
    statementCount: () => statements,
    close: () => client.close(),
  };
}
