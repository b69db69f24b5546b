// The run search's WASTE order against hand-computed waste: held minus utilization-weighted used
// accelerator-hours over each job's life, by the fleet's own SQL (the ledger's usage statement gives
// the same figures), jobs without readings last, ties and the nulls by id, and keyset paging that
// crosses from the known keys to the unknown ones in both directions.
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { LedgerStore } from '../../src/store/ledger.js';
import type { JobCursor, JobOrder } from '../../src/store/job-filter.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';

const T0 = Date.UTC(2026, 10, 20, 8, 0, 0);
const MIN = 60_000;
const H = 3_600_000;
const NOW = new Date(T0 + 2 * H);
const STEP = { minStepSeconds: 15, points: 120 };

describe('orderBy WASTE in the run search', () => {
  const t = useTestRepository();

  async function series(jobId: string, scope: 'GPU' | 'JOB', gpu: string | null, points: [number, number | null][]) {
    const [row] = await rowsOf<{ id: number }>(
      t.db.db,
      sql`insert into series (series_key, job_id, node_id, gpu_id, kind, name, unit, scope, source, keyed_by, meta)
        values (${`${jobId}|${gpu}|${scope}`}, ${jobId}, ${gpu ? `${jobId}-n0` : null}, ${gpu}, 'system', 'GPU_UTILIZATION', 'RATIO', ${scope}, 'test', 'time', '{}'::jsonb)
        returning id::float8 as id`,
    );
    for (const [ms, value] of points) {
      await t.db.db.execute(
        sql`insert into points (series_id, key, ts, value) values (${row!.id}, ${T0 + ms}, ${new Date(T0 + ms).toISOString()}::timestamptz, ${value})`,
      );
    }
  }

  const every10min = (n: number, value: number) => Array.from({ length: n }, (_, i) => [i * 10 * MIN, value] as [number, number]);

  beforeAll(async () => {
    const job = (id: string, status: string, gpuCount: number | null, hours: number | null) =>
      t.db.db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, created_at, started_at, finished_at, gpu_type, gpu_count, owner, sort_at, seen_at)
        values (${id}, 'p1', 'p1:project:x', ${id}, ${id}, ${status}, ${new Date(T0).toISOString()}::timestamptz,
          ${status === 'PENDING' ? null : new Date(T0).toISOString()}::timestamptz,
          ${hours === null ? null : new Date(T0 + hours * H).toISOString()}::timestamptz, 'H100', ${gpuCount}, 'alice', now(), now())`);
    // a: 2 GPUs for 2 h; GPU 0 at 50% all along, GPU 1 reports nothing: held 4, used 1, waste 3.
    await job('p1:job:a', 'SUCCEEDED', 2, 2);
    await series('p1:job:a', 'GPU', 'g0', every10min(12, 0.5));
    // b: 1 GPU for 1 h at 100%: waste 0.
    await job('p1:job:b', 'SUCCEEDED', 1, 1);
    await series('p1:job:b', 'GPU', 'g0', every10min(6, 1));
    // c: 4 GPUs for 1 h, a job aggregate at 25% standing for all 4: held 4, used 1, waste 3 (a tie with a).
    await job('p1:job:c', 'SUCCEEDED', 4, 1);
    await series('p1:job:c', 'JOB', null, every10min(6, 0.25));
    // d: 1 GPU, still running at NOW (2 h), at 0%: waste 2.
    await job('p1:job:d', 'RUNNING', 1, null);
    await series('p1:job:d', 'GPU', 'g0', every10min(12, 0));
    // i: 1 GPU for 1 h, one reading of 50% at its start: too few readings to tell a step, so it holds
    // for the step a default question of the life asks, max(15 s, ceil(3600 s / 120)) = 30 s:
    // used 0.5 x 30 GPU-s, waste 1 - 15 / 3600 h.
    await job('p1:job:i', 'SUCCEEDED', 1, 1);
    await series('p1:job:i', 'GPU', 'g0', [[0, 0.5]]);
    // Unknown waste: no readings (e), pending (f), CPU-only without readings (g), ended without an end (h).
    await job('p1:job:e', 'SUCCEEDED', 2, 1);
    await job('p1:job:f', 'PENDING', 2, null);
    await job('p1:job:g', 'SUCCEEDED', 0, 1);
    await job('p1:job:h', 'SUCCEEDED', 1, null);
    await series('p1:job:h', 'GPU', 'g0', every10min(6, 0.5));
  });

  const order = (direction: 'ASC' | 'DESC'): JobOrder => ({ by: 'WASTE', direction, now: NOW, wasteStep: STEP });
  const EXPECTED: Record<string, number | null> = {
    'p1:job:a': 3,
    'p1:job:b': 0,
    'p1:job:c': 3,
    'p1:job:d': 2,
    'p1:job:i': 1 - 15 / 3600,
    'p1:job:e': null,
    'p1:job:f': null,
    'p1:job:g': null,
    'p1:job:h': null,
  };

  it('keys each job by its hand-computed waste, the fleet usage arithmetic to the bit', async () => {
    const rows = await t.repo.jobsPage({ filter: {}, limit: 100, cursor: null, direction: 'forward', order: order('DESC') });
    const keys = new Map(rows.map((r) => [r.id, r.orderKey as number | null]));
    for (const [id, waste] of Object.entries(EXPECTED)) {
      if (waste === null) expect(keys.get(id), id).toBeNull();
      else expect(keys.get(id), id).toBeCloseTo(waste, 12);
    }
    // The ledger's usage statement (the fleet's GPU-hours SQL) over the same lives and steps: held - used is the same number.
    const lives = [
      ['p1:job:a', 2],
      ['p1:job:b', 1],
      ['p1:job:c', 1],
      ['p1:job:d', 2],
      ['p1:job:i', 1],
    ] as const;
    const windows = lives.map(([jobId, hours]) => ({
      jobId,
      from: new Date(T0),
      to: new Date(T0 + hours * H),
      stepSeconds: Math.max(15, Math.ceil((hours * 3600) / 120)),
    }));
    const usage = await new LedgerStore(t.db.db).usage(windows);
    for (const u of usage) expect(keys.get(u.jobId), u.jobId).toBe((u.allocMs - u.usedMs) / H);
  });

  it('puts the most waste first, ties by id in the same direction, unknown waste last (either direction)', async () => {
    const desc = (await t.repo.jobsPage({ filter: {}, limit: 100, cursor: null, direction: 'forward', order: order('DESC') })).map((r) => r.id.slice(7));
    expect(desc).toEqual(['c', 'a', 'd', 'i', 'b', 'h', 'g', 'f', 'e']);
    const asc = (await t.repo.jobsPage({ filter: {}, limit: 100, cursor: null, direction: 'forward', order: order('ASC') })).map((r) => r.id.slice(7));
    expect(asc).toEqual(['b', 'i', 'd', 'a', 'c', 'e', 'f', 'g', 'h']);
  });

  it('pages by cursor across the known and the unknown keys, forward and backward', async () => {
    for (const direction of ['DESC', 'ASC'] as const) {
      const whole = (await t.repo.jobsPage({ filter: {}, limit: 100, cursor: null, direction: 'forward', order: order(direction) })).map((r) => r.id);
      const seen: string[] = [];
      let cursor: JobCursor | null = null;
      for (;;) {
        const page: { id: string; orderKey: unknown }[] = await t.repo.jobsPage({
          filter: {},
          limit: 2,
          cursor,
          direction: 'forward',
          order: order(direction),
        });
        seen.push(...page.slice(0, 2).map((r) => r.id));
        if (page.length <= 2) break;
        cursor = { key: page[1]!.orderKey as number | null, id: page[1]!.id };
      }
      expect(seen, direction).toEqual(whole);
      // Backward from the last row: the rows before it, nearest first.
      const last = (await t.repo.jobsPage({ filter: {}, limit: 100, cursor: null, direction: 'forward', order: order(direction) })).at(-1)!;
      const before = await t.repo.jobsPage({
        filter: {},
        limit: 3,
        cursor: { key: last.orderKey as number | null, id: last.id },
        direction: 'backward',
        order: order(direction),
      });
      expect(before.slice(0, 3).map((r) => r.id)).toEqual(whole.slice(-4, -1).reverse());
    }
  });
});
