// The PAI-DLC adapter against the simulator over real HTTP: paging and the 7-day window, job
// details with pods and GPUs, metrics one call per MetricType, and every failure mode typed.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { JobStatus, MetricFetchRequest } from '../../../src/domain/types.js';
import { startPaiDlcSimulator, type PaiDlcSimulator, type SimJob } from '../../../src/simulators/pai-dlc/index.js';
import { adapterFor, jobNamed, rawSigned, refOf, signal } from './helpers.js';

let sim: PaiDlcSimulator;
beforeAll(async () => {
  sim = await startPaiDlcSimulator();
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.clearFaults();
  sim.resetStats();
});

const byName = (name: string): SimJob => jobNamed(sim, name);
const lastHour = (metrics: MetricFetchRequest['metrics']): MetricFetchRequest => ({
  from: new Date(Date.now() - 3600_000),
  to: new Date(),
  metrics,
  stepSeconds: 300,
});

describe('listJobs', () => {
  it("with no workspace configured lists what ShowOwn=true + FromAllWorkspaces=true lists: the caller's jobs in every workspace, all pages, the 40-day-old one included", async () => {
    const adapter = adapterFor(sim);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await adapter.listJobs(cursor, signal());
      seen.push(...page.jobs.map((j) => j.externalId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(sim.count('listJobs')).toBe(2);
    const own = sim.fleet.jobs.filter((j) => j.user.UserId === sim.fleet.callerUserId);
    expect(new Set(seen)).toEqual(new Set(own.map((j) => j.JobId)));
    expect(new Set(own.map((j) => j.workspace.WorkspaceId)).size).toBe(2);
    expect(seen).toContain(byName('imagenet-baseline-2w').JobId);
    // A teammate's job is not the caller's: across workspaces the API lists only the caller's own.
    expect(seen).not.toContain(byName('ray-tune-40d').JobId);
  });

  it('the simulator lists one workspace (the default) when neither WorkspaceId nor FromAllWorkspaces+ShowOwn is sent', async () => {
    const req = rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: { PageSize: '100', ShowOwn: 'false', StartTime: '2000-01-01T00:00:00Z' } });
    const body = (await (await fetch(req.url, { headers: req.headers })).json()) as { Jobs: { WorkspaceId: string }[]; TotalCount: number };
    expect(new Set(body.Jobs.map((j) => j.WorkspaceId))).toEqual(new Set([sim.fleet.workspaces[0]!.WorkspaceId]));
    const allWs = rawSigned(sim, {
      action: 'ListJobs',
      path: '/api/v1/jobs',
      query: { PageSize: '100', ShowOwn: 'false', FromAllWorkspaces: 'true', StartTime: '2000-01-01T00:00:00Z' },
    });
    const ignored = (await (await fetch(allWs.url, { headers: allWs.headers })).json()) as { TotalCount: number };
    expect(ignored.TotalCount).toBe(body.TotalCount); // FromAllWorkspaces needs ShowOwn=true
  });

  it('without StartTime the API hides jobs older than 7 days (why the adapter sends one)', async () => {
    const req = rawSigned(sim, {
      action: 'ListJobs',
      path: '/api/v1/jobs',
      query: { PageSize: '100', PageNumber: '2', ShowOwn: 'false', WorkspaceId: '12345' },
    });
    const body = (await (await fetch(req.url, { headers: req.headers })).json()) as { TotalCount: number };
    const recent = sim.fleet.jobs.filter((j) => j.workspace.WorkspaceId === '12345' && j.createdMs >= Date.now() - 7 * 86_400_000).length;
    expect(body.TotalCount).toBe(recent);
    expect(recent).toBeLessThan(sim.fleet.jobs.length);
  });

  it('maps jobs to canonical records, numbers-as-strings parsed, and honours config.workspaceId', async () => {
    const adapter = adapterFor(sim, { workspaceId: '67890' });
    const jobs = [];
    let cursor: string | null = null;
    do {
      const page = await adapter.listJobs(cursor, signal());
      jobs.push(...page.jobs);
      cursor = page.nextCursor;
    } while (cursor);
    expect(jobs.length).toBe(sim.fleet.jobs.filter((j) => j.workspace.WorkspaceId === '67890').length);
    expect(jobs.every((j) => j.projectExternalId === '67890' && j.projectName === 'nlp')).toBe(true);
    const bert = jobs.find((j) => j.name === 'bert-finetune')!;
    expect(bert).toMatchObject({ status: 'RUNNING', rawStatus: 'Running', gpuCount: 4, gpuType: 'Tesla-V100-16G' });
    expect(bert.createdAt?.getTime()).toBe(byName('bert-finetune').createdMs);
    const projects = await adapter.listProjects(signal());
    expect(projects).toEqual([{ externalId: '67890', name: 'nlp' }]);
  });
});

describe('getJob', () => {
  it('maps every PAI-DLC Status to a JobStatus and keeps the raw one', async () => {
    const expected: Record<string, JobStatus> = {
      Creating: 'PENDING',
      Queuing: 'PENDING',
      Bidding: 'PENDING',
      EnvPreparing: 'PENDING',
      SanityChecking: 'PENDING',
      Running: 'RUNNING',
      Restarting: 'RUNNING',
      Stopping: 'RUNNING',
      SucceededReserving: 'SUCCEEDED',
      FailedReserving: 'FAILED',
      Succeeded: 'SUCCEEDED',
      Failed: 'FAILED',
      Stopped: 'STOPPED',
    };
    const adapter = adapterFor(sim);
    for (const [raw, status] of Object.entries(expected)) {
      const job = sim.fleet.jobs.find((j) => j.Status === raw)!;
      expect(job, raw).toBeDefined();
      const detail = await adapter.getJob({ externalId: job.JobId, projectExternalId: '' }, signal());
      expect(detail, raw).toMatchObject({ status, rawStatus: raw });
    }
  });

  it('turns pods into nodes with GPUs from the ECS spec (one ListEcsSpecs lookup, then cached)', async () => {
    const adapter = adapterFor(sim);
    const job = byName('resnet-ddp');
    const detail = (await adapter.getJob({ externalId: job.JobId, projectExternalId: '12345' }, signal()))!;
    expect(detail).toMatchObject({ name: 'resnet-ddp', projectExternalId: '12345', gpuCount: 32, gpuType: 'Tesla-V100-16G' });
    expect(detail.startedAt?.getTime()).toBe(job.runningMs);
    expect(detail.finishedAt).toBeNull();
    expect(detail.nodes!.map((n) => n.externalId)).toEqual(job.Pods.map((p) => p.PodId));
    expect(detail.nodes![0]!.gpus).toHaveLength(8);
    expect(detail.nodes![0]!.gpus[7]).toEqual({ index: 7, model: 'Tesla-V100-16G', memoryTotalBytes: 16 * 1024 ** 3 });
    await adapter.getJob({ externalId: job.JobId, projectExternalId: '12345' }, signal());
    expect(sim.count('listEcsSpecs')).toBe(1);
  });

  it('gives each role its own GPUs (PS without, workers with) and quota jobs GPUs from ResourceConfig', async () => {
    const adapter = adapterFor(sim);
    const tf = (await adapter.getJob({ externalId: byName('tf-ps-ctr').JobId, projectExternalId: '' }, signal()))!;
    expect(tf.gpuCount).toBe(2);
    expect(Object.fromEntries(tf.nodes!.map((n) => [n.externalId.replace(/^dlc[0-9a-f]+-/, ''), n.gpus.length]))).toEqual({
      'ps-0': 0,
      'worker-0': 1,
      'worker-1': 1,
    });
    // EcsSpec.GpuMemory says 24 GiB per A10 card.
    expect(tf.nodes![1]!.gpus[0]).toEqual({ index: 0, model: 'NVIDIA A10', memoryTotalBytes: 24 * 1024 ** 3 });

    const llm = (await adapter.getJob({ externalId: byName('llm-pretrain-lingjun').JobId, projectExternalId: '' }, signal()))!;
    expect(llm).toMatchObject({ gpuCount: 32, gpuType: 'NVIDIA-A100-SXM4-80GB', acceleratorKind: 'GPU' });
    expect(llm.nodes!.map((n) => n.gpus.length)).toEqual([8, 8, 8, 8]);
    // A quota's GPUType is a name, not a memory figure: the memory stays unknown.
    expect(llm.nodes![0]!.gpus[0]!.memoryTotalBytes).toBeNull();
  });

  it('keeps restarted pods as one node each (HistoryPods share the PodId)', async () => {
    const job = byName('yolo-restart');
    const detail = (await adapterFor(sim).getJob({ externalId: job.JobId, projectExternalId: '' }, signal()))!;
    expect(job.Pods[0]!.HistoryPods.length).toBe(2);
    expect(detail.nodes!.map((n) => n.externalId)).toEqual(job.Pods.map((p) => p.PodId));
    expect(detail.nodes![0]!.gpus).toHaveLength(4);
  });

  it('a queued job has no nodes yet', async () => {
    const detail = await adapterFor(sim).getJob({ externalId: byName('llama-queued').JobId, projectExternalId: '' }, signal());
    expect(detail).toMatchObject({ status: 'PENDING', startedAt: null, nodes: [], gpuCount: 16 });
  });

  it('an unknown job is null, and a job outside the configured workspace is too', async () => {
    expect(await adapterFor(sim).getJob({ externalId: 'dlc-does-not-exist', projectExternalId: '' }, signal())).toBeNull();
    const other = byName('bert-finetune');
    expect(await adapterFor(sim, { workspaceId: '12345' }).getJob({ externalId: other.JobId, projectExternalId: '' }, signal())).toBeNull();
  });
});

describe('fetchSystemMetrics', () => {
  it('GPU_UTILIZATION only: exactly one GetJobMetrics call, NODE-scope ratio series per pod', async () => {
    const job = byName('resnet-ddp');
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), lastHour(['GPU_UTILIZATION']), signal());
    expect(sim.count('getJobMetrics')).toBe(1);
    expect(res.covered).toEqual(['GPU_UTILIZATION']);
    expect(res.series.map((s) => s.nodeExternalId)).toEqual(job.Pods.map((p) => p.PodId));
    for (const s of res.series) {
      expect(s).toMatchObject({ name: 'GPU_UTILIZATION', rawName: 'GpuCoreUsage', unit: 'RATIO', scope: 'NODE', gpuIndex: null, source: 'pai-dlc' });
      expect(s.points.length).toBeGreaterThanOrEqual(11);
      expect(s.points.every((p) => p.value !== null && p.value > 0 && p.value <= 1)).toBe(true);
      expect(s.points[1]!.timestamp!.getTime() - s.points[0]!.timestamp!.getTime()).toBe(300_000);
    }
  });

  it('three metrics make three calls, one per MetricType; rates stay bytes/s', async () => {
    const job = byName('tf-ps-ctr');
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), lastHour(['GPU_UTILIZATION', 'MEMORY_UTILIZATION', 'NETWORK_RECEIVE_RATE']), signal());
    expect(sim.count('getJobMetrics')).toBe(3);
    const net = res.series.filter((s) => s.name === 'NETWORK_RECEIVE_RATE');
    expect(net).toHaveLength(3);
    expect(net[0]).toMatchObject({ unit: 'BYTES_PER_SECOND', rawName: 'NetworkInputRate' });
    expect(net[0]!.points.some((p) => p.value! > 1e6)).toBe(true);
    // The PS pod has no GPU: its GPU series comes back empty rather than invented.
    const gpu = res.series.filter((s) => s.name === 'GPU_UTILIZATION');
    expect(gpu.find((s) => s.nodeExternalId!.endsWith('-ps-0'))!.points).toEqual([]);
  });

  it('sends TimeStep in whole minutes (at least 1m) chosen from stepSeconds', async () => {
    const job = byName('resnet-ddp');
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), { ...lastHour(['CPU_UTILIZATION']), stepSeconds: 20 }, signal());
    const pts = res.series[0]!.points;
    expect(pts[1]!.timestamp!.getTime() - pts[0]!.timestamp!.getTime()).toBe(60_000);
    expect(res.series[0]!.meta.timeStep).toBe('1m');
  });

  it("returns the job's pods as the topology with the series, so every series' node exists in the same answer", async () => {
    const job = byName('resnet-ddp');
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), lastHour(['GPU_UTILIZATION']), signal());
    expect(res.nodes!.map((n) => n.externalId)).toEqual(job.Pods.map((p) => p.PodId));
    expect(res.series.every((s) => res.nodes!.some((n) => n.externalId === s.nodeExternalId))).toBe(true);
  });
});

describe('failures', () => {
  const job = () => byName('resnet-ddp');

  it('429 Throttling.User -> UPSTREAM_RATE_LIMITED with the x-acs-retry-after hint', async () => {
    sim.inject({ kind: 'rate_limit', route: 'getJobMetrics', times: 1, retryAfterSeconds: 3 });
    await expect(adapterFor(sim).fetchSystemMetrics(refOf(job()), lastHour(['GPU_UTILIZATION']), signal())).rejects.toMatchObject({
      code: 'UPSTREAM_RATE_LIMITED',
      status: 429,
      retryAfterSeconds: 3,
      details: { upstreamCode: 'Throttling.User' },
    });
  });

  it('5xx -> UPSTREAM_UNAVAILABLE', async () => {
    sim.inject({ kind: 'status', status: 503, route: 'listJobs', times: 1 });
    await expect(adapterFor(sim).listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', status: 503 });
    sim.inject({ kind: 'status', status: 500, route: 'getJob', times: 1 });
    await expect(adapterFor(sim).getJob({ externalId: job().JobId, projectExternalId: '' }, signal())).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      details: { upstreamCode: 'InternalError' },
    });
  });

  it('no answer within timeoutSeconds -> UPSTREAM_TIMEOUT', async () => {
    sim.inject({ kind: 'timeout', route: 'getJob', times: 1 });
    await expect(adapterFor(sim, { timeoutSeconds: 0.5 }).getJob({ externalId: job().JobId, projectExternalId: '' }, signal())).rejects.toMatchObject({
      code: 'UPSTREAM_TIMEOUT',
    });
  });

  it('a malformed body -> UPSTREAM_BAD_RESPONSE; a connection reset -> UPSTREAM_UNAVAILABLE', async () => {
    sim.inject({ kind: 'malformed', route: 'listJobs', times: 1 });
    await expect(adapterFor(sim).listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    sim.inject({ kind: 'reset', route: 'getJobMetrics', times: 1 });
    await expect(adapterFor(sim).fetchSystemMetrics(refOf(job()), lastHour(['GPU_UTILIZATION']), signal())).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
    });
  });

  it('metrics of an unknown job -> UPSTREAM_NOT_FOUND', async () => {
    await expect(
      adapterFor(sim).fetchSystemMetrics({ ...refOf(job()), externalId: 'dlc-gone' }, lastHour(['GPU_UTILIZATION']), signal()),
    ).rejects.toMatchObject({ code: 'UPSTREAM_NOT_FOUND' });
  });
});

describe('fetchLogs', () => {
  it("pages through every pod's plain lines with resumable cursors", async () => {
    const adapter = adapterFor(sim);
    const src = byName('mnist-succeeded');
    const ref = refOf(src);
    const all: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page = await adapter.fetchLogs!(ref, { after, since: null, limit: 40 }, signal());
      all.push(...page.lines.map((l) => `${l.node} ${l.message}`));
      after = page.nextCursor;
      pages += 1;
    } while (after && pages < 50);
    // 95 minutes of running, one line a minute (start and end included), for each of 3 pods.
    expect(all.length).toBe(3 * 96);
    expect(new Set(all).size).toBe(all.length);
    expect(all[0]).toMatch(/-chief-0 \[.*\] chief step=0 loss=/);
  });
});
