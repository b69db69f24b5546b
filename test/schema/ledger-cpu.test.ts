// CPU-only jobs in the ledger, over the ModelArts simulator (its cpu-feature-etl job runs on one
// node of flavor modelarts.vm.cpu.8u, no accelerator): with a per-node-hour price it has a cost
// (nodes x hours x price, idle share null and why), it is a row of the fleet and a member of every
// group, and the groups still add up to the total to the micro-unit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_LEDGER_SETTINGS } from '../../src/domain/ledger.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startModelArtsSimulator, type ModelArtsSimulator } from '../../src/simulators/modelarts/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { graphqlData, startRuntimeOn } from '../support/runtime.js';

const H = 3_600_000;
const ANCHOR = Date.UTC(2025, 2, 1);
const NOW = ANCHOR + 30 * 60_000;
const NODE_HOUR = 0.4;
const micros = (x: number) => Math.round(x * 1e6);

describe('the ledger of CPU-only jobs', () => {
  let sim: ModelArtsSimulator;
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    sim = await startModelArtsSimulator({ now: () => NOW, anchorMs: ANCHOR });
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      [{ id: 'ma', kind: 'MODELARTS', baseUrl: sim.url, projectId: sim.projectId, accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK', timeoutSeconds: 10 }],
      {
        env: { AK: sim.credentials.accessKeyId, SK: sim.credentials.secretAccessKey },
        clock: () => NOW,
        resilience: { retries: 0 },
        config: {
          ledger: {
            ...NO_LEDGER_SETTINGS,
            prices: [
              { provider: 'ma', accelerator: '*', perAcceleratorHour: 2, currency: 'USD' },
              { provider: 'ma', perNodeHour: NODE_HOUR, currency: 'USD' },
            ],
          },
        },
      },
    );
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  const gql = graphqlData(() => rt.url);

  it('bills a CPU-only job per node-hour: nodes x hours x price, the idle share unknown and said so', async () => {
    const data = await gql(`{ jobs(first: 100, filter: { nameContains: "cpu-feature-etl" }) { nodes { id gpuCount startedAt status
      cost { amount idleAmount currency basis unitPrice billedHours reasonCodes reason } } } }`);
    const etl = data.jobs.nodes[0];
    expect(etl).toMatchObject({ status: 'RUNNING' });
    expect(etl.gpuCount ?? 0).toBe(0);
    // 1 node from its start to the server's clock
    const hours = (NOW - Date.parse(etl.startedAt)) / H;
    expect(etl.cost).toMatchObject({ currency: 'USD', basis: 'NODE_HOUR', unitPrice: NODE_HOUR, idleAmount: null, reasonCodes: ['NOT_MEASURED'] });
    expect(etl.cost.billedHours).toBeCloseTo(hours, 12);
    expect(micros(etl.cost.amount)).toBe(Math.round(hours * NODE_HOUR * 1e6));
    expect(etl.cost.reason).toMatch(/CPU-only/);
  }, 120_000);

  it("counts CPU-only jobs in the fleet's groups, which add up to the total exactly", async () => {
    const group = 'jobCount allocatedGpuHours cost { amount pricedAmount idleAmount currency unpricedJobCount reasonCodes }';
    const data = await gql(
      `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to) {
        jobs(first: 500) { job { id name gpuCount } allocatedGpuHours wasteGpuHours cost { amount idleAmount basis billedHours } }
        utilization { total { ${group} } byProvider { ${group} } byProject { ${group} } byOwner { ${group} } byGpuModel { gpuModel ${group} } } } }`,
      { from: new Date(ANCHOR - H).toISOString(), to: new Date(ANCHOR).toISOString() },
    );
    const f = data.fleet;
    // The ETL job held one node for the whole window: 1 node-hour x 0.4 USD, no GPU-hours, no waste.
    const etl = f.jobs.find((r: any) => r.job.name === 'cpu-feature-etl');
    expect(etl).toMatchObject({ allocatedGpuHours: 0, wasteGpuHours: 0, cost: { amount: NODE_HOUR, idleAmount: null, basis: 'NODE_HOUR', billedHours: 1 } });
    const total = f.utilization.total;
    // Every job priced: the total is the exact sum of the jobs' amounts, the CPU job's among them;
    // its idle share is not known, so neither is the total's.
    expect(total.cost).toMatchObject({ currency: 'USD', unpricedJobCount: 0, idleAmount: null, reasonCodes: ['NOT_MEASURED'] });
    expect(total.jobCount).toBe(f.jobs.length);
    expect(micros(total.cost.amount)).toBe(f.jobs.reduce((a: number, r: any) => a + micros(r.cost.amount), 0));
    expect(f.jobs.some((r: any) => r.allocatedGpuHours > 0)).toBe(true);
    for (const by of ['byProvider', 'byProject', 'byOwner', 'byGpuModel']) {
      const rows = f.utilization[by] as any[];
      expect(
        rows.reduce((a, r) => a + micros(r.cost.amount), 0),
        by,
      ).toBe(micros(total.cost.amount));
      expect(
        rows.reduce((a, r) => a + r.jobCount, 0),
        by,
      ).toBe(total.jobCount);
    }
    // The CPU job's group by model is the "unknown" one (it names no accelerator), billed by node.
    const unknown = f.utilization.byGpuModel.find((r: any) => r.gpuModel === 'unknown');
    expect(unknown.cost.amount).toBeGreaterThanOrEqual(NODE_HOUR);
  }, 120_000);
});
