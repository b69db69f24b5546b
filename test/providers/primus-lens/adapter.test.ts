// The Primus-Lens adapter against the Primus-Lens simulator over real HTTP on loopback.
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { primusLensConfig, type PrimusLensConfig } from '../../../src/providers/primus-lens/index.js';
import type { JobRef } from '../../../src/domain/types.js';
import { createPrimusLensAdapter } from '../../../src/providers/primus-lens/adapter.js';
import type { ProviderAdapter } from '../../../src/providers/provider.js';
import { LensClient } from '../../../src/providers/primus-lens/client.js';
import { workloadListSchema } from '../../../src/providers/primus-lens/wire.js';
import { onShapeMismatch } from '../../../src/providers/shape-watch.js';
import { startPrimusLensDemo } from '../../../src/simulators/primus-lens/demo.js';
import {
  SOURCE_METRICS,
  currentIteration,
  deviceGpuUtilizationPercent,
  iterationTimestampMs,
  loggedIterations,
  nodeGpuMemoryUtilizationPercent,
  nodeGpuUtilizationPercent,
  nodeRdmaBytesPerSecond,
  podCpuCores,
  podFsBytesPerSecond,
  podMemoryBytes,
  trainingValue,
  type SimWorkload,
} from '../../../src/simulators/primus-lens/fleet.js';
import { startPrimusLensSimulator, type PrimusLensSimulator, type PrimusLensSimulatorOptions } from '../../../src/simulators/primus-lens/server.js';

const NOW = Date.now();
const ANCHOR = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth(), new Date(NOW).getUTCDate());
const signal = new AbortController().signal;
const open: PrimusLensSimulator[] = [];

async function sim(opts: PrimusLensSimulatorOptions = {}): Promise<PrimusLensSimulator> {
  const s = await startPrimusLensSimulator({ anchorMs: ANCHOR, now: () => NOW, ...opts });
  open.push(s);
  return s;
}

function adapterFor(s: PrimusLensSimulator, extra: Partial<PrimusLensConfig> = {}, secrets: Record<string, string> = {}): ProviderAdapter {
  const config = primusLensConfig.parse({ id: 'lens-test', kind: 'PRIMUS_LENS', baseUrl: s.baseUrl, ...extra });
  return createPrimusLensAdapter(config, secrets);
}

function workload(s: PrimusLensSimulator, name: string, cluster = 'gpu-cluster-a'): SimWorkload {
  const w = s.fleet.workloads.find((x) => x.name === name && x.cluster === cluster);
  if (!w) throw new Error(`no workload ${name}`);
  return w;
}

function ref(w: SimWorkload): JobRef {
  return {
    externalId: w.uid,
    projectExternalId: w.namespace,
    status: 'RUNNING',
    createdAt: new Date(w.startMs),
    startedAt: new Date(w.startMs),
    finishedAt: w.endMs === null ? null : new Date(w.endMs),
  };
}

afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
});

describe('workloads, pods and nodes', () => {
  let lens: PrimusLensSimulator;
  let adapter: ProviderAdapter;
  beforeAll(async () => {
    lens = await sim();
    adapter = adapterFor(lens, { cluster: 'gpu-cluster-a' });
  });

  it('lists namespaces as projects and maps every status', async () => {
    const projects = await adapter.listProjects(signal);
    expect(projects.map((p) => p.externalId)).toEqual(['research', 'team-llm', 'team-vision']);

    const page = await adapter.listJobs(null, signal);
    const mine = lens.fleet.workloads.filter((w) => w.cluster === 'gpu-cluster-a');
    expect(page.jobs).toHaveLength(mine.length);
    expect(page.nextCursor).toBeNull();
    // Deleted is not a way of ending: the pods' last phases (Failed in the simulator) say how it did.
    const expected = { Running: 'RUNNING', Pending: 'PENDING', Done: 'SUCCEEDED', Failed: 'FAILED', Deleted: 'FAILED' } as const;
    for (const w of mine) {
      const job = page.jobs.find((j) => j.externalId === w.uid)!;
      expect(job.status).toBe(expected[w.status]);
      expect(job.rawStatus).toBe(w.status);
      expect(job.projectExternalId).toBe(w.namespace);
      expect(job.createdAt?.getTime()).toBe(Math.floor(w.startMs / 1000) * 1000);
      expect(job.startedAt).toEqual(w.status === 'Pending' ? null : job.createdAt);
      // The list's end_at is the DB row's last update, never read as the end.
      expect(job.finishedAt).toBeNull();
    }
    expect(new Set(page.jobs.map((j) => j.status))).toEqual(new Set(Object.values(expected)));
    const llama = page.jobs.find((j) => j.name === 'llama3-8b-pretrain')!;
    expect(llama).toMatchObject({ gpuCount: 16, gpuType: 'AMD_Instinct_MI300X_OAM' });
  });

  it('pages through a large fleet with page_num / page_size and total', async () => {
    const big = await sim({ replicas: 9 });
    const a = adapterFor(big);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await a.listJobs(cursor, signal);
      seen.push(...page.jobs.map((j) => j.externalId));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);
    const inDefault = big.fleet.workloads.filter((w) => w.cluster === 'gpu-cluster-a').map((w) => w.uid);
    expect(inDefault.length).toBeGreaterThan(100);
    expect(pages).toBe(2);
    expect(new Set(seen)).toEqual(new Set(inDefault));
    expect(seen).toHaveLength(inDefault.length);
    expect(big.count('workloads')).toBe(2);
  });

  it('reads the detail: nodes from pods, end from endTime, status from the list', async () => {
    const llama = workload(lens, 'llama3-8b-pretrain');
    const running = await adapter.getJob(ref(llama), signal);
    expect(running).toMatchObject({ status: 'RUNNING', finishedAt: null, gpuCount: 16, gpuType: 'AMD_Instinct_MI300X_OAM' });
    expect(running!.nodes!.map((n) => [n.externalId, n.gpus.length])).toEqual(llama.pods.map((p) => [p.nodeName, 8]));
    expect(running!.nodes![0]!.gpus[7]).toEqual({ index: 7, model: 'AMD_Instinct_MI300X_OAM', memoryTotalBytes: null });

    const done = workload(lens, 'mixtral-sft');
    const finished = await adapter.getJob(ref(done), signal);
    expect(finished!.status).toBe('SUCCEEDED');
    expect(finished!.finishedAt!.getTime()).toBe(Math.floor(done.endMs! / 1000) * 1000);
    // Two GPU models in gpu_allocation: each node's model comes from workload-diag.
    expect(finished!.nodes!.map((n) => n.gpus[0]!.model)).toEqual(done.pods.map((p) => p.gpuModel));
    expect(lens.count('diagPods')).toBe(1);

    // A restarted pod (same name, new uid) is counted once.
    const restarted = await adapter.getJob(ref(workload(lens, 'rlhf-ppo')), signal);
    expect(restarted!.status).toBe('FAILED');
    expect(restarted!.nodes!.map((n) => n.gpus.length)).toEqual([8, 2]);

    const pending = await adapter.getJob(ref(workload(lens, 'sweep-lr-07')), signal);
    expect(pending).toMatchObject({ status: 'PENDING', startedAt: null, nodes: [] });

    expect(await adapter.getJob({ externalId: 'no-such-uid', projectExternalId: 'team-llm' }, signal)).toBeNull();
  });

  it('reads node and per-GPU utilization as ratios, per GPU from the workload-scoped route, and pod CPU', async () => {
    const llama = workload(lens, 'llama3-8b-pretrain');
    const from = new Date(NOW - 10 * 60_000);
    const result = await adapter.fetchSystemMetrics(
      ref(llama),
      { from, to: new Date(NOW), metrics: ['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION', 'CPU_USAGE'], stepSeconds: 60 },
      signal,
    );
    expect(result.covered).toEqual(['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION', 'CPU_USAGE']);
    const node = llama.pods[0]!.nodeName;
    const nodeUtil = result.series.find((s) => s.scope === 'NODE' && s.name === 'GPU_UTILIZATION' && s.nodeExternalId === node)!;
    expect(nodeUtil).toMatchObject({ rawName: 'GPU Utilization', unit: 'RATIO', source: 'primus-lens', keyedBy: 'time' });
    expect(nodeUtil.points.length).toBe(11);
    for (const p of nodeUtil.points) {
      const t = p.timestamp!.getTime() / 1000;
      expect(p.value).toBeCloseTo(nodeGpuUtilizationPercent(llama, node, t) / 100, 10);
    }
    const mem = result.series.find((s) => s.name === 'GPU_MEMORY_UTILIZATION' && s.nodeExternalId === node)!;
    expect(mem.points[0]!.value).toBeCloseTo(nodeGpuMemoryUtilizationPercent(llama, node, mem.points[0]!.timestamp!.getTime() / 1000) / 100, 10);

    // Per device from the workload-scoped unified route, numbered by the node's gpu_id.
    const gpuSeries = result.series.filter((s) => s.scope === 'GPU');
    expect(gpuSeries).toHaveLength(16);
    expect(gpuSeries.every((s) => s.source === 'primus-lens' && s.rawName === 'gpu_utilization_by_device')).toBe(true);
    const gpu3 = gpuSeries.find((s) => s.nodeExternalId === node && s.gpuIndex === 3)!;
    const first = gpu3.points[0]!;
    expect(first.value).toBeCloseTo(deviceGpuUtilizationPercent(llama, node, 3, first.timestamp!.getTime() / 1000) / 100, 10);
    expect(result.nodes?.map((n) => n.externalId)).toEqual(llama.pods.map((p) => p.nodeName));
    // Pod CPU in cores, summed per node.
    const cpu = result.series.find((s) => s.name === 'CPU_USAGE' && s.nodeExternalId === node)!;
    expect(cpu).toMatchObject({ unit: 'CORES', scope: 'NODE', rawName: 'pod_cpu_usage' });
    expect(cpu.points[0]!.value).toBeCloseTo(podCpuCores(llama, llama.pods[0]!.podName, cpu.points[0]!.timestamp!.getTime() / 1000), 6);
  });

  it('two workloads on one node: each gets only its own devices, with the same numbering as its GPUs', async () => {
    const from = new Date(NOW - 10 * 60_000);
    const vit = workload(lens, 'vit-h-finetune');
    const probe = workload(lens, 'vit-h-probe');
    const node = vit.pods[0]!.nodeName;
    expect(probe.pods[0]!.nodeName).toBe(node);
    for (const [w, ids] of [
      [vit, [0, 1, 2, 3]],
      [probe, [4, 5, 6, 7]],
    ] as const) {
      const result = await adapter.fetchSystemMetrics(ref(w), { from, to: new Date(NOW), metrics: ['GPU_UTILIZATION', 'GPU_POWER'], stepSeconds: 60 }, signal);
      const util = result.series.filter((s) => s.scope === 'GPU' && s.name === 'GPU_UTILIZATION');
      expect(util.map((s) => s.gpuIndex).sort()).toEqual(ids);
      const p = util[0]!.points[0]!;
      expect(p.value).toBeCloseTo(deviceGpuUtilizationPercent(w, node, util[0]!.gpuIndex!, p.timestamp!.getTime() / 1000) / 100, 10);
      const power = result.series.filter((s) => s.scope === 'GPU' && s.name === 'GPU_POWER');
      expect(power.map((s) => s.gpuIndex).sort()).toEqual(ids);
      expect(power[0]).toMatchObject({ unit: 'WATTS', rawName: 'gpu_power_by_device' });
      expect(result.nodes).toEqual([
        { externalId: node, name: node, gpus: ids.map((index) => ({ index, model: expect.any(String), memoryTotalBytes: null })) },
      ]);
      // The detail names the same GPUs.
      const detail = await adapter.getJob(ref(w), signal);
      expect(detail!.nodes![0]!.gpus.map((g) => g.index)).toEqual(ids);
    }
  });

  it('reads pod memory, filesystem and RDMA throughput in canonical units', async () => {
    const llama = workload(lens, 'llama3-8b-pretrain');
    const metrics = ['MEMORY_USED', 'DISK_READ_RATE', 'DISK_WRITE_RATE', 'RDMA_RECEIVE_RATE', 'RDMA_TRANSMIT_RATE'] as const;
    const result = await adapter.fetchSystemMetrics(ref(llama), { from: new Date(NOW - 5 * 60_000), to: new Date(NOW), metrics, stepSeconds: 60 }, signal);
    expect([...result.covered].sort()).toEqual([...metrics].sort());
    const pod = llama.pods[1]!;
    const at = (name: string) => result.series.find((s) => s.name === name && s.nodeExternalId === pod.nodeName)!;
    const t = (name: string) => at(name).points[0]!.timestamp!.getTime() / 1000;
    expect(at('MEMORY_USED')).toMatchObject({ unit: 'BYTES' });
    expect(at('MEMORY_USED').points[0]!.value).toBe(podMemoryBytes(llama, pod.podName, t('MEMORY_USED')));
    expect(at('DISK_READ_RATE').points[0]!.value).toBe(podFsBytesPerSecond(llama, pod.podName, 'read', t('DISK_READ_RATE')));
    expect(at('DISK_WRITE_RATE').points[0]!.value).toBe(podFsBytesPerSecond(llama, pod.podName, 'write', t('DISK_WRITE_RATE')));
    expect(at('RDMA_RECEIVE_RATE')).toMatchObject({ unit: 'BYTES_PER_SECOND', rawName: 'rdma_rx_bandwidth_by_node' });
    expect(at('RDMA_TRANSMIT_RATE').points[0]!.value).toBe(nodeRdmaBytesPerSecond(llama, pod.nodeName, 'tx', t('RDMA_TRANSMIT_RATE')));
  });

  it('reads the achieved model TFLOP/s per GPU where the workload logs it, and claims nothing where it does not', async () => {
    const window = { from: new Date(NOW - 5 * 60_000), to: new Date(NOW), metrics: ['MODEL_FLOPS_PER_GPU' as const], stepSeconds: 60 };
    const logging = lens.fleet.workloads.find((w) => w.sources.includes('log') && currentIteration(w, NOW) > 0 && w.endMs === null)!;
    const result = await adapter.fetchSystemMetrics(ref(logging), window, signal);
    expect(result.covered).toEqual(['MODEL_FLOPS_PER_GPU']);
    const [flops] = result.series;
    expect(flops).toMatchObject({ name: 'MODEL_FLOPS_PER_GPU', unit: 'FLOPS', scope: 'JOB' });
    expect(flops!.points.length).toBeGreaterThan(0);
    for (const p of flops!.points) {
      const t = p.timestamp!.getTime();
      expect(p.value).toBe(trainingValue(logging, 'log', 'tflops', currentIteration(logging, t)) * 1e12);
    }
    // Lens answers an empty TrainingPerformance graph for it: not covered (issue 38).
    const silent = lens.fleet.workloads.find((w) => !w.sources.includes('log'))!;
    const none = await adapter.fetchSystemMetrics(ref(silent), window, signal);
    expect(none.covered).toEqual([]);
    expect(none.series).toEqual([]);
  });

  it("without the unified route (older Lens): node-wide device data only, marked so, never as the workload's own", async () => {
    const old = await sim({ unifiedTrainingMetrics: false });
    const a = adapterFor(old, { cluster: 'gpu-cluster-a' });
    const vit = workload(old, 'vit-h-finetune');
    const node = vit.pods[0]!.nodeName;
    const result = await a.fetchSystemMetrics(
      ref(vit),
      { from: new Date(NOW - 10 * 60_000), to: new Date(NOW), metrics: ['GPU_UTILIZATION', 'CPU_USAGE'], stepSeconds: 60 },
      signal,
    );
    // Pod CPU comes only from the unified route: not covered, nothing claimed.
    expect(result.covered).toEqual(['GPU_UTILIZATION']);
    const devices = result.series.filter((s) => s.scope === 'GPU');
    // All 8 devices of the node, the probe workload's 4 included: none is the workload's own.
    expect(devices).toHaveLength(8);
    expect(devices.every((s) => s.source === 'primus-lens:node-wide' && s.meta.nodeWide === true)).toBe(true);
    expect(result.series.filter((s) => s.scope === 'GPU' && s.source === 'primus-lens')).toHaveLength(0);
    expect(result.nodes).toEqual([
      { externalId: node, name: node, gpus: [0, 1, 2, 3].map((index) => ({ index, model: expect.any(String), memoryTotalBytes: null })) },
    ]);
  });
});

describe('training metrics and progress', () => {
  it('follows sources -> available -> data and returns series by iteration, per source', async () => {
    const lens = await sim();
    const adapter = adapterFor(lens);
    const llama = workload(lens, 'llama3-8b-pretrain');
    const series = await adapter.fetchTrainingMetrics!(ref(llama), { from: null, to: null, names: ['loss', 'grad_norm'] }, signal);
    expect(lens.count('metricsSources')).toBe(1);
    expect(lens.count('metricsAvailable')).toBe(1);
    expect(lens.count('metricsData')).toBe(1);
    expect(series.map((s) => `${s.name}/${s.source}`).sort()).toEqual(['grad_norm/wandb', 'loss/log', 'loss/wandb']);

    const iterations = loggedIterations(llama, NOW);
    const loss = series.find((s) => s.name === 'loss' && s.source === 'log')!;
    expect(loss).toMatchObject({ kind: 'training', scope: 'JOB', keyedBy: 'step', unit: 'NONE', rawName: 'loss' });
    expect(loss.points.map((p) => p.step)).toEqual(iterations);
    expect(loss.points[5]).toEqual({
      step: iterations[5],
      timestamp: new Date(iterationTimestampMs(llama, iterations[5]!, 'log')),
      value: trainingValue(llama, 'log', 'loss', iterations[5]!),
    });
    // wandb's NaN gradient norms are dropped by Lens, never a value.
    const grad = series.find((s) => s.name === 'grad_norm')!;
    const nanSteps = iterations.filter((it) => Number.isNaN(trainingValue(llama, 'wandb', 'grad_norm', it)));
    expect(nanSteps.length).toBeGreaterThan(0);
    // wandb logs an iteration 1.5 s after the log does: the newest logged iteration may not be in it yet
    // (a run whose NOW fell in those 1.5 s failed here when it expected every logged iteration).
    const inWandb = iterations.filter((it) => iterationTimestampMs(llama, it, 'wandb') <= NOW);
    expect(inWandb.length).toBeGreaterThanOrEqual(iterations.length - 1);
    expect(grad.points.map((p) => p.step)).toEqual(inWandb.filter((it) => !nanSteps.includes(it)));
    expect(SOURCE_METRICS.wandb).toContain('grad_norm');
  });

  it('passes start/end in ms and reports progress from iteration times', async () => {
    const lens = await sim();
    const adapter = adapterFor(lens, { cluster: 'gpu-cluster-a' });
    const llama = workload(lens, 'llama3-8b-pretrain');
    const from = new Date(NOW - 3_600_000);
    const series = await adapter.fetchTrainingMetrics!(ref(llama), { from, to: new Date(NOW), names: ['tflops'] }, signal);
    expect(series).toHaveLength(1);
    expect(series[0]!.points.every((p) => p.timestamp!.getTime() >= from.getTime())).toBe(true);
    expect(series[0]!.points.length).toBe(loggedIterations(llama, NOW).filter((it) => iterationTimestampMs(llama, it, 'log') >= from.getTime()).length);

    const progress = await adapter.fetchProgress!(ref(llama), signal);
    const last = loggedIterations(llama, NOW).at(-1)!;
    expect(progress!.iteration).toBe(last);
    expect(progress!.targetIteration).toBe(20000);
    expect(progress!.rate!).toBeCloseTo(llama.iterationsPerSecond, 4);
    expect(progress!.updatedAt!.getTime()).toBe(iterationTimestampMs(llama, last, 'log'));
    expect(last).toBeLessThanOrEqual(currentIteration(llama, NOW));

    // A finished run read without its end time: nothing in the recent window, so the whole history.
    const done = workload(lens, 'mixtral-sft');
    const before = lens.count('iterationTimes');
    const finished = await adapter.fetchProgress!({ ...ref(done), finishedAt: null }, signal);
    expect(lens.count('iterationTimes') - before).toBe(2);
    expect(finished).toMatchObject({ iteration: 6000, targetIteration: 6000 });
    expect(finished!.rate!).toBeCloseTo(done.iterationsPerSecond, 4);

    // A workload without training data has no progress and no training series.
    const noData = workload(lens, 'tokenizer-build');
    expect(await adapter.fetchProgress!(ref(noData), signal)).toBeNull();
    expect(await adapter.fetchTrainingMetrics!(ref(noData), { from: null, to: null, names: null }, signal)).toEqual([]);
  });

  it('sees a running workload grow as time advances', async () => {
    let clock = NOW;
    const lens = await sim({ now: () => clock });
    const adapter = adapterFor(lens);
    const moe = workload(lens, 'moe-ablation-3');
    const before = await adapter.fetchTrainingMetrics!(ref(moe), { from: null, to: null, names: ['loss'] }, signal);
    const p1 = await adapter.fetchProgress!(ref(moe), signal);
    clock += 3_600_000;
    const after = await adapter.fetchTrainingMetrics!(ref(moe), { from: null, to: null, names: ['loss'] }, signal);
    const p2 = await adapter.fetchProgress!(ref(moe), signal);
    expect(after[0]!.points.length).toBeGreaterThan(before[0]!.points.length);
    expect(p2!.iteration! - p1!.iteration!).toBeGreaterThanOrEqual(Math.floor(3600 * moe.iterationsPerSecond) - moe.logEvery);
  });

  it('reads the legacy bare form of the four routes the same way', async () => {
    const current = await sim();
    const legacy = await sim({ mode: 'legacy' });
    const w = workload(current, 'sd-xl-train');
    const a = await adapterFor(current).fetchTrainingMetrics!(ref(w), { from: null, to: null, names: null }, signal);
    const b = await adapterFor(legacy).fetchTrainingMetrics!(ref(w), { from: null, to: null, names: null }, signal);
    const key = (s: { name: string; source: string }) => `${s.name}/${s.source}`;
    expect(b.map(key).sort()).toEqual(a.map(key).sort());
    expect(a.map(key).sort()).toEqual(['accuracy/tensorflow', 'loss/log', 'loss/tensorflow', 'lr/log', 'samples_per_second/log', 'tflops/log']);
    for (const s of a) expect(b.find((x) => key(x) === key(s))!.points).toEqual(s.points);
    const pa = await adapterFor(current).fetchProgress!(ref(w), signal);
    const pb = await adapterFor(legacy).fetchProgress!(ref(w), signal);
    expect(pb).toEqual(pa);
    expect(pa!.iteration).toBe(currentIteration(w, NOW) - (currentIteration(w, NOW) % w.logEvery));

    // Legacy errors are HTTP 400/500 {"error"}.
    legacy.inject({ kind: 'status', status: 5000, route: 'metricsSources', times: 1 });
    await expect(adapterFor(legacy).fetchTrainingMetrics!(ref(w), { from: null, to: null, names: null }, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      status: 500,
    });
    legacy.inject({ kind: 'status', status: 4001, route: 'metricsSources', times: 1 });
    await expect(adapterFor(legacy).fetchTrainingMetrics!(ref(w), { from: null, to: null, names: null }, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
      status: 400,
    });
  });
});

describe('auth and cluster', () => {
  it('sends the Lens cookie when configured, and maps the middleware 401', async () => {
    const lens = await sim({ auth: { mode: 'cookie', token: 'tok-123' } });
    const ok = adapterFor(lens, { cookieEnv: 'LENS_COOKIE' }, { LENS_COOKIE: 'Token=tok-123; userType=default' });
    expect((await ok.listJobs(null, signal)).jobs.length).toBeGreaterThan(0);
    const wrong = adapterFor(lens, { cookieEnv: 'LENS_COOKIE' }, { LENS_COOKIE: 'Token=nope' });
    await expect(wrong.listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_AUTH', status: 401 });
    await expect(adapterFor(lens).listJobs(null, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_AUTH',
      message: expect.stringMatching(/authentication required/),
    });
  });

  it('sends a Bearer key through the SaFE proxy prefix, with cluster required', async () => {
    const lens = await sim({ prefix: '/lens/v1', auth: { mode: 'bearer', token: 'ak-abc' }, clustersWithoutAddon: ['gpu-cluster-b'] });
    expect(lens.baseUrl).toBe(`${lens.url}/lens`);
    const secrets = { LENS_TOKEN: 'ak-abc' };
    const ok = adapterFor(lens, { tokenEnv: 'LENS_TOKEN', cluster: 'gpu-cluster-a' }, secrets);
    expect((await ok.listJobs(null, signal)).jobs.length).toBe(lens.fleet.workloads.filter((w) => w.cluster === 'gpu-cluster-a').length);

    await expect(adapterFor(lens, { tokenEnv: 'LENS_TOKEN', cluster: 'gpu-cluster-a' }, { LENS_TOKEN: 'ak-bad' }).listJobs(null, signal)).rejects.toMatchObject(
      {
        code: 'UPSTREAM_AUTH',
        details: { upstreamCode: 'Primus.00009' },
      },
    );
    await expect(adapterFor(lens, { tokenEnv: 'LENS_TOKEN' }, secrets).listJobs(null, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
      details: { upstreamCode: 'Primus.00002' },
    });
    // Primus.00050 is an HTTP 404 but means "unavailable": matched on the code.
    await expect(adapterFor(lens, { tokenEnv: 'LENS_TOKEN', cluster: 'gpu-cluster-b' }, secrets).listJobs(null, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      status: 404,
    });
  });

  it('passes the configured cluster; without one, UID routes search every cluster', async () => {
    const lens = await sim();
    const inB = adapterFor(lens, { cluster: 'gpu-cluster-b' });
    const jobs = (await inB.listJobs(null, signal)).jobs;
    expect(new Set(jobs.map((j) => j.externalId))).toEqual(new Set(lens.fleet.workloads.filter((w) => w.cluster === 'gpu-cluster-b').map((w) => w.uid)));

    const qwen = workload(lens, 'qwen-14b-cpt', 'gpu-cluster-b');
    const llama = workload(lens, 'llama3-8b-pretrain');
    expect((await inB.getJob(ref(qwen), signal))!.status).toBe('RUNNING');
    expect(await inB.getJob(ref(llama), signal)).toBeNull();
    // With cluster given, an unknown UID gives empty training lists rather than an error.
    expect(await inB.fetchTrainingMetrics!(ref(llama), { from: null, to: null, names: null }, signal)).toEqual([]);

    const anyCluster = adapterFor(lens);
    const detail = await anyCluster.getJob(ref(qwen), signal);
    expect(detail!.name).toBe('qwen-14b-cpt');
    // Without a cluster the list lookup reads the default cluster, so the status is not known.
    expect(detail!.status).toBe('UNKNOWN');
    await expect(anyCluster.fetchTrainingMetrics!({ ...ref(llama), externalId: 'nope' }, { from: null, to: null, names: null }, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_NOT_FOUND',
      details: { upstreamCode: '4004' },
    });

    await expect(adapterFor(lens, { cluster: 'no-such-cluster' }).listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
  });
});

describe('faults', () => {
  let lens: PrimusLensSimulator;
  let adapter: ProviderAdapter;
  beforeAll(async () => {
    lens = await sim();
    adapter = adapterFor(lens, { cluster: 'gpu-cluster-a', timeoutSeconds: 0.5 });
  });

  it('429 with Retry-After', async () => {
    lens.inject({ kind: 'rate_limit', route: 'workloads', retryAfterSeconds: 7, times: 1 });
    await expect(adapter.listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: 7 });
  });

  it('5xx and gateway text bodies', async () => {
    lens.inject({ kind: 'status', status: 503, route: 'workloads', times: 1 });
    await expect(adapter.listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', status: 503 });
  });

  it('a failing /workloadMetadata (older Lens) does not stop projects: they come from the workloads, with a counted warning', async () => {
    const seen: string[] = [];
    const stop = onShapeMismatch((m) => seen.push(m.assumption));
    try {
      lens.inject({ kind: 'status', status: 500, route: 'workloadMetadata', times: 1 });
      const projects = await adapter.listProjects(signal);
      expect(projects.map((p) => p.externalId)).toEqual(['research', 'team-llm', 'team-vision']);
      expect(seen).toEqual(['primus-lens.workload-metadata-route']);
    } finally {
      stop();
    }
  });

  it('5000 "Unknown error" (how Lens answers bad parameters) is not retryable; a typed 5000 is', async () => {
    const client = new LensClient({ providerId: 'lens', baseUrl: lens.baseUrl, cluster: 'gpu-cluster-a', headers: {}, timeoutMs: 5000 });
    const bad = await client.get('/workloads', { page_num: 'abc' }, workloadListSchema, signal).catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE', retryable: false, details: { upstreamCode: '5000' } });
    lens.inject({ kind: 'status', status: 5000, route: 'workloads', times: 1 });
    await expect(adapter.listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', retryable: true });
  });

  it('time-out', async () => {
    lens.inject({ kind: 'timeout', route: 'workloads', times: 1 });
    // The simulator holds the request for ever: only the adapter's own time-out ends it, and it
    // really gives the request up (the simulator sees its client leave).
    const before = lens.abandoned('workloads');
    const abandoned = once(lens.events, 'abandoned');
    await expect(adapter.listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    await abandoned;
    expect(lens.abandoned('workloads')).toBe(before + 1);
  });

  it('malformed, empty and auth', async () => {
    lens.inject({ kind: 'malformed', route: 'workloads', times: 1 });
    await expect(adapter.listJobs(null, signal)).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    lens.inject({ kind: 'empty', route: 'metricsData', times: 1 });
    const llama = workload(lens, 'llama3-8b-pretrain');
    await expect(adapter.fetchTrainingMetrics!(ref(llama), { from: null, to: null, names: null }, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
    });
    lens.inject({ kind: 'auth', times: 1 });
    await expect(adapter.listProjects(signal)).rejects.toMatchObject({ code: 'UPSTREAM_AUTH', status: 401 });
  });

  it('HTTP-200 error envelopes become typed errors, never data', async () => {
    const llama = workload(lens, 'llama3-8b-pretrain');
    const cases = [
      [5003, 'UPSTREAM_UNAVAILABLE'],
      [5002, 'UPSTREAM_UNAVAILABLE'],
      [4003, 'UPSTREAM_AUTH'],
      [4005, 'UPSTREAM_AUTH'],
      [4001, 'UPSTREAM_BAD_RESPONSE'],
      [4004, 'UPSTREAM_NOT_FOUND'],
    ] as const;
    for (const [lensCode, code] of cases) {
      lens.inject({ kind: 'status', status: lensCode, route: 'metricsAvailable', times: 1 });
      await expect(adapter.fetchTrainingMetrics!(ref(llama), { from: null, to: null, names: null }, signal)).rejects.toMatchObject({
        code,
        status: 200,
        details: { upstreamCode: String(lensCode) },
      });
    }
    // 4004 on the detail is "no such job"; a 5xxx there is an outage, not a missing job.
    lens.inject({ kind: 'status', status: 4004, route: 'workload', times: 1 });
    expect(await adapter.getJob(ref(llama), signal)).toBeNull();
    lens.inject({ kind: 'status', status: 5000, route: 'workload', times: 1 });
    await expect(adapter.getJob(ref(llama), signal)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });
});

describe('demo starter', () => {
  it('starts a simulated provider whose config and secrets work', async () => {
    const demo = await startPrimusLensDemo({ now: () => NOW });
    try {
      const config = primusLensConfig.parse(demo.config);
      expect(config).toMatchObject({ id: 'primus-lens-demo', name: 'Primus-Lens (simulated)', kind: 'PRIMUS_LENS' });
      const adapter = createPrimusLensAdapter(config, demo.secrets);
      const page = await adapter.listJobs(null, signal);
      expect(page.jobs.some((j) => j.status === 'RUNNING')).toBe(true);
    } finally {
      await demo.close();
    }
  });
});

describe('simulator answers like the fact sheet', () => {
  it('envelopes, handler errors, dispatcher 404, cluster list, /pods cluster, metrics filters, unstable order', async () => {
    const lens = await sim();
    const get = async (path: string) => {
      const res = await fetch(`${lens.url}/v1${path}`);
      return { status: res.status, body: (await res.json()) as any };
    };
    expect(await get('/gpu-aggregation/clusters')).toEqual({
      status: 200,
      body: { meta: { code: 2000, message: 'OK' }, data: ['gpu-cluster-a', 'gpu-cluster-b'], tracing: null },
    });
    expect(await get('/workloads?page_num=abc')).toEqual({ status: 200, body: { meta: { code: 5000, message: 'Unknown error' }, data: null, tracing: null } });
    expect((await get('/nope')).status).toBe(404);
    expect((await get('/nope')).body).toEqual({ error: 'endpoint not found: GET /nope' });

    const llama = workload(lens, 'llama3-8b-pretrain');
    expect((await get(`/workloads/${llama.uid}/metrics/data?start=abc&end=1`)).body.meta).toEqual({ code: 4001, message: 'invalid start time format' });
    const podUid = llama.pods[0]!.podUid;
    expect((await get(`/pods/${podUid}/gpu-history`)).body.meta.code).toBe(4001);
    const history = await get(`/pods/${podUid}/gpu-history?cluster=gpu-cluster-a&hours=3`);
    expect(history.body.data.data_points[0].timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00Z$/);

    const grafana = await get(`/workloads/${llama.uid}/metrics/data?metrics={loss,lr}&data_source=log`);
    expect(grafana.body.data.data_source).toBe('log');
    expect(new Set(grafana.body.data.data.map((p: any) => p.metric_name))).toEqual(new Set(['loss', 'lr']));
    const all = await get(`/workloads/${llama.uid}/metrics/data?metrics=all`);
    expect(all.body.data.data_source).toBeUndefined();
    expect(new Set(all.body.data.data.map((p: any) => p.metric_name))).toEqual(new Set(['loss', 'lr', 'tflops', 'samples_per_second', 'grad_norm']));
    const again = await get(`/workloads/${llama.uid}/metrics/data?metrics=all`);
    expect(again.body.data.data).not.toEqual(all.body.data.data);
    expect(new Set(again.body.data.data.map((p: any) => JSON.stringify(p)))).toEqual(new Set(all.body.data.data.map((p: any) => JSON.stringify(p))));
    expect(lens.count('metricsData')).toBe(4);
  });
});
