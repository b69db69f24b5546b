// compareRuns on the demo: a Runicorn run beside a Primus-Lens run by step, system metrics of two
// cloud platforms by time and by time since start, coded refusals, a missing job failing alone,
// and the grid costing the same statements for two runs or four.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type GqlResult, graphqlData, postGraphql, startRuntimeOn } from '../support/runtime.js';

const COMPARE = `query($ids: [ID!]!, $metrics: [CompareMetric!]!, $axis: CompareAxis, $max: Int) {
  compareRuns(jobIds: $ids, metrics: $metrics, xAxis: $axis, maxPoints: $max) {
    id xAxis x
    runs { id jobId job { id name provider { kind } } error { code message stale }
           series { id metric training unit values points } } } }`;

describe('compareRuns (demo)', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let jobs: { id: string; name: string; status: string; provider: { kind: string } }[];
  const gql = (query: string, variables?: Record<string, unknown>): Promise<GqlResult> => postGraphql(rt.url, query, variables);
  const ok = graphqlData(() => rt.url);
  const running = (kind: string) => jobs.find((j) => j.provider.kind === kind && j.status === 'RUNNING')!;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The demo's running jobs started hours before its anchor (default: the start of the UTC day),
    // so their histories grow through the day: by the afternoon the running Primus-Lens job passed
    // 10,000 steps and the step grid, capped at 10,000 buckets, no longer had a bucket per step.
    // An anchor an hour back gives every run the same length at any time of day.
    rt = await startRuntimeOn(db, null, { demoAnchorMs: Date.now() - 3_600_000 });
    jobs = (await ok(`{ jobs(first: 500) { edges { node { id name status provider { kind } } } } }`)).jobs.edges.map((e: any) => e.node);
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  it("puts a Runicorn run and a Primus-Lens run on one step grid, each value the run's own", async () => {
    const runicorn = jobs.find((j) => j.provider.kind === 'RUNICORN' && j.name === 'baseline')!;
    const lens = running('PRIMUS_LENS');
    const ids = [runicorn.id, lens.id];
    const c = (await ok(COMPARE, { ids, metrics: [{ training: 'loss' }], axis: 'STEP', max: 10000 })).compareRuns;
    expect(c.xAxis).toBe('STEP');
    expect(c.runs.map((r: any) => r.job.provider.kind)).toEqual(['RUNICORN', 'PRIMUS_LENS']);
    expect(c.x).toEqual([...c.x].sort((a: number, b: number) => a - b));
    for (const run of c.runs) {
      expect(run.error).toBeNull();
      const [loss] = run.series;
      expect(loss).toMatchObject({ metric: 'loss', training: true, unit: 'NONE' });
      expect(loss.values).toHaveLength(c.x.length);
      expect(loss.points).toBeGreaterThan(1);
      // With a bucket per step, the run's values on the grid are its own points, step for step.
      const own = (
        await ok(`query($id: ID!) { job(id: $id) { trainingMetrics(names: ["loss"], maxPoints: 10000) { points { step value } } } }`, { id: run.jobId })
      ).job.trainingMetrics;
      const expected = new Map<number, number[]>();
      for (const s of own) for (const p of s.points) if (p.value !== null) expected.set(p.step, [...(expected.get(p.step) ?? []), p.value]);
      const onGrid = new Map<number, number>();
      loss.values.forEach((v: number | null, i: number) => {
        if (v !== null) onGrid.set(c.x[i], v);
      });
      expect([...onGrid.keys()].sort((a, b) => a - b)).toEqual([...expected.keys()].sort((a, b) => a - b));
      for (const [step, vs] of expected) expect(onGrid.get(step)).toBeCloseTo(vs.reduce((a, b) => a + b, 0) / vs.length, 9);
    }
    // Steps one run has and the other has not are null on the other's line, not invented.
    const [a, b] = c.runs.map((r: any) => r.series[0].values as (number | null)[]);
    expect(a.some((v: number | null, i: number) => v !== null && b[i] === null) || b.some((v: number | null, i: number) => v !== null && a[i] === null)).toBe(
      true,
    );

    // Downsampled: at most maxPoints buckets, the same runs.
    const small = (await ok(COMPARE, { ids, metrics: [{ training: 'loss' }], axis: 'STEP', max: 20 })).compareRuns;
    expect(small.x.length).toBeLessThanOrEqual(20);
    expect(small.x.length).toBeGreaterThan(1);

    // The comparison and its parts are Relay nodes: asked again by id, the same answer.
    const again = (await ok(`query($id: ID!) { node(id: $id) { ... on RunComparison { x runs { series { values } } } } }`, { id: small.id })).node;
    expect(again.x).toEqual(small.x);
  }, 120_000);

  it('aligns system metrics of two platforms by time and by time since each run started', async () => {
    const ids = [running('BASETEN').id, running('PAI_DLC').id];
    for (const axis of ['TIME', 'RELATIVE_TIME']) {
      const c = (await ok(COMPARE, { ids, metrics: [{ system: 'GPU_UTILIZATION' }], axis, max: 60 })).compareRuns;
      expect(c.x.length).toBeGreaterThan(1);
      expect(c.x.length).toBeLessThanOrEqual(60);
      expect(c.x).toEqual([...c.x].sort((p: number, q: number) => p - q));
      for (const run of c.runs) {
        expect(run.error, `${axis} ${run.jobId}`).toBeNull();
        const [util] = run.series;
        expect(util).toMatchObject({ metric: 'GPU_UTILIZATION', training: false, unit: 'RATIO' });
        expect(util.points).toBeGreaterThan(0);
        for (const v of util.values) if (v !== null) expect(v).toBeGreaterThanOrEqual(0), expect(v).toBeLessThanOrEqual(1);
      }
      if (axis === 'TIME') expect(c.x[0]).toBeGreaterThan(Date.UTC(2020, 0, 1));
      else expect(c.x[0]).toBeLessThan(30 * 86_400);
    }
  }, 120_000);

  it('refuses what it cannot draw, with a code, and lets a missing job fail alone', async () => {
    const code = async (vars: Record<string, unknown>) => (await gql(COMPARE, vars)).errors?.map((e) => [e.extensions?.code, e.extensions?.argument]);
    const one = [running('BASETEN').id];
    expect(await code({ ids: one, metrics: [{ system: 'GPU_UTILIZATION' }], axis: 'STEP' })).toEqual([['BAD_INPUT', 'xAxis']]);
    expect(await code({ ids: one, metrics: [{ system: 'GPU_UTILIZATION', training: 'loss' }], axis: 'TIME' })).toEqual([['BAD_INPUT', 'metrics']]);
    expect(await code({ ids: [], metrics: [{ training: 'loss' }] })).toEqual([['BAD_INPUT', 'jobIds']]);
    const many = Array.from({ length: 21 }, (_, i) => `baseten-demo:job:x${i}`);
    expect(await code({ ids: many, metrics: [{ training: 'loss' }] })).toEqual([['BAD_INPUT', 'jobIds']]);
    expect(await code({ ids: one, metrics: [{ training: 'loss' }], max: 0 })).toEqual([['BAD_INPUT', 'maxPoints']]);

    const lens = running('PRIMUS_LENS');
    const c = (await ok(COMPARE, { ids: [lens.id, 'primus-lens-demo:job:no-such-workload'], metrics: [{ training: 'loss' }], axis: 'STEP', max: 50 }))
      .compareRuns;
    expect(c.runs[0].error).toBeNull();
    expect(c.runs[0].series[0].points).toBeGreaterThan(0);
    expect(c.runs[1]).toMatchObject({ job: null, error: { code: 'NOT_FOUND', stale: false } });
    expect(c.runs[1].series[0].values.every((v: number | null) => v === null)).toBe(true);
  }, 120_000);

  it('costs the same SQL statements for two runs or four, warm', async () => {
    const lens = jobs.filter((j) => j.provider.kind === 'PRIMUS_LENS').slice(0, 2);
    const runicorn = jobs.filter((j) => j.provider.kind === 'RUNICORN').slice(0, 2);
    const count = async (ids: string[]) => {
      await ok(COMPARE, { ids, metrics: [{ training: 'loss' }], axis: 'STEP', max: 100 }); // warm the cache
      const before = rt.database.statementCount();
      await ok(COMPARE, { ids, metrics: [{ training: 'loss' }], axis: 'STEP', max: 100 });
      return rt.database.statementCount() - before;
    };
    const two = await count([lens[0]!.id, runicorn[0]!.id]);
    const four = await count([...lens, ...runicorn].map((j) => j.id));
    expect(four).toBe(two);
  }, 120_000);
});
