// Black-box tests of the Baseten simulator over real HTTP: it must behave as the fact sheet
// (docs/platforms/baseten.md) describes, since it is what keeps the Baseten adapter honest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_STATUSES, metricValue, type FleetJob } from '../../../src/simulators/baseten/fleet.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../../src/simulators/baseten/server.js';
import { startBasetenDemo } from '../../../src/simulators/baseten/demo.js';

const ANCHOR = Date.UTC(2025, 2, 1);
const MIB = 1024 * 1024;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let sim: BasetenSimulator;
let nowMs = ANCHOR + 2 * 3600_000;

beforeAll(async () => {
  sim = await startBasetenSimulator({ seed: 'baseten-test', anchorMs: ANCHOR, now: () => nowMs, rateLimit: false });
});
afterAll(async () => {
  await sim.close();
});

function auth(s: BasetenSimulator = sim, scheme = 'Api-Key') {
  return { Authorization: `${scheme} ${s.apiKey}` };
}

async function get(path: string, s: BasetenSimulator = sim): Promise<{ status: number; body: Json; headers: Headers }> {
  const res = await fetch(`${s.url}${path}`, { headers: auth(s) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function post(path: string, body: unknown, s: BasetenSimulator = sim): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { ...auth(s), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const jobPath = (job: FleetJob) => `/v1/training_projects/${job.projectId}/jobs/${job.id}`;
const findJob = (pred: (j: FleetJob) => boolean, s: BasetenSimulator = sim) => {
  const job = s.fleet.jobs.find(pred);
  if (!job) throw new Error('fleet has no such job');
  return job;
};
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

function expectTrainingJob(job: Json) {
  expect(Object.keys(job).sort()).toEqual(
    [
      'availability_model',
      'checkpoint_sync_status',
      'created_at',
      'current_status',
      'error_message',
      'id',
      'instance_type',
      'name',
      'priority',
      'training_project',
      'training_project_id',
      'updated_at',
      'user',
    ].sort(),
  );
  expect(job.id).toMatch(/^[a-z0-9]{7}$/);
  expect(job.created_at).toMatch(ISO);
  expect(job.updated_at).toMatch(ISO);
  expect(JOB_STATUSES).toContain(job.current_status);
  expect(job.name === null || typeof job.name === 'string').toBe(true);
  expect(job.error_message === null || typeof job.error_message === 'string').toBe(true);
  expect(job.training_project).toEqual({ id: job.training_project_id, name: expect.any(String) });
  expect([null, 'SYNCING', 'COMPLETED']).toContain(job.checkpoint_sync_status);
  expect(Number.isInteger(job.priority)).toBe(true);
  expect(['dedicated', 'spot']).toContain(job.availability_model);
  expect(job.user === null || typeof job.user.email === 'string' || job.user.email === null).toBe(true);
  const it = job.instance_type;
  expect(Object.keys(it).sort()).toEqual(['gpu_count', 'gpu_memory_limit_mib', 'gpu_type', 'id', 'memory_limit_mib', 'millicpu_limit', 'name']);
  for (const k of ['memory_limit_mib', 'millicpu_limit', 'gpu_count', 'gpu_memory_limit_mib']) expect(Number.isInteger(it[k])).toBe(true);
  expect(it.gpu_count).toBeGreaterThanOrEqual(1);
  expect(it.gpu_count).toBeLessThanOrEqual(8);
  expect(typeof it.gpu_type).toBe('string');
}

function expectProject(project: Json) {
  expect(Object.keys(project).sort()).toEqual(['created_at', 'id', 'latest_job', 'name', 'team_name', 'updated_at']);
  expect(project.id).toMatch(/^[a-z0-9]{7}$/);
  expect(project.created_at).toMatch(ISO);
  expect(project.team_name === null || typeof project.team_name === 'string').toBe(true);
  if (project.latest_job !== null) expectTrainingJob(project.latest_job);
}

describe('auth', () => {
  it('accepts both Api-Key and Bearer, rejects a missing or wrong key with 401 and a message', async () => {
    for (const scheme of ['Api-Key', 'Bearer']) {
      const res = await fetch(`${sim.url}/v1/training_projects`, { headers: auth(sim, scheme) });
      expect(res.status).toBe(200);
    }
    const missing = await fetch(`${sim.url}/v1/training_projects`);
    expect(missing.status).toBe(401);
    expect(typeof ((await missing.json()) as Json).message).toBe('string');
    const wrong = await fetch(`${sim.url}/v1/training_projects`, { headers: { Authorization: 'Api-Key nope.nope' } });
    expect(wrong.status).toBe(401);
    expect(typeof ((await wrong.json()) as Json).message).toBe('string');
    const badScheme = await fetch(`${sim.url}/v1/training_projects`, { headers: { Authorization: `Basic ${sim.apiKey}` } });
    expect(badScheme.status).toBe(401);
  });
});

describe('projects and jobs', () => {
  it('lists every project with the sheet’s fields; a project with no jobs has latest_job null', async () => {
    const { status, body } = await get('/v1/training_projects');
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['training_projects']);
    expect(body.training_projects.map((p: Json) => p.id)).toEqual(sim.fleet.projects.map((p) => p.id));
    body.training_projects.forEach(expectProject);
    expect(body.training_projects.some((p: Json) => p.latest_job === null)).toBe(true);
    for (const p of body.training_projects.filter((x: Json) => x.latest_job !== null)) {
      const newest = sim.fleet.jobs.filter((j) => j.projectId === p.id).sort((a, b) => b.createdAtMs - a.createdAtMs)[0]!;
      expect(p.latest_job.id).toBe(newest.id);
    }
  });

  it('serves one project, and its jobs newest first', async () => {
    const project = sim.fleet.projects[0]!;
    const one = await get(`/v1/training_projects/${project.id}`);
    expect(one.status).toBe(200);
    expect(Object.keys(one.body)).toEqual(['training_project']);
    expectProject(one.body.training_project);
    expect(one.body.training_project.name).toBe(project.name);

    const jobs = await get(`/v1/training_projects/${project.id}/jobs`);
    expect(jobs.status).toBe(200);
    expect(Object.keys(jobs.body).sort()).toEqual(['training_jobs', 'training_project']);
    jobs.body.training_jobs.forEach(expectTrainingJob);
    const expected = sim.fleet.jobs.filter((j) => j.projectId === project.id).sort((a, b) => b.createdAtMs - a.createdAtMs);
    expect(jobs.body.training_jobs.map((j: Json) => j.id)).toEqual(expected.map((j) => j.id));
  });

  it('has jobs in every status, single- and multi-node, with 1-8 GPUs per node', async () => {
    const { body } = await post('/v1/training_jobs/search', {});
    const statuses = new Set(body.training_jobs.map((j: Json) => j.current_status));
    for (const s of JOB_STATUSES) expect(statuses).toContain(s);
    expect(sim.fleet.jobs.some((j) => j.nodeCount === 1)).toBe(true);
    expect(sim.fleet.jobs.some((j) => j.nodeCount > 1)).toBe(true);
    expect(new Set(sim.fleet.jobs.map((j) => j.gpusPerNode))).toEqual(new Set([1, 2, 4, 8]));
    for (const j of sim.fleet.jobs) {
      expect(j.instanceType.gpu_count).toBe(j.gpusPerNode);
      if (j.status === 'TRAINING_JOB_RUNNING') expect(j.finishedAtMs).toBeNull();
      if (j.finishedAtMs !== null) {
        expect(j.finishedAtMs).toBeLessThan(ANCHOR);
        expect(j.createdAtMs).toBeLessThan(j.finishedAtMs);
      }
      const failed = j.status === 'TRAINING_JOB_FAILED' || j.status === 'TRAINING_JOB_DEPLOY_FAILED';
      expect(j.errorMessage !== null).toBe(failed);
    }
  });

  it('serves one job with its project; 404 with a message for unknown or mismatched ids', async () => {
    const job = sim.fleet.jobs[0]!;
    const { status, body } = await get(jobPath(job));
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['training_job', 'training_project']);
    expectTrainingJob(body.training_job);
    expect(body.training_job.training_project_id).toBe(job.projectId);
    expect(body.training_job.instance_type).toEqual(job.instanceType);

    const otherProject = sim.fleet.projects.find((p) => p.id !== job.projectId)!;
    for (const path of [
      `/v1/training_projects/zzzzzzz`,
      `/v1/training_projects/zzzzzzz/jobs`,
      `/v1/training_projects/${job.projectId}/jobs/zzzzzzz`,
      `/v1/training_projects/${otherProject.id}/jobs/${job.id}`,
      `/v1/training_projects/${job.projectId}/jobs/zzzzzzz/metrics`,
      `/v1/training_projects/${job.projectId}/jobs/zzzzzzz/logs`,
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(typeof res.body.message).toBe('string');
    }
  });
});

describe('search', () => {
  it('returns every job newest first by default and filters by project, job and statuses', async () => {
    const all = await post('/v1/training_jobs/search', {});
    expect(all.status).toBe(200);
    expect(Object.keys(all.body)).toEqual(['training_jobs']);
    const created = all.body.training_jobs.map((j: Json) => Date.parse(j.created_at));
    expect(created).toEqual([...created].sort((a, b) => b - a));
    expect(all.body.training_jobs).toHaveLength(sim.fleet.jobs.length);

    const noBody = await fetch(`${sim.url}/v1/training_jobs/search`, { method: 'POST', headers: auth() });
    expect(((await noBody.json()) as Json).training_jobs).toHaveLength(sim.fleet.jobs.length);

    const project = sim.fleet.projects[1]!;
    const byProject = await post('/v1/training_jobs/search', { project_id: project.id });
    expect(byProject.body.training_jobs.length).toBeGreaterThan(0);
    expect(byProject.body.training_jobs.every((j: Json) => j.training_project.id === project.id)).toBe(true);

    const target = sim.fleet.jobs[5]!;
    const byJob = await post('/v1/training_jobs/search', { job_id: target.id, project_id: null, statuses: null });
    expect(byJob.body.training_jobs.map((j: Json) => [j.id, j.training_project.id])).toEqual([[target.id, target.projectId]]);

    const statuses = ['TRAINING_JOB_RUNNING', 'TRAINING_JOB_FAILED'];
    const byStatus = await post('/v1/training_jobs/search', { statuses });
    expect(byStatus.body.training_jobs.map((j: Json) => j.id).sort()).toEqual(
      sim.fleet.jobs
        .filter((j) => statuses.includes(j.status))
        .map((j) => j.id)
        .sort(),
    );
    expect((await post('/v1/training_jobs/search', { project_id: 'zzzzzzz' })).body.training_jobs).toEqual([]);
  });

  it('orders by created_at asc or desc and refuses other fields', async () => {
    const asc = await post('/v1/training_jobs/search', { order_by: [{ field: 'created_at', order: 'asc' }] });
    const created = asc.body.training_jobs.map((j: Json) => Date.parse(j.created_at));
    expect(created).toEqual([...created].sort((a, b) => a - b));
    const desc = await post('/v1/training_jobs/search', { order_by: [{ field: 'created_at', order: 'desc' }] });
    expect(desc.body.training_jobs.map((j: Json) => j.id)).toEqual([...asc.body.training_jobs.map((j: Json) => j.id)].reverse());
    const bad = await post('/v1/training_jobs/search', { order_by: [{ field: 'name', order: 'asc' }] });
    expect(bad.status).toBe(400);
    expect(typeof bad.body.message).toBe('string');
  });
});

describe('metrics', () => {
  const running = () => findJob((j) => j.status === 'TRAINING_JOB_RUNNING' && j.nodeCount > 1 && j.gpusPerNode > 1);

  function expectNodeMetrics(m: Json, job: FleetJob) {
    expect(Object.keys(m).sort()).toEqual(['cpu_memory_usage_bytes', 'cpu_usage', 'ephemeral_storage', 'gpu_memory_usage_bytes', 'gpu_utilization']);
    expect(Object.keys(m.gpu_utilization)).toEqual(Array.from({ length: job.gpusPerNode }, (_, i) => String(i)));
    expect(Object.keys(m.gpu_memory_usage_bytes)).toEqual(Object.keys(m.gpu_utilization));
    expect(Object.keys(m.ephemeral_storage).sort()).toEqual(['usage_bytes', 'utilization']);
  }

  it('answers the sheet’s shape; top level is the leader node, per_node_metrics has every node', async () => {
    const job = running();
    const { status, body } = await get(`${jobPath(job)}/metrics`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(
      [
        'cache',
        'cpu_memory_usage_bytes',
        'cpu_usage',
        'ephemeral_storage',
        'gpu_memory_usage_bytes',
        'gpu_utilization',
        'per_node_metrics',
        'training_job',
      ].sort(),
    );
    expectTrainingJob(body.training_job);
    expect(body.training_job.id).toBe(job.id);
    expect(body.per_node_metrics.map((n: Json) => n.node_id)).toEqual(Array.from({ length: job.nodeCount }, (_, i) => `node-${i}`));
    for (const n of body.per_node_metrics) expectNodeMetrics(n.metrics, job);
    const { cache: _c, training_job: _t, per_node_metrics: perNode, ...leader } = body;
    expect(leader).toEqual(perNode[0].metrics);
    expect(perNode[1].metrics.gpu_utilization['0']).not.toEqual(perNode[0].metrics.gpu_utilization['0']);
    expect(body.cache === null || (Array.isArray(body.cache.usage_bytes) && Array.isArray(body.cache.utilization))).toBe(true);
  });

  it('defaults to the last hour ending now with a 15 s step, points step-aligned ISO timestamps', async () => {
    const job = running();
    const { body } = await get(`${jobPath(job)}/metrics`);
    const points = body.gpu_utilization['0'];
    const times = points.map((p: Json) => Date.parse(p.timestamp));
    expect(points[0].timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(times[0]).toBe(nowMs - 3600_000);
    expect(times.at(-1)).toBe(nowMs);
    expect(times.every((t: number, i: number) => i === 0 || t - times[i - 1] === 15_000)).toBe(true);
  });

  it('anchors the default window of a finished job at its completion', async () => {
    const job = findJob((j) => j.status === 'TRAINING_JOB_COMPLETED');
    const { body } = await get(`${jobPath(job)}/metrics`);
    const times = body.cpu_usage.map((p: Json) => Date.parse(p.timestamp));
    expect(times.length).toBeGreaterThan(0);
    expect(times.at(-1)).toBeLessThanOrEqual(job.finishedAtMs!);
    expect(job.finishedAtMs! - times.at(-1)).toBeLessThan(15_000);
    expect(times[0]).toBeGreaterThanOrEqual(job.finishedAtMs! - 3600_000);
  });

  it('honours start/end/step_seconds and keeps points inside the window and the job’s life', async () => {
    const job = findJob((j) => j.status === 'TRAINING_JOB_FAILED');
    const start = job.startedAtMs! - 30 * 60_000 + 7;
    const end = job.finishedAtMs! + 30 * 60_000;
    const { body } = await get(`${jobPath(job)}/metrics?start_epoch_millis=${start}&end_epoch_millis=${end}&step_seconds=60`);
    for (const node of body.per_node_metrics) {
      for (const series of [...Object.values(node.metrics.gpu_utilization), node.metrics.cpu_usage] as Json[][]) {
        const times = series.map((p) => Date.parse(p.timestamp));
        expect(times.length).toBeGreaterThan(0);
        expect(times.every((t) => t % 60_000 === 0 && t >= job.startedAtMs! && t <= job.finishedAtMs! && t >= start && t <= end)).toBe(true);
        expect(times[0]! - job.startedAtMs!).toBeLessThan(60_000);
      }
    }
    // The server picks coarser steps for wider windows when step_seconds is omitted.
    const wide = await get(`${jobPath(job)}/metrics?start_epoch_millis=${start}&end_epoch_millis=${start + 24 * 3600_000}`);
    const wideTimes = wide.body.cpu_usage.map((p: Json) => Date.parse(p.timestamp));
    expect(wideTimes[1] - wideTimes[0]).toBe(600_000);
    const tooFine = await get(`${jobPath(job)}/metrics?start_epoch_millis=${start}&end_epoch_millis=${start + 7 * 24 * 3600_000}&step_seconds=1`);
    expect(tooFine.status).toBe(400);
    const reversed = await get(`${jobPath(job)}/metrics?start_epoch_millis=${end}&end_epoch_millis=${start}`);
    expect(reversed.status).toBe(400);
  });

  it('keeps values in range and equal to the ground truth, the same on every call, GET or POST', async () => {
    for (const job of sim.fleet.jobs.filter((j) => j.startedAtMs !== null)) {
      const path = `${jobPath(job)}/metrics`;
      const first = await get(path);
      const again = await get(path);
      expect(again.body).toEqual(first.body);
      const viaPost = await post(path, { start_epoch_millis: null, end_epoch_millis: null });
      expect(viaPost.body).toEqual(first.body);
      const it = job.instanceType;
      first.body.per_node_metrics.forEach((node: Json, n: number) => {
        for (const [rank, points] of Object.entries(node.metrics.gpu_utilization) as [string, Json[]][]) {
          for (const p of points) {
            expect(p.value).toBeGreaterThanOrEqual(0);
            expect(p.value).toBeLessThanOrEqual(1);
            expect(p.value).toBe(metricValue(job, n, 'gpu_utilization', Number(rank), Date.parse(p.timestamp)));
          }
        }
        for (const [rank, points] of Object.entries(node.metrics.gpu_memory_usage_bytes) as [string, Json[]][]) {
          for (const p of points) {
            expect(Number.isInteger(p.value)).toBe(true);
            expect(p.value).toBeLessThanOrEqual(it.gpu_memory_limit_mib! * MIB);
            expect(p.value).toBe(metricValue(job, n, 'gpu_memory_usage_bytes', Number(rank), Date.parse(p.timestamp)));
          }
        }
        for (const p of node.metrics.cpu_usage) {
          expect(p.value).toBeGreaterThan(0);
          expect(p.value).toBeLessThanOrEqual(it.millicpu_limit / 1000);
        }
        for (const p of node.metrics.cpu_memory_usage_bytes) expect(p.value).toBeLessThanOrEqual(it.memory_limit_mib * MIB);
        for (const p of node.metrics.ephemeral_storage.utilization) {
          expect(p.value).toBeGreaterThanOrEqual(0);
          expect(p.value).toBeLessThanOrEqual(1);
        }
      });
    }
  });

  it('answers jobs that have not started with empty per_node_metrics', async () => {
    for (const status of ['TRAINING_JOB_PENDING', 'TRAINING_JOB_CREATED', 'TRAINING_JOB_QUEUED', 'TRAINING_JOB_DEPLOYING', 'TRAINING_JOB_DEPLOY_FAILED']) {
      const job = findJob((j) => j.status === status);
      const { status: code, body } = await get(`${jobPath(job)}/metrics`);
      expect(code).toBe(200);
      expect(body.per_node_metrics).toEqual([]);
      expect(body.gpu_utilization).toEqual({});
      expect(body.cpu_usage).toEqual([]);
      expect(body.training_job.current_status).toBe(status);
    }
  });

  it('grows a running job’s series as now advances, keeping earlier points unchanged', async () => {
    const job = running();
    const path = `${jobPath(job)}/metrics?start_epoch_millis=${job.startedAtMs}&end_epoch_millis=${ANCHOR + 48 * 3600_000}&step_seconds=60`;
    const before = await get(path);
    nowMs += 10 * 60_000;
    try {
      const after = await get(path);
      const a = before.body.gpu_utilization['0'];
      const b = after.body.gpu_utilization['0'];
      expect(b.length).toBe(a.length + 10);
      expect(b.slice(0, a.length)).toEqual(a);
      expect(Date.parse(b.at(-1).timestamp)).toBe(Math.floor(nowMs / 60_000) * 60_000);
      expect(new Set(b.map((p: Json) => p.value)).size).toBeGreaterThan(1);
    } finally {
      nowMs -= 10 * 60_000;
    }
  });
});

describe('logs', () => {
  const running = () => findJob((j) => j.status === 'TRAINING_JOB_RUNNING' && j.nodeCount > 1);

  it('answers the sheet’s shape with epoch-nanosecond string timestamps inside the default 30 minutes', async () => {
    const job = running();
    const { status, body } = await get(`${jobPath(job)}/logs`);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['logs']);
    expect(body.logs.length).toBeGreaterThan(100);
    expect(body.logs.length).toBeLessThanOrEqual(500);
    for (const l of body.logs) {
      expect(Object.keys(l).sort()).toEqual(['level', 'message', 'replica', 'request_id', 'timestamp']);
      expect(l.timestamp).toMatch(/^\d{19}$/);
      const ms = Number(BigInt(l.timestamp) / 1_000_000n);
      expect(ms).toBeGreaterThanOrEqual(nowMs - 30 * 60_000);
      expect(ms).toBeLessThanOrEqual(nowMs);
      expect([null, 'DEBUG', 'INFO', 'WARNING', 'ERROR']).toContain(l.level);
      expect(l.replica === null || typeof l.replica === 'string').toBe(true);
    }
    const ns = body.logs.map((l: Json) => BigInt(l.timestamp));
    expect(ns.every((t: bigint, i: number) => i === 0 || t > ns[i - 1])).toBe(true);
    expect(new Set(body.logs.map((l: Json) => l.replica)).size).toBeGreaterThan(1);
  });

  it('pages by time like the Python client and loses nothing; desc returns the newest first', async () => {
    const job = findJob((j) => j.status === 'TRAINING_JOB_COMPLETED');
    const start = job.deployingAtMs! - 60_000;
    const end = job.finishedAtMs! + 60_000;
    const collected: Json[] = [];
    let from = start;
    for (let page = 0; page < 100; page++) {
      const { body } = await get(`${jobPath(job)}/logs?start_epoch_millis=${from}&end_epoch_millis=${end}&direction=asc&limit=1000`);
      collected.push(...body.logs);
      if (body.logs.length < 1000) break;
      from = Number(BigInt(body.logs.at(-1).timestamp) / 1_000_000n) + 1;
    }
    const ns = collected.map((l) => BigInt(l.timestamp));
    expect(ns.every((t, i) => i === 0 || t > ns[i - 1]!)).toBe(true);
    expect(collected.length).toBeGreaterThan(1000);
    expect(Number(ns[0]! / 1_000_000n)).toBe(job.deployingAtMs);
    expect(collected.at(-1).message).toMatch(/completed/);
    expect(Number(ns.at(-1)! / 1_000_000n)).toBe(job.finishedAtMs);

    const smallPages: Json[] = [];
    from = job.finishedAtMs! - 20 * 60_000;
    for (let page = 0; page < 100; page++) {
      const { body } = await post(`${jobPath(job)}/logs`, { start_epoch_millis: from, end_epoch_millis: end, direction: 'asc', limit: 100 });
      smallPages.push(...body.logs);
      if (body.logs.length < 100) break;
      from = Number(BigInt(body.logs.at(-1).timestamp) / 1_000_000n) + 1;
    }
    expect(smallPages).toEqual(collected.filter((l) => Number(BigInt(l.timestamp) / 1_000_000n) >= job.finishedAtMs! - 20 * 60_000));

    const desc = await get(`${jobPath(job)}/logs?start_epoch_millis=${start}&end_epoch_millis=${end}&direction=desc&limit=50`);
    expect(desc.body.logs).toEqual(collected.slice(-50).reverse());
  });

  it('filters by min_level, dropping lines without a level', async () => {
    const job = running();
    const all = await get(`${jobPath(job)}/logs?limit=1000`);
    expect(all.body.logs.some((l: Json) => l.level === null)).toBe(true);
    const warn = await get(`${jobPath(job)}/logs?limit=1000&min_level=WARNING`);
    expect(warn.body.logs.length).toBeGreaterThan(0);
    expect(warn.body.logs).toEqual(all.body.logs.filter((l: Json) => l.level === 'WARNING' || l.level === 'ERROR'));
  });

  it('ends a failed job with its error and gives jobs that never deployed no logs', async () => {
    const failed = findJob((j) => j.status === 'TRAINING_JOB_FAILED');
    const { body } = await get(`${jobPath(failed)}/logs?end_epoch_millis=${failed.finishedAtMs}&min_level=ERROR`);
    expect(body.logs.at(-1)).toMatchObject({ level: 'ERROR', message: failed.errorMessage });
    const pending = findJob((j) => j.status === 'TRAINING_JOB_PENDING');
    expect((await get(`${jobPath(pending)}/logs`)).body.logs).toEqual([]);
  });

  it('refuses windows over 7 days, reversed windows and limits outside 1-1000', async () => {
    const job = running();
    for (const query of [
      `start_epoch_millis=${nowMs - 8 * 24 * 3600_000}&end_epoch_millis=${nowMs}`,
      `start_epoch_millis=${nowMs}&end_epoch_millis=${nowMs - 1000}`,
      'limit=0',
      'limit=1001',
      'direction=sideways',
      'min_level=TRACE',
    ]) {
      const res = await get(`${jobPath(job)}/logs?${query}`);
      expect(res.status, query).toBe(400);
      expect(typeof res.body.message).toBe('string');
    }
    expect((await get(`${jobPath(job)}/logs?start_epoch_millis=${nowMs - 7 * 24 * 3600_000}&end_epoch_millis=${nowMs}&limit=1`)).status).toBe(200);
  });
});

describe('stop', () => {
  it('moves a running job to STOPPED at now and ends its series there; refuses a finished job', async () => {
    let clock = ANCHOR + 3600_000;
    const own = await startBasetenSimulator({ seed: 'baseten-test', anchorMs: ANCHOR, now: () => clock, rateLimit: false });
    try {
      const job = findJob((j) => j.status === 'TRAINING_JOB_RUNNING', own);
      const res = await post(`${jobPath(job)}/stop`, {}, own);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['training_job']);
      expectTrainingJob(res.body.training_job);
      expect(res.body.training_job.current_status).toBe('TRAINING_JOB_STOPPED');
      expect(Date.parse(res.body.training_job.updated_at)).toBe(clock);
      const stoppedAt = clock;
      clock += 30 * 60_000;
      const metrics = await get(`${jobPath(job)}/metrics?start_epoch_millis=${stoppedAt - 600_000}&end_epoch_millis=${clock}&step_seconds=60`, own);
      expect(Date.parse(metrics.body.cpu_usage.at(-1).timestamp)).toBe(stoppedAt);
      const logs = await get(`${jobPath(job)}/logs?start_epoch_millis=${stoppedAt - 600_000}&end_epoch_millis=${clock}`, own);
      expect(logs.body.logs.at(-1)).toMatchObject({ level: 'WARNING', message: expect.stringMatching(/stopped/) });
      const again = await post(`${jobPath(job)}/stop`, {}, own);
      expect(again.status).toBe(400);
      expect(typeof again.body.message).toBe('string');
      expect(own.count('stopJob')).toBe(2);
    } finally {
      await own.close();
    }
  });
});

describe('rate limit', () => {
  it('answers 429 with Baseten’s body and no Retry-After header past the per-key per-endpoint limit', async () => {
    let wall = 1_000_000;
    const limited = await startBasetenSimulator({
      anchorMs: ANCHOR,
      now: () => nowMs,
      rateLimit: { requestsPerWindow: 3, windowSeconds: 60 },
      rateLimitClock: () => wall,
    });
    try {
      for (let i = 0; i < 3; i++) expect((await get('/v1/training_projects', limited)).status).toBe(200);
      wall += 20_000;
      const res = await fetch(`${limited.url}/v1/training_projects`, { headers: auth(limited) });
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBeNull();
      expect(await res.json()).toEqual({ error: 'Rate limit exceeded. Please try again later.', retry_after: 40 });
      // Another endpoint has its own budget.
      expect((await post('/v1/training_jobs/search', {}, limited)).status).toBe(200);
      wall += 40_000;
      expect((await get('/v1/training_projects', limited)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('defaults to 100 requests per second and can be switched off', async () => {
    const wall = 5_000_000;
    const byDefault = await startBasetenSimulator({ anchorMs: ANCHOR, now: () => nowMs, rateLimitClock: () => wall });
    try {
      const codes = await Promise.all(Array.from({ length: 101 }, () => get('/v1/training_projects', byDefault).then((r) => r.status)));
      expect(codes.filter((c) => c === 200)).toHaveLength(100);
      const rejected = await get('/v1/training_projects', byDefault);
      expect(rejected.body).toEqual({ error: 'Rate limit exceeded. Please try again later.', retry_after: 1 });
    } finally {
      await byDefault.close();
    }
    const codes = await Promise.all(Array.from({ length: 120 }, () => get('/v1/training_projects').then((r) => r.status)));
    expect(codes.every((c) => c === 200)).toBe(true);
  });
});

describe('faults and counters', () => {
  it('renders each injected fault in Baseten’s shapes and counts requests per route', async () => {
    const job = sim.fleet.jobs[0]!;
    sim.resetStats();
    try {
      sim.inject({ kind: 'status', status: 503, route: 'listProjects', times: 1 });
      const unavailable = await get('/v1/training_projects');
      expect(unavailable.status).toBe(503);
      expect(typeof unavailable.body.message).toBe('string');
      expect((await get('/v1/training_projects')).status).toBe(200);

      sim.inject({ kind: 'rate_limit', retryAfterSeconds: 7, route: 'getMetrics', times: 1 });
      // A fault aimed at one route leaves the others alone.
      expect((await get(jobPath(job))).status).toBe(200);
      const limited = await get(`${jobPath(job)}/metrics`);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: 'Rate limit exceeded. Please try again later.', retry_after: 7 });

      sim.inject({ kind: 'malformed', route: 'searchJobs', times: 1 });
      const malformed = await fetch(`${sim.url}/v1/training_jobs/search`, { method: 'POST', headers: auth(), body: '{}' });
      expect(malformed.status).toBe(200);
      const text = await malformed.text();
      expect(text.length).toBeGreaterThan(0);
      expect(() => JSON.parse(text)).toThrow();

      sim.inject({ kind: 'auth', route: 'getJob', times: 1 });
      const denied = await get(jobPath(job));
      expect(denied.status).toBe(401);
      expect(typeof denied.body.message).toBe('string');

      sim.inject({ kind: 'empty', route: 'getLogs', times: 1 });
      const empty = await fetch(`${sim.url}${jobPath(job)}/logs`, { headers: auth() });
      expect(empty.status).toBe(200);
      expect(await empty.text()).toBe('');

      sim.inject({ kind: 'timeout', route: 'getProject', times: 1 });
      await expect(fetch(`${sim.url}/v1/training_projects/${job.projectId}`, { headers: auth(), signal: AbortSignal.timeout(300) })).rejects.toThrow();

      sim.inject({ kind: 'reset', route: 'listJobs', times: 1 });
      await expect(fetch(`${sim.url}/v1/training_projects/${job.projectId}/jobs`, { headers: auth() })).rejects.toThrow();
      expect((await get(`/v1/training_projects/${job.projectId}/jobs`)).status).toBe(200);

      expect(sim.count('listProjects')).toBe(2);
      expect(sim.count('getMetrics')).toBe(1);
      expect(sim.count('searchJobs')).toBe(1);
      expect(sim.count('getJob')).toBe(2);
      expect(sim.count('getLogs')).toBe(1);
      expect(sim.count('getProject')).toBe(1);
      expect(sim.count('listJobs')).toBe(2);
    } finally {
      sim.clearFaults();
    }
  });
});

describe('fleet option and demo', () => {
  it('builds a benchmark-sized fleet of 50 jobs x 8 nodes x 8 GPUs, deterministically', async () => {
    const big = await startBasetenSimulator({
      seed: 42,
      anchorMs: ANCHOR,
      now: () => nowMs,
      rateLimit: false,
      fleet: { projects: 5, jobsPerProject: 10, nodesPerJob: 8, gpusPerNode: 8 },
    });
    const twin = await startBasetenSimulator({
      seed: 42,
      anchorMs: ANCHOR,
      now: () => nowMs,
      rateLimit: false,
      fleet: { projects: 5, jobsPerProject: 10, nodesPerJob: 8, gpusPerNode: 8 },
    });
    try {
      expect(big.fleet.jobs).toHaveLength(50);
      expect(big.fleet.jobs.map((j) => j.id)).toEqual(twin.fleet.jobs.map((j) => j.id));
      expect(big.apiKey).toBe(twin.apiKey);
      const job = findJob((j) => j.status === 'TRAINING_JOB_RUNNING', big);
      const { body } = await get(`${jobPath(job)}/metrics`, big);
      expect(body.per_node_metrics).toHaveLength(8);
      for (const n of body.per_node_metrics) expect(Object.keys(n.metrics.gpu_utilization)).toHaveLength(8);
      expect(body.training_job.instance_type).toMatchObject({ gpu_count: 8, gpu_type: expect.any(String) });
      const other = await startBasetenSimulator({ seed: 43, anchorMs: ANCHOR, now: () => nowMs });
      expect(other.fleet.jobs.map((j) => j.id)).not.toEqual(big.fleet.jobs.map((j) => j.id));
      await other.close();
    } finally {
      await big.close();
      await twin.close();
    }
  });

  it('starts a demo provider whose config and secret reach the simulator', async () => {
    const demo = await startBasetenDemo({ now: () => nowMs });
    try {
      expect(demo.config).toMatchObject({ id: 'baseten-demo', kind: 'BASETEN', name: 'Baseten (simulated)', apiKeyEnv: 'BASETEN_DEMO_API_KEY' });
      const config = demo.config as { baseUrl: string; apiKeyEnv: string };
      const res = await fetch(`${config.baseUrl}/v1/training_projects`, { headers: { Authorization: `Api-Key ${demo.secrets[config.apiKeyEnv]}` } });
      expect(res.status).toBe(200);
    } finally {
      await demo.close();
    }
  });
});
