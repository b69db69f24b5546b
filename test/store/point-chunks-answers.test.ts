// Compaction changes no answer: on the demo server, the collected-like cache of every running
// job's accelerator series answers the fleet's questions, the Prometheus query API and the job
// pages' series and summaries; every provider's raw points are then compacted into point_chunks
// and its 1-minute and 1-hour rollups into rollup_chunks_1m and rollup_chunks_1h
// (CollectionStore.compactRawPoints and compactRollups, as the collector's lease holder runs them)
// and the same questions are answered again, identically.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { USAGE_QUERY, IDLE_QUERY } from '../schema/fleet/queries.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { DEMO_TOKENS, graphqlData, manualClock, startScopedDemoOn } from '../support/runtime.js';

const UTIL = 'training_graph_accelerator_utilization_ratio';
const NAMES = 'GPU_UTILIZATION, GPU_MEMORY_USED, GPU_POWER, NPU_UTILIZATION';

describe('answers before and after compaction', () => {
  let rt: Runtime;
  let db: TestDatabase;
  const clock = manualClock(Math.floor(Date.now() / 1000) * 1000);
  const gql = graphqlData(() => rt.url, DEMO_TOKENS.admin);
  const from = () => new Date(clock.now() - 30 * 60_000).toISOString();

  const prom = async (route: string, params: Record<string, string>) => {
    const res = await fetch(`${rt.url}/api/v1/${route}?${new URLSearchParams(params)}`, { headers: { authorization: `Bearer ${DEMO_TOKENS.admin}` } });
    const body = (await res.json()) as any;
    expect(body.status, JSON.stringify(body)).toBe('success');
    return body.data;
  };

  async function answers() {
    const now = String(clock.now() / 1000);
    const range = { start: String((clock.now() - 1_200_000) / 1000), end: now, step: '60' };
    const window = { from: from(), to: new Date(clock.now()).toISOString() };
    return {
      instant: await prom('query', { query: UTIL, time: now }),
      sum: await prom('query_range', { query: `sum by (provider) (${UTIL})`, ...range }),
      overTime: await prom('query_range', { query: `max_over_time(${UTIL}[5m])`, ...range }),
      usage: await gql(USAGE_QUERY, { filter: {}, ...window }),
      idle: await gql(IDLE_QUERY, { filter: {}, ...window, threshold: 0.4, min: 'PT3M' }),
      series: await gql(`{ jobs(first: 20, filter: { statuses: [RUNNING] }) { edges { node { id
          raw: metrics(names: [${NAMES}], from: "${from()}", maxPoints: 100) { name resolution timestamps values summary { count min max avg last } }
          shaped: metrics(names: [${NAMES}], from: "${from()}", maxPoints: 7) { name timestamps values }
        } } } }`),
    };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startScopedDemoOn(db, clock);
    // What the collector would have stored: every running job's accelerator series over the last minutes.
    await gql(`{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id
          metrics(names: [${NAMES}], from: "${from()}", maxPoints: 50) { name } } } } }`);
    await rt.readThrough.writesSettled();
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  it('answers the fleet, PromQL and series questions the same once every raw point is compacted', async () => {
    const before = await answers();
    expect(before.instant.result.length).toBeGreaterThan(10);
    expect(before.series.jobs.edges.length).toBeGreaterThan(5);
    expect(before.usage.fleet.utilization.total.coveredGpuHours).toBeGreaterThan(0);
    const providers = await rowsOf<{ id: string }>(rt.database.db, sql`select distinct provider_id as id from jobs order by 1`);
    let moved = 0;
    // Every day and month up to 40 days on: all the cache holds (its month is settled then too).
    const settled = new Date(clock.now() + 40 * 86_400_000);
    let minutes = 0;
    // In slices of one batch, as the collector's lease holder compacts between sweeps: a slice
    // that stopped with days left is taken up by the next, from the start, until none is left.
    let resumed = 0;
    for (const p of providers) {
      for (;;) {
        const slice = { batches: 1, cut: false };
        moved += await rt.store.collection.compactRawPoints(p.id, settled, undefined, slice);
        minutes += await rt.store.collection.compactRollups(p.id, settled, undefined, slice);
        if (!slice.cut) break;
        resumed++;
      }
    }
    expect(resumed).toBeGreaterThan(providers.length);
    const held = async () =>
      (
        await rowsOf<{ hot: number; chunks: number; minutes: number; rolled: number; hours: number; months: number }>(
          rt.database.db,
          sql`select (select count(*) from points p join series s on s.id = p.series_id and s.keyed_by = 'time')::int as hot,
          (select count(*) from point_chunks)::int as chunks, (select count(*) from points_1m)::int as minutes,
          (select count(*) from rollup_chunks_1m)::int as rolled, (select count(*) from points_1h)::int as hours,
          (select count(*) from rollup_chunks_1h)::int as months`,
        )
      )[0]!;
    const left = await held();
    expect(moved).toBeGreaterThan(1000);
    expect(left.hot).toBe(0);
    expect(left.chunks).toBeGreaterThan(10);
    expect(minutes).toBeGreaterThan(100);
    expect(left.minutes).toBe(0);
    expect(left.rolled).toBeGreaterThan(10);
    expect(left.hours).toBe(0);
    expect(left.months).toBeGreaterThan(10);
    if (rt.database.driver !== 'postgres') {
      // PGlite has no autovacuum: the chores vacuumed the rows they moved (Repository.vacuumDeadRows),
      // so no table keeps more dead rows than autovacuum's rule lets a PostgreSQL table keep.
      await rt.database.db.execute(sql`select pg_stat_force_next_flush()`);
      const tables = await rowsOf<{ relname: string; live: number; dead: number }>(
        rt.database.db,
        sql`select relname, n_live_tup::float8 as live, n_dead_tup::float8 as dead from pg_stat_user_tables
          where relname in ('points', 'points_1m', 'points_1h') order by relname`,
      );
      expect(tables.map((t) => t.relname)).toEqual(['points', 'points_1h', 'points_1m']);
      for (const t of tables) expect(t.dead, t.relname).toBeLessThanOrEqual(50 + 0.2 * t.live);
    }
    expect(await answers()).toEqual(before);
    // Answered from the chunks (nothing was fetched and written again meanwhile).
    expect(await held()).toEqual(left);
  });
});
