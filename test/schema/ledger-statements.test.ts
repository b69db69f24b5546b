// The ledger costs the same number of SQL statements for 1 job as for 9 (2 nodes x 4 GPUs each),
// cold (fetching through the read-through path) and warm, on a job page and on the fleet's groups,
// and asks upstream at most once per job: the batching rule of docs/architecture.md.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANCHOR, startTestServer, type TestServer } from '../support/runtime.js';

const PAGE = `query($filter: JobFilter) { jobs(first: 20, filter: $filter) { edges { node { id
  cost { id amount idleAmount currency reason } energy { kwh coverage reason } efficiency { utilization tensorActive mfu reason } } } } }`;
const PLAIN_PAGE = `query($filter: JobFilter) { jobs(first: 20, filter: $filter) { edges { node { id } } } }`;
const FLEET = `query($filter: JobFilter, $from: DateTime!, $to: DateTime!) { fleet(filter: $filter, from: $from, to: $to) { jobCount utilization {
  total { cost { amount idleAmount currency } energy { measuredKwh coverage } usefulWork { utilization mfu } }
  byProvider { cost { amount } } byProject { cost { amount } } byOwner { owner cost { amount } } byGpuModel { cost { amount } } } } }`;
const WINDOW = { from: new Date(ANCHOR - 2 * 3600_000).toISOString(), to: new Date(ANCHOR - 20 * 60_000).toISOString() };

describe('ledger query cost', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Jobs are named <project>-run-1 ... -run-9: "run-1" selects one of them.
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 9, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 4, statuses: ['TRAINING_JOB_RUNNING'] },
      config: {
        ledger: {
          prices: [{ provider: 'bt', accelerator: '*', perAcceleratorHour: 3, currency: 'USD' }],
          averagePowerWatts: {},
          peakTflops: {},
          precision: 'BF16',
        },
      },
    });
    await s.gql(`{ jobs(first: 1) { edges { node { id } } } }`); // the job list itself is synced once
  });
  afterAll(() => s.close());

  const statementsOf = async (query: string, variables: Record<string, unknown>) => {
    const before = s.runtime.database.statementCount();
    const res = await s.gql(query, variables);
    return { res, statements: s.runtime.database.statementCount() - before };
  };

  async function run(query: string, variables: Record<string, unknown>, jobs: number) {
    // A job page's own statements depend on its filter and the lists' state, not on the ledger:
    // the same page without the ledger's fields, just before, is taken off.
    const page = query === PAGE ? (await statementsOf(PLAIN_PAGE, variables)).statements : 0;
    s.sim.resetStats();
    const { res, statements: all } = await statementsOf(query, variables);
    const statements = all - page;
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const counted = res.data.jobs ? res.data.jobs.edges.length : res.data.fleet.jobCount;
    expect(counted).toBe(jobs);
    if (res.data.jobs) for (const e of res.data.jobs.edges) expect(e.node.cost.amount).toBeGreaterThan(0);
    else expect(res.data.fleet.utilization.total.cost.amount).toBeGreaterThan(0);
    return { sql: statements, metricsCalls: s.sim.count('getMetrics') };
  }

  it('is a fixed number of statements per job page whatever its size', async () => {
    const smallCold = await run(PAGE, { filter: { nameContains: 'run-1' } }, 1);
    const smallWarm = await run(PAGE, { filter: { nameContains: 'run-1' } }, 1);
    const largeCold = await run(PAGE, { filter: null }, 9);
    const largeWarm = await run(PAGE, { filter: null }, 9);
    expect(largeCold.sql).toBe(smallCold.sql);
    expect(largeWarm.sql).toBe(smallWarm.sql);
    expect(smallCold.metricsCalls).toBe(1);
    expect(largeCold.metricsCalls).toBe(8);
    expect(largeWarm.metricsCalls).toBe(0);
    // Warm: the fetch records, the jobs read again (topology may have taught GPU counts), and the
    // ledger's two measuring statements.
    expect(largeWarm.sql).toBeLessThanOrEqual(4);
    console.log(`ledger statements on a job page (beyond the page's own): cold ${largeCold.sql}, warm ${largeWarm.sql} (1 and 9 jobs alike)`);
  }, 120_000);

  it('orders the run search by WASTE in its page statement: as many statements as COST, for 1 job or 9', async () => {
    const ordered = (field: string) => `query($filter: JobFilter) { jobs(first: 20, filter: $filter, orderBy: { field: ${field} }) { edges { node { id } } } }`;
    const count = async (field: string, filter: unknown, jobs: number) => {
      const { res, statements } = await statementsOf(ordered(field), { filter });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      expect(res.data.jobs.edges).toHaveLength(jobs);
      return statements;
    };
    // Warm the lists (and every job's readings, which the key reads from the cache) first.
    await run(PAGE, { filter: null }, 9);
    const small = await count('WASTE', { nameContains: 'run-1' }, 1);
    const large = await count('WASTE', null, 9);
    expect(large).toBe(small);
    expect(large).toBe(await count('COST', null, 9));
    console.log(`run search ordered by WASTE: ${large} statements (1 and 9 jobs alike, as COST)`);
  }, 120_000);

  it('fits the cost limit: a full page of jobs with every ledger field', async () => {
    const res = await s.gql(PAGE.replace('first: 20', 'first: 500'), { filter: null });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const cost = (res as { extensions?: { cost?: { estimated: number; limit: number } } }).extensions?.cost;
    // Each job's three figures are a few dozen values: 500 of them stay far under the limit.
    expect(cost!.estimated).toBeLessThan(cost!.limit / 10);
    console.log(`ledger page of 500: estimated cost ${cost!.estimated} of ${cost!.limit}`);
  }, 120_000);

  it("is a fixed number of statements over the fleet's groups whatever the fleet's size", async () => {
    const small = await run(FLEET, { ...WINDOW, filter: { nameContains: 'run-1' } }, 1);
    const smallWarm = await run(FLEET, { ...WINDOW, filter: { nameContains: 'run-1' } }, 1);
    const large = await run(FLEET, { ...WINDOW, filter: null }, 9);
    const largeWarm = await run(FLEET, { ...WINDOW, filter: null }, 9);
    expect(large.sql).toBe(small.sql);
    expect(largeWarm.sql).toBe(smallWarm.sql);
    expect(largeWarm.metricsCalls).toBe(0);
    console.log(`ledger fleet statements: cold ${large.sql}, warm ${largeWarm.sql} (1 and 9 jobs alike)`);
    // Cost alone reads the GPU-hours the fleet measures anyway: not one statement more.
    const plain = `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to) { jobCount utilization { total { allocatedGpuHours } byProject { usedGpuHours } } jobs { wasteGpuHours } } }`;
    const withCost = plain
      .replace('total { allocatedGpuHours }', 'total { allocatedGpuHours cost { amount idleAmount } }')
      .replace('jobs { wasteGpuHours }', 'jobs { wasteGpuHours cost { amount } }');
    await statementsOf(plain, WINDOW);
    const before = await statementsOf(plain, WINDOW);
    const after = await statementsOf(withCost, WINDOW);
    expect(after.res.errors).toBeUndefined();
    expect(after.res.data.fleet.utilization.total.cost.amount).toBeGreaterThan(0);
    expect(after.statements).toBe(before.statements);
  }, 120_000);
});
