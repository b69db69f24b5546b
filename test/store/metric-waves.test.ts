// A cold query over many jobs is answered job by job as their metrics arrive: the fetches are
// stored in waves (METRICS_WAVES of them, by arrival), and a job whose wave is described is ready
// while later jobs' bodies are still on their way; the points are written only once every wave
// is described (a COPY while bodies arrive would take a core from the platform). Upstream is real
// HTTP to the Baseten simulator, whose first metrics answer is held back until released.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_WAVES, waveEnds, type Freshness } from '../../src/store/read-through.js';
import { nextRequest, startTestServer, type TestServer } from '../support/runtime.js';

describe('waves of a metrics batch', () => {
  it('split the fetches by arrival into at most METRICS_WAVES non-empty waves, the last ending at all of them', () => {
    expect(waveEnds(50, 4)).toEqual([13, 25, 38, 50]);
    expect(waveEnds(5, 4)).toEqual([2, 3, 4, 5]);
    expect(waveEnds(3, 4)).toEqual([1, 2, 3]);
    expect(waveEnds(1, 4)).toEqual([1]);
    expect(waveEnds(7, 1)).toEqual([7]);
    expect(METRICS_WAVES).toBeGreaterThan(1);
  });
});

describe('a cold batch of jobs answered before its write', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      // One job per wave. Without waves the held job's body holds every job back (checked: the
      // test then fails when the adapter gives up on the held call, all four settling at once).
      fleet: { projects: 1, jobsPerProject: METRICS_WAVES, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
    });
    const list = await s.gql(`{ jobs(first: 10) { edges { node { id } } } }`);
    expect(list.errors).toBeUndefined();
  });
  afterAll(() => s.close());

  async function count(table: 'points' | 'nodes'): Promise<number> {
    const res = (await s.runtime.database.db.execute(`select count(*)::int as n from ${table}` as never)) as any;
    return Number((Array.isArray(res) ? res : res.rows)[0].n);
  }

  it('makes each job ready once its own wave is described, and writes points after the last wave', async () => {
    const rt = s.runtime.readThrough;
    const [providerId] = s.runtime.providers.ids();
    const jobs = await rt.repo.unfinishedJobsOf(providerId!);
    expect(jobs).toHaveLength(METRICS_WAVES);
    expect(await count('nodes')).toBe(0);

    // The first metrics call is held: its job's body arrives last, after every other wave.
    s.sim.inject({ kind: 'timeout', route: 'getMetrics', times: 1 });
    const held = nextRequest(s.sim, 'getMetrics');
    s.sim.resetStats();
    const { each, done } = await rt.ensureTopologyEach(jobs, { answerBeforeWrite: true, collect: new Map() });
    await held;

    const settled = new Map<string, Freshness | Error>();
    let readyCount!: () => void;
    const othersReady = new Promise<void>((resolve) => (readyCount = resolve));
    for (const [id, p] of each) {
      void Promise.resolve(p).then((f) => {
        settled.set(id, f);
        if (settled.size === jobs.length - 1) readyCount();
      });
    }
    // Every job but the held one is ready while its body is still held upstream.
    await othersReady;
    expect(s.sim.count('getMetrics')).toBe(jobs.length);
    expect(settled.size).toBe(jobs.length - 1);
    for (const f of settled.values()) expect(f).toMatchObject({ stale: false, error: null });
    // Their nodes are stored (the loaders can read them), their points not yet.
    expect(await count('nodes')).toBe((jobs.length - 1) * 2);
    expect(rt.pendingWrites()).toBeGreaterThan(0);
    expect(await count('points')).toBe(0);

    s.sim.release();
    await done;
    expect(settled.size).toBe(jobs.length);
    await rt.settle();
    expect(await count('nodes')).toBe(jobs.length * 2);
    expect(await count('points')).toBeGreaterThan(0);
    expect(rt.pendingWrites()).toBe(0);
  }, 120_000);
});
