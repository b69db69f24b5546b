// Useful work where the platform reports GPU profiling (PAI-DLC's CloudMonitor card metrics):
// Job.efficiency's tensorActive and smActive are the time-weighted (trapezoid) means of the job's
// per-card GPU_TENSOR_ACTIVE and GPU_SM_ACTIVE series, recomputed here from the points the graph
// answers for the same window at the same resolution; PAI-DLC reports no model TFLOP/s, so MFU is
// null with NO_FLOPS_SERIES.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRuntime, type Runtime } from '../../src/server/runtime.js';
import { startPaiDlcSimulator, type PaiDlcSimulator } from '../../src/simulators/pai-dlc/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/** Trapezoid over consecutive readings at most 2 median steps apart (docs/ledger.md): [integral, covered ms]. */
function trapezoid(points: { timestamp: string; value: number | null }[]): [number, number] {
  const ts = points.map((p) => Date.parse(p.timestamp));
  const gaps = ts
    .slice(1)
    .map((t, i) => t - ts[i]!)
    .sort((a, b) => a - b);
  if (gaps.length === 0) return [0, 0];
  const mid = gaps.length / 2;
  const step = gaps.length % 2 ? gaps[Math.floor(mid)]! : (gaps[mid - 1]! + gaps[mid]!) / 2;
  let integral = 0;
  let covered = 0;
  for (let i = 0; i + 1 < points.length; i++) {
    const [a, b] = [points[i]!, points[i + 1]!];
    const dt = ts[i + 1]! - ts[i]!;
    if (a.value === null || b.value === null || dt > 2 * step) continue;
    integral += ((a.value + b.value) / 2) * dt;
    covered += dt;
  }
  return [integral, covered];
}

describe('the ledger over PAI-DLC card metrics', () => {
  let sim: PaiDlcSimulator;
  let db: TestDatabase;
  let rt: Runtime;

  // PAI-DLC signs requests with the wall clock, so the simulator runs on it too.
  beforeAll(async () => {
    sim = await startPaiDlcSimulator({});
    db = await createTestDatabase();
    rt = await startRuntime({
      config: {
        port: 0,
        host: '127.0.0.1',
        databaseUrl: db.databaseUrl,
        dataDir: db.dataDir,
        redisUrl: null,
        logLevel: 'silent',
        providers: [
          { id: 'dlc', kind: 'PAI_DLC', baseUrl: sim.url, regionId: sim.regionId, accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK', timeoutSeconds: 10 },
        ],
      },
      env: { AK: sim.accessKeyId, SK: sim.accessKeySecret },
      logger: pino({ level: 'silent' }),
    });
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  async function gql(query: string, variables?: Record<string, unknown>) {
    const res = await rt.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data: any; errors?: unknown };
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    return body.data;
  }

  it('gives tensor-pipe and SM activity as the time-weighted means of the card series', async () => {
    const listed = await gql(`{ jobs(first: 50, filter: { statuses: [SUCCEEDED, FAILED, STOPPED] }) { nodes { id gpuCount startedAt finishedAt } } }`);
    const finished = listed.jobs.nodes.filter((j: any) => j.gpuCount > 0 && j.startedAt && j.finishedAt);
    expect(finished.length).toBeGreaterThan(0);
    let checked = 0;
    for (const j of finished) {
      const window = { from: j.startedAt, to: j.finishedAt };
      const data = await gql(
        `query($id: ID!, $from: DateTime!, $to: DateTime!) { job(id: $id) {
          efficiency(from: $from, to: $to) { tensorActive smActive mfu reasonCodes }
          metrics(names: [GPU_TENSOR_ACTIVE, GPU_SM_ACTIVE], scope: GPU, from: $from, to: $to, maxPoints: 500) { name points { timestamp value } } } }`,
        { id: j.id, ...window },
      );
      const e = data.job.efficiency;
      expect(e.mfu).toBeNull();
      expect(e.reasonCodes).toContain('NO_FLOPS_SERIES');
      const series = data.job.metrics ?? [];
      for (const [name, field] of [
        ['GPU_TENSOR_ACTIVE', 'tensorActive'],
        ['GPU_SM_ACTIVE', 'smActive'],
      ] as const) {
        const mine = series.filter((s: any) => s.name === name);
        if (mine.length === 0) {
          expect(e[field]).toBeNull();
          continue;
        }
        const [integral, covered] = mine.map((s: any) => trapezoid(s.points)).reduce((a: number[], b: number[]) => [a[0]! + b[0]!, a[1]! + b[1]!], [0, 0]);
        if (covered === 0) continue;
        expect(e[field], `${j.id} ${field}`).toBeCloseTo(integral / covered, 9);
        expect(e[field]).toBeGreaterThanOrEqual(0);
        expect(e[field]).toBeLessThanOrEqual(1);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  }, 180_000);
});
