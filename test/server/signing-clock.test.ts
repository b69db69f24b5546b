// ModelArts and PAI-DLC sign every request with the time, and both platforms refuse a signature
// more than 15 minutes off their own clock. The adapters sign with the server's clock (the one
// RuntimeOptions.clock gives): a runtime on a test clock a long way from the wall clock, beside
// simulators on that same clock (as a platform and a server agree on the time), is answered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { startModelArtsDemo } from '../../src/simulators/modelarts/demo.js';
import { startPaiDlcDemo } from '../../src/simulators/pai-dlc/demo.js';
import type { DemoProvider } from '../../src/simulators/demo.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { gql } from '../collect/helpers.js';

// Months before any date this test runs on: a wall-clock signature is far outside the 15 minutes.
const START = Date.UTC(2025, 5, 1, 12, 0, 0);

describe('signed requests on the server clock', () => {
  let db: TestDatabase;
  let rt: Runtime;
  let demos: DemoProvider[];
  let t = START;
  const clock = () => t;

  beforeAll(async () => {
    demos = [await startModelArtsDemo({ now: clock, anchorMs: START - 6 * 3_600_000 }), await startPaiDlcDemo({ now: clock, anchorMs: START - 6 * 3_600_000 })];
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      demos.map((d) => d.config),
      { env: Object.assign({}, ...demos.map((d) => d.secrets)), clock },
    );
  }, 60_000);

  afterAll(async () => {
    await rt?.close();
    await Promise.all((demos ?? []).map((d) => d.close()));
    await db?.drop();
  });

  it('ModelArts and PAI-DLC answer a runtime whose clock is months from the wall clock', async () => {
    expect(Date.now() - START).toBeGreaterThan(30 * 86_400_000);
    const jobs = /* GraphQL */ `{ jobs(first: 200) { totalCount sourceErrors { code message } nodes { id status provider { kind } } } }`;
    const listed = await gql(rt, jobs);
    expect(listed.errors).toBeUndefined();
    expect(listed.data.jobs.sourceErrors).toEqual([]);
    const kinds = new Set(listed.data.jobs.nodes.map((j: { provider: { kind: string } }) => j.provider.kind));
    expect(kinds).toEqual(new Set(['MODELARTS', 'PAI_DLC']));

    // A metrics call of a running job of each (signed too), a little later on the same clock.
    t += 10 * 60_000;
    for (const kind of ['MODELARTS', 'PAI_DLC']) {
      const job = listed.data.jobs.nodes.find((j: { status: string; provider: { kind: string } }) => j.provider.kind === kind && j.status === 'RUNNING');
      expect(job, `a running ${kind} job`).toBeDefined();
      const read = await gql(
        rt,
        `query ($id: ID!) { job(id: $id) { metrics(names: [CPU_UTILIZATION]) { points { value } freshness { error { code message } } } } }`,
        {
          id: job.id,
        },
      );
      expect(read.errors, kind).toBeUndefined();
      for (const series of read.data.job.metrics) expect(series.freshness.error, kind).toBeNull();
    }
  }, 120_000);
});
