// Writes the migrated PGlite dump to the path given (test/support/pglite-template.ts), whole or not
// at all: the two projects' global setups, or two runs, may make it at once. Every test database
// loads this dump (a tar in PGlite's memory file system, then Postgres' start), so the dump holds
// only what a start needs:
// - not the template databases' folders: template0 and template1 were 15 of its 41 MB and about a
//   quarter of a load's time (0.75 s against 1.0 s a load, measured 2026-11-29). Nothing run on
//   PGlite connects to them (PGlite has one database, and no CREATE DATABASE is run on it);
// - not the migrations' WAL: a start reads WAL from its last checkpoint only, so the dump begins a
//   new segment (pg_switch_wal, and a checkpoint there, with recycling off so the old segment is
//   removed rather than renamed ahead) and the segment is cut after its last written page. Postgres
//   writes on past the cut as into any segment (the file system extends the file); the 16 MB
//   segment was 16 of the dump's 26 MB (9.4 MB now). With the tar also read as its bytes
//   (src/store/pglite.ts), a test database's start took 710 ms of CPU instead of 886 (the median
//   of test/schema's 20 starts, docs/testing.md, 2026-12-02).
import { renameSync, writeFileSync } from 'node:fs';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { MIGRATIONS_DIR } from '../../src/config/install.js';
import { openPglite } from '../../src/store/pglite.js';

/** A WAL segment's file: 24 hexadecimal digits in pg_wal. */
const WAL_SEGMENT = /^pg_wal\/[0-9A-F]{24}$/;
/** Postgres' WAL page. */
const WAL_PAGE = 8192;

const target = process.argv[2];
if (!target) throw new Error('usage: pglite-template-child.ts <dump.tar>');
const client = await openPglite('memory://');
await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR });
const templates = (await client.query<{ oid: number }>(`select oid::int as oid from pg_database where datname in ('template0', 'template1')`)).rows.map(
  (r) => r.oid,
);
await client.exec('set wal_recycle = off; select pg_switch_wal(); checkpoint;');
const dump = leanTar(
  Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer()),
  templates.map((oid) => `base/${oid}/`),
);
await client.close();
const partial = `${target}.${process.pid}.partial`;
writeFileSync(partial, dump);
renameSync(partial, target);

/**
 * The tar (ustar: 512-byte headers, data padded to 512) without the entries under the given
 * folders, and with each WAL segment cut after its last page holding a byte other than zero.
 */
function leanTar(tar: Buffer, folders: readonly string[]): Buffer {
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
    const dropped = folders.some((f) => name === f.slice(0, -1) || name.startsWith(f));
    if (!dropped) kept.push(...(WAL_SEGMENT.test(name) ? cutSegment(header, tar.subarray(at + 512, at + 512 + size)) : [tar.subarray(at, end)]));
    at = end;
  }
  kept.push(Buffer.alloc(1024));
  return Buffer.concat(kept);
}

/** A WAL segment's entry (header and padded data) cut after its last written page. */
function cutSegment(header: Buffer, data: Buffer): Buffer[] {
  let size = 0;
  for (let page = 0; page < data.length; page += WAL_PAGE) {
    if (data.subarray(page, page + WAL_PAGE).some((b) => b !== 0)) size = Math.min(data.length, page + WAL_PAGE);
  }
  const cut = Buffer.from(header);
  cut.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 12, 'latin1');
  // The checksum: the header's bytes summed with its own field as spaces.
  cut.fill(0x20, 148, 156);
  const sum = cut.reduce((a, b) => a + b, 0);
  cut.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return [cut, data.subarray(0, size), Buffer.alloc(Math.ceil(size / 512) * 512 - size)];
}
