// Migration 0012 on a database with 1-hour chunks: the month chunks' four float arrays are stored
// out of line uncompressed from then on (a fleet read decompressed each whole to read a day of it:
// docs/history.md), in the year partition that was there before the upgrade and in one the
// compactor creates after it; a chunk stored compressed before the upgrade is read as before; and
// the rollup read from the new chunks equals the one computed from the points, on PGlite and
// PostgreSQL.
import { rmSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { rollup1h } from '../../src/store/hour-rollups.js';
import { Repository } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { databaseOnOldLayout, migrationsUpTo } from '../support/migrations.js';
import { compactAllOf, handRollup, type RollupRow, rollupOf, wave } from './rollup-fixtures.js';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const OCTOBER = Date.UTC(2025, 9, 1);
const NOVEMBER = Date.UTC(2025, 10, 1);
const JANUARY = Date.UTC(2026, 0, 1);
const FLOATS = ['mins', 'maxs', 'sums', 'lasts'] as const;

/** October 2025's 744 hours of series 1 as 0011's compactor stored them: one bucket an hour of six values. */
const october: RollupRow[] = Array.from({ length: 744 }, (_, i) => {
  const last = Math.round((50 + 40 * Math.sin(i / 37)) * 100) / 100;
  return { bucket: OCTOBER + i * HOUR, n: 6, min: last - 3.25, max: last + 4.5, sum: Math.round(last * 600) / 100, last };
});

function oldLayout(): string[] {
  const arr = (xs: readonly number[]) => `'{${xs.join(',')}}'`;
  return [
    `insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
      values ('baseten-1:job:old', 'baseten-1', 'baseten-1:project:p', 'old', 'old', 'RUNNING', now(), now())`,
    `insert into series (id, series_key, job_id, kind, name, unit, scope, source, keyed_by)
      values (1, 'old-time', 'baseten-1:job:old', 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time')`,
    `create table rollup_chunks_1h_2025 partition of rollup_chunks_1h for values from (${Date.UTC(2025, 0, 1)}) to (${Date.UTC(2026, 0, 1)})`,
    `insert into rollup_chunks_1h (series_id, chunk_start, n, last_bucket, offs, counts, mins, maxs, sums, lasts) values
      (1, ${OCTOBER}, 744, ${OCTOBER + 743 * HOUR}, '{0,1}', ${arr(october.map((r) => r.n))}, ${arr(october.map((r) => r.min!))},
       ${arr(october.map((r) => r.max!))}, ${arr(october.map((r) => r.sum!))}, ${arr(october.map((r) => r.last!))})`,
  ];
}

describe('migration 0012 on a database with 1-hour chunks', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('stores the chunks compacted after the upgrade uncompressed, in old and new partitions, and reads the old ones as before', async () => {
    const at0011 = migrationsUpTo('0011_hour_rollup_chunks');
    cleanup.push(() => rmSync(at0011, { recursive: true, force: true }));
    const { databaseUrl, dataDir } = await databaseOnOldLayout([{ migrate: at0011 }, { statements: oldLayout() }], cleanup);
    const db = await openDatabase({ databaseUrl, dataDir });
    cleanup.push(() => db.close());
    const repo = Repository.of(db);

    const storage = await rowsOf<{ rel: string; col: string; s: string }>(
      db.db,
      sql`select c.relname as rel, a.attname as col, a.attstorage::text as s from pg_attribute a join pg_class c on c.oid = a.attrelid
          where c.relname in ('rollup_chunks_1h', 'rollup_chunks_1h_2025') and a.attname in ('offs', 'counts', 'mins', 'maxs', 'sums', 'lasts')
          order by 1, 2`,
    );
    for (const r of storage) expect([r.rel, r.col, r.s]).toEqual([r.rel, r.col, (FLOATS as readonly string[]).includes(r.col) ? 'e' : 'x']);
    expect(storage).toHaveLength(12);

    const rolled = (from: number, to: number) => rollupOf(db.db, rollup1h(sql`1::bigint`, sql`${from}::bigint`, sql`${to}::bigint`));
    const stored = async (chunkStart: number) => {
      const [row] = await rowsOf<Record<string, string | number | null>>(
        db.db,
        sql.raw(`select n, ${FLOATS.map((c) => `pg_column_compression(${c}) as ${c}_comp, pg_column_size(${c}) as ${c}_size, (select count(v)::int from unnest(${c}) v) as ${c}_values`).join(', ')}
          from rollup_chunks_1h where series_id = 1 and chunk_start = ${chunkStart}`),
      );
      return row!;
    };

    // The chunk stored before the upgrade keeps its compressed arrays and is read as it was.
    const old = await stored(OCTOBER);
    for (const c of FLOATS) expect(old[`${c}_comp`]).toBe('pglz');
    expect(await rolled(OCTOBER, NOVEMBER - 1)).toEqual(october);

    // November 2025 (the partition made before the upgrade) and January 2026 (one the compactor
    // makes after it), a sample every 10 minutes, written, then compacted as the collector does.
    const november = wave(1, NOVEMBER, 600_000, (30 * DAY) / 600_000);
    const january = wave(1, JANUARY, 600_000, (31 * DAY) / 600_000);
    await repo.writePoints([...november, ...january]);
    const expected = [...handRollup(november, HOUR), ...handRollup(january, HOUR)];
    expect(await rolled(NOVEMBER, JANUARY + 31 * DAY)).toEqual(expected);
    await compactAllOf(repo, 'baseten-1', Date.UTC(2026, 1, 1));
    for (const month of [NOVEMBER, JANUARY]) {
      const row = await stored(month);
      expect(Number(row.n)).toBe(month === NOVEMBER ? 720 : 744);
      // Uncompressed: no method, and at least 8 bytes a value (a null one is a bit of the bitmap).
      for (const c of FLOATS) {
        expect(row[`${c}_comp`]).toBeNull();
        expect(Number(row[`${c}_values`])).toBeGreaterThan(100);
        expect(Number(row[`${c}_size`])).toBeGreaterThanOrEqual(8 * Number(row[`${c}_values`]));
      }
    }
    const [parts] = await rowsOf<{ n: number }>(
      db.db,
      sql`select count(*)::int as n from pg_attribute a join pg_class c on c.oid = a.attrelid
          where c.relname = 'rollup_chunks_1h_2026' and a.attname in ('mins', 'maxs', 'sums', 'lasts') and a.attstorage = 'e'`,
    );
    expect(Number(parts!.n)).toBe(4);
    const [left] = await rowsOf<{ n: number }>(db.db, sql`select count(*)::int as n from points_1h where series_id = 1`);
    expect(Number(left!.n)).toBe(0);
    expect(await rolled(OCTOBER, JANUARY + 31 * DAY)).toEqual([...october, ...expected]);
  });
});
