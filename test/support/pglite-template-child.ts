// Writes the migrated PGlite dump to the path given (test/support/pglite-template.ts), whole or not
// at all: the two projects' global setups, or two runs, may make it at once. Without the template
// databases' folders: every test database loads this dump (a tar in PGlite's memory file system,
// then Postgres' start), and template0 and template1 were 15 of its 41 MB and about a quarter of a
// load's time (0.75 s against 1.0 s a load, measured 2026-11-29). Nothing run on PGlite connects to
// them (PGlite has one database, and no CREATE DATABASE is run on it).
import { renameSync, writeFileSync } from 'node:fs';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { MIGRATIONS_DIR } from '../../src/config/install.js';
import { openPglite } from '../../src/store/pglite.js';

const target = process.argv[2];
if (!target) throw new Error('usage: pglite-template-child.ts <dump.tar>');
const client = await openPglite('memory://');
await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR });
const templates = (await client.query<{ oid: number }>(`select oid::int as oid from pg_database where datname in ('template0', 'template1')`)).rows.map(
  (r) => r.oid,
);
const dump = withoutFolders(
  Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer()),
  templates.map((oid) => `base/${oid}/`),
);
await client.close();
const partial = `${target}.${process.pid}.partial`;
writeFileSync(partial, dump);
renameSync(partial, target);

/** The tar without the entries under the given folders (ustar: 512-byte headers, data padded to 512). */
function withoutFolders(tar: Buffer, folders: readonly string[]): Buffer {
  const kept: Buffer[] = [];
  let at = 0;
  while (at + 512 <= tar.length) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const field = (from: number, length: number) =>
      header
        .subarray(from, from + length)
        .toString('latin1')
        .replace(/\0.*$/s, '');
    const prefix = field(345, 155);
    const name = (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100)).replace(/^\/+/, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const end = at + 512 + Math.ceil(size / 512) * 512;
    if (!folders.some((f) => name === f.slice(0, -1) || name.startsWith(f))) kept.push(tar.subarray(at, end));
    at = end;
  }
  kept.push(Buffer.alloc(1024));
  return Buffer.concat(kept);
}
