// A window's edge (edgeRawPoint: the newest or oldest raw point of a series in [lo, hi] that
// passes a condition) over a series with two months of compacted days: the same answer with its
// points in `points`, in both, and in point_chunks; and, compacted, it reads the chunk rows it
// steps through (a day or three), not every day of the series' history; asked for its key alone,
// it leaves a day's values unread.
import { type SQL, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { edgeRawPoint } from '../../src/store/raw-points.js';
import type { PointWriteRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';
import { insertSeries } from './rollup-fixtures.js';

const suite = useTestRepository();
const DAY = 86_400_000;
const HOUR = 3_600_000;
// 64 days from October 1: three month partitions.
const START = Date.UTC(2026, 9, 1);
const DAYS = 64;
const day = (d: number, ms = 0) => START + d * DAY + ms;

/**
 * A sample every 2 hours at 01:00, 03:00, ... 23:00 of each day; day 40 and the last day miss
 * their 11:00 sample (a day at several spacings keeps every offset); the first day and the last
 * two days hold only nulls.
 */
function samples(seriesId: number): PointWriteRow[] {
  const out: PointWriteRow[] = [];
  for (let d = 0; d < DAYS; d++) {
    for (let h = 1; h < 24; h += 2) {
      if (h === 11 && (d === 40 || d === DAYS - 1)) continue;
      const key = day(d, h * HOUR);
      out.push([seriesId, key, key, null, d === 0 || d >= DAYS - 2 ? null : d * 100 + h]);
    }
  }
  return out;
}

interface Case {
  name: string;
  dir: 'first' | 'last';
  lo?: number;
  hi?: number;
  notNull?: boolean;
}

const CASES: Case[] = [
  { name: 'newest', dir: 'last' },
  { name: 'oldest', dir: 'first' },
  // The day hi falls in holds no point up to it (its first is at 01:00): the day before answers.
  { name: 'newest up to the last day 00:30', dir: 'last', hi: day(DAYS - 1, 30 * 60_000) },
  { name: 'newest up to a day 00:30 in the first month', dir: 'last', hi: day(12, 30 * 60_000) },
  { name: 'newest up to within a day', dir: 'last', hi: day(30, 10 * HOUR) },
  { name: 'newest up to within the irregular day', dir: 'last', hi: day(40, 12 * HOUR) },
  { name: 'oldest from 23:30', dir: 'first', lo: day(20, 23.5 * HOUR) },
  { name: 'oldest from within a day', dir: 'first', lo: day(20, 4 * HOUR) },
  { name: 'oldest from within the irregular day', dir: 'first', lo: day(40, 10 * HOUR) },
  { name: 'newest in a range with no point', dir: 'last', lo: day(10, 2 * HOUR), hi: day(10, 2.5 * HOUR) },
  { name: 'oldest in a range with no point', dir: 'first', lo: day(10, 2 * HOUR), hi: day(10, 2.5 * HOUR) },
  { name: 'newest in a range', dir: 'last', lo: day(10, 2 * HOUR), hi: day(11, 4 * HOUR) },
  { name: 'oldest in a range', dir: 'first', lo: day(10, 2 * HOUR), hi: day(11, 4 * HOUR) },
  { name: 'newest after the last point', dir: 'last', lo: day(DAYS - 1, 23.5 * HOUR) },
  { name: 'oldest before the first point', dir: 'first', hi: day(0, 30 * 60_000) },
  // Only nulls in the last two days (and the first): the edge with a value is days away.
  { name: 'newest with a value', dir: 'last', notNull: true },
  { name: 'oldest with a value', dir: 'first', notNull: true },
  { name: 'newest with a value up to within the last day', dir: 'last', hi: day(DAYS - 1, 12 * HOUR), notNull: true },
  { name: 'oldest with a value from within the first day', dir: 'first', lo: day(0, 12 * HOUR), notNull: true },
  { name: 'newest with a value in the null days', dir: 'last', lo: day(DAYS - 2), notNull: true },
];

function edgeOf(seriesId: number, c: Case, keyOnly = false): SQL {
  return edgeRawPoint(sql`${seriesId}::bigint`, c.dir, {
    lo: c.lo === undefined ? null : sql`${c.lo}::bigint`,
    hi: c.hi === undefined ? null : sql`${c.hi}::bigint`,
    where: c.notNull ? sql`p.value is not null` : undefined,
    keyOnly,
  });
}

/** Each case's edge as [key, value] (null: none), by the store's SQL. */
async function edges(seriesId: number): Promise<Record<string, [number, number | null] | null>> {
  const out: Record<string, [number, number | null] | null> = {};
  for (const c of CASES) {
    const rows = await rowsOf<{ key: number | string; value: number | null }>(
      suite.db.db,
      sql`select x.key::float8 as key, x.value from (select 1) o cross join lateral ${edgeOf(seriesId, c)} x`,
    );
    out[c.name] = rows[0] ? [Number(rows[0].key), rows[0].value] : null;
  }
  return out;
}

/** The same, from the written samples. */
function expected(points: PointWriteRow[], cases: Case[] = CASES): Record<string, [number, number | null] | null> {
  const out: Record<string, [number, number | null] | null> = {};
  for (const c of cases) {
    const held = points.filter((p) => (c.lo === undefined || p[1] >= c.lo) && (c.hi === undefined || p[1] <= c.hi) && (!c.notNull || p[4] !== null));
    const p = c.dir === 'last' ? held[held.length - 1] : held[0];
    out[c.name] = p ? [p[1], p[4]] : null;
  }
  return out;
}

async function compactAll(before: number): Promise<void> {
  for (let after = 0; ; ) {
    const step = await suite.repo.compactRawPointsBatch('baseten-1', before, after, 10);
    if (step.last === null) return;
    if (step.done) after = step.last;
  }
}

/** Over every chunk-table scan of the edge's plan (EXPLAIN ANALYZE): the rows it read, those its filter removed among them. */
async function chunkRowsRead(seriesId: number, c: Case): Promise<number> {
  const plan = await planOf(sql`select x.key from (select 1) o cross join lateral ${edgeOf(seriesId, c)} x`, false);
  let read = 0;
  const walk = (n: PlanNode) => {
    if (n['Relation Name']?.startsWith('point_chunks')) read += ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 0);
    for (const child of n.Plans ?? []) walk(child);
  };
  walk(plan);
  return read;
}

/** The statement's plan as run (EXPLAIN ANALYZE, in JSON; with its buffers when asked). */
async function planOf(statement: SQL, buffers: boolean): Promise<PlanNode> {
  const [row] = await rowsOf<Record<string, unknown>>(
    suite.db.db,
    buffers ? sql`explain (analyze, buffers, format json) ${statement}` : sql`explain (analyze, format json) ${statement}`,
  );
  const json = Object.values(row!)[0];
  return ((typeof json === 'string' ? JSON.parse(json) : json) as [{ Plan: PlanNode }])[0].Plan;
}

/** Shared buffers the statement touched (hit and read, over the whole plan). */
async function buffersOf(statement: SQL): Promise<number> {
  const plan = await planOf(statement, true);
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

describe("a window's edge over many compacted days", () => {
  let x = 0;
  let points: PointWriteRow[] = [];

  it('answers every edge the same from points, from points and chunks, and from chunks', async () => {
    await suite.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
      values ('baseten-1:job:rollups', 'baseten-1', 'baseten-1:project:p', 'edges', 'edges', 'RUNNING', now(), now())`);
    x = (await insertSeries(suite.db.db, ['edges-x', 'time']))[0]!;
    points = samples(x);
    await suite.repo.writePoints(points, { expectNew: true });
    const want = expected(points);
    expect(Object.values(want).filter((e) => e === null)).toHaveLength(5);
    expect(await edges(x)).toEqual(want);

    // The first 41 days in chunks (the irregular one among them), the rest in points.
    await compactAll(day(41));
    const [held] = await rowsOf<{ chunks: number; raw: number }>(
      suite.db.db,
      sql`select (select count(*) from point_chunks where series_id = ${x})::int as chunks, (select count(*) from points where series_id = ${x})::int as raw`,
    );
    expect([Number(held!.chunks), Number(held!.raw)]).toEqual([41, points.filter((p) => p[1] >= day(41)).length]);
    expect(await edges(x)).toEqual(want);

    await compactAll(day(DAYS));
    // Statistics, as autovacuum (PostgreSQL) or the chores (PGlite) keep them.
    await suite.db.db.execute(sql`analyze point_chunks`);
    expect(await edges(x)).toEqual(want);
  });

  it('reads the chunk rows of the days it steps through, not every day of the series', async () => {
    const [held] = await rowsOf<{ n: number }>(suite.db.db, sql`select count(*)::int as n from point_chunks where series_id = ${x}`);
    expect(Number(held!.n)).toBe(DAYS);
    const read: Record<string, number> = {};
    for (const c of CASES) read[c.name] = await chunkRowsRead(x, c);
    // At most the null days and the one with a value (a row read per day stepped through).
    for (const [name, n] of Object.entries(read)) expect(n, name).toBeLessThanOrEqual(3);
  });

  it("answers a key-only edge from a day's keys, its values unread", async () => {
    // Two days at a sample a minute (the values' array TOASTed): one at one spacing, one missing a sample.
    const y = (await insertSeries(suite.db.db, ['edges-y', 'time']))[0]!;
    const written: PointWriteRow[] = [];
    for (let d = 5; d <= 6; d++) {
      for (let i = 0; i < 1440; i++) {
        if (d === 6 && i === 700) continue;
        const key = day(d, i * 60_000 + 15_000);
        written.push([y, key, key, null, Math.round(Math.sin(i / 9) * 1e6 + i * 7.31) / 100]);
      }
    }
    await suite.repo.writePoints(written, { expectNew: true });
    await compactAll(day(7));
    const [held] = await rowsOf<{ n: number; offs: number[] }>(
      suite.db.db,
      sql`select count(*)::int as n, array_agg(cardinality(offs) order by chunk_start) as offs from point_chunks where series_id = ${y}`,
    );
    expect([Number(held!.n), held!.offs.map(Number)]).toEqual([2, [2, 1439]]);
    // Buffers are counted in a settled table: an autovacuum between the two EXPLAINs (the
    // compaction left dead rows and unset visibility bits) let the full edge read 41 buffers
    // after the key-only one had read 68 (once in a whole run on PostgreSQL).
    await rowsOf(suite.db.db, sql`vacuum (analyze) points, point_chunks`);
    const cases: Case[] = [
      { name: 'newest up to within the day at one spacing', dir: 'last', hi: day(5, 10 * HOUR + 30_000) },
      { name: 'oldest from within the day at one spacing', dir: 'first', lo: day(5, 3 * HOUR + 20_000) },
      { name: 'newest up to within the day missing a sample', dir: 'last', hi: day(6, 11 * HOUR + 40_000) },
      { name: 'oldest from within the day missing a sample', dir: 'first', lo: day(6, 700 * 60_000) },
    ];
    const wanted = expected(written, cases);
    for (const c of cases) {
      const full = sql`select x.key::float8 as key, x.value from (select 1) o cross join lateral ${edgeOf(y, c)} x`;
      const keyOnly = sql`select x.key::float8 as key, x.value from (select 1) o cross join lateral ${edgeOf(y, c, true)} x`;
      const want = wanted[c.name]!;
      const [f] = await rowsOf<{ key: number | string; value: number | null }>(suite.db.db, full);
      const [k] = await rowsOf<{ key: number | string; value: number | null }>(suite.db.db, keyOnly);
      expect([Number(f!.key), f!.value], c.name).toEqual(want);
      expect([Number(k!.key), k!.value], c.name).toEqual([want[0], null]);
      // The values' TOASTed pages are what the key-only edge does not read.
      expect(await buffersOf(keyOnly), c.name).toBeLessThan(await buffersOf(full));
    }
  });
});
