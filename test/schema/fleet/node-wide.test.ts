// An older Primus-Lens (no workload-scoped unified route) gives only node-wide device series: every
// GPU of the node, whichever workload holds it. They are kept as such (meta.nodeWide) and must
// never count as the workload's GPUs in the fleet's GPU-hours: a 4-GPU workload on an 8-GPU node
// is covered by at most its 4 GPUs' hours, from its own per-node series.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/server/runtime.js';
import { startPrimusLensSimulator, type PrimusLensSimulator } from '../../../src/simulators/primus-lens/server.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { postGraphql, startRuntimeOn } from '../../support/runtime.js';

const H = 3600_000;
const NOW = Date.now();
const ANCHOR = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth(), new Date(NOW).getUTCDate());

describe('fleet over node-wide device series (older Primus-Lens)', () => {
  let sim: PrimusLensSimulator;
  let db: TestDatabase;
  let rt: Runtime;

  beforeAll(async () => {
    sim = await startPrimusLensSimulator({ anchorMs: ANCHOR, now: () => NOW, unifiedTrainingMetrics: false });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'lens', kind: 'PRIMUS_LENS', baseUrl: sim.baseUrl }], { clock: () => NOW });
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it("credits a workload only its own GPUs' hours", async () => {
    const vit = sim.fleet.workloads.find((w) => w.name === 'vit-h-finetune' && w.cluster === 'gpu-cluster-a')!;
    const id = `lens:job:${vit.uid}`;
    // The job's own series first (this is what caches the node-wide device series beside them).
    const series = await postGraphql(
      rt.url,
      `query($id: ID!) { job(id: $id) { gpuCount metrics(names: [GPU_UTILIZATION], scope: GPU, maxPoints: 50) { id } } }`,
      { id },
    );
    expect(series.errors).toBeUndefined();
    const gpuCount = series.data.job.gpuCount as number;
    expect(gpuCount).toBe(4);
    const from = new Date(NOW - 2 * H);
    const to = new Date(NOW - H);
    const res = await postGraphql(
      rt.url,
      `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to) { jobs { job { id } allocatedGpuHours coveredGpuHours usedGpuHours } } }`,
      { from: from.toISOString(), to: to.toISOString() },
    );
    expect(res.errors).toBeUndefined();
    const row = res.data.fleet.jobs.find((j: { job: { id: string } | null }) => j.job?.id === id);
    expect(row, 'the workload in the fleet').toBeDefined();
    expect(row.allocatedGpuHours).toBeCloseTo(gpuCount, 6);
    // Covered: at most its own GPUs for the hour (the node has 8; the other 4 are another workload's).
    expect(row.coveredGpuHours).toBeLessThanOrEqual(row.allocatedGpuHours + 1e-9);
    expect(row.coveredGpuHours).toBeGreaterThan(0);
  });
});
