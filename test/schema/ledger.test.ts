// The ledger in the graph, over the Primus-Lens simulator (per-GPU power, achieved TFLOP/s): a
// job's cost is its held GPU-hours x the configured price, to the micro-unit; energy comes with its
// coverage; MFU is the achieved TFLOP/s over the MI300X's dense BF16 peak; jobs that cannot be
// counted say why; the fleet's groups add up to its total exactly; a figure's id answers Query.node.
// (Prices missing or in mixed currencies: test/store/ledger.test.ts.)
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_LEDGER_SETTINGS } from '../../src/domain/ledger.js';
import type { Runtime } from '../../src/server/runtime.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { startPrimusLensSimulator, type PrimusLensSimulator } from '../../src/simulators/primus-lens/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { graphqlData, postGraphql, startRuntimeOn } from '../support/runtime.js';

const H = 3600_000;
const NOW = Date.now();
const ANCHOR = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth(), new Date(NOW).getUTCDate());
const MI300X_PRICE = 2.75;

const JOB_FIELDS = `id gpuType gpuCount status startedAt finishedAt
  cost { id amount idleAmount currency basis unitPrice billedHours unpricedJobCount reason reasonCodes }
  energy { id kwh measuredKwh estimatedKwh coverage estimated reason reasonCodes }
  efficiency { id heldAcceleratorHours usedAcceleratorHours tensorActive smActive achievedTflops acceleratorModel peakTflops mfu mfu8: mfu(precision: FP8) reason reasonCodes }`;

const micros = (x: number) => Math.round(x * 1e6);

describe('the ledger over Primus-Lens', () => {
  /** The server's clock: NOW until the last test moves it on to make the cache due. */
  let now = NOW;
  let sim: PrimusLensSimulator;
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    sim = await startPrimusLensSimulator({ anchorMs: ANCHOR, now: () => NOW });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'lens', kind: 'PRIMUS_LENS', baseUrl: sim.baseUrl }], {
      clock: () => now,
      resilience: { retries: 0 },
      config: {
        ledger: { ...NO_LEDGER_SETTINGS, prices: [{ provider: 'lens', accelerator: 'MI300X', perAcceleratorHour: MI300X_PRICE, currency: 'USD' }] },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  const gql = graphqlData(() => rt.url);

  it('prices, measures and explains every job', async () => {
    const data = await gql(`{ jobs(first: 50) { edges { node { ${JOB_FIELDS} } } } }`);
    const jobs = data.jobs.edges.map((e: { node: any }) => e.node);
    // Running jobs count to the server's clock (NOW); Lens gives no end for finished ones.
    const counted = jobs.filter((j: any) => j.status === 'RUNNING' && j.gpuCount > 0);
    expect(counted.length).toBeGreaterThan(0);
    for (const j of counted) {
      const hours = (NOW - Date.parse(j.startedAt)) / H;
      expect(j.efficiency.heldAcceleratorHours).toBeCloseTo(j.gpuCount * hours, 9);
      expect(j.gpuType).toMatch(/mi300x/i);
      // held GPU-hours x price, rounded once to the micro-unit
      expect(micros(j.cost.amount)).toBe(Math.round(j.gpuCount * hours * MI300X_PRICE * 1e6));
      expect(j.cost).toMatchObject({ currency: 'USD', basis: 'ACCELERATOR_HOUR', unitPrice: MI300X_PRICE, unpricedJobCount: 0, reason: null });
      const idle = (j.efficiency.heldAcceleratorHours - j.efficiency.usedAcceleratorHours) * MI300X_PRICE;
      expect(Math.abs(j.cost.idleAmount - idle)).toBeLessThanOrEqual(1e-6);
      // Lens reports power per GPU: measured, with its coverage; no average power is configured,
      // so a job not wholly covered has no total kWh, and says why.
      expect(j.energy.measuredKwh).toBeGreaterThan(0);
      expect(j.energy.coverage).toBeGreaterThan(0.9);
      expect(j.energy.coverage).toBeLessThanOrEqual(1);
      expect(j.energy.estimated).toBe(false);
      if (j.energy.coverage < 1) expect(j.energy).toMatchObject({ kwh: null, estimatedKwh: null, reasonCodes: ['NO_POWER_READINGS'] });
      // PAI-DLC alone reports tensor and SM activity.
      expect(j.efficiency).toMatchObject({ tensorActive: null, smActive: null, acceleratorModel: 'MI300X' });
      expect(j.efficiency.reasonCodes).toContain('NOT_REPORTED');
      if (j.efficiency.achievedTflops !== null) {
        expect(j.efficiency.peakTflops).toBe(1307.4);
        expect(j.efficiency.mfu).toBeCloseTo(j.efficiency.achievedTflops / 1307.4, 12);
        expect(j.efficiency.mfu8).toBeCloseTo(j.efficiency.achievedTflops / 2614.9, 12);
      } else {
        expect(j.efficiency).toMatchObject({ mfu: null, reasonCodes: expect.arrayContaining(['NO_FLOPS_SERIES']) });
      }
    }
    expect(counted.some((j: any) => j.efficiency.mfu > 0)).toBe(true);
    // A pending job holds nothing; a finished one without an end cannot be counted: both say so.
    const pending = jobs.find((j: any) => j.status === 'PENDING');
    expect(pending.cost).toMatchObject({ amount: null, reasonCodes: ['NOT_STARTED'] });
    const endless = jobs.find((j: any) => ['SUCCEEDED', 'FAILED'].includes(j.status) && !j.finishedAt);
    expect(endless.cost).toMatchObject({ amount: null, reasonCodes: ['UNKNOWN_END'] });
    expect(endless.energy).toMatchObject({ kwh: null, reasonCodes: ['UNKNOWN_END'] });
    const withCost = counted[0];
    // A figure's id is a Node id: Query.node answers the same figure.
    const node = await gql(`query($id: ID!) { node(id: $id) { id ... on Cost { amount currency } } }`, { id: withCost.cost.id });
    expect(node.node).toEqual({ id: withCost.cost.id, amount: withCost.cost.amount, currency: 'USD' });
  }, 120_000);

  it("prices the fleet's groups so that they add up to the total exactly", async () => {
    // Labels as platforms with them leave them (Lens has none): a team on some jobs, one without a value.
    const ids = (await rowsOf<{ id: string }>(rt.database.db, sql`select id from jobs order by id`)).map((r) => r.id);
    for (const [i, id] of ids.entries()) {
      const labels = i % 3 === 0 ? { team: 'vision' } : i % 3 === 1 ? { team: null } : {};
      await rt.database.db.execute(sql`update jobs set labels = ${JSON.stringify(labels)}::jsonb where id = ${id}`);
    }
    const group = 'cost { amount idleAmount pricedAmount currency unpricedJobCount reasonCodes } energy { measuredKwh coverage } allocatedGpuHours';
    const data = await gql(
      `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to) { utilization {
        total { ${group} } byProvider { ${group} } byProject { ${group} } byOwner { owner ${group} } byGpuModel { gpuModel ${group} }
        byLabel(key: "team") { id labelKey labelValue hasLabel ${group} } } } }`,
      { from: new Date(NOW - 30 * 24 * H).toISOString(), to: new Date(NOW).toISOString() },
    );
    const u = data.fleet.utilization;
    expect(u.total.cost.amount).toBeGreaterThan(0);
    expect(u.total.cost.amount).toBe(u.total.cost.pricedAmount);
    expect(u.total.cost.currency).toBe('USD');
    expect(u.byLabel.map((r: any) => [r.labelValue, r.hasLabel]).sort()).toEqual([
      [null, false],
      [null, true],
      ['vision', true],
    ]);
    const labelGroup = u.byLabel.find((r: any) => r.labelValue === 'vision');
    const node = await gql(`query($id: ID!) { node(id: $id) { ... on GpuHours { labelValue cost { amount } } } }`, { id: labelGroup.id });
    expect(node.node).toEqual({ labelValue: 'vision', cost: { amount: labelGroup.cost.amount } });
    for (const by of ['byProvider', 'byProject', 'byOwner', 'byGpuModel', 'byLabel']) {
      const rows = u[by] as any[];
      const sum = (f: (r: any) => number | null) => rows.reduce((a, r) => a + micros(f(r) ?? 0), 0);
      expect(
        sum((r) => r.cost.amount),
        by,
      ).toBe(micros(u.total.cost.amount));
      expect(
        sum((r) => r.cost.idleAmount),
        by,
      ).toBe(micros(u.total.cost.idleAmount));
      expect(
        rows.reduce((a, r) => a + r.cost.unpricedJobCount, 0),
        by,
      ).toBe(u.total.cost.unpricedJobCount);
      // Energy is not rounded per job: its sums agree to float precision, not to the last bit.
      const kwh = rows.reduce((a, r) => a + (r.energy.measuredKwh ?? 0), 0);
      expect(Math.abs(kwh - u.total.energy.measuredKwh), by).toBeLessThan(1e-9 * u.total.energy.measuredKwh);
    }
  }, 120_000);

  it('orders the run search by cost and ranks the fleet by cost and waste', async () => {
    const data = await gql(`{ jobs(first: 50, orderBy: { field: COST, direction: DESC }) { edges { cursor node { id status cost { amount } } } } }`);
    const nodes = data.jobs.edges.map((e: { node: any }) => e.node);
    const amounts = nodes.map((n: any) => n.cost.amount as number | null);
    // Priced jobs first, most expensive first (the order's key is the job's life at the platform's
    // GPU count, as Job.cost counts it here); jobs without a cost last.
    const known = amounts.filter((a: number | null) => a !== null) as number[];
    expect(known.length).toBeGreaterThan(1);
    expect(amounts.slice(0, known.length)).toEqual([...known].sort((a, b) => b - a));
    expect(amounts.slice(known.length).every((a: number | null) => a === null)).toBe(true);
    // The next page continues the same order.
    const page1 = await gql(`{ jobs(first: 2, orderBy: { field: COST, direction: DESC }) { edges { node { id } } pageInfo { endCursor } } }`);
    const page2 = await gql(`query($after: String) { jobs(first: 2, after: $after, orderBy: { field: COST, direction: DESC }) { edges { node { id } } } }`, {
      after: page1.jobs.pageInfo.endCursor,
    });
    expect([...page1.jobs.edges, ...page2.jobs.edges].map((e: any) => e.node.id)).toEqual(nodes.slice(0, 4).map((n: any) => n.id));

    const window = { from: new Date(NOW - 30 * 24 * H).toISOString(), to: new Date(NOW).toISOString() };
    const ranked = await gql(
      `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to) {
        jobs { job { id } wasteGpuHours }
        byWaste: ranked(by: WASTE) { job { id } wasteGpuHours cost { amount } }
        byCost: ranked(by: COST) { job { id } cost { amount idleAmount } }
        byIdle: ranked(by: IDLE_COST) { job { id } cost { idleAmount } } } }`,
      window,
    );
    const f = ranked.fleet;
    expect(f.byWaste.map((r: any) => r.job.id)).toEqual(f.jobs.map((r: any) => r.job.id));
    const costs = f.byCost.map((r: any) => r.cost.amount);
    expect(costs).toEqual([...costs].sort((a: number, b: number) => b - a));
    const idle = f.byIdle.map((r: any) => r.cost.idleAmount);
    expect(idle).toEqual([...idle].sort((a: number, b: number) => b - a));
  }, 120_000);

  it("orders the run search by waste, Job.efficiency's held minus used over the life, and pages it", async () => {
    // The order reads the cache only: every job's life was measured (and cached) by the tests above.
    const q = `query($after: String, $first: Int) { jobs(first: $first, after: $after, orderBy: { field: WASTE, direction: DESC }) {
      edges { node { id status cost { reasonCodes } efficiency { heldAcceleratorHours usedAcceleratorHours } } } pageInfo { endCursor hasNextPage } } }`;
    const all = (await gql(q, { first: 50 })).jobs.edges.map((e: { node: any }) => e.node);
    // Known where the job held accelerators and had readings (NO_UTILIZATION says it had none).
    const waste = all.map((n: any) =>
      n.efficiency.heldAcceleratorHours > 0 && !n.cost.reasonCodes.includes('NO_UTILIZATION')
        ? n.efficiency.heldAcceleratorHours - n.efficiency.usedAcceleratorHours
        : null,
    );
    const known = waste.filter((w: number | null) => w !== null) as number[];
    expect(known.length).toBeGreaterThan(1);
    // Most waste first (the same readings, so the same figures up to float rounding), then the jobs without readings.
    for (let i = 1; i < known.length; i++) expect(known[i]!).toBeLessThanOrEqual(known[i - 1]! + 1e-9);
    expect(waste.slice(0, known.length).every((w: number | null) => w !== null)).toBe(true);
    expect(waste.slice(known.length).every((w: number | null) => w === null)).toBe(true);
    // Pages of 2 continue the same order to the end.
    const paged: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = (await gql(q, { first: 2, after })).jobs;
      paged.push(...page.edges.map((e: any) => e.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(paged).toEqual(all.map((n: any) => n.id));
  }, 120_000);

  it('says a figure was counted from the cache when the platform failed to refresh it', async () => {
    const listed = await gql(`{ jobs(first: 50, filter: { statuses: [RUNNING] }) { nodes { id } } }`);
    const id = listed.jobs.nodes[0].id;
    // The running job's series are due again a minute on; the platform then answers 503.
    now = NOW + 60_000;
    sim.inject({ kind: 'status', status: 503 });
    try {
      const res = await postGraphql(rt.url, `query($id: ID!) { job(id: $id) { cost { amount reasonCodes reason } energy { measuredKwh reasonCodes } } }`, {
        id,
      });
      const job = res.data.job;
      expect(job.cost.amount).toBeGreaterThan(0);
      expect(job.cost.reasonCodes).toContain('STALE');
      expect(job.cost.reason).toMatch(/counted from the cache/);
      expect(job.energy.reasonCodes).toContain('STALE');
    } finally {
      sim.clearFaults();
    }
  }, 120_000);
});
