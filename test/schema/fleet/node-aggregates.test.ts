// Fleet questions where the platform has only node aggregates (PAI-DLC: one GpuCoreUsage series
// per pod). The aggregate is marked as such and counts for its node's 8 GPUs; gaps, holes and
// null points follow the documented rules. Expected figures are computed independently in the
// test from the cached points (fetched through the normal read-through path).
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/server/runtime.js';
import { startPaiDlcSimulator, type PaiDlcSimulator } from '../../../src/simulators/pai-dlc/index.js';
import { rowsOf } from '../../../src/store/sql-util.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { startPaiDlcRuntimeOn } from '../../support/runtime.js';
import { IDLE_QUERY, USAGE_QUERY } from './queries.js';
import { coveredAndUsedMs, holdIntervals, idleRuns, type RefPoint } from './reference.js';

const H = 3600_000;
const THRESHOLD = 0.4;
const MIN_IDLE_S = 180;

describe('fleet over node aggregates (PAI-DLC)', () => {
  let sim: PaiDlcSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let from: number;
  let to: number;

  // PAI-DLC signs requests with the wall clock, so the simulator runs on it too; the window lies
  // wholly in the past of its anchor (the start of the UTC day), where the data never changes.
  beforeAll(async () => {
    sim = await startPaiDlcSimulator({});
    db = await createTestDatabase();
    rt = await startPaiDlcRuntimeOn(db, sim);
    const anchor = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    from = anchor - 4 * H;
    to = anchor - 2 * H;
  });
  afterAll(async () => {
    await rt.close();
    await sim.close();
    await db.drop();
  });

  async function gql(query: string) {
    const res = await rt.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query,
        variables: {
          filter: { nameContains: 'resnet-ddp' },
          from: new Date(from).toISOString(),
          to: new Date(to).toISOString(),
          threshold: THRESHOLD,
          min: `PT${MIN_IDLE_S / 60}M`,
        },
      }),
    });
    const body = (await res.json()) as any;
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    return body.data.fleet;
  }

  async function ask() {
    return { ...(await gql(IDLE_QUERY)), ...(await gql(USAGE_QUERY)) };
  }

  /** The cached node series' points in the window, per node id. */
  async function cachedPoints(): Promise<Map<string, RefPoint[]>> {
    const rows = await rowsOf<{ node_id: string; key: string | number; value: number | null }>(
      rt.database.db,
      sql`select s.node_id, p.key, p.value from series s join points p on p.series_id = s.id
          where s.name = 'GPU_UTILIZATION' and s.scope = 'NODE' and p.key between ${from} and ${to} order by s.node_id, p.key`,
    );
    const out = new Map<string, RefPoint[]>();
    for (const r of rows) out.set(r.node_id, [...(out.get(r.node_id) ?? []), { t: Number(r.key), v: r.value === null ? null : Number(r.value) }]);
    return out;
  }

  function expectMatches(fleet: any, points: Map<string, RefPoint[]>, gpusPerNode: number) {
    expect(points.size).toBe(4);
    let covered = 0;
    let used = 0;
    const expectedIdle = new Map<string, ReturnType<typeof idleRuns>>();
    for (const [node, pts] of points) {
      // 15 s asked of the store; PAI-DLC answers in whole minutes, the median spacing says so.
      const intervals = holdIntervals(pts, from, to, 15_000);
      const c = coveredAndUsedMs(intervals);
      covered += c.covered * gpusPerNode;
      used += c.used * gpusPerNode;
      const runs = idleRuns(intervals, THRESHOLD, MIN_IDLE_S * 1000);
      if (runs.length) expectedIdle.set(node, runs);
    }
    expect(expectedIdle.size).toBeGreaterThan(0);
    const answered = new Map<string, any>(fleet.idleGpus.map((g: any) => [g.node.id, g]));
    expect([...answered.keys()].sort()).toEqual([...expectedIdle.keys()].sort());
    for (const [node, runs] of expectedIdle) {
      const a = answered.get(node)!;
      expect(a.scope).toBe('NODE');
      expect(a.aggregate).toBe(true);
      expect(a.gpu).toBeNull();
      expect(a.gpuCount).toBe(gpusPerNode);
      expect(a.provider.kind).toBe('PAI_DLC');
      expect(a.intervals.map((i: any) => [i.from, i.to])).toEqual(runs.map((r) => [new Date(r.from).toISOString(), new Date(r.to).toISOString()]));
      a.intervals.forEach((i: any, k: number) => {
        expect(i.gpuHours).toBeCloseTo(((runs[k]!.to - runs[k]!.from) / H) * gpusPerNode, 9);
        expect(i.avgUtilization).toBeCloseTo(runs[k]!.avg, 9);
      });
    }
    const total = fleet.utilization.total;
    expect(total.jobCount).toBe(1);
    expect(total.allocatedGpuHours).toBeCloseTo((32 * (to - from)) / H, 9);
    expect(total.coveredGpuHours).toBeCloseTo(covered / H, 9);
    expect(total.usedGpuHours).toBeCloseTo(used / H, 9);
    expect(fleet.jobs).toHaveLength(1);
    expect(fleet.jobs[0].wasteGpuHours).toBeCloseTo((32 * (to - from) - used) / H, 9);
    return { covered, used };
  }

  it('counts each pod aggregate for its 8 GPUs, marked as an aggregate', async () => {
    const fleet = await ask();
    expect(fleet.problems).toEqual([]);
    const points = await cachedPoints();
    // One point a minute on each of the 4 pods, none missing: coverage is whole but for the last minute.
    for (const pts of points.values()) expect(pts.length).toBe(121);
    // The weight comes from the cached topology (8 GPU rows per pod), not from an even split.
    const gpuRows = await rowsOf<{ node_id: string; n: number }>(rt.database.db, sql`select node_id, count(*)::int as n from gpus group by node_id`);
    expect(new Map(gpuRows.map((r) => [r.node_id, Number(r.n)]))).toEqual(new Map([...points.keys()].map((n) => [n, 8])));
    const { covered } = expectMatches(fleet, points, 8);
    expect(covered / (32 * (to - from))).toBeCloseTo(1, 9);
  });

  it('bridges a gap of two steps, treats a longer hole and a null point as no data', async () => {
    const [node] = [...(await cachedPoints()).keys()];
    const seriesOf = sql`(select id from series where node_id = ${node} and name = 'GPU_UTILIZATION' and scope = 'NODE')`;
    // One missing sample (a 2-minute gap: bridged), five missing (a 6-minute hole), one null.
    await rt.database.db.execute(sql`delete from points where series_id = ${seriesOf} and key = ${from + 10 * 60_000}`);
    await rt.database.db.execute(sql`delete from points where series_id = ${seriesOf} and key between ${from + 30 * 60_000} and ${from + 34 * 60_000}`);
    await rt.database.db.execute(sql`update points set value = null where series_id = ${seriesOf} and key = ${from + 50 * 60_000}`);
    const fleet = await ask();
    const points = await cachedPoints();
    expect(points.get(node!)!.length).toBe(115);
    const { covered } = expectMatches(fleet, points, 8);
    // Lost: the hole (the point before it holds one step, the next 5 minutes are nobody's) and
    // the null minute; the 2-minute gap is bridged.
    const lostMs = 5 * 60_000 + 60_000;
    expect(32 * (to - from) - covered).toBeCloseTo(lostMs * 8, 3);
    expect(fleet.utilization.total.coverage).toBeLessThan(1);
  });
});
