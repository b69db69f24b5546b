// Where a job's start comes from (issue 38). Baseten's job resource has no start field: a job
// created or deploying has not started (startedAt null); a running one started no earlier than its
// creation, and once the cache holds its first metric point, that point's time is the start
// (startedAtSource FIRST_METRIC) and ranFor counts from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobGlobalId } from '../../src/domain/ids.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startPaiDlcSimulator, type PaiDlcSimulator } from '../../src/simulators/pai-dlc/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startPaiDlcRuntimeOn, startTestServer, type TestServer } from '../support/runtime.js';

const JOB = `query($id: ID!) { job(id: $id) { id status rawStatus createdAt startedAt startedAtSource ranFor } }`;
const MINUTE = 60_000;
/** An ISO 8601 duration's seconds (PTnHnMnS). */
const seconds = (iso: string) => {
  const m = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$/.exec(iso)!;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
};

describe('Job.startedAt and startedAtSource', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer({
      fleet: { projects: 1, jobsPerProject: 2, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2, statuses: ['TRAINING_JOB_DEPLOYING', 'TRAINING_JOB_CREATED'] },
    });
  }, 120_000);
  afterAll(async () => {
    await s.close();
  });

  it('a deploying or created job has not started; once running with metrics fetched, it started at its first metric point', async () => {
    const [deploying, created] = s.sim.fleet.jobs;
    expect(deploying!.status).toBe('TRAINING_JOB_DEPLOYING');
    expect(created!.status).toBe('TRAINING_JOB_CREATED');
    const id = jobGlobalId('bt', deploying!.id);
    for (const j of [deploying!, created!]) {
      const res = await s.gql(JOB, { id: jobGlobalId('bt', j.id) });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      expect(res.data.job.createdAt).not.toBeNull();
      expect(res.data.job).toMatchObject({ status: 'PENDING', startedAt: null, startedAtSource: null, ranFor: null });
    }

    // The job starts training 5 minutes from now; 20 minutes later it is running with metrics.
    const startMs = Math.floor(s.clock.now() / 1000) * 1000 + 5 * MINUTE;
    Object.assign(deploying!, { status: 'TRAINING_JOB_RUNNING', startedAtMs: startMs, updatedAtMs: startMs });
    s.clock.advance(25 * MINUTE);

    // Before any metric is stored its creation stands in, and says so.
    const listed = await s.gql(JOB, { id });
    expect(listed.errors, JSON.stringify(listed.errors)).toBeUndefined();
    expect(listed.data.job).toMatchObject({ status: 'RUNNING', startedAt: listed.data.job.createdAt, startedAtSource: 'CREATION' });

    const metrics = await s.gql(
      `query($id: ID!) { job(id: $id) { metrics(from: "${new Date(deploying!.createdAtMs).toISOString()}") { points { timestamp } } } }`,
      { id },
    );
    expect(metrics.errors, JSON.stringify(metrics.errors)).toBeUndefined();
    const first = Math.min(...metrics.data.job.metrics.flatMap((m: any) => m.points.map((p: any) => Date.parse(p.timestamp))));
    expect(first).toBeGreaterThanOrEqual(startMs);
    expect(first).toBeLessThan(startMs + 5 * MINUTE);
    await s.runtime.readThrough.settle();

    const res = await s.gql(JOB, { id });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    expect(res.data.job.startedAtSource).toBe('FIRST_METRIC');
    expect(Date.parse(res.data.job.startedAt)).toBe(first);
    expect(seconds(res.data.job.ranFor)).toBe((s.clock.now() - first) / 1000);

    // A later list sync (creation again as the stand-in) keeps the better start.
    s.clock.advance(MINUTE);
    const relisted = await s.gql(`{ jobs(first: 10) { edges { node { id startedAt startedAtSource } } } }`);
    expect(relisted.errors, JSON.stringify(relisted.errors)).toBeUndefined();
    const again = relisted.data.jobs.edges.map((e: any) => e.node).find((j: any) => j.id === id);
    expect(again).toMatchObject({ startedAt: res.data.job.startedAt, startedAtSource: 'FIRST_METRIC' });
  });
});

describe('a platform that gives the start', () => {
  let sim: PaiDlcSimulator;
  let db: TestDatabase;
  let rt: Runtime;

  // PAI-DLC signs requests with the wall clock, so the simulator runs on it.
  beforeAll(async () => {
    sim = await startPaiDlcSimulator({});
    db = await createTestDatabase();
    rt = await startPaiDlcRuntimeOn(db, sim);
  }, 120_000);
  afterAll(async () => {
    await rt.close();
    await sim.close();
    await db.drop();
  });

  it("says PLATFORM: PAI-DLC's GmtRunningTime", async () => {
    const res = await rt.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ jobs(first: 100) { edges { node { externalId startedAt startedAtSource } } } }' }),
    });
    const body = (await res.json()) as any;
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    const jobs = body.data.jobs.edges.map((e: any) => e.node);
    const started = jobs.filter((j: any) => j.startedAt !== null);
    expect(started.length).toBeGreaterThan(0);
    expect(jobs.length).toBeGreaterThan(started.length);
    for (const j of jobs) {
      const truth = sim.fleet.jobs.find((x) => x.JobId === j.externalId)!;
      expect(j.startedAt === null ? null : Date.parse(j.startedAt)).toBe(truth.runningMs);
      expect(j.startedAtSource).toBe(j.startedAt === null ? null : 'PLATFORM');
    }
  });
});
