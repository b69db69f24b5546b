// Fleet questions over a small simulated Baseten fleet (per-GPU series): the idle intervals, the
// GPU-hours allocated / covered / used and the waste ranking must equal what the simulator's
// ground truth (metricValue at every sample time) gives under the documented rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gpuGlobalId, jobGlobalId, projectGlobalId } from '../../../src/domain/ids.js';
import { parseDuration } from '../../../src/schema/duration.js';
import { metricValue, nodeIds, rankKeys, type FleetJob } from '../../../src/simulators/baseten/fleet.js';
import { ANCHOR, startTestServer, type TestServer } from '../../support/runtime.js';
import { IDLE_QUERY, USAGE_QUERY } from './queries.js';
import { coveredAndUsedMs, holdIntervals, idleRuns, type RefRun } from './reference.js';

const FROM = ANCHOR - 2 * 3600_000;
const TO = ANCHOR - 20 * 60_000;
// 100 minutes over the default 500 points per series: the store asks for the 15 s floor.
const STEP_MS = 15_000;
const THRESHOLD = 0.5;
const MIN_IDLE_S = 120;

interface Truth {
  gpuId: string;
  job: FleetJob;
  runs: RefRun[];
  coveredMs: number;
  usedMs: number;
}

function groundTruth(jobs: FleetJob[]): Truth[] {
  const out: Truth[] = [];
  for (const job of jobs) {
    nodeIds(job).forEach((node, n) => {
      for (const rank of rankKeys(job)) {
        const points = [];
        for (let t = Math.ceil(FROM / STEP_MS) * STEP_MS; t <= TO; t += STEP_MS) {
          points.push({ t, v: metricValue(job, n, 'gpu_utilization', Number(rank), t) });
        }
        const intervals = holdIntervals(points, FROM, TO, STEP_MS);
        const { covered, used } = coveredAndUsedMs(intervals);
        out.push({
          gpuId: gpuGlobalId('bt', job.id, node, Number(rank)),
          job,
          runs: idleRuns(intervals, THRESHOLD, MIN_IDLE_S * 1000),
          coveredMs: covered,
          usedMs: used,
        });
      }
    });
  }
  return out;
}

const H = 3600_000;

describe('fleet over per-GPU series (Baseten)', () => {
  let s: TestServer;
  let truth: Truth[];
  let fleet: any;
  const vars = { from: new Date(FROM).toISOString(), to: new Date(TO).toISOString(), threshold: THRESHOLD, min: `PT${MIN_IDLE_S / 60}M` };

  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 2, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
    });
    truth = groundTruth(s.sim.fleet.jobs);
    const idle = await s.gql(IDLE_QUERY, vars);
    expect(idle.errors, JSON.stringify(idle.errors)).toBeUndefined();
    const usage = await s.gql(USAGE_QUERY, vars);
    expect(usage.errors, JSON.stringify(usage.errors)).toBeUndefined();
    fleet = { ...idle.data.fleet, ...usage.data.fleet };
  });
  afterAll(() => s.close());

  it('finds exactly the idle intervals of every GPU, with their GPU-hours', () => {
    const expected = truth.filter((g) => g.runs.length > 0);
    // The fleet must actually have idle stretches for this to prove anything.
    expect(expected.length).toBeGreaterThan(2);
    expect(fleet.problems).toEqual([]);
    expect(fleet.jobCount).toBe(6);
    const answered = new Map<string, any>(fleet.idleGpus.map((g: any) => [g.gpu.id, g]));
    expect([...answered.keys()].sort()).toEqual(expected.map((g) => g.gpuId).sort());
    for (const g of expected) {
      const a = answered.get(g.gpuId)!;
      expect(a.job.id).toBe(jobGlobalId('bt', g.job.id));
      expect(a.provider).toEqual({ id: 'bt', kind: 'BASETEN' });
      expect(a.scope).toBe('GPU');
      expect(a.aggregate).toBe(false);
      expect(a.gpuCount).toBe(1);
      expect(a.model).toBe(g.job.instanceType.gpu_type);
      expect(a.intervals.map((i: any) => [i.from, i.to])).toEqual(g.runs.map((r) => [new Date(r.from).toISOString(), new Date(r.to).toISOString()]));
      a.intervals.forEach((i: any, k: number) => {
        const r = g.runs[k]!;
        expect(parseDuration(i.duration)).toBe((r.to - r.from) / 1000);
        expect(i.gpuHours).toBeCloseTo((r.to - r.from) / H, 9);
        expect(i.avgUtilization).toBeCloseTo(r.avg, 9);
        expect(i.maxUtilization).toBeCloseTo(r.max, 9);
        expect(i.maxUtilization).toBeLessThan(THRESHOLD);
        expect(parseDuration(i.duration)).toBeGreaterThanOrEqual(MIN_IDLE_S);
      });
      const idleMs = g.runs.reduce((x, r) => x + r.to - r.from, 0);
      expect(parseDuration(a.idleDuration)).toBe(idleMs / 1000);
      expect(a.idleGpuHours).toBeCloseTo(idleMs / H, 9);
    }
    // Most idle GPU-hours first.
    const hours = fleet.idleGpus.map((g: any) => g.idleGpuHours);
    hours.slice(1).forEach((h: number, i: number) => {
      expect(h).toBeLessThanOrEqual(hours[i] + 1e-12);
    });
  });

  it('rolls GPU-hours allocated, covered and used up by job, provider, project and GPU model', () => {
    const perJob = new Map<string, { alloc: number; covered: number; used: number; job: FleetJob }>();
    for (const g of truth) {
      const e = perJob.get(g.job.id) ?? { alloc: g.job.nodeCount * g.job.gpusPerNode * (TO - FROM), covered: 0, used: 0, job: g.job };
      e.covered += g.coveredMs;
      e.used += g.usedMs;
      perJob.set(g.job.id, e);
    }
    const sum = (xs: { alloc: number; covered: number; used: number }[]) =>
      xs.reduce((a, x) => ({ alloc: a.alloc + x.alloc, covered: a.covered + x.covered, used: a.used + x.used }), { alloc: 0, covered: 0, used: 0 });
    const total = sum([...perJob.values()]);
    const u = fleet.utilization;
    expect(u.total.jobCount).toBe(6);
    expect(u.total.allocatedGpuHours).toBeCloseTo(total.alloc / H, 9);
    expect(u.total.coveredGpuHours).toBeCloseTo(total.covered / H, 9);
    expect(u.total.usedGpuHours).toBeCloseTo(total.used / H, 9);
    expect(u.total.wasteGpuHours).toBeCloseTo((total.alloc - total.used) / H, 9);
    expect(u.total.coverage).toBeCloseTo(total.covered / total.alloc, 9);
    expect(u.total.utilization).toBeCloseTo(total.used / total.covered, 9);
    expect(u.total.efficiency).toBeCloseTo(total.used / total.alloc, 9);
    // Regular 15 s samples from `from` on: the only uncovered time is after the last sample of each GPU.
    expect(u.total.coverage).toBeGreaterThan(0.99);

    expect(u.byProvider).toHaveLength(1);
    expect(u.byProvider[0].provider.id).toBe('bt');
    expect(u.byProvider[0].usedGpuHours).toBeCloseTo(total.used / H, 9);

    const byProject = new Map<string, ReturnType<typeof sum> & { n: number }>();
    const byModel = new Map<string, ReturnType<typeof sum> & { n: number }>();
    for (const e of perJob.values()) {
      for (const [map, key] of [
        [byProject, projectGlobalId('bt', e.job.projectId)],
        [byModel, e.job.instanceType.gpu_type!],
      ] as const) {
        const prev = map.get(key) ?? { alloc: 0, covered: 0, used: 0, n: 0 };
        map.set(key, { ...sum([prev, e]), n: prev.n + 1 });
      }
    }
    expect(u.byProject).toHaveLength(byProject.size);
    for (const p of u.byProject) {
      const e = byProject.get(p.project.id)!;
      expect(p.jobCount).toBe(e.n);
      expect(p.allocatedGpuHours).toBeCloseTo(e.alloc / H, 9);
      expect(p.usedGpuHours).toBeCloseTo(e.used / H, 9);
    }
    expect(u.byGpuModel.map((m: any) => m.gpuModel).sort()).toEqual([...byModel.keys()].sort());
    for (const m of u.byGpuModel) {
      expect(m.usedGpuHours).toBeCloseTo(byModel.get(m.gpuModel)!.used / H, 9);
      expect(m.jobCount).toBe(byModel.get(m.gpuModel)!.n);
    }

    // Jobs ranked by waste, each with its own figures.
    const ranked = [...perJob.values()].sort((a, b) => b.alloc - b.used - (a.alloc - a.used));
    expect(fleet.jobs.map((j: any) => j.job.id)).toEqual(ranked.map((e) => jobGlobalId('bt', e.job.id)));
    fleet.jobs.forEach((j: any, i: number) => {
      expect(j.wasteGpuHours).toBeCloseTo((ranked[i]!.alloc - ranked[i]!.used) / H, 9);
      expect(j.coveredGpuHours).toBeCloseTo(ranked[i]!.covered / H, 9);
    });
  });

  it('refuses bad arguments with coded errors', async () => {
    const badDuration = await s.gql(IDLE_QUERY, { ...vars, min: '30 minutes' });
    expect(badDuration.errors?.[0]?.extensions?.code).toBe('BAD_INPUT');
    const badWindow = await s.gql(IDLE_QUERY, { ...vars, from: vars.to, to: vars.from });
    expect(badWindow.errors?.[0]?.extensions?.code).toBe('BAD_INPUT');
    const badThreshold = await s.gql(IDLE_QUERY, { ...vars, threshold: 1.5 });
    expect(badThreshold.errors?.[0]?.extensions?.code).toBe('BAD_INPUT');
  });
});
