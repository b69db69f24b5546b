// `npm run bench:history` (issue 41): what history costs at fleet scale, the store's layout (`points` and its 1-minute and 1-hour rollups)
// against a prototype of chunked storage, on PostgreSQL (in a schema of its own, dropped at the
// end) and on PGlite (a fresh folder). For each size (1,000 series; --quick 1M and 10M points,
// default 1M and 50M, or --sizes a,b) it builds the points server-side, then reports, each against
// a baseline measured in the same run (the ratio style of bench/run.ts):
// - bytes per point on disk: pg_total_relation_size (table + indexes + TOAST) / points;
// - ingest of --ingest new points through the layout's write path against COPY of the same rows
//   into the same layout: the points and, where the layout has the store's rollups, the 1-minute
//   and 1-hour rollup rows the write keeps for them (worked out beforehand, copied in binary as
//   the store copies; the run fails unless they are the write's rows), and beside it against
//   text COPY of the points alone; the fastest of --rounds each (a re-write must change nothing,
//   and the store's rollups must equal migration 0007's recompute of the stored points, or the run fails);
// - a 30-day read of one series at 1,000 points against reading its 1-hour rollup rows alone;
// - a fleet read over the 1,000 series and 24 hours at 24 points each against the same rollup rows;
// - the same two reads at the large size against the small one (goal: flat), both sizes kept in
//   databases of their own and their reads timed side by side, round by round;
// - retention of a whole day (today: a row delete; chunked: dropping its day partition;
//   compacted: hiding it behind the series' cut, a month partition dropped once all of it is
//   hidden), the median of seven successive days after the partial oldest one, at the large size
//   against the small one (goal: flat).
// Every build spans --span-days (default 35) of samples, in time order, so a large build is a
// denser one (50M points of 1,000 series: one a minute) and the windows read are full at both.
// The 1-hour rollup (avg, min, max, count, last) is built from the points as the floor.
// Written to bench/results/history-latest.json (`databases.<db>.rows[]`, `bytesPerPoint`).
// Flags: --postgres / --pglite (one database), --db <url> (default TEST_DATABASE_URL, DATABASE_URL
// or postgres://postgres@127.0.0.1:5432/test), --layouts today,chunked (and compacted: the store's
// built layout, today's compacted into point_chunks, rollup_chunks_1m and rollup_chunks_1h,
// whose read floor is then the 1-hour rollup as the store keeps it), --series (default 1000),
// --span-days <d>, --interval <s> (fixed spacing instead), --ingest <points>, --rounds <n>,
// --compression pglz|lz4 (the prototype's TOAST).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { Repository, type PointWriteRow } from '../src/store/repository.js';
import { rollup1h } from '../src/store/hour-rollups.js';
import { monthOf } from '../src/store/point-chunks.js';
import { rawPoints } from '../src/store/raw-points.js';
import { stagedRollups } from '../src/store/repo-point-writes.js';
import { copierOf, pointBatchOfRows, rollupCopierOf, rowsOf as sqlRows } from '../src/store/sql-util.js';
import * as tables from '../src/store/tables.js';
import type { Db } from '../src/store/db.js';
import { round, type Row, tableOf } from './rows.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    pglite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
    quick: { type: 'boolean', default: false },
    /** Total points of the small and the large build, comma-separated (overrides --quick). */
    sizes: { type: 'string' },
    series: { type: 'string', default: '1000' },
    /** Days every build spans (default 35: 50M points of 1,000 series are one sample a minute). */
    'span-days': { type: 'string', default: '35' },
    /** Fixed sample spacing, seconds, instead of --span-days. */
    interval: { type: 'string' },
    ingest: { type: 'string', default: '100000' },
    layouts: { type: 'string', default: 'today,chunked' },
    rounds: { type: 'string', default: '3' },
    /** TOAST compression of the prototype's arrays: pglz (PostgreSQL's default) or lz4. */
    compression: { type: 'string', default: 'pglz' },
  },
});
const SIZES = (flags.sizes ?? (flags.quick ? '1000000,10000000' : '1000000,50000000')).split(',').map(Number);
// Two builds, the small and the large: every ratio of the report is of one against the other.
if (SIZES.length !== 2 || SIZES.some((n) => !Number.isInteger(n) || n < 1)) {
  console.error(`--sizes takes two point counts, the small and the large build (got ${flags.sizes})`);
  process.exit(2);
}
const SERIES = Number(flags.series);
const SPAN_MS = Number(flags['span-days']) * 24 * 3_600_000;
/**
 * Sample spacing of a build of `perSeries` points a series: every build spans --span-days (the
 * windows read are then full at every size, and the large size differs only in density, as more
 * GPUs' samples or a faster scrape would make it), unless --interval fixes it.
 */
const intervalOf = (perSeries: number) => (flags.interval ? Number(flags.interval) * 1000 : Math.floor(SPAN_MS / perSeries));
const INGEST = Number(flags.ingest);
/**
 * Calls of each read before its timed rounds: enough for every connection of the PostgreSQL pool
 * (POOL) to pass the five custom plans after which PostgreSQL keeps a prepared statement's generic
 * plan, as a server's pool has after its first minutes. With one warm-up call, connections still
 * prepared and planned through the timed rounds (--sizes 1000000,4320000 --span-days 3 --rounds
 * 9: the 30-day read at 1M 3.94x its floor with one, 2.07x with these).
 */
const POOL = 4;
const WARM_UP = POOL * 6;
const ROUNDS = Number(flags.rounds);
const LAYOUTS = flags.layouts!.split(',') as LayoutName[];
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/**
 * Whole days retained one after another, timed each; the median is the retention's figure. Seven,
 * not three: a day's retention is a few commits of a few milliseconds each, and three of them
 * varied 6-12 ms between runs whatever the size (PostgreSQL, 2026-11-30: 7.25 ms at 1M and 11.45
 * at 50M in one run, 10.16 and 8.39 in another, 8-12 ms at 100k).
 */
const RETAINED_DAYS = 7;
/** The chunk a prototype row holds: one series, one UTC day. */
const CHUNK_MS = DAY;
// The newest sample of every series, on a whole hour.
const END = Date.UTC(2026, 10, 20, 0, 0, 0);

type LayoutName = 'today' | 'chunked' | 'compacted';

const started = performance.now();
const log = (...a: unknown[]) => console.error(`[${((performance.now() - started) / 1000).toFixed(1)}s]`, ...a);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const fmt = (n: number) => Math.round(n).toLocaleString('en');

interface PageCache {
  refaults: number;
  readKiB: number;
}

/**
 * The kernel's page-cache counters (Linux's /proc/vmstat; null elsewhere): pages read back from
 * disk after the kernel had evicted them (`workingset_refault_file`) and KiB read in (`pgpgin`).
 * A database's reads that find their pages evicted wait on the disk, the floor's as much as ours,
 * but a larger build has more to lose: on a VM whose kernel reclaims idle memory proactively
 * (DAMON's `pageout`), the phases slow in one run and not in the next (docs/history.md,
 * 2026-12-01). Each size reports what its timed reads and retention refaulted, so a disturbed
 * phase says so.
 */
function pageCache(): PageCache | null {
  try {
    const stat = readFileSync('/proc/vmstat', 'utf8');
    const counter = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(stat)?.[1] ?? Number.NaN);
    const out = { refaults: counter('workingset_refault_file'), readKiB: counter('pgpgin') };
    return Number.isNaN(out.refaults) || Number.isNaN(out.readKiB) ? null : out;
  } catch {
    return null;
  }
}

/** The page-cache counters' growth since `before` (null where they cannot be read). */
function pageCacheSince(before: PageCache | null): PageCache | null {
  const now = pageCache();
  return before && now ? { refaults: now.refaults - before.refaults, readKiB: now.readKiB - before.readKiB } : null;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

// ---- one SQL surface over both databases ----------------------------------------------------------

interface Sql {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** COPY ... FROM of text-format lines into `table` (columns as listed). */
  copyText(table: string, columns: string, text: string): Promise<void>;
  /** A drizzle handle on the same connection, for the store's own Repository. */
  db: Db;
  /** PostgreSQL: the pool closed and opened again (its prepared statements and their plan choices gone); `db` is then a new handle. */
  reopen?(): Promise<void>;
  close(): Promise<void>;
}

async function openPostgres(url: string, schema: string): Promise<Sql> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop schema if exists ${schema} cascade`);
  await admin.unsafe(`create schema ${schema}`);
  await admin.end();
  // jit off as the store's own pool has it (src/store/db.ts).
  const open = () =>
    postgres(url, {
      max: POOL,
      onnotice: () => {},
      prepare: true,
      connection: { search_path: schema, jit: 'off', application_name: 'bench-history' },
    });
  let client = open();
  const db: Sql = {
    query: async (text, params = []) => (await client.unsafe(text, params as never[])) as never,
    async copyText(table, columns, text) {
      const stream = (await client.unsafe(`copy ${table} (${columns}) from stdin`).writable()) as Writable;
      await pipeline(Readable.from([Buffer.from(text)]), stream);
    },
    db: drizzle(client, { schema: tables }) as unknown as Db,
    async reopen() {
      await client.end();
      client = open();
      db.db = drizzle(client, { schema: tables }) as unknown as Db;
    },
    async close() {
      await client.unsafe(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
  return db;
}

async function openEmbedded(dir: string): Promise<Sql> {
  const { openPglite } = await import('../src/store/pglite.js');
  const { drizzle } = await import('drizzle-orm/pglite');
  const client = await openPglite(dir);
  return {
    query: async (text, params = []) => (await client.query(text, params)).rows as never,
    async copyText(table, columns, text) {
      await client.query(`copy ${table} (${columns}) from '/dev/blob'`, [], { blob: new Blob([text]) });
    },
    db: drizzle(client, { schema: tables }) as unknown as Db,
    close: () => client.close(),
  };
}

// ---- the data -------------------------------------------------------------------------------------

/**
 * Sample i of series s (i = 0 the oldest: rows arrive in time order, as a scrape writes them): a GPU utilisation-like percentage with two decimals, a
 * slow wave per series plus a deterministic jitter, as a DCGM gauge read every few minutes looks.
 * The same expression in SQL (build) and here (ingest).
 */
const VALUE_SQL = (s: string, i: string) =>
  `round((50 + 40 * sin((${i} + ${s} * 17) / 60.0) + ((${i} * 7919 + ${s} * 104729) % 97) / 10.0)::numeric, 2)::float8`;
function sampleValue(s: number, i: number): number {
  return Math.round((50 + 40 * Math.sin((i + s * 17) / 60) + ((i * 7919 + s * 104729) % 97) / 10) * 100) / 100;
}

// ---- layouts --------------------------------------------------------------------------------------

interface Layout {
  name: LayoutName;
  /** The tables whose pg_total_relation_size is the layout's size on disk. */
  tables: string[];
  /** Creates the layout's tables for samples from `oldest` (ms) to END. */
  create(db: Sql, oldest: number): Promise<void>;
  /** Fills the layout with `perSeries` samples of each series 1..SERIES ending at END. */
  build(db: Sql, perSeries: number): Promise<void>;
  /** The layout's own write path for new points (series above the built ones). */
  write(db: Sql, repo: Repository, rows: PointWriteRow[]): Promise<void>;
  /** COPY of the same rows, in the layout's own row shape, into the same table. */
  copy(db: Sql, rows: PointWriteRow[]): Promise<void>;
  clearIngest(db: Sql): Promise<void>;
  /** One series' window at maxPoints, as the store's read answers it. */
  readSeries(db: Sql, repo: Repository, seriesIds: number[], from: number, to: number, maxPoints: number): Promise<number>;
  /** Drops everything older than `before` (ms); returns points removed where the layout can tell. */
  retain(db: Sql, before: number): Promise<void>;
  /** After `build`, what the layout does before it is measured (the store's compaction); returns the points it moved (and the ms of the 1-minute and 1-hour rollups' parts). */
  settle?(db: Sql): Promise<{ moved: number; rollupMs: number; hourMs: number }>;
}

/** The store's rollups as migrations/0007 backfills them: what `build` adds after the points. */
const ROLLUP_BACKFILL = (table: string, width: number) => `insert into ${table} (series_id, bucket, n, min, max, sum, last)
  select p.series_id, p.key - ((p.key % ${width}) + ${width}) % ${width}, count(p.value)::int, min(p.value), max(p.value),
    sum(p.value order by p.key), (array_agg(p.value order by p.key desc) filter (where p.value is not null))[1]
  from points p group by 1, 2`;

const todayLayout: Layout = {
  name: 'today',
  // The store's layout: one row per point, and its 1-minute and 1-hour rollups (migrations/0007).
  tables: ['points', 'points_1m', 'points_1h'],
  async create(db) {
    // migrations/0000_init.sql, verbatim: the layout the store runs on today.
    await db.query(`CREATE TABLE "points" (
      "series_id" bigint NOT NULL, "key" bigint NOT NULL, "ts" timestamp with time zone, "step" integer, "value" double precision,
      CONSTRAINT "points_series_id_key_pk" PRIMARY KEY("series_id","key"))`);
    // migrations/0007_history_rollups.sql's tables, and the columns of series and jobs the write
    // door and retention read (every series of the run, the ingest's too, time-keyed, of one job).
    for (const t of ['points_1m', 'points_1h']) {
      await db.query(`create table ${t} (series_id bigint not null, bucket bigint not null, n integer not null,
        min double precision, max double precision, sum double precision, last double precision, primary key (series_id, bucket))`);
    }
    await db.query('drop table if exists series');
    await db.query('drop table if exists jobs');
    await db.query(
      `create table series (id bigint primary key, job_id text not null, keyed_by text not null, raw_before bigint, minute_before bigint, hour_before bigint)`,
    );
    await db.query(`create table jobs (id text primary key, provider_id text not null)`);
    await db.query(`insert into jobs values ('bench:job', 'bench')`);
    await db.query(`insert into series select s, 'bench:job', 'time', null from generate_series(1, $1::int) s`, [SERIES]);
    // migrations/0008_point_chunks.sql, 0010_rollup_chunks.sql, 0011_hour_rollup_chunks.sql and 0012 (its storage):
    // the store reads and writes through them (empty until compacted).
    for (const [table, file] of [
      ['point_chunks', '0008_point_chunks.sql'],
      ['rollup_chunks_1m', '0010_rollup_chunks.sql'],
      ['rollup_chunks_1h', '0011_hour_rollup_chunks.sql'],
      [null, '0012_hour_chunk_storage.sql'],
    ]) {
      if (table) await db.query(`drop table if exists ${table}`);
      const ddl = readFileSync(path.join(HERE, '..', 'migrations', file!), 'utf8');
      for (const statement of ddl.split('--> statement-breakpoint')) await db.query(statement);
    }
  },
  async build(db, perSeries) {
    // One series per statement keeps PGlite's memory per statement small.
    const step = Math.max(1, Math.floor(200_000 / perSeries));
    for (let s0 = 1; s0 <= SERIES; s0 += step) {
      await db.query(
        `insert into points (series_id, key, ts, step, value)
         select s, k, to_timestamp(k / 1000.0), null, ${VALUE_SQL('s', 'i')}
         from generate_series($1::int, $2::int) s, generate_series(0, $3::int - 1) i, lateral (select $4::bigint - ($3::bigint - 1 - i) * $5::bigint as k) kk`,
        [s0, Math.min(SERIES, s0 + step - 1), perSeries, END, intervalOf(perSeries)],
      );
    }
    // The rollups of the built points, as migration 0007 backfills an existing database.
    const backfillMs = await timed(async () => {
      await db.query(ROLLUP_BACKFILL('points_1m', 60_000));
      await db.query(ROLLUP_BACKFILL('points_1h', HOUR));
    });
    log(`today: rollups backfilled in ${round(backfillMs / 1000, 1)} s`);
  },
  async write(_db, repo, rows) {
    // The store's path for a series never fetched before: binary COPY under a savepoint.
    await repo.writePoints(rows, { expectNew: true });
  },
  async copy(db, rows) {
    await db.copyText(
      'points',
      'series_id, key, ts, step, value',
      rows.map((r) => `${r[0]}\t${r[1]}\t${new Date(r[2]!).toISOString()}\t\\N\t${r[4]}\n`).join(''),
    );
  },
  async clearIngest(db) {
    for (const t of ['points', 'points_1m', 'points_1h']) {
      await db.query(`delete from ${t} where series_id > ${SERIES}`);
      await db.query(`vacuum ${t}`);
    }
  },
  async readSeries(_db, repo, seriesIds, from, to, maxPoints) {
    const out = await repo.pointsOf(
      seriesIds.map((seriesId) => ({ seriesId, from: new Date(from), to: new Date(to), keyedBy: 'time' as const })),
      maxPoints,
      'AVG',
    );
    return out.length;
  },
  async retain(db, before) {
    // The store's retention (CollectionStore.dropRawPoints): batches of 200 series, rollups kept.
    const repo = Repository.of({ db: db.db, shortReads: db.db });
    for (let after = 0; ; ) {
      const step = await repo.dropRawPointsBatch('bench', before, after, 200);
      if (step.last === null) break;
      after = step.last;
    }
  },
};

/**
 * The prototype: one row per series per UTC day; the day's sample times as int4 milliseconds after
 * the chunk's start (first absolute, then deltas: a regular scrape repeats one small number) and
 * its values as float8[]; PostgreSQL compresses the arrays out of line (TOAST) once a row passes
 * ~2 KB. Time-keyed series only (a step-keyed series would keep steps the same way).
 */
const chunkedLayout: Layout = {
  name: 'chunked',
  tables: ['point_chunks'],
  async create(db, oldest) {
    // Partitioned by day (a production layout would take a month a partition): retention drops
    // whole partitions.
    await db.query(`create table point_chunks (
      series_id bigint not null, chunk_start bigint not null, n int not null,
      dts int4[] not null, vals float8[] not null,
      primary key (series_id, chunk_start)) partition by range (chunk_start)`);
    // TOAST compresses the arrays: pglz by default, lz4 with --compression lz4 (PostgreSQL 14+ built with lz4).
    const method = flags.compression === 'lz4' ? 'lz4' : 'pglz';
    for (let d = Math.floor(oldest / DAY); d <= Math.floor(END / DAY); d++) {
      await db.query(`create table point_chunks_${d} partition of point_chunks for values from (${d * DAY}) to (${(d + 1) * DAY})`);
      await db.query(`alter table point_chunks_${d} alter column dts set compression ${method}, alter column vals set compression ${method}`);
    }
  },
  async build(db, perSeries) {
    const step = Math.max(1, Math.floor(200_000 / perSeries));
    for (let s0 = 1; s0 <= SERIES; s0 += step) {
      await db.query(
        `insert into point_chunks (series_id, chunk_start, n, dts, vals)
         select s, c, count(*), array_agg(d order by k), array_agg(v order by k) from (
           select s, k, c, (k - coalesce(lag(k) over (partition by s, c order by k), c))::int4 as d, v from (
             select s, k, (k / ${CHUNK_MS}) * ${CHUNK_MS} as c, ${VALUE_SQL('s', 'i')} as v
             from generate_series($1::int, $2::int) s, generate_series(0, $3::int - 1) i, lateral (select $4::bigint - ($3::bigint - 1 - i) * $5::bigint as k) kk
           ) p
         ) q group by s, c`,
        [s0, Math.min(SERIES, s0 + step - 1), perSeries, END, intervalOf(perSeries)],
      );
    }
  },
  async write(db, _repo, rows) {
    // Encoded here, COPY to a staging table, one merge: a chunk already stored is replaced by the
    // union of its points and the new ones, the new value winning on the same instant (idempotent).
    await db.query(`create temp table if not exists chunk_stage (series_id bigint, chunk_start bigint, n int, dts int4[], vals float8[])`);
    await db.query('truncate chunk_stage');
    await db.copyText('chunk_stage', 'series_id, chunk_start, n, dts, vals', encodeChunks(rows));
    // The days that already hold points (their rollup is recomputed below); a partitioned table
    // cannot return xmax to tell an update from an insert.
    const merged = await db.query<{ series_id: string; chunk_start: string }>(
      'select series_id, chunk_start from chunk_stage join point_chunks using (series_id, chunk_start)',
    );
    await db.query(`insert into point_chunks (series_id, chunk_start, n, dts, vals)
      select series_id, chunk_start, n, dts, vals from chunk_stage
      on conflict (series_id, chunk_start) do update set (n, dts, vals) = (
        select count(*)::int, array_agg(d order by k), array_agg(v order by k) from (
          select k, v, (k - coalesce(lag(k) over (order by k), excluded.chunk_start))::int4 as d from (
            select distinct on (k) k, v from (
              select 0 as pri, excluded.chunk_start + sum(x.d) over (order by x.o) as k, x.v from unnest(excluded.dts, excluded.vals) with ordinality as x(d, v, o)
              union all
              select 1, point_chunks.chunk_start + sum(y.d) over (order by y.o), y.v from unnest(point_chunks.dts, point_chunks.vals) with ordinality as y(d, v, o)
            ) u order by k, pri
          ) m
        ) z)
`);
    // The 1-hour rollup, maintained as points are written: computed here from the batch for the
    // days that were new (each average summed in key order, as PostgreSQL's avg and pointsOf sum),
    // recomputed from the chunks for days that already held points (a merge).
    await db.query(
      `create temp table if not exists rollup_stage (series_id bigint, bucket bigint, avg float8, min float8, max float8, count int, last float8)`,
    );
    await db.query('truncate rollup_stage');
    await db.copyText('rollup_stage', 'series_id, bucket, avg, min, max, count, last', encodeRollups(rows));
    await db.query(`insert into rollup_1h select * from rollup_stage
      on conflict (series_id, bucket) do update set (avg, min, max, count, last) = (excluded.avg, excluded.min, excluded.max, excluded.count, excluded.last)`);
    if (merged.length > 0) {
      const days = `select * from unnest($1::bigint[], $2::bigint[]) as t(series_id, chunk_start)`;
      const args = [merged.map((w) => w.series_id), merged.map((w) => w.chunk_start)];
      await db.query(
        `delete from rollup_1h r using (${days}) t where r.series_id = t.series_id and r.bucket >= t.chunk_start and r.bucket < t.chunk_start + ${CHUNK_MS}`,
        args,
      );
      await db.query(
        `insert into rollup_1h ${rollupOf(`select c.series_id, c.chunk_start + sum(x.d) over (partition by c.series_id, c.chunk_start order by x.o) as k, x.v
          from point_chunks c join (${days}) t using (series_id, chunk_start), unnest(c.dts, c.vals) with ordinality as x(d, v, o)`)}`,
        args,
      );
    }
  },
  async copy(db, rows) {
    await db.copyText('point_chunks', 'series_id, chunk_start, n, dts, vals', encodeChunks(rows));
  },
  async clearIngest(db) {
    await db.query(`delete from rollup_1h where series_id > ${SERIES}`);
    await db.query(`delete from point_chunks where series_id > ${SERIES}`);
    await db.query('vacuum point_chunks');
  },
  async readSeries(db, _repo, seriesIds, from, to, maxPoints) {
    // Equal-width buckets over the window, as pointsOf; the chunks overlapping it are decoded.
    const width = Math.max(1, Math.ceil((to - from + 1) / maxPoints));
    const rows = await db.query<{ series_id: string; bs: unknown; vs: unknown }>(
      `select r.series_id, array_agg(r.b order by r.b) as bs, array_agg(r.a order by r.b) as vs from (
         select p.series_id, (p.k - $2::bigint) / $4::bigint as b, avg(p.v) as a from (
           select c.series_id, c.chunk_start + sum(x.d) over (partition by c.series_id, c.chunk_start order by x.o) as k, x.v
           from point_chunks c, unnest(c.dts, c.vals) with ordinality as x(d, v, o)
           where c.series_id = any($1::bigint[]) and c.chunk_start > $2::bigint - ${CHUNK_MS} and c.chunk_start <= $3::bigint
         ) p where p.k between $2::bigint and $3::bigint group by 1, 2
       ) r group by r.series_id`,
      [seriesIds, from, to, width],
    );
    return rows.length;
  },
  async retain(db, before) {
    // Whole partitions only: every day wholly older than `before`.
    const days = await db.query<{ name: string }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
       where i.inhparent = 'point_chunks'::regclass and substr(c.relname, 14)::bigint * ${DAY} + ${DAY} <= $1::bigint`,
      [before],
    );
    for (const d of days) await db.query(`drop table ${d.name}`);
  },
};

/** Per table, the ingest's rows (series above the built ones) and a digest of them all. */
const INGEST_DIGEST = ['points', 'points_1m', 'points_1h']
  .map(
    (t) =>
      `select '${t}' as t, count(*)::int as n, md5(coalesce(string_agg(x::text, ',' order by x::text), '')) as digest from ${t} x where series_id > ${SERIES}`,
  )
  .join(' union all ')
  .concat(' order by t');

/** Text-format COPY lines of chunk rows for `rows` (sorted by series and key here). */
function encodeChunks(rows: PointWriteRow[]): string {
  const sorted = [...rows].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: string[] = [];
  let i = 0;
  while (i < sorted.length) {
    const s = sorted[i]![0];
    const c = Math.floor(sorted[i]![1] / CHUNK_MS) * CHUNK_MS;
    const dts: number[] = [];
    const vals: number[] = [];
    let prev = c;
    while (i < sorted.length && sorted[i]![0] === s && Math.floor(sorted[i]![1] / CHUNK_MS) * CHUNK_MS === c) {
      dts.push(sorted[i]![1] - prev);
      prev = sorted[i]![1];
      vals.push(sorted[i]![4] ?? Number.NaN);
      i++;
    }
    out.push(`${s}\t${c}\t${dts.length}\t{${dts.join(',')}}\t{${vals.map((v) => (Number.isNaN(v) ? 'NULL' : String(v))).join(',')}}\n`);
  }
  return out.join('');
}

/** Text-format COPY lines of 1-hour rollup rows of `rows` (one series' points in key order per bucket). */
function encodeRollups(rows: PointWriteRow[]): string {
  const sorted = [...rows].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: string[] = [];
  let i = 0;
  while (i < sorted.length) {
    const s = sorted[i]![0];
    const bucket = Math.floor(sorted[i]![1] / HOUR) * HOUR;
    let sum = 0;
    let count = 0;
    let min = Infinity;
    let max = -Infinity;
    let last = 0;
    while (i < sorted.length && sorted[i]![0] === s && Math.floor(sorted[i]![1] / HOUR) * HOUR === bucket) {
      const v = sorted[i]![4];
      if (v !== null) {
        sum += v;
        count++;
        min = Math.min(min, v);
        max = Math.max(max, v);
        last = v;
      }
      i++;
    }
    if (count > 0) out.push(`${s}\t${bucket}\t${sum / count}\t${min}\t${max}\t${count}\t${last}\n`);
  }
  return out.join('');
}

/**
 * The store's built layout (migrations 0008, 0010 and 0011): today's, and then the compactor
 * (Repository.compactRawPointsBatch and compactRollupsBatch, batches of 20 series and up to 7 days
 * as the collector's lease holder runs them, then compactHourRollupsBatch, up to 6 months) moves
 * every day of raw points into point_chunks and of the 1-minute rollup into rollup_chunks_1m, a
 * partition per month each, and every month of the 1-hour rollup into rollup_chunks_1h, a
 * partition per year; reads, writes and retention are the store's own (Repository.pointsOf reads
 * both tables of each; retention deletes what is still in `points`, hides the chunks' days and
 * drops the month partitions all hidden: Repository.dropRawChunks).
 */
const compactedLayout: Layout = {
  ...todayLayout,
  name: 'compacted',
  tables: ['points', 'point_chunks', 'points_1m', 'rollup_chunks_1m', 'points_1h', 'rollup_chunks_1h'],
  async settle(db) {
    const repo = Repository.of({ db: db.db, shortReads: db.db });
    let moved = 0;
    for (let after = 0; ; ) {
      const step = await repo.compactRawPointsBatch('bench', END + DAY, after, 20);
      moved += step.points;
      if (step.last === null) break;
      if (step.done) after = step.last;
    }
    const rollupMs = await timed(async () => {
      for (let after = 0; ; ) {
        const step = await repo.compactRollupsBatch('bench', END + DAY, after, 20);
        if (step.last === null) break;
        if (step.done) after = step.last;
      }
    });
    log(`compacted: 1-minute rollup compacted in ${round(rollupMs / 1000, 1)} s`);
    const hourMs = await timed(async () => {
      for (let after = 0; ; ) {
        const step = await repo.compactHourRollupsBatch('bench', END + DAY, after, 20);
        if (step.last === null) break;
        if (step.done) after = step.last;
      }
    });
    log(`compacted: 1-hour rollup compacted in ${round(hourMs / 1000, 1)} s`);
    // The hot tables' emptied pages are what the next days' writes reuse: their steady state is
    // the settle age's rows, not the build's index, so they are rewritten before they are measured.
    await db.query('vacuum full points');
    await db.query('vacuum full points_1m');
    await db.query('vacuum full points_1h');
    return { moved, rollupMs, hourMs };
  },
  async clearIngest(db) {
    await todayLayout.clearIngest(db);
    await db.query(`delete from point_chunks where series_id > ${SERIES}`);
    await db.query(`delete from rollup_chunks_1m where series_id > ${SERIES}`);
    await db.query(`delete from rollup_chunks_1h where series_id > ${SERIES}`);
  },
  async retain(db, before) {
    const repo = Repository.of({ db: db.db, shortReads: db.db });
    await todayLayout.retain(db, before);
    await repo.dropRawChunks('bench', before);
  },
};

/** The store's retention took effect: no series reads a raw point before `cut` (else the run fails). */
async function expectNoRawBefore(db: Sql, cut: number): Promise<void> {
  const [row] = await sqlRows<{ n: number | string }>(
    db.db,
    sql`select count(*)::float8 as n from series s cross join lateral ${rawPoints(sql`s.id`, null, sql`${cut - 1}::bigint`)} p`,
  );
  if (Number(row?.n ?? 0) !== 0) throw new Error(`retention to ${new Date(cut).toISOString()} left ${row?.n} raw points read`);
}

const LAYOUT_OF: Record<LayoutName, Layout> = { today: todayLayout, chunked: chunkedLayout, compacted: compactedLayout };

// ---- the run ---------------------------------------------------------------------------------------

interface SizeResult {
  points: number;
  bytes: number;
  bytesPerPoint: number;
  /** The 1-hour rollup as rows (rollup_1h), per raw point: what the rollups would add as stored here. */
  rollupBytesPerPoint: number;
  buildMs: number;
  seriesReadMs: number;
  seriesRollupMs: number;
  fleetReadMs: number;
  fleetRollupMs: number;
  retentionMs: number;
  /** Page-cache refaults and KiB read from disk during both sizes' timed reads and retention (Linux only; see pageCache). */
  pageCache?: PageCache;
  /**
   * writeMs: the layout's write path; copyMs: COPY of the points alone into the points table;
   * copyAllMs (layouts with the store's rollups): COPY of every row the write stored (the points
   * and their 1-minute and 1-hour rollup rows) into the same tables.
   */
  ingest?: { writeMs: number[]; copyMs: number[]; copyAllMs?: number[] };
  /** Bytes per point of each table (a partitioned one with its partitions). */
  tableBytesPerPoint: Record<string, number>;
  /** The layout's settle step (compaction): ms and points moved, and the ms of the 1-minute and 1-hour rollups' compaction among them. */
  settle?: { ms: number; moved: number; rollupMs: number; hourMs: number };
  /** Retention of the oldest whole month (a partition dropped), where the layout has them. */
  monthRetentionMs?: number;
  /** 1-minute rollup retention of the oldest day (Repository.dropMinuteRollupsBatch), where the layout has the store's rollups. */
  minuteRetentionMs?: number;
  /** The same month's 1-minute rollup chunks dropped (Repository.dropRollupChunks). */
  monthRollupRetentionMs?: number;
  /** The same month's 1-hour rollup chunks dropped (Repository.dropHourRollupChunks: a row per series, its year partition shared). */
  monthHourRetentionMs?: number;
}

/** 1-hour buckets of (series_id, k, v) rows: avg (summed in key order), min, max, count, last. */
const rollupOf = (source: string) =>
  `select series_id, (k / ${HOUR}) * ${HOUR}, avg(v order by k), min(v), max(v), count(*), (array_agg(v order by k desc))[1]
   from (${source}) p group by 1, 2`;

/** Every stored point of the layout as (series_id, k, v) rows. */
const pointsSource = (layout: Layout) =>
  layout.name === 'today'
    ? 'select series_id, key as k, value as v from points'
    : layout.name === 'compacted'
      ? `select series_id, key as k, value as v from points union all
       select c.series_id, c.chunk_start + case when cardinality(c.offs) < c.n then c.offs[1] + (x.o - 1) * c.offs[2] else x.d end as k, x.v
       from point_chunks c, unnest(c.vals, c.offs) with ordinality as x(v, d, o)`
      : `select c.series_id, c.chunk_start + sum(x.d) over (partition by c.series_id, c.chunk_start order by x.o) as k, x.v
       from point_chunks c, unnest(c.dts, c.vals) with ordinality as x(d, v, o)`;

async function buildRollup(db: Sql, layout: Layout) {
  // The floor: 1-hour buckets (avg, min, max, count, last) of every series, built from the points.
  await db.query('drop table if exists rollup_1h');
  await db.query(`create table rollup_1h (series_id bigint not null, bucket bigint not null, avg float8, min float8, max float8,
    count int not null, last float8, primary key (series_id, bucket))`);
  await db.query(`insert into rollup_1h ${rollupOf(pointsSource(layout))}`);
  await db.query('vacuum analyze rollup_1h');
}

/** A size built and kept for its timed reads and retention: its database and what its build measured. */
interface Built {
  db: Sql;
  layout: Layout;
  repo: Repository;
  perSeries: number;
  result: Omit<SizeResult, keyof ReadTimes | keyof Retention | 'pageCache'>;
}

/** The medians of a build's two reads and their floors (ms). */
type ReadTimes = Pick<SizeResult, 'seriesReadMs' | 'seriesRollupMs' | 'fleetReadMs' | 'fleetRollupMs'>;
/** What a build's retention measured (ms). */
type Retention = Pick<SizeResult, 'retentionMs' | 'monthRetentionMs' | 'minuteRetentionMs' | 'monthRollupRetentionMs' | 'monthHourRetentionMs'>;

async function buildSize(db: Sql, layout: Layout, total: number, withIngest: boolean): Promise<Built> {
  const perSeries = Math.floor(total / SERIES);
  const points = perSeries * SERIES;
  // Each build on a pool of its own, as a server on a store of that size has. A connection keeps a
  // prepared statement's plan choice: after five custom plans it keeps the generic plan only while
  // that plan's estimate is below the custom plans' average, and the store's statements cost about
  // as much either way. The larger build's reads, on the connections that had read the smaller
  // one, rebuilt the generic plan at an estimate above those cheaper custom plans and planned
  // again at every call (docs/history.md, 2026-11-30 morning). A server's connections live 30
  // to 60 minutes (postgres.js' max_lifetime), not through a store's five-fold growth.
  await db.reopen?.();
  for (const t of [...layout.tables, 'rollup_1h']) await db.query(`drop table if exists ${t}`);
  await layout.create(db, END - (perSeries - 1) * intervalOf(perSeries));
  log(`${layout.name}: building ${fmt(points)} points (${SERIES} series x ${fmt(perSeries)}, one per ${intervalOf(perSeries) / 1000} s)`);
  const buildMs = await timed(() => layout.build(db, perSeries));
  let settle: SizeResult['settle'];
  if (layout.settle) {
    let moved = 0;
    let rollupMs = 0;
    let hourMs = 0;
    const ms = await timed(async () => {
      ({ moved, rollupMs, hourMs } = await layout.settle!(db));
    });
    settle = { ms, moved, rollupMs, hourMs };
    log(`${layout.name}: compacted ${fmt(moved)} points in ${round(ms / 1000, 1)} s`);
  }
  await db.query(`vacuum analyze ${layout.tables.join(', ')}`);
  const [size] = await db.query<{ bytes: string }>(
    `select (${layout.tables.map((t) => `pg_total_relation_size('${t}') + coalesce((select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = '${t}'::regclass), 0)`).join(' + ')})::text as bytes`,
  );
  const bytes = Number(size!.bytes);
  log(`${layout.name}: built in ${round(buildMs / 1000, 1)} s; ${fmt(bytes)} bytes, ${round(bytes / points)} bytes/point`);
  const tableBytesPerPoint: Record<string, number> = {};
  for (const t of layout.tables) {
    const [one] = await db.query<{ bytes: string }>(
      `select (pg_total_relation_size('${t}') + coalesce((select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = '${t}'::regclass), 0))::text as bytes`,
    );
    tableBytesPerPoint[t] = round(Number(one!.bytes) / points);
    log(`${layout.name}: ${t} ${round(Number(one!.bytes) / points)} bytes/point`);
  }
  await buildRollup(db, layout);
  const [rollupSize] = await db.query<{ bytes: string }>(`select pg_total_relation_size('rollup_1h')::text as bytes`);
  const rollupBytes = Number(rollupSize!.bytes);
  const repo = Repository.of({ db: db.db, shortReads: db.db });

  let ingest: SizeResult['ingest'];
  if (withIngest) {
    const rows: PointWriteRow[] = [];
    const per = Math.min(perSeries, 1000);
    for (let j = 0; j < INGEST; j++) {
      const s = SERIES + 1 + Math.floor(j / per);
      const i = j % per;
      const k = END - i * intervalOf(perSeries);
      rows.push([s, k, k, null, sampleValue(s, i)]);
    }
    // The ingest's series are time-keyed series of the store (its write door rolls them up).
    if (layout.name !== 'chunked') {
      await db.query(`insert into series select s, 'bench:job', 'time', null from generate_series($1::int, $2::int) s on conflict do nothing`, [
        SERIES + 1,
        rows[rows.length - 1]![0],
      ]);
    }
    const writeMs: number[] = [];
    const copyMs: number[] = [];
    const copyAllMs: number[] = [];
    // Every row the write stores for these points, worked out before the clock starts: the points
    // and their 1-minute and 1-hour rollup rows (as the store's write door computes them). Their
    // COPY goes through the store's own binary COPY, in one transaction, as the write's does.
    const batch = pointBatchOfRows(rows);
    const stored = layout.name === 'chunked' ? null : { points: batch, ...stagedRollups([batch]) };
    const copyStored = async (all: NonNullable<typeof stored>) =>
      db.db.transaction(async (tx) => {
        await copierOf(tx as unknown as Db)!('points', [all.points]);
        await rollupCopierOf(tx as unknown as Db)!('points_1h', [all.hours]);
        await rollupCopierOf(tx as unknown as Db)!('points_1m', [all.minutes]);
      });
    // The fastest of --rounds (at least 2) each: on a shared machine one round's COPY swung 2.3x.
    for (let r = 0; r < Math.max(2, ROUNDS); r++) {
      await layout.clearIngest(db);
      writeMs.push(await timed(() => layout.write(db, repo, rows)));
      await layout.clearIngest(db);
      copyMs.push(await timed(() => layout.copy(db, rows)));
      if (stored) {
        await layout.clearIngest(db);
        copyAllMs.push(await timed(() => copyStored(stored)));
      }
    }
    if (stored) {
      // The rows copied are the write's own, row for row.
      await layout.clearIngest(db);
      await copyStored(stored);
      const copied = await db.query<{ t: string; n: number; digest: string }>(INGEST_DIGEST);
      await layout.clearIngest(db);
      await layout.write(db, repo, rows);
      const written = await db.query<{ t: string; n: number; digest: string }>(INGEST_DIGEST);
      if (JSON.stringify(copied) !== JSON.stringify(written))
        throw new Error(`ingest: the rows copied are not the rows the write stored (${JSON.stringify(copied)} against ${JSON.stringify(written)})`);
    }
    // Idempotence: the same rows written again change nothing.
    const count = async () => Number((await db.query<{ n: string }>(`select count(*)::text as n from ${layout.tables[0]} where series_id > ${SERIES}`))[0]!.n);
    const checkRollup = async () => {
      if (layout.name !== 'chunked') {
        // The store's rollups kept on write equal, to the last digit, migration 0007's recompute of the stored points.
        for (const [table, width] of [
          ['points_1m', 60_000],
          ['points_1h', HOUR],
        ] as const) {
          const mine = `select * from ${table} where series_id > ${SERIES}`;
          const theirs = ROLLUP_BACKFILL(table, width)
            .replace(/^insert into .*\n/, '')
            .replace('from points p', `from points p where p.series_id > ${SERIES}`);
          const [diff] = await db.query<{ n: number }>(`select count(*)::int as n from ((${mine} except ${theirs}) union all (${theirs} except ${mine})) d`);
          if (diff!.n !== 0) throw new Error(`today: ${diff!.n} rows of ${table} kept on write differ from the points'`);
        }
        return;
      }
      if (layout.name !== 'chunked') return;
      // The rollup kept on write equals, to the last digit, the one computed from the stored points.
      const [diff] = await db.query<{ n: number }>(
        `select count(*)::int as n from ((select * from rollup_1h where series_id > ${SERIES}
           except select * from (${rollupOf(`select * from (${pointsSource(layout)}) a where series_id > ${SERIES}`)}) b)
         union all (select * from (${rollupOf(`select * from (${pointsSource(layout)}) a where series_id > ${SERIES}`)}) b
           except select * from rollup_1h where series_id > ${SERIES})) d`,
      );
      if (diff!.n !== 0) throw new Error(`chunked: ${diff!.n} rollup rows kept on write differ from the points'`);
    };
    await layout.clearIngest(db);
    await layout.write(db, repo, rows);
    const once = await count();
    await checkRollup();
    await layout.write(db, repo, rows);
    if ((await count()) !== once) throw new Error(`${layout.name}: a re-write changed the stored rows`);
    await checkRollup();
    await layout.clearIngest(db);
    ingest = { writeMs, copyMs, ...(copyAllMs.length > 0 ? { copyAllMs } : {}) };
    log(
      `${layout.name}: ingest ${fmt(INGEST / (Math.min(...writeMs) / 1000))} points/s, COPY ${fmt(INGEST / (Math.min(...copyMs) / 1000))} points/s` +
        (copyAllMs.length > 0 ? `, COPY with their rollup rows ${fmt(INGEST / (Math.min(...copyAllMs) / 1000))} points/s` : ''),
    );
  }

  // The build's and the ingest's dirty pages written out first, at every size, so that no
  // checkpoint the build set going (50M: about 400 MB of new pages) writes beside the timed reads
  // and retention (one did, in a run whose 50M retention was slow; the next, with this, was as slow:
  // docs/history.md, 2026-12-01).
  await db.query('checkpoint');
  return {
    db,
    layout,
    repo,
    perSeries,
    result: {
      points,
      bytes,
      bytesPerPoint: bytes / points,
      rollupBytesPerPoint: rollupBytes / points,
      buildMs,
      ingest,
      tableBytesPerPoint,
      ...(settle ? { settle } : {}),
    },
  };
}

/**
 * The two reads of every build against their floors, interleaved: each round times every build's
 * read and floor one after another, the order rotating round by round (with one build: ours and
 * the floor alternating), the median of ROUNDS after WARM_UP calls of each. The flat goals (the
 * large build's reads against the small one's) are then measured side by side, as each read
 * against its floor is. Timed one size after the other, minutes apart, they compared two states
 * of the machine: in one run the 50M phase's floors took 1.5x (the fleet read's) and 2.5x (the
 * 30-day read's) the 1M phase's (docs/history.md).
 */
async function timeReads(builds: readonly Built[]): Promise<ReadTimes[]> {
  const oneSeries = [1 + Math.floor(SERIES / 2)];
  const allSeries = Array.from({ length: SERIES }, (_, i) => i + 1);
  // The compacted layout's floor is the 1-hour rollup as the store keeps it (points_1h and the
  // decoded rollup_chunks_1h, rollup1h): what its rolled reads read; the other layouts' the rows
  // of rollup_1h built from the points.
  const rollupRead = ({ db, layout }: Built, ids: number[], from: number, to: number) =>
    layout.name === 'compacted'
      ? db.db.execute(
          sql`select r.* from unnest(${`{${ids.join(',')}}`}::bigint[]) as s(id) cross join lateral (
            select * from ${rollup1h(sql`s.id`, sql`${from}::bigint`, sql`${to}::bigint`)} h order by h.bucket) r`,
        )
      : // One index range read per series (a plain `series_id = any(...)` was planned as a scan of
        // the whole rollup: a weaker floor).
        db.query(
          `select r.* from unnest($1::bigint[]) as s(id) cross join lateral (select series_id, bucket, avg, min, max, count, last
         from rollup_1h where series_id = s.id and bucket >= $2 and bucket <= $3 order by bucket) r`,
          [ids, from, to],
        );
  const interleaved = async (calls: (() => Promise<unknown>)[]) => {
    for (let i = 0; i < WARM_UP; i++) for (const call of calls) await call();
    const times = calls.map(() => [] as number[]);
    for (let r = 0; r < ROUNDS; r++) {
      for (let j = 0; j < calls.length; j++) {
        const k = (j + r) % calls.length;
        times[k]!.push(await timed(calls[k]!));
      }
    }
    return times.map(median);
  };
  const from30 = END - 30 * DAY;
  const series = await interleaved(
    builds.flatMap((b) => [() => b.layout.readSeries(b.db, b.repo, oneSeries, from30, END, 1000), () => rollupRead(b, oneSeries, from30, END)]),
  );
  const from24 = END - DAY;
  const fleet = await interleaved(
    builds.flatMap((b) => [() => b.layout.readSeries(b.db, b.repo, allSeries, from24, END, 24), () => rollupRead(b, allSeries, from24, END)]),
  );
  return builds.map((b, i) => {
    const t = { seriesReadMs: series[2 * i]!, seriesRollupMs: series[2 * i + 1]!, fleetReadMs: fleet[2 * i]!, fleetRollupMs: fleet[2 * i + 1]! };
    log(
      `${b.layout.name}, ${fmt(b.result.points)} points: 30-day read ${round(t.seriesReadMs)} ms (rollup ${round(t.seriesRollupMs)}), fleet ${round(t.fleetReadMs)} ms (rollup ${round(t.fleetRollupMs)})`,
    );
    return t;
  });
}

/** A build's retention (last: it removes what it times); its tables dropped after. */
async function retainSize({ db, layout, repo, perSeries }: Built): Promise<Retention> {
  // Retention of a day, last (it removes what it times). The oldest day is partly filled, by as
  // much as the build's spacing leaves (at 1M one sample per 3,024 s, at 50M one per 60 s: another
  // share of a day at each size), so it goes first, untimed; then each of the next RETAINED_DAYS
  // whole days, the median kept. One partial day timed alone gave 0.71x and 3.13x in two 50M runs.
  const oldest = END - (perSeries - 1) * intervalOf(perSeries);
  const firstCut = Math.ceil((oldest + 1) / DAY) * DAY;
  await layout.retain(db, firstCut);
  const dayTimes: number[] = [];
  for (let d = 1; d <= RETAINED_DAYS; d++) dayTimes.push(await timed(() => layout.retain(db, firstCut + d * DAY)));
  const retentionMs = median(dayTimes);
  if (layout.name === 'compacted') await expectNoRawBefore(db, firstCut + RETAINED_DAYS * DAY);
  log(`${layout.name}: retention of a whole day ${round(retentionMs)} ms (median; each: ${dayTimes.map((t) => round(t)).join(', ')} ms)`);
  // And of the oldest whole month, where the layout partitions by month: a partition dropped.
  let monthRetentionMs: number | undefined;
  let monthRollupRetentionMs: number | undefined;
  let monthHourRetentionMs: number | undefined;
  if (layout.name === 'compacted') {
    const firstMonth = new Date(oldest);
    const cut = Date.UTC(firstMonth.getUTCFullYear(), firstMonth.getUTCMonth() + 1, 1);
    monthRetentionMs = await timed(() => layout.retain(db, cut));
    await expectNoRawBefore(db, cut);
    const month = monthOf(oldest).name;
    if ((await repo.chunkPartitions()).some((p) => p.name === month)) throw new Error(`retention left ${month}`);
    log(`${layout.name}: retention of the oldest month (to ${new Date(cut).toISOString().slice(0, 10)}) ${round(monthRetentionMs)} ms`);
    // The 1-minute rollup's chunks of that month (Repository.dropRollupChunks, what its retention calls).
    monthRollupRetentionMs = await timed(() => repo.dropRollupChunks('bench', cut));
    log(`${layout.name}: 1-minute rollup chunks of the oldest month dropped in ${round(monthRollupRetentionMs)} ms`);
    // The 1-hour rollup's chunks of that month (Repository.dropHourRollupChunks, what its retention calls).
    monthHourRetentionMs = await timed(() => repo.dropHourRollupChunks('bench', cut));
    log(`${layout.name}: 1-hour rollup chunks of the oldest month dropped in ${round(monthHourRetentionMs)} ms`);
  }
  // 1-minute rollup retention of the oldest day (the store's layouts): batches of 200 series, as
  // CollectionStore.dropRollups runs them, through points_1m's primary key.
  let minuteRetentionMs: number | undefined;
  if (layout.name !== 'chunked') {
    const dayCut = Math.ceil((oldest + 1) / DAY) * DAY;
    minuteRetentionMs = await timed(async () => {
      for (let after = 0; ; ) {
        const step = await repo.dropMinuteRollupsBatch('bench', dayCut, after, 200);
        if (step.last === null) break;
        after = step.last;
      }
    });
    log(`${layout.name}: 1-minute rollup retention of the oldest day ${round(minuteRetentionMs)} ms`);
  }
  for (const t of [...layout.tables, 'rollup_1h']) await db.query(`drop table if exists ${t}`);
  return {
    retentionMs,
    ...(monthRetentionMs === undefined ? {} : { monthRetentionMs }),
    ...(minuteRetentionMs === undefined ? {} : { minuteRetentionMs }),
    ...(monthRollupRetentionMs === undefined ? {} : { monthRollupRetentionMs }),
    ...(monthHourRetentionMs === undefined ? {} : { monthHourRetentionMs }),
  };
}

function rowsOf(layout: LayoutName, small: SizeResult, large: SizeResult): Row[] {
  const m = (n: number) => `${fmt(n / 1e6 >= 1 ? n / 1e6 : n / 1e3)}${n >= 1e6 ? 'M' : 'k'}`;
  const rows: Row[] = [];
  rows.push({
    scenario: `[${layout}] bytes per point on disk at ${m(large.points)} (table + indexes + TOAST)`,
    measured: `${round(large.bytesPerPoint)} B (${fmt(large.bytes / 2 ** 20)} MiB)`,
    baseline: `an 8-byte value; at ${m(small.points)}: ${round(small.bytesPerPoint)} B; the 1-hour rollup as rows adds ${round(large.rollupBytesPerPoint)} B`,
    ratio: large.bytesPerPoint / 8,
    goal: '<= 16 B',
    met: large.bytesPerPoint <= 16,
  });
  if (layout === 'compacted') {
    const parts = (r: SizeResult) =>
      Object.entries(r.tableBytesPerPoint)
        .map(([t, b]) => `${t} ${b}`)
        .join(', ');
    const raw = (r: SizeResult) => (r.tableBytesPerPoint.points ?? 0) + (r.tableBytesPerPoint.point_chunks ?? 0);
    rows.push({
      scenario: `[${layout}] raw points alone (points + point_chunks) per point at ${m(large.points)}`,
      measured: `${round(raw(large))} B (${parts(large)})`,
      baseline: `at ${m(small.points)}: ${round(raw(small))} B (${parts(small)})`,
      ratio: raw(large) / 8,
      goal: '<= 16 B',
      met: raw(large) <= 16,
    });
    const minute = (r: SizeResult) => (r.tableBytesPerPoint.points_1m ?? 0) + (r.tableBytesPerPoint.rollup_chunks_1m ?? 0);
    rows.push({
      scenario: `[${layout}] the 1-minute rollup alone (points_1m + rollup_chunks_1m) per point at ${m(large.points)}`,
      measured: `${round(minute(large))} B`,
      baseline: `at ${m(small.points)}: ${round(minute(small))} B`,
      ratio: minute(large) / 8,
      goal: '',
      met: true,
    });
    const hour = (r: SizeResult) => (r.tableBytesPerPoint.points_1h ?? 0) + (r.tableBytesPerPoint.rollup_chunks_1h ?? 0);
    rows.push({
      scenario: `[${layout}] the 1-hour rollup alone (points_1h + rollup_chunks_1h) per point at ${m(large.points)}`,
      measured: `${round(hour(large))} B`,
      baseline: `at ${m(small.points)}: ${round(hour(small))} B; as rows (rollup_1h) ${round(large.rollupBytesPerPoint)} B`,
      ratio: hour(large) / 8,
      goal: '',
      met: true,
    });
    for (const r of [small, large]) {
      if (!r.settle) continue;
      rows.push({
        scenario: `[${layout}] compaction of ${m(r.points)} points and their 1-minute and 1-hour rollups (batches of 20 series x 7 days, 6 months)`,
        measured: `${round(r.settle.ms / 1000, 1)} s (${fmt(r.settle.moved / (r.settle.ms / 1000))} points/s; the 1-minute rollup's part ${round(r.settle.rollupMs / 1000, 1)} s, the 1-hour's ${round(r.settle.hourMs / 1000, 1)} s)`,
        baseline: `the build's insert of the same points: ${round(r.buildMs / 1000, 1)} s`,
        ratio: r.settle.ms / r.buildMs,
        goal: '',
        met: true,
      });
    }
  }
  if (small.ingest) {
    const rate = (ms: number[]) => INGEST / (Math.min(...ms) / 1000);
    const scenario = `[${layout}] ingest, ${fmt(INGEST)} new points ${layout !== 'chunked' ? '(Repository.writePoints)' : '(encode, COPY to staging, merge, 1-hour rollup of the days written)'}`;
    const { writeMs, copyMs, copyAllMs } = small.ingest;
    if (copyAllMs) {
      // The goal's row: the write stores each point and its 1-minute and 1-hour rollup rows (the
      // rollups are kept as points are written), so its floor is COPY of all of those rows.
      rows.push({
        scenario,
        measured: `${fmt(rate(writeMs))} points/s`,
        baseline: `COPY of the same rows into the same layout (the points and their 1-minute and 1-hour rollup rows, binary, as the store copies them): ${fmt(rate(copyAllMs))} points/s`,
        ratio: rate(writeMs) / rate(copyAllMs),
        goal: '>= 0.8x',
        met: rate(writeMs) / rate(copyAllMs) >= 0.8,
      });
    }
    // Against COPY of the points alone (the rollup rows not written): what the rollups cost, beside.
    rows.push({
      scenario: copyAllMs ? `${scenario}, against the points alone` : scenario,
      measured: `${fmt(rate(writeMs))} points/s`,
      baseline: `COPY of the points alone into ${layout === 'chunked' ? 'the same layout' : '`points`'}: ${fmt(rate(copyMs))} points/s`,
      ratio: rate(writeMs) / rate(copyMs),
      goal: copyAllMs ? '' : '>= 0.8x',
      met: copyAllMs ? null : rate(writeMs) / rate(copyMs) >= 0.8,
    });
  }
  for (const [what, read, floor] of [
    ['a 30-day series read at 1,000 points', 'seriesReadMs', 'seriesRollupMs'],
    [`a fleet read, ${fmt(SERIES)} series x 24 h at 24 points`, 'fleetReadMs', 'fleetRollupMs'],
  ] as const) {
    for (const r of [small, large]) {
      rows.push({
        scenario: `[${layout}] ${what}, ${m(r.points)} stored`,
        measured: `${round(r[read])} ms`,
        baseline: `${layout === 'compacted' ? 'the 1-hour rollup as stored (points_1h + decoded rollup_chunks_1h) alone' : 'the 1-hour rollup rows alone'}: ${round(r[floor])} ms`,
        ratio: r[read] / r[floor],
        goal: '<= 1.5x',
        met: r[read] / r[floor] <= 1.5,
      });
    }
    rows.push({
      scenario: `[${layout}] ${what}: ${m(large.points)} against ${m(small.points)} stored`,
      measured: `${round(large[read])} ms`,
      baseline: `${round(small[read])} ms`,
      ratio: large[read] / small[read],
      goal: '<= 1.2x (flat)',
      met: large[read] / small[read] <= 1.2,
    });
  }
  // Not a goal: whether the kernel made the reads wait on the disk (pageCache), beside the rows it
  // can slow. One figure for both sizes: their reads are timed side by side.
  if (large.pageCache) {
    rows.push({
      scenario: `[${layout}] page-cache refaults during the timed reads (${m(small.points)} and ${m(large.points)} side by side) and retention (pages evicted by the kernel and read again)`,
      measured: `${fmt(large.pageCache.refaults)} pages, ${fmt(large.pageCache.readKiB / 1024)} MiB read`,
      baseline: '',
      ratio: null,
      goal: '',
      met: null,
    });
  }
  rows.push({
    scenario: `[${layout}] retention of a whole day (median of ${RETAINED_DAYS}, after the partial oldest one): ${m(large.points)} against ${m(small.points)} stored`,
    measured: `${round(large.retentionMs)} ms`,
    baseline: `${round(small.retentionMs)} ms`,
    ratio: large.retentionMs / small.retentionMs,
    goal: '<= 1.2x (flat)',
    met: large.retentionMs / small.retentionMs <= 1.2,
  });
  // A month's drops are reported without a goal: the issue's flat goal is a day's retention, and
  // dropping a month's partition or chunk rows deletes what they hold, which grows with the history.
  if (large.monthRetentionMs !== undefined && small.monthRetentionMs !== undefined) {
    rows.push({
      scenario: `[${layout}] retention of the oldest month (a partition dropped): ${m(large.points)} against ${m(small.points)} stored`,
      measured: `${round(large.monthRetentionMs)} ms`,
      baseline: `${round(small.monthRetentionMs)} ms`,
      ratio: large.monthRetentionMs / small.monthRetentionMs,
      goal: '',
      met: null,
    });
  }
  if (large.minuteRetentionMs !== undefined && small.minuteRetentionMs !== undefined) {
    rows.push({
      scenario: `[${layout}] 1-minute rollup retention of the oldest day: ${m(large.points)} against ${m(small.points)} stored`,
      measured: `${round(large.minuteRetentionMs)} ms`,
      baseline: `${round(small.minuteRetentionMs)} ms`,
      ratio: large.minuteRetentionMs / small.minuteRetentionMs,
      goal: '<= 1.2x (flat)',
      met: large.minuteRetentionMs / small.minuteRetentionMs <= 1.2,
    });
  }
  if (large.monthHourRetentionMs !== undefined && small.monthHourRetentionMs !== undefined) {
    rows.push({
      scenario: `[${layout}] the 1-hour rollup's chunks of the oldest month dropped: ${m(large.points)} against ${m(small.points)} stored`,
      measured: `${round(large.monthHourRetentionMs)} ms`,
      baseline: `${round(small.monthHourRetentionMs)} ms`,
      ratio: large.monthHourRetentionMs / small.monthHourRetentionMs,
      goal: '',
      met: null,
    });
  }
  if (large.monthRollupRetentionMs !== undefined && small.monthRollupRetentionMs !== undefined) {
    rows.push({
      scenario: `[${layout}] the 1-minute rollup's chunks of the oldest month dropped: ${m(large.points)} against ${m(small.points)} stored`,
      measured: `${round(large.monthRollupRetentionMs)} ms`,
      baseline: `${round(small.monthRollupRetentionMs)} ms`,
      ratio: large.monthRollupRetentionMs / small.monthRollupRetentionMs,
      goal: '',
      met: null,
    });
  }
  return rows;
}

async function benchDatabase(pglite: boolean) {
  // A database a size (PostgreSQL: a schema each; PGlite: a folder each), both kept until their
  // reads have been timed side by side (timeReads).
  const dirs = pglite ? [0, 1].map(() => mkdtempSync(path.join(tmpdir(), 'bench-history-'))) : [];
  const dbs: Sql[] = [];
  const rows: Row[] = [];
  const bytesPerPoint: Record<string, number> = {};
  const details: Record<string, unknown> = {};
  try {
    for (const [i, size] of ['small', 'large'].entries())
      dbs.push(pglite ? await openEmbedded(dirs[i]!) : await openPostgres(flags.db!, `bench_history_${process.pid}_${size}`));
    const [smallDb, largeDb] = dbs as [Sql, Sql];
    if (!pglite) details.server = (await smallDb.query<{ v: string }>('select version() as v'))[0]!.v;
    for (const name of LAYOUTS) {
      const layout = LAYOUT_OF[name];
      const builds = [await buildSize(smallDb, layout, SIZES[0]!, true), await buildSize(largeDb, layout, SIZES[1]!, false)];
      const cacheBefore = pageCache();
      const reads = await timeReads(builds);
      const retained: Retention[] = [];
      for (const b of builds) retained.push(await retainSize(b));
      const cache = pageCacheSince(cacheBefore);
      if (cache)
        log(
          `${layout.name}: page cache during both sizes' timed reads and retention: ${fmt(cache.refaults)} pages refaulted, ${fmt(cache.readKiB / 1024)} MiB read from disk`,
        );
      const [small, large] = builds.map((b, i) => ({ ...b.result, ...reads[i]!, ...retained[i]!, ...(cache ? { pageCache: cache } : {}) })) as [
        SizeResult,
        SizeResult,
      ];
      rows.push(...rowsOf(name, small, large));
      bytesPerPoint[name] = round(large.bytesPerPoint);
      details[name] = { small, large };
    }
  } finally {
    for (const db of dbs) await db.close().catch(() => {});
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  return { rows, bytesPerPoint, details };
}

function readResults(file: string): { databases?: Record<string, unknown> } {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {}; // no earlier results
  }
}

async function main() {
  const databases = flags.pglite && !flags.postgres ? [true] : flags.postgres && !flags.pglite ? [false] : [false, true];
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGiB: round(totalmem() / 2 ** 30, 1), node: process.version };
  const shape = {
    series: SERIES,
    compression: flags.compression,
    sizes: SIZES,
    spanDays: Number(flags['span-days']),
    intervalSeconds: flags.interval ? Number(flags.interval) : SIZES.map((n) => intervalOf(Math.floor(n / SERIES)) / 1000),
    ingest: INGEST,
    rounds: ROUNDS,
    chunkMs: CHUNK_MS,
  };
  const file = path.join(HERE, 'results', 'history-latest.json');
  mkdirSync(path.dirname(file), { recursive: true });
  // Each database's entry is written as soon as it is measured, with its own time and shape; a run
  // of one database keeps the other's entry from the file (a 50M build takes long on PGlite).
  const out = { at: new Date().toISOString(), machine, shape, databases: {} as Record<string, unknown> };
  const tables: string[] = [];
  for (const pglite of databases) {
    const name = pglite ? 'pglite' : 'postgres';
    log(`${pglite ? 'PGlite' : 'PostgreSQL'}: sizes ${SIZES.map(fmt).join(' and ')}, layouts ${LAYOUTS.join(', ')}`);
    const r = await benchDatabase(pglite);
    // Read again just before writing: a run of the other database may have written meanwhile.
    out.databases = { ...(readResults(file).databases ?? {}), ...out.databases, [name]: { at: new Date().toISOString(), shape, ...r } };
    writeFileSync(file, JSON.stringify(out, null, 2));
    const table = `\n${pglite ? 'PGlite' : 'PostgreSQL'} (bytes per point: ${JSON.stringify(r.bytesPerPoint)}):\n\n${tableOf(r.rows)}`;
    log(`${name}: written to ${file}`);
    tables.push(table);
  }
  console.log(`${out.at}, ${machine.cpus} cores (${machine.cpuModel}), Node ${machine.node}; wall time ${((performance.now() - started) / 1000).toFixed(0)} s`);
  for (const t of tables) console.log(t);
}

await main();
process.exit(0);
