// The migrations folder as an older version of the server had it, for the upgrade tests: a
// database is made on that layout, then opened by this version.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { MIGRATIONS_DIR } from '../../src/store/db.js';
import { openPglite } from '../../src/store/pglite.js';
import { createTestDatabase } from './database.js';

/** A copy of the migrations folder whose journal ends at `tag` (the caller removes the folder). */
export function migrationsUpTo(tag: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'tg-migrations-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const journalPath = path.join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
  const end = journal.entries.findIndex((e) => e.tag === tag);
  if (end < 0) throw new Error(`no migration ${tag} in ${MIGRATIONS_DIR}`);
  journal.entries = journal.entries.slice(0, end + 1);
  writeFileSync(journalPath, JSON.stringify(journal));
  return dir;
}

/**
 * A test database built as an older server left it: each step either runs the migrations of a
 * folder from migrationsUpTo (`{ migrate }`) or runs SQL statements, in order, on the real
 * Postgres when the run has one, else on an embedded PGlite in a folder of its own. Returns where
 * this version opens it; what it made is removed by `cleanup` (the caller runs it after the test).
 */
export async function databaseOnOldLayout(
  steps: readonly ({ migrate: string } | { statements: readonly string[] })[],
  cleanup: (() => Promise<void> | void)[],
): Promise<{ databaseUrl: string | null; dataDir: string }> {
  const tdb = await createTestDatabase(undefined, { empty: true });
  cleanup.push(() => tdb.drop());
  if (tdb.databaseUrl) {
    const client = postgres(tdb.databaseUrl, { max: 1, onnotice: () => {} });
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const { migrate } = await import('drizzle-orm/postgres-js/migrator');
    for (const step of steps) {
      if ('migrate' in step) await migrate(drizzle(client), { migrationsFolder: step.migrate });
      else for (const s of step.statements) await client.unsafe(s);
    }
    await client.end();
    return { databaseUrl: tdb.databaseUrl, dataDir: tdb.dataDir };
  }
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tg-pglite-'));
  cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const client = await openPglite(dataDir);
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  for (const step of steps) {
    if ('migrate' in step) await migrate(drizzle(client), { migrationsFolder: step.migrate });
    else for (const s of step.statements) await client.query(s);
  }
  await client.close();
  return { databaseUrl: null, dataDir };
}
