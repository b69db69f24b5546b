// PAI-DLC jobs whose monitoring moved to CloudMonitor (quota, Lingjun): the adapter chooses the
// route per job by its resource type, reads GetMetrics (Dimensions as a JSON string, Period,
// NextToken paging, DataPoints as a JSON string), and never records an empty answer as complete
// while the job runs. Also: the job facts (restarts, failure reason, console link) and logs past
// GetPodLogs' 2,000-line default.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { MetricFetchRequest } from '../../../src/domain/types.js';
import { onShapeMismatch, type ShapeMismatch } from '../../../src/providers/shape-watch.js';
import { startPaiDlcSimulator, type PaiDlcSimulator, type SimJob } from '../../../src/simulators/pai-dlc/index.js';
import { adapterFor, jobNamed, rawSigned, refOf, signal } from './helpers.js';

let sim: PaiDlcSimulator;
const mismatches: ShapeMismatch[] = [];
let stopWatching: () => void;
beforeAll(async () => {
  sim = await startPaiDlcSimulator();
  stopWatching = onShapeMismatch((m) => mismatches.push(m));
});
afterAll(async () => {
  stopWatching();
  await sim.close();
});
beforeEach(() => {
  sim.clearFaults();
  sim.resetStats();
  mismatches.length = 0;
});
afterEach(() => sim.clearFaults());

const byName = (name: string): SimJob => jobNamed(sim, name);
const window = (hours: number, metrics: MetricFetchRequest['metrics'], stepSeconds = 60): MetricFetchRequest => ({
  from: new Date(Math.floor((Date.now() - hours * 3600_000) / 1000) * 1000),
  to: new Date(Math.floor(Date.now() / 1000) * 1000),
  metrics,
  stepSeconds,
});

describe('metrics route per job', () => {
  it('a Lingjun quota job reads CloudMonitor GetMetrics, one GPU-scope series per pod and card with points, and never the legacy route', async () => {
    const job = byName('llm-pretrain-lingjun');
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), window(1, ['GPU_DRAM_ACTIVE']), signal());
    expect(sim.count('getJobMetrics')).toBe(0);
    expect(res.covered).toEqual(['GPU_DRAM_ACTIVE']);
    // One query for all pods and cards, paged by 1,000 points.
    expect(sim.count('getMetrics')).toBe(Math.ceil(res.series.reduce((n, s) => n + s.points.length, 0) / 1000));
    const cards = job.Pods.flatMap((p) => Array.from({ length: p.gpus }, (_, i) => `${p.PodId}#${i}`)).sort();
    expect(res.series.map((s) => `${s.nodeExternalId}#${s.gpuIndex}`).sort()).toEqual(cards);
    for (const s of res.series) {
      expect(s).toMatchObject({
        name: 'GPU_DRAM_ACTIVE',
        rawName: 'CARD_GPU_DRAM_ACTIVE_UTIL',
        unit: 'RATIO',
        scope: 'GPU',
        meta: { route: 'CloudMonitor GetMetrics', periodSeconds: 60, userIdFrom: 'config accountId' },
      });
      expect(s.points.length).toBeGreaterThanOrEqual(59);
      expect(s.points.every((p) => p.value !== null && p.value > 0 && p.value <= 1)).toBe(true);
      expect(s.points[1]!.timestamp!.getTime() - s.points[0]!.timestamp!.getTime()).toBe(60_000);
    }
  });

  it('every GetMetrics name the adapter asks is one the simulator serves, each with its own points, in its unit', async () => {
    const job = byName('bert-finetune');
    const metrics = [
      'GPU_UTILIZATION',
      'GPU_SM_ACTIVE',
      'GPU_TENSOR_ACTIVE',
      'GPU_DRAM_ACTIVE',
      'GPU_NVLINK_RECEIVE_RATE',
      'GPU_NVLINK_TRANSMIT_RATE',
      'GPU_PCIE_RECEIVE_RATE',
      'GPU_PCIE_TRANSMIT_RATE',
      'GPU_TENSOR_FLOPS',
    ] as const;
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), window(1, [...metrics]), signal());
    expect(mismatches).toEqual([]);
    expect([...res.covered].sort()).toEqual([...metrics].sort());
    expect(sim.count('getMetrics')).toBe(10); // GPU_UTILIZATION twice: the job's duty cycle and each card's
    expect(res.series.find((s) => s.scope === 'JOB')).toMatchObject({ name: 'GPU_UTILIZATION', rawName: 'JOB_GPU_ACCELERATOR_DUTTY_UTIL' });
    const max = (name: string) => Math.max(...res.series.filter((s) => s.name === name).flatMap((s) => s.points.map((p) => p.value!)));
    expect(max('GPU_SM_ACTIVE')).toBeLessThanOrEqual(1);
    expect(max('GPU_NVLINK_RECEIVE_RATE')).toBeGreaterThan(1e9); // MiB/s -> bytes/s
    expect(max('GPU_PCIE_TRANSMIT_RATE')).toBeLessThan(30e9);
    expect(max('GPU_TENSOR_FLOPS')).toBeGreaterThan(1e13); // TFLOP/s -> FLOP/s
  });

  it('the simulator serves the CloudMonitor names and nothing else (POD_GPU_UTIL is refused)', async () => {
    const job = byName('llm-pretrain-lingjun');
    const req = rawSigned(sim, {
      action: 'GetMetrics',
      path: '/api/v1/cms/metrics',
      query: { Namespace: 'acs_pai_dlc', MetricName: 'POD_GPU_UTIL', Dimensions: JSON.stringify([{ jobId: job.JobId }]), JobId: job.JobId },
    });
    const res = await fetch(req.url, { headers: req.headers });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { Code: string }).Code).toBe('InvalidParameter');
  });

  it("a RAM sub-user's job: its UserId finds nothing (CloudMonitor files it under the account), noticed; the configured accountId finds it", async () => {
    const job = byName('bert-finetune');
    const owner = job.user;
    job.user = sim.fleet.users[1]!;
    try {
      const without = await adapterFor(sim, { accountId: undefined }).fetchSystemMetrics(refOf(job), window(1, ['GPU_DRAM_ACTIVE']), signal());
      expect(without.series).toEqual([]);
      expect(without.covered).toEqual([]);
      expect(mismatches.map((m) => m.assumption)).toContain('pai-dlc.cms.empty-while-running');
      const withAccount = await adapterFor(sim).fetchSystemMetrics(refOf(job), window(1, ['GPU_DRAM_ACTIVE']), signal());
      expect(withAccount.series.length).toBeGreaterThan(0);
      expect(withAccount.series[0]!.meta.userIdFrom).toBe('config accountId');
    } finally {
      job.user = owner;
    }
  });

  it('a quota job on general resources (bert-finetune) goes to CloudMonitor too; a pay-as-you-go ECS job stays on GetJobMetrics, its rates read as MB/s', async () => {
    const adapter = adapterFor(sim);
    await adapter.fetchSystemMetrics(refOf(byName('bert-finetune')), window(1, ['GPU_SM_ACTIVE']), signal());
    expect([sim.count('getMetrics'), sim.count('getJobMetrics')]).toEqual([1, 0]);
    sim.resetStats();
    const res = await adapter.fetchSystemMetrics(refOf(byName('resnet-ddp')), window(1, ['CPU_UTILIZATION', 'NETWORK_RECEIVE_RATE']), signal());
    expect([sim.count('getMetrics'), sim.count('getJobMetrics')]).toEqual([0, 2]);
    expect(res.series.every((s) => s.points.length > 0)).toBe(true);
    const rates = res.series.filter((s) => s.name === 'NETWORK_RECEIVE_RATE').flatMap((s) => s.points.map((p) => p.value!));
    expect(Math.max(...rates)).toBeGreaterThan(1e8);
    expect(Math.max(...rates)).toBeLessThanOrEqual(1.25e9);
    expect(mismatches).toEqual([]);
  });

  it('the simulator answers the legacy route for a CloudMonitor job the way the real one does: an empty PodMetrics', async () => {
    const job = byName('llm-pretrain-lingjun');
    const req = rawSigned(sim, { action: 'GetJobMetrics', path: `/api/v1/jobs/${job.JobId}/metrics`, query: { MetricType: 'GpuCoreUsage' } });
    const body = (await (await fetch(req.url, { headers: req.headers })).json()) as { PodMetrics: unknown[] };
    expect(body.PodMetrics).toEqual([]);
  });

  it('GetMetrics answers DataPoints as a JSON string and pages by NextToken; the adapter follows every page without repeats', async () => {
    const job = byName('llm-pretrain-lingjun');
    const pod = job.Pods[0]!.PodId;
    const query = {
      Namespace: 'acs_pai_dlc',
      MetricName: 'CARD_GPU_DUTY_CYCLE',
      Dimensions: JSON.stringify([{ jobId: job.JobId, pod }]),
      Period: '15',
      Length: '1000',
      StartTime: new Date(Date.now() - 6 * 3600_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    const req = rawSigned(sim, { action: 'GetMetrics', path: '/api/v1/cms/metrics', query });
    const first = (await (await fetch(req.url, { headers: req.headers })).json()) as { DataPoints: string; NextToken: string | null; Period: string };
    expect(typeof first.DataPoints).toBe('string');
    expect(JSON.parse(first.DataPoints)).toHaveLength(1000);
    expect(first.NextToken).toBeTruthy();
    expect(first.Period).toBe('15');

    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), { ...window(6, ['GPU_DRAM_ACTIVE']), stepSeconds: 15 }, signal());
    const series = res.series.find((s) => s.nodeExternalId === pod && s.gpuIndex === 0)!;
    const times = series.points.map((p) => p.timestamp!.getTime());
    expect(new Set(times).size).toBe(times.length);
    expect(times.length).toBeGreaterThan(1400); // 6 h at 15 s for each of the pods: several pages
    expect(sim.count('getMetrics')).toBeGreaterThanOrEqual((job.Pods.length * 8 * 1400) / 1000);
  });

  it('an empty answer while the job runs is not recorded as complete, and is reported as a mismatch', async () => {
    sim.inject({ kind: 'empty', route: 'getMetrics' });
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(byName('llm-pretrain-lingjun')), window(1, ['GPU_DRAM_ACTIVE']), signal());
    expect(res.series).toEqual([]);
    expect(res.covered).toEqual([]);
    expect(mismatches.map((m) => m.assumption)).toContain('pai-dlc.cms.empty-while-running');
  });

  it("a finished job's empty answer is complete (nothing more will come)", async () => {
    sim.inject({ kind: 'empty', route: 'getMetrics' });
    const job = byName('gpt-crash-reserving');
    const stopped = sim.fleet.jobs.find((j) => j.Status === 'Failed' && j.ResourceId)!;
    const target = stopped ?? job;
    const res = await adapterFor(sim).fetchSystemMetrics({ ...refOf(target), status: 'FAILED' }, window(1, ['GPU_DRAM_ACTIVE']), signal());
    expect(res.series).toEqual([]);
    expect(res.covered).toEqual(['GPU_DRAM_ACTIVE']);
  });

  it("a finished job's empty answer over the hours it ran is noticed (a wrong name or dimension answers so), still recorded complete", async () => {
    const job = sim.fleet.jobs.find((j) => j.finishedMs !== null && j.runningMs !== null && !j.metricsViaGetJobMetrics && j.Pods.some((p) => p.gpus > 0))!;
    const ran = { from: new Date(job.runningMs!), to: new Date(job.finishedMs!), metrics: ['GPU_DRAM_ACTIVE' as const], stepSeconds: 60 };
    const full = await adapterFor(sim).fetchSystemMetrics(refOf(job), ran, signal());
    expect(full.series.length).toBeGreaterThan(0);
    expect(mismatches).toEqual([]);
    sim.inject({ kind: 'empty', route: 'getMetrics' });
    const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), ran, signal());
    expect(res.covered).toEqual(['GPU_DRAM_ACTIVE']);
    expect(mismatches.map((m) => m.assumption)).toContain('pai-dlc.cms.empty-after-finish');
  });

  it('DataPoints in an unexpected shape are counted as a mismatch, not read as numbers', async () => {
    const job = byName('bert-finetune');
    const original = globalThis.fetch;
    // Rewrites the simulator's answer into points without a timestamp (what a changed API could send).
    globalThis.fetch = async (input, init) => {
      const res = await original(input, init);
      if (!String(input).includes('/api/v1/cms/metrics')) return res;
      const body = (await res.json()) as Record<string, unknown>;
      const points = JSON.parse(body.DataPoints as string) as Record<string, unknown>[];
      body.DataPoints = JSON.stringify(points.map(({ timestamp: _t, ...rest }) => ({ ...rest, time: 'later' })));
      return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    try {
      const res = await adapterFor(sim).fetchSystemMetrics(refOf(job), window(1, ['GPU_DRAM_ACTIVE']), signal());
      expect(res.series).toEqual([]);
      expect(res.covered).toEqual([]);
      expect(mismatches.map((m) => m.assumption)).toContain('pai-dlc.cms.datapoint-shape');
    } finally {
      globalThis.fetch = original;
    }
  });
});

describe('job facts', () => {
  it('restarts from RestartTimes (HistoryPods agree), failure reason from ReasonCode/ReasonMessage, a console link', async () => {
    const adapter = adapterFor(sim);
    const yolo = (await adapter.getJob({ externalId: byName('yolo-restart').JobId, projectExternalId: '' }, signal()))!;
    expect(yolo.restartCount).toBe(2);
    expect(yolo.failureReason).toBeNull();
    const failed = byName('oom-failed');
    const oom = (await adapter.getJob({ externalId: failed.JobId, projectExternalId: '' }, signal()))!;
    expect(oom).toMatchObject({ status: 'FAILED', failureReason: 'JobFailed: Pod worker-0 OOMKilled.', restartCount: 0 });
    expect(oom.consoleUrl).toBe(
      `https://pai.console.aliyun.com/?regionId=cn-hangzhou&workspaceId=${failed.workspace.WorkspaceId}#/job/detail?jobId=${failed.JobId}&page=jobs`,
    );
    const done = (await adapter.getJob({ externalId: byName('mnist-succeeded').JobId, projectExternalId: '' }, signal()))!;
    expect(done.failureReason).toBeNull(); // "JobSucceeded" is no failure
  });
});

describe('logs beyond 2,000 lines', () => {
  it('pages a 2-day pod (one line a minute) by time windows: every line once, in order, incarnations of a restarted pod included', async () => {
    const adapter = adapterFor(sim);
    const job = byName('llm-pretrain-lingjun');
    const ref = refOf(job);
    const lines: string[] = [];
    let after: string | null = null;
    let pages = 0;
    const started = Math.ceil(job.Pods[0]!.startedMs! / 1000) * 1000;
    // Lines of the first pod only: enough to cross the 2,000-line default several times over.
    do {
      const page = await adapter.fetchLogs!(ref, { after, since: null, limit: 1000 }, signal());
      lines.push(...page.lines.filter((l) => l.node === job.Pods.map((p) => p.PodId).sort()[0]).map((l) => l.message));
      after = page.nextCursor;
      pages += 1;
      if (page.lines.some((l) => l.node !== job.Pods.map((p) => p.PodId).sort()[0])) break;
    } while (after && pages < 20);
    const minutes = Math.floor((Math.floor(Date.now() / 1000) * 1000 - 1000 - started) / 60_000) + 1;
    expect(lines.length).toBeGreaterThan(2000);
    expect(new Set(lines).size).toBe(lines.length);
    expect(lines.length).toBeGreaterThanOrEqual(minutes - 1);
    const stamps = lines.map((l) => Date.parse(/^\[([^\]]+)\]/.exec(l)![1]!));
    expect(stamps.every((t, i) => i === 0 || t - stamps[i - 1]! === 60_000)).toBe(true);

    const yolo = byName('yolo-restart');
    const all: string[] = [];
    after = null;
    pages = 0;
    do {
      const page = await adapter.fetchLogs!(refOf(yolo), { after, since: null, limit: 500 }, signal());
      all.push(...page.lines.map((l) => `${l.node} ${l.message}`));
      after = page.nextCursor;
      pages += 1;
    } while (after && pages < 30 && all.length < 10_000);
    // Each pod: two 20-minute incarnations (21 lines each, both ends included) before the current one.
    const pod0 = all.filter((l) => l.startsWith(yolo.Pods[0]!.PodId + ' '));
    expect(new Set(all).size).toBe(all.length);
    expect(pod0.length).toBeGreaterThan(42);
  });
});
