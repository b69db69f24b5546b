// Retention of raw points through the collector: the lease holder, after its sweep, drops the raw
// points of its provider older than collect.rawRetentionDays; their rollups stay, and the series
// say since when raw points are held (MetricSeries.rawSince), on the test's clock. With a 1-minute
// rollup retention too, its rows past their age go as well, and the series say what is left of
// a window's oldest part (MetricSeries.minuteRollupSince, coarsestAvailable). With
// finishedJobRawRetentionDays, a finished job's raw points outlive the raw cut, a running job's not.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { ANCHOR as START } from '../support/runtime.js';
import { createTestDatabase } from '../support/database.js';
import { type CollectedBaseten, gql, startCollectedBaseten, sweepsSettled } from './helpers.js';

const INTERVAL_MS = 30_000;
/** Two hours. */
const KEEP_DAYS = 2 / 24;

describe('raw points past their retention', () => {
  let bt: CollectedBaseten;
  let rt: Runtime;

  beforeAll(async () => {
    bt = await startCollectedBaseten(
      await createTestDatabase(),
      'collect-retention',
      { jobsPerProject: 1, gpusPerNode: 1 },
      { intervalMs: INTERVAL_MS, provider: { collect: { rawRetentionDays: KEEP_DAYS } } },
    );
    rt = bt.rt;
  }, 60_000);

  afterAll(() => bt?.close());

  it("the lease holder's sweep drops them, keeps the rollups, and the series say since when", async () => {
    await sweepsSettled(rt);
    const cut = START - KEEP_DAYS * 86_400_000;
    const [row] = await rowsOf<{ oldest: number | string | null; marked: number | string; hours: number | string; before: number | string | null }>(
      rt.database.db,
      sql`select (select min(p.key) from points p join series s on s.id = p.series_id and s.keyed_by = 'time')::float8 as oldest,
        (select count(*) from series where keyed_by = 'time' and raw_before = ${cut}) as marked,
        (select count(*) from points_1h where bucket < ${cut}) as hours,
        (select min(raw_before) from series)::float8 as before`,
    );
    // The job ran longer than two hours before now: it had older points, the rollups hold them.
    expect(Number(row!.oldest)).toBeGreaterThanOrEqual(cut);
    expect(Number(row!.marked)).toBeGreaterThan(0);
    expect(Number(row!.hours)).toBeGreaterThan(0);
    expect(Number(row!.before)).toBe(cut);
    if (rt.database.driver !== 'postgres') {
      // PGlite has no autovacuum: the chore vacuumed the rows it deleted (Repository.vacuumDeadRows).
      await rt.database.db.execute(sql`select pg_stat_force_next_flush()`);
      const [points] = await rowsOf<{ live: number; dead: number }>(
        rt.database.db,
        sql`select n_live_tup::float8 as live, n_dead_tup::float8 as dead from pg_stat_user_tables where relname = 'points'`,
      );
      expect(points!.dead).toBeLessThanOrEqual(50 + 0.2 * points!.live);
    }

    const res = await gql(rt, `{ jobs(first: 1) { edges { node { metrics(names: [GPU_UTILIZATION], scope: GPU) { rawSince resolution } } } } }`);
    expect(res.errors).toBeUndefined();
    const series = res.data.jobs.edges[0].node.metrics as { rawSince: string | null; resolution: number | null }[];
    expect(series.length).toBeGreaterThan(0);
    for (const s of series) {
      expect(s.rawSince).toBe(new Date(cut).toISOString());
      // The job's window reaches before the cut: answered from a rollup, in whole minutes.
      expect(s.resolution).toBeGreaterThanOrEqual(60);
      expect(s.resolution! % 60).toBe(0);
    }
  }, 120_000);
});

describe('1-minute rollup rows past their retention', () => {
  let bt: CollectedBaseten;
  let rt: Runtime;
  const RAW_DAYS = 1 / 24;
  const MINUTE_DAYS = 2 / 24;
  // ANCHOR is a whole hour: both cuts are whole hours.
  const rawCut = START - RAW_DAYS * 86_400_000;
  const minuteCut = START - MINUTE_DAYS * 86_400_000;

  beforeAll(async () => {
    bt = await startCollectedBaseten(
      await createTestDatabase(),
      'collect-retention-minutes',
      { jobsPerProject: 1, gpusPerNode: 1 },
      { intervalMs: INTERVAL_MS, provider: { collect: { rawRetentionDays: RAW_DAYS, minuteRollupRetentionDays: MINUTE_DAYS } } },
    );
    rt = bt.rt;
  }, 60_000);

  afterAll(() => bt?.close());

  it("the lease holder's sweep drops them, keeps the 1-hour rows, and the series say what a window's oldest part has left", async () => {
    await sweepsSettled(rt);
    const [row] = await rowsOf<{ minute: number | string | null; marked: number | string; hours: number | string; jobStart: number | string }>(
      rt.database.db,
      sql`select (select min(m.bucket) from points_1m m)::float8 as minute,
        (select count(*) from series where keyed_by = 'time' and minute_before = ${minuteCut}) as marked,
        (select count(*) from points_1h where bucket < ${minuteCut}) as hours,
        (select extract(epoch from min(started_at)) * 1000 from jobs)::float8 as "jobStart"`,
    );
    // The job started before the 1-minute cut: it had older minutes, the 1-hour rollup holds them.
    expect(Number(row!.jobStart)).toBeLessThan(minuteCut);
    expect(Number(row!.minute)).toBeGreaterThanOrEqual(minuteCut);
    expect(Number(row!.marked)).toBeGreaterThan(0);
    expect(Number(row!.hours)).toBeGreaterThan(0);

    const ask = async (from: number | null) => {
      const args = from === null ? '' : `, from: "${new Date(from).toISOString()}", maxPoints: 100`;
      const res = await gql(
        rt,
        `{ jobs(first: 1) { edges { node { metrics(names: [GPU_UTILIZATION], scope: GPU${args}) { rawSince minuteRollupSince hourRollupSince coarsestAvailable resolution values } } } } }`,
      );
      expect(res.errors).toBeUndefined();
      const series = res.data.jobs.edges[0].node.metrics as {
        rawSince: string | null;
        minuteRollupSince: string | null;
        hourRollupSince: string | null;
        coarsestAvailable: number | null;
        resolution: number | null;
        values: (number | null)[];
      }[];
      expect(series.length).toBeGreaterThan(0);
      for (const s of series) {
        expect(s.rawSince).toBe(new Date(rawCut).toISOString());
        expect(s.minuteRollupSince).toBe(new Date(minuteCut).toISOString());
        expect(s.hourRollupSince).toBeNull();
        expect(s.values.length).toBeGreaterThan(0);
      }
      return series;
    };
    // From the job's start: before both cuts, only the 1-hour rollup is left of its oldest part.
    for (const s of await ask(null)) {
      expect(s.coarsestAvailable).toBe(3600);
      expect(s.resolution).toBeGreaterThanOrEqual(3600);
      expect(s.resolution! % 3600).toBe(0);
    }
    // From half an hour after the 1-minute cut: the 1-minute rollup, and it answers (100 points over 90 minutes).
    for (const s of await ask(minuteCut + 1_800_000)) {
      expect(s.coarsestAvailable).toBe(60);
      expect(s.resolution).toBe(60);
    }
    // From half an hour after the raw cut: raw points for the whole window.
    for (const s of await ask(rawCut + 1_800_000)) {
      expect(s.coarsestAvailable).toBeNull();
      expect(s.resolution).toBeNull();
    }
  }, 120_000);
});

describe("a finished job's raw points kept longer through the collector", () => {
  let bt: CollectedBaseten;
  let rt: Runtime;
  const RAW_DAYS = 1 / 24;
  const cut = START - RAW_DAYS * 86_400_000;

  beforeAll(async () => {
    bt = await startCollectedBaseten(
      await createTestDatabase(),
      'collect-retention-finished',
      { projects: 1, jobsPerProject: 2, gpusPerNode: 1, nodesPerJob: 1, statuses: ['TRAINING_JOB_RUNNING', 'TRAINING_JOB_COMPLETED'] },
      { intervalMs: INTERVAL_MS, provider: { collect: { rawRetentionDays: RAW_DAYS, finishedJobRawRetentionDays: 30 } } },
    );
    rt = bt.rt;
  }, 60_000);

  afterAll(() => bt?.close());

  it("the lease holder's sweep keeps the finished job's raw points past the raw cut, not the running job's", async () => {
    await sweepsSettled(rt);
    const rows = await rowsOf<{
      status: string;
      finished: number | string | null;
      old: number | string;
      before: number | string | null;
      marked: number | string;
    }>(
      rt.database.db,
      sql`select j.status, (extract(epoch from j.finished_at) * 1000)::float8 as finished,
          (select count(*) from points p join series s on s.id = p.series_id where s.job_id = j.id and s.keyed_by = 'time' and p.key < ${cut}) as old,
          (select min(s.raw_before) from series s where s.job_id = j.id)::float8 as before,
          (select count(*) from series s where s.job_id = j.id and s.keyed_by = 'time') as marked
        from jobs j order by j.status`,
    );
    const done = rows.find((r) => r.status === 'SUCCEEDED');
    const running = rows.find((r) => r.status === 'RUNNING');
    expect(done && running).toBeTruthy();
    // The finished job ended within the keep (30 days) and has raw points before the raw cut: kept.
    expect(Number(done!.finished)).toBeGreaterThan(START - 30 * 86_400_000);
    expect(Number(done!.marked)).toBeGreaterThan(0);
    expect(Number(done!.old)).toBeGreaterThan(0);
    expect(done!.before).toBeNull();
    // The running job's raw points before the cut are gone.
    expect(Number(running!.marked)).toBeGreaterThan(0);
    expect(Number(running!.old)).toBe(0);
    expect(Number(running!.before)).toBe(cut);

    const res = await gql(
      rt,
      `{ jobs(first: 10) { edges { node { status metrics(names: [GPU_UTILIZATION], scope: GPU) { rawSince coarsestAvailable resolution } } } } }`,
    );
    expect(res.errors).toBeUndefined();
    for (const { node } of res.data.jobs.edges as { node: { status: string; metrics: { rawSince: string | null; coarsestAvailable: number | null }[] } }[]) {
      expect(node.metrics.length).toBeGreaterThan(0);
      for (const s of node.metrics) {
        expect(s.rawSince).toBe(node.status === 'RUNNING' ? new Date(cut).toISOString() : null);
        expect(s.coarsestAvailable).toBe(node.status === 'RUNNING' ? 60 : null);
      }
    }
  }, 120_000);
});
