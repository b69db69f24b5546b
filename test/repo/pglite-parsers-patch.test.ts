// patches-optional/@electric-sql+pglite+0.5.16.patch (applied at install by scripts/apply-patches.mjs
// when PGlite, an optional dependency, is installed). Two changes. An in-memory database's files
// (Emscripten's MEMFS) grew by 12.5 % once past 1 MiB, each growth a copy of the whole file: a
// table or WAL segment written to 100 MB was copied about 40 times over; they now double, as
// below 1 MiB (about a quarter of the time of PGlite-bound tests such as findings/no-false-alarms).
// And PGlite merged
// a query's own type parsers into its 318 defaults by copying all of them, on every query (about
// 110 µs; drizzle passes parsers with every statement). The patched merge puts the query's
// parsers in front of the defaults instead. It must be applied, and a query's parsers must still
// win over the defaults without changing them.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../../src/store/pglite.js';

describe('the patched @electric-sql/pglite', () => {
  let db: PGlite;
  beforeAll(async () => {
    // From the installed template, as every test database: a bare new PGlite() runs initdb in
    // WebAssembly (15-18 s on a busy 2-core machine, twice in CI).
    db = await openPglite('memory://');
  });
  afterAll(async () => {
    await db.close();
  });

  it('is applied: a query does not copy every default parser', () => {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const dist = entry.slice(0, entry.lastIndexOf(`${path.sep}dist${path.sep}`) + 6);
    const parseResults = readFileSync(path.join(dist, 'chunk-Y6PULSM7.js'), 'utf8');
    expect(parseResults).toContain('Object.assign(Object.create(t),n.parsers)');
    expect(parseResults).not.toContain('{...t,...n.parsers}');
  });

  it('is applied: an in-memory file grows by doubling, not by 12.5 % past 1 MiB', () => {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const dist = entry.slice(0, entry.lastIndexOf(`${path.sep}dist${path.sep}`) + 6);
    const memfs = readFileSync(path.join(dist, 'chunk-XZUEO4BZ.js'), 'utf8');
    expect(memfs).toContain('expandFileStorage(e,t){var r=e.contents.length;if(!(r>=t)){t=Math.max(t,r*2>>>0)');
    expect(memfs).not.toContain('r*(r<1048576?2:1.125)');
  });

  it('writes and reads back a table of many MiB in memory', async () => {
    await db.exec("create table grown as select g, repeat('x', 200) as pad from generate_series(1, 100000) g");
    const res = await db.query<{ n: number; bytes: number }>(`select count(*)::int as n, pg_total_relation_size('grown')::int as bytes from grown`);
    expect(res.rows[0]!.n).toBe(100_000);
    expect(res.rows[0]!.bytes).toBeGreaterThan(20 * 1024 * 1024);
  });

  it("uses a query's parsers first and the defaults for every other type", async () => {
    const res = await db.query<[number, unknown, boolean, string]>(
      `select 41::int4, '{"a":[1,2]}'::json, true, '2026-11-20 12:00:00+00'::timestamptz::text`,
      [],
      { rowMode: 'array', parsers: { 23: (v: string) => Number(v) + 1 } },
    );
    expect(res.rows[0]).toEqual([42, { a: [1, 2] }, true, '2026-11-20 12:00:00+00']);
  });

  it('leaves the defaults as they were: the next query without parsers parses int4 as before', async () => {
    await db.query('select 1::int4', [], { parsers: { 23: () => 'changed' } });
    const res = await db.query<{ n: number }>('select 41::int4 as n');
    expect(res.rows[0]!.n).toBe(41);
  });
});
