// The ledger's measurements and figures against hand-computed expectations: jobs, series and points
// written into a real database (PGlite, or Postgres with TEST_DATABASE_URL), measured by the store's
// own SQL (src/store/ledger.ts), priced and integrated by src/domain/ledger.ts.
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { efficiencyOf, energyOf, groupCost, type JobUsage, jobCost, jobEnergy, mfuOf, type PriceEntry } from '../../src/domain/ledger.js';
import { LedgerStore } from '../../src/store/ledger.js';
import { costOrderSql } from '../../src/store/ledger-order.js';
import type { JobRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';

const T0 = Date.UTC(2026, 10, 20, 8, 0, 0);
const MIN = 60_000;
const H = 3_600_000;

const PRICES: PriceEntry[] = [
  { provider: 'p1', accelerator: 'H100', perAcceleratorHour: 4, currency: 'USD' },
  { provider: 'p2', perNodeHour: 0.4, currency: 'EUR' },
];

describe('the ledger over known readings', () => {
  const t = useTestRepository();
  let jobs: JobRow[];
  let usage: Map<string, JobUsage>;

  async function series(jobId: string, name: string, scope: 'GPU' | 'JOB', gpu: string | null, points: [number, number | null][], meta = {}) {
    const [row] = await rowsOf<{ id: number }>(
      t.db.db,
      sql`insert into series (series_key, job_id, node_id, gpu_id, kind, name, unit, scope, source, keyed_by, meta)
        values (${`${jobId}|${name}|${gpu}|${JSON.stringify(meta)}`}, ${jobId}, ${gpu ? `${jobId}-n0` : null}, ${gpu}, 'system', ${name}, 'RATIO', ${scope}, 'test', 'time', ${JSON.stringify(meta)}::jsonb)
        returning id::float8 as id`,
    );
    for (const [ms, value] of points) {
      await t.db.db.execute(
        sql`insert into points (series_id, key, ts, value) values (${row!.id}, ${T0 + ms}, ${new Date(T0 + ms).toISOString()}::timestamptz, ${value})`,
      );
    }
  }

  beforeAll(async () => {
    const db = t.db.db;
    const job = (id: string, provider: string, gpuType: string | null, gpuCount: number, hours: number) =>
      sql`insert into jobs (id, provider_id, project_id, external_id, name, status, created_at, started_at, finished_at, gpu_type, gpu_count, owner, sort_at, seen_at)
        values (${id}, ${provider}, ${`${provider}:project:x`}, ${id}, ${id}, 'SUCCEEDED', ${new Date(T0).toISOString()}::timestamptz, ${new Date(T0).toISOString()}::timestamptz,
          ${new Date(T0 + hours * H).toISOString()}::timestamptz, ${gpuType}, ${gpuCount}, 'alice', now(), now())`;
    await db.execute(job('p1:job:a', 'p1', 'NVIDIA H100 80GB HBM3', 2, 2));
    await db.execute(job('p2:job:cpu', 'p2', null, 0, 1));
    await db.execute(job('p3:job:unpriced', 'p3', 'A100', 1, 1));
    await db.execute(sql`insert into nodes (id, job_id, external_id, name, ord) values ('p2:node:cpu-0', 'p2:job:cpu', 'n0', 'n0', 0)`);
    // Job a: GPU 0 at 50% all along (a point every 10 minutes: each holds until the next); GPU 1
    // reports nothing, so 2 of its 4 held GPU-hours have data and 1 is used.
    await series(
      'p1:job:a',
      'GPU_UTILIZATION',
      'GPU',
      'g0',
      Array.from({ length: 12 }, (_, i) => [i * 10 * MIN, 0.5] as [number, number]),
    );
    // Power on GPU 0 for two minutes: 300, 400, 500 W a minute apart.
    await series('p1:job:a', 'GPU_POWER', 'GPU', 'g0', [
      [0, 300],
      [MIN, 400],
      [2 * MIN, 500],
    ]);
    // A host-wide reading (Runicorn's viewer host) never counts as the job's.
    await series(
      'p1:job:a',
      'GPU_POWER',
      'GPU',
      'g1',
      [
        [0, 9999],
        [MIN, 9999],
      ],
      { hostWide: true },
    );
    // Tensor-pipe active 0.2 then 0.4; the achieved model FLOP/s 400, 400, 500 TFLOP/s.
    await series('p1:job:a', 'GPU_TENSOR_ACTIVE', 'GPU', 'g0', [
      [0, 0.2],
      [MIN, 0.4],
    ]);
    await series('p1:job:a', 'MODEL_FLOPS_PER_GPU', 'JOB', null, [
      [0, 400e12],
      [MIN, 400e12],
      [2 * MIN, 500e12],
      // a null reading bridges nothing
      [3 * MIN, null],
    ]);
    jobs = await t.repo.jobsByIds(['p1:job:a', 'p2:job:cpu', 'p3:job:unpriced']);
    const windows = jobs.map((j) => ({ jobId: j.id, from: j.startedAt!, to: j.finishedAt!, stepSeconds: 60 }));
    const measured = await new LedgerStore(t.repo.db).measure(jobs, windows, new Map());
    usage = new Map(measured.map((u) => [u.jobId, u]));
  });

  it('measures held, covered and used accelerator-time as the fleet does', () => {
    const a = usage.get('p1:job:a')!;
    expect(a.windowMs).toBe(2 * H);
    expect(a.allocMs).toBe(4 * H); // 2 GPUs x 2 h
    expect(a.coveredMs).toBe(2 * H);
    expect(a.usedMs).toBe(H);
    expect(usage.get('p2:job:cpu')!.nodeCount).toBe(1);
  });

  it('prices a job exactly: held hours x price, idle = (held - used) x price', () => {
    const c = jobCost(usage.get('p1:job:a')!, PRICES);
    // 4 GPU-hours x 4 USD; idle (4 - 1) x 4 USD
    expect(c).toMatchObject({ amountMicros: 16_000_000, idleAmountMicros: 12_000_000, currency: 'USD', basis: 'ACCELERATOR_HOUR', unitPrice: 4 });
    const cpu = jobCost(usage.get('p2:job:cpu')!, PRICES);
    // 1 node x 1 h x 0.4 EUR; a CPU-only job has no idle share
    expect(cpu).toMatchObject({ amountMicros: 400_000, idleAmountMicros: null, currency: 'EUR', basis: 'NODE_HOUR' });
    expect(cpu.reasons.map((r) => r.code)).toEqual(['NOT_MEASURED']);
    const none = jobCost(usage.get('p3:job:unpriced')!, PRICES);
    expect(none.amountMicros).toBeNull();
    expect(none.reasons[0]).toMatchObject({ field: 'amount', code: 'NO_PRICE' });
    expect(none.reasons[0]!.message).toContain('A100');
  });

  it('integrates power by the trapezoid rule and states its coverage', () => {
    const a = usage.get('p1:job:a')!;
    // (300 + 400) / 2 W x 60 s + (400 + 500) / 2 W x 60 s = 48,000 J; the host-wide series is left out
    expect(a.powerCoveredMs).toBe(2 * MIN);
    expect(a.powerWattMs).toBe(48_000 * 1000);
    const without = jobEnergy(a, { averagePowerWatts: {} });
    expect(without.measuredKwh).toBeCloseTo(48_000 / 3.6e6, 12);
    expect(without.coverage).toBeCloseTo(120 / 14_400, 12); // 2 GPU-minutes of 4 GPU-hours
    expect(without.kwh).toBeNull();
    expect(without.reasons[0]).toMatchObject({ field: 'kwh', code: 'NO_POWER_READINGS' });
    // With an average of 500 W for H100 the rest is an estimate, said so: (14,400 - 120) s x 500 W.
    const withAvg = jobEnergy(a, { averagePowerWatts: { H100: 500 } });
    expect(withAvg.estimated).toBe(true);
    expect(withAvg.estimatedKwh).toBeCloseTo((14_280 * 500) / 3.6e6, 12);
    expect(withAvg.kwh).toBeCloseTo((48_000 + 14_280 * 500) / 3.6e6, 12);
    // A job with no readings and no average power: null, with a reason.
    const none = jobEnergy(usage.get('p3:job:unpriced')!, { averagePowerWatts: {} });
    expect(none).toMatchObject({ kwh: null, measuredKwh: null, coverage: 0 });
  });

  it('gives MFU from the achieved TFLOP/s and the dense peak, and tensor activity where reported', () => {
    const a = usage.get('p1:job:a')!;
    // Time-weighted: (400 x 60 + 450 x 60) / 120 = 425 TFLOP/s; the null reading bridges nothing.
    const e = efficiencyOf([a]);
    expect(e.achievedFlops! / 1e12).toBeCloseTo(425, 9);
    expect(e.model).toBe('H100');
    expect(e.tensorActive).toBeCloseTo(0.3, 12);
    expect(e.smActive).toBeNull();
    expect(e.reasons).toEqual([expect.objectContaining({ field: 'smActive', code: 'NOT_REPORTED' })]);
    expect(mfuOf([a], 'BF16', {}).mfu).toBeCloseTo(425 / 989, 12);
    expect(mfuOf([a], 'FP8', {}).mfu).toBeCloseTo(425 / 1979, 12);
    // The config's peak wins over the built-in table.
    expect(mfuOf([a], 'BF16', { h100: { BF16: 850 } }).mfu).toBeCloseTo(0.5, 12);
    expect(mfuOf([usage.get('p3:job:unpriced')!], 'BF16', {})).toMatchObject({ mfu: null, reason: { code: 'NO_FLOPS_SERIES' } });
    const unknownPeak = { ...a, gpuType: 'Some Future GPU' };
    expect(mfuOf([unknownPeak], 'BF16', {})).toMatchObject({ mfu: null, reason: { code: 'NO_PEAK' } });
  });

  it('never sums currencies, never passes a partial sum as the amount', () => {
    const costs = [...usage.values()].map((u) => jobCost(u, PRICES));
    const all = groupCost(costs);
    expect(all).toMatchObject({ amountMicros: null, currency: null, reasons: [expect.objectContaining({ code: 'MIXED_CURRENCY' }), expect.anything()] });
    const usd = groupCost([jobCost(usage.get('p1:job:a')!, PRICES), jobCost(usage.get('p3:job:unpriced')!, PRICES)]);
    expect(usd).toMatchObject({ amountMicros: null, pricedAmountMicros: 16_000_000, currency: 'USD', unpricedJobs: 1 });
    expect(usd.reasons[0]!.code).toBe('NO_PRICE');
    const energy = energyOf([...usage.values()], { averagePowerWatts: {} });
    expect(energy.measuredKwh).toBeCloseTo(48_000 / 3.6e6, 12);
  });

  it('orders by cost in SQL with the same price entry the ledger picks (the most specific, the first of equals)', async () => {
    const table: PriceEntry[] = [
      { provider: '*', accelerator: '*', perAcceleratorHour: 1, currency: 'USD' },
      { provider: 'p1', accelerator: 'h100', perAcceleratorHour: 4, currency: 'USD' },
      { provider: 'p1', accelerator: '*', perAcceleratorHour: 9, currency: 'USD' },
      { provider: 'p2', perNodeHour: 0.4, currency: 'USD' },
      { provider: '*', accelerator: '*', perNodeHour: 7, currency: 'USD' },
    ];
    const rows = await rowsOf<{ id: string; c: number | null }>(
      t.db.db,
      sql`select id, ${costOrderSql(table, new Date(T0 + 10 * H))} as c from jobs order by id`,
    );
    const inSql = new Map(rows.map((r) => [r.id, r.c === null ? null : Number(r.c)]));
    // H100 x 2 x 2 h x 4 (provider and model beat provider alone and any); the CPU job's node x 1 h
    // x 0.4 (its provider's entry beats "*"); A100 x 1 x 1 h x 1 (only "*" matches).
    expect(inSql).toEqual(
      new Map([
        ['p1:job:a', 16],
        ['p2:job:cpu', 0.4],
        ['p3:job:unpriced', 1],
      ]),
    );
    for (const u of usage.values()) expect(inSql.get(u.jobId)).toBeCloseTo(jobCost(u, table).amountMicros! / 1e6, 9);
  });
});
