// Every RUNNING demo job that holds accelerators (GPUs or NPUs) on Baseten, ModelArts and PAI-DLC
// answers utilization series with points on the first, cold query, each series' node set: the
// PAI-DLC quota and Lingjun jobs (CloudMonitor) and the ModelArts Ascend job included. Nothing has
// asked for Job.nodes before (the README's RunningEverywhere example hit exactly that).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startDemoProviders, type DemoProvider } from '../../src/simulators/demo.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';

const CLOUDS = ['BASETEN', 'MODELARTS', 'PAI_DLC'];

const QUERY = `{
  jobs(first: 200, filter: { statuses: [RUNNING], kinds: [BASETEN, MODELARTS, PAI_DLC] }) {
    edges { node { name gpuCount gpuType acceleratorKind provider { kind }
      metrics(names: [GPU_UTILIZATION, NPU_UTILIZATION], maxPoints: 20) { name scope node { name } points { value } } } }
  }
}`;

describe('demo: running jobs with accelerators', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let demo: DemoProvider[];

  beforeAll(async () => {
    demo = (await startDemoProviders()).filter((d) => CLOUDS.includes(d.config.kind));
    // Generous: a busy shared machine must not turn this into a time-out test.
    const providers = demo.map((d) => ({ ...d.config, timeoutSeconds: 30 }) as ProviderConfig);
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, providers, { env: Object.assign({}, ...demo.map((d) => d.secrets)) });
  });
  afterAll(async () => {
    await rt?.close();
    await Promise.all((demo ?? []).map((d) => d.close()));
    await db?.drop();
  });

  it('each has utilization points, and every series names its node, on the first cold query', async () => {
    const res = await rt.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: QUERY }),
    });
    const body = (await res.json()) as { data: any; errors?: unknown[] };
    expect(body.errors).toBeUndefined();
    const jobs = body.data.jobs.edges.map((e: any) => e.node);
    // A Baseten job's list entry names its GPU type; its total comes with the detail or the nodes.
    const holding = jobs.filter((j: any) => (j.gpuCount ?? 0) > 0 || (j.gpuCount === null && j.gpuType !== null));
    for (const kind of CLOUDS)
      expect(
        holding.some((j: any) => j.provider.kind === kind),
        kind,
      ).toBe(true);
    expect(holding.some((j: any) => j.acceleratorKind === 'NPU')).toBe(true);
    for (const job of holding) {
      const util = job.metrics.filter((s: any) => s.name === (job.acceleratorKind === 'NPU' ? 'NPU_UTILIZATION' : 'GPU_UTILIZATION'));
      expect(
        util.some((s: any) => s.points.some((p: any) => p.value !== null)),
        `${job.provider.kind} ${job.name} has utilization points`,
      ).toBe(true);
      for (const s of job.metrics) {
        if (s.scope !== 'JOB') expect(s.node, `${job.provider.kind} ${job.name} ${s.name} node`).not.toBeNull();
      }
    }
    const names = holding.map((j: any) => j.name);
    expect(names).toEqual(expect.arrayContaining(['llm-pretrain-lingjun', 'bert-finetune', 'pangu-ascend-pretrain']));
  });
});
