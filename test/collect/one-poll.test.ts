// One poll serves everyone: with a live subscriber, a query and the collector all asking for the
// same running job, the platform sees one metrics call per interval; a job that finishes is
// fetched to its end and kept whole with no query at all. On the test's clock (the simulator's
// data, the cache, the feeds' and the collector's timers), so calls are counted per interval.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client, POLL_FIELDS, subscribeUtilization } from '../live/helpers.js';
import { type ManualTimers, stepFeeds } from '../support/manual-timers.js';
import { eventually } from '../support/wait.js';
import { createTestDatabase } from '../support/database.js';
import { type CollectedBaseten, gql, runFor, startCollectedBaseten, sweepsSettled } from './helpers.js';

const INTERVAL_MS = 30_000;

describe('one poll per job and interval, whoever asks', () => {
  let bt: CollectedBaseten;
  let sim: BasetenSimulator;
  let rt: Runtime;
  let timers: ManualTimers;
  let running: string;
  let runningExternal: { id: string; projectId: string };
  let finished: string;

  beforeAll(async () => {
    bt = await startCollectedBaseten(
      await createTestDatabase(),
      'collect-one-poll',
      { jobsPerProject: 2, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING', 'TRAINING_JOB_COMPLETED'] },
      { intervalMs: INTERVAL_MS },
    );
    ({ sim, rt, timers } = bt);
    const r = sim.fleet.jobs.find((j) => j.status === 'TRAINING_JOB_RUNNING')!;
    runningExternal = { id: r.id, projectId: r.projectId };
    running = `bt:job:${r.id}`;
    finished = `bt:job:${sim.fleet.jobs.find((j) => j.status === 'TRAINING_JOB_COMPLETED')!.id}`;
  }, 60_000);

  afterAll(() => bt?.close());

  it('backfills a finished job never asked for, once, and marks it complete', async () => {
    await runFor(rt, timers, INTERVAL_MS, INTERVAL_MS);
    expect(await rt.readThrough.repo.collectedOf([finished])).toEqual(new Set([finished]));
    const [job] = await rt.readThrough.repo.jobsByIds([finished]);
    const rows = await rt.readThrough.repo.fetchesOf([finished], ['metric:GPU_UTILIZATION']);
    expect(rows.some((r) => r.final && r.rangeFrom <= job!.startedAt! && r.rangeTo >= job!.finishedAt!)).toBe(true);
    // Complete: later sweeps leave it alone.
    const before = sim.count('getMetrics');
    await runFor(rt, timers, 2 * INTERVAL_MS, INTERVAL_MS);
    expect(sim.count('getMetrics') - before).toBe(2); // the running job's, one per interval
  }, 120_000);

  it('a subscriber, a query and the collector cost one metrics call per interval, and no detail call', async () => {
    const c = client(rt.url);
    const sub = subscribeUtilization(c, running, POLL_FIELDS);
    await eventually(() => sub.samples.length >= 1, 30_000, 'the first sample');
    await sweepsSettled(rt);
    const topic = `live:utilization:${running}`;
    const query = /* GraphQL */ `query ($id: ID!) { job(id: $id) { metrics(names: [GPU_UTILIZATION]) { points { value } freshness { stale } } } }`;
    for (let k = 1; k <= 4; k++) {
      const metrics0 = sim.count('getMetrics');
      const detail0 = sim.count('getJob');
      await stepFeeds(rt.live.hub, topic, timers, INTERVAL_MS);
      await sweepsSettled(rt);
      const answer = await gql(rt, query, { id: running });
      expect(answer.errors).toBeUndefined();
      expect(answer.data.job.metrics[0].points.length).toBeGreaterThan(0);
      await rt.readThrough.settle();
      expect(sim.count('getMetrics') - metrics0, `interval ${k}`).toBe(1);
      expect(sim.count('getJob') - detail0, `interval ${k}`).toBe(0);
    }
    expect(rt.collector!.statuses().get('bt')!.backlog).toBe(0);
    sub.stop();
    await c.dispose();
  }, 120_000);

  it('a job that finishes is collected to its end and kept whole with no query', async () => {
    const res = await fetch(`${sim.url}/v1/training_projects/${runningExternal.projectId}/jobs/${runningExternal.id}/stop`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${sim.apiKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    await runFor(rt, timers, 3 * INTERVAL_MS, INTERVAL_MS);
    const [job] = await rt.readThrough.repo.jobsByIds([running]);
    expect(job!.status).toBe('STOPPED');
    expect(await rt.readThrough.repo.collectedOf([running])).toEqual(new Set([running]));
    const rows = await rt.readThrough.repo.fetchesOf([running], ['metric:GPU_UTILIZATION']);
    expect(rows.some((r) => r.final && r.rangeFrom <= job!.startedAt! && r.rangeTo >= job!.finishedAt!)).toBe(true);
  }, 120_000);
});
