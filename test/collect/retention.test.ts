// Retention of raw points through the collector: the lease holder, after its sweep, drops the raw
// points of its provider older than collect.rawRetentionDays; their rollups stay, and the series
// say since when raw points are held (MetricSeries.rawSince), on the test's clock.
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
