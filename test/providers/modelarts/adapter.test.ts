// The ModelArts adapter against the ModelArts simulator over real HTTP, AK/SK mode: paging, job
// mapping, metrics with derived timestamps, 204, logs, and every failure mode.
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { modelartsConfig, type ModelArtsConfig } from '../../../src/providers/modelarts/index.js';
import { UpstreamError } from '../../../src/domain/errors.js';
import { GIB } from '../../../src/domain/units.js';
import type { JobRef, SystemMetric } from '../../../src/domain/types.js';
import { createModelArtsAdapter } from '../../../src/providers/modelarts/adapter.js';
import type { ProviderAdapter } from '../../../src/providers/provider.js';
import { onShapeMismatch, type ShapeMismatch } from '../../../src/providers/shape-watch.js';
import { endTime, metricValue, startModelArtsSimulator, type ModelArtsSimulator, type SimJob } from '../../../src/simulators/modelarts/index.js';

const ANCHOR = Date.UTC(2025, 2, 1);
const MINUTE = 60_000;
const BASE_NOW = ANCHOR + 30 * MINUTE + 20_000;
const ALL_METRICS: SystemMetric[] = [
  'GPU_UTILIZATION',
  'GPU_MEMORY_UTILIZATION',
  'CPU_UTILIZATION',
  'MEMORY_UTILIZATION',
  'NPU_UTILIZATION',
  'NPU_MEMORY_UTILIZATION',
];
const RAW_NAME: Record<string, string> = {
  GPU_UTILIZATION: 'gpuUtil',
  GPU_MEMORY_UTILIZATION: 'gpuMemUsage',
  CPU_UTILIZATION: 'cpuUsage',
  MEMORY_UTILIZATION: 'memUsage',
  NPU_UTILIZATION: 'npuUtil',
  NPU_MEMORY_UTILIZATION: 'npuMemUsage',
};

let clock = BASE_NOW;
let sim: ModelArtsSimulator;
let secrets: Record<string, string>;
const signal = new AbortController().signal;

function akskConfig(extra: Partial<ModelArtsConfig> = {}): ModelArtsConfig {
  return modelartsConfig.parse({
    id: 'ma-test',
    kind: 'MODELARTS',
    baseUrl: sim.url,
    projectId: sim.projectId,
    accessKeyIdEnv: 'HW_AK',
    secretAccessKeyEnv: 'HW_SK',
    timeoutSeconds: 10,
    ...extra,
  });
}

function adapter(extra: Partial<ModelArtsConfig> = {}, now: () => number = () => clock): ProviderAdapter {
  return createModelArtsAdapter(akskConfig(extra), secrets, { now });
}

function simJob(name: string): SimJob {
  const job = sim.fleet.find((j) => j.name === name);
  if (!job) throw new Error(`no simulated job ${name}`);
  return job;
}

async function refOf(a: ProviderAdapter, name: string): Promise<JobRef> {
  const detail = await a.getJob({ externalId: simJob(name).id, projectExternalId: '0' }, signal);
  if (!detail) throw new Error(`job ${name} not found`);
  return detail;
}

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  return err as UpstreamError;
}

beforeAll(async () => {
  sim = await startModelArtsSimulator({ now: () => clock, anchorMs: ANCHOR });
  secrets = { HW_AK: sim.credentials.accessKeyId, HW_SK: sim.credentials.secretAccessKey };
});
afterAll(() => sim.close());
afterEach(() => {
  clock = BASE_NOW;
  sim.clearFaults();
  sim.resetStats();
});

describe('jobs', () => {
  it('pages through every job of the default workspace ("0", what the search lists unscoped) with page-index offsets, 50 a page', async () => {
    const a = adapter();
    const inDefault = sim.fleet.filter((j) => j.workspaceId === '0');
    const first = await a.listJobs(null, signal);
    expect(first.jobs).toHaveLength(50);
    expect(first.nextCursor).toBe('1');
    const second = await a.listJobs(first.nextCursor, signal);
    expect(second.jobs).toHaveLength(inDefault.length - 50);
    expect(second.nextCursor).toBeNull();
    const ids = [...first.jobs, ...second.jobs].map((j) => j.externalId);
    expect(new Set(ids)).toEqual(new Set(inDefault.map((j) => j.id)));
    expect(sim.count('searchJobs')).toBe(2);
    // Newest first, as asked.
    const created = [...first.jobs, ...second.jobs].map((j) => j.createdAt!.getTime());
    expect(created).toEqual([...created].sort((x, y) => y - x));
  });

  it('maps a multi-node GPU job: status, times in ms, GPUs per task from the flavor', async () => {
    const job = simJob('bert-ft');
    const detail = await adapter().getJob({ externalId: job.id, projectExternalId: '0' }, signal);
    expect(detail).toMatchObject({
      externalId: job.id,
      projectExternalId: '0',
      name: 'bert-ft',
      status: 'RUNNING',
      rawStatus: 'Running',
      gpuType: 'NVIDIA-V100',
      gpuCount: 16,
      finishedAt: null,
    });
    expect(detail!.createdAt!.getTime()).toBe(ANCHOR - 3 * 3_600_000);
    expect(detail!.startedAt!.getTime()).toBe(job.startTime);
    expect(detail!.nodes!.map((n) => n.externalId)).toEqual(['worker-0', 'worker-1']);
    expect(detail!.nodes![1]!.gpus).toHaveLength(8);
    expect(detail!.nodes![1]!.gpus[7]).toEqual({ index: 7, model: 'NVIDIA-V100', memoryTotalBytes: 32 * GIB });
  });

  it('maps every phase, finish times of ended jobs, CPU-only and Ascend jobs', async () => {
    const a = adapter();
    const byName = async (name: string) => (await a.getJob({ externalId: simJob(name).id, projectExternalId: '0' }, signal))!;
    const expected: [string, string, string][] = [
      ['yolo-creating', 'PENDING', 'Creating'],
      ['gpt-queued', 'PENDING', 'Pending'],
      ['llama-sft', 'RUNNING', 'Running'],
      ['diffusion-stopping', 'RUNNING', 'Terminating'],
      ['resnet50-imagenet', 'SUCCEEDED', 'Completed'],
      ['gpt-pretrain-4n', 'FAILED', 'Failed'],
      ['moe-abnormal', 'FAILED', 'Abnormal'],
      ['whisper-stopped', 'STOPPED', 'Terminated'],
    ];
    for (const [name, status, raw] of expected) {
      const d = await byName(name);
      expect([name, d.status, d.rawStatus]).toEqual([name, status, raw]);
      const end = endTime(simJob(name));
      expect(d.finishedAt?.getTime() ?? null).toBe(end);
    }
    const llama = await byName('llama-sft');
    expect(llama.projectExternalId).toBe(simJob('llama-sft').workspaceId);
    expect(llama.nodes![0]!.gpus[0]!.memoryTotalBytes).toBe(80 * GIB);
    expect((await byName('gpt-pretrain-4n')).gpuCount).toBe(32);
    expect((await byName('gpt-pretrain-4n')).nodes!.map((n) => n.name)).toEqual(['worker-0', 'worker-1', 'worker-2', 'worker-3']);
    const queued = await byName('gpt-queued');
    expect(queued.startedAt).toBeNull();
    expect(queued.nodes).toEqual([]);
    const cpu = await byName('cpu-feature-etl');
    expect([cpu.gpuCount, cpu.gpuType, cpu.acceleratorKind, cpu.nodes![0]!.gpus]).toEqual([0, null, 'NONE', []]);
    // Ascend: 2 nodes x 8 NPUs, counted and listed as the job's accelerators, with their kind.
    const npu = await byName('pangu-ascend-pretrain');
    expect([npu.gpuCount, npu.acceleratorKind, npu.gpuType, npu.nodes!.length, npu.nodes![0]!.gpus.length]).toEqual([16, 'NPU', 'Ascend-snt9b', 2, 8]);
    expect(npu.nodes![0]!.gpus[0]!.memoryTotalBytes).toBe(64 * GIB);
    // Restarted once: two running records.
    expect(npu.restartCount).toBe(1);
    const gpt = await byName('gpt-pretrain-4n');
    expect([gpt.acceleratorKind, gpt.failureReason, gpt.restartCount]).toEqual(['GPU', 'worker-0 exited with code 1: RuntimeError: CUDA out of memory.', 0]);
  });

  it('answers null for a job that does not exist (400 ModelArts.2775)', async () => {
    expect(await adapter().getJob({ externalId: '00000000-0000-4000-a000-000000000000', projectExternalId: '0' }, signal)).toBeNull();
    expect(sim.count('getJob')).toBe(1);
  });

  it("lists the default workspace when none is configured (the search's own default), the configured one when set", async () => {
    const projects = await adapter().listProjects(signal);
    expect(projects).toEqual([{ externalId: '0', name: 'default' }]);
    expect(await adapter({ workspaceId: simJob('llama-sft').workspaceId }).listProjects(signal)).toEqual([
      { externalId: simJob('llama-sft').workspaceId, name: simJob('llama-sft').workspaceId },
    ]);
    const only = adapter({ workspaceId: simJob('llama-sft').workspaceId });
    const jobs = await only.listJobs(null, signal);
    expect(jobs.jobs.length).toBeGreaterThan(0);
    expect(jobs.jobs.every((j) => j.projectExternalId === simJob('llama-sft').workspaceId)).toBe(true);
  });
});

describe('metrics', () => {
  it('makes one call per task and derives minute timestamps from the server clock', async () => {
    const a = adapter();
    const ref = await refOf(a, 'bert-ft');
    sim.resetStats();
    const result = await a.fetchSystemMetrics(ref, { from: new Date(ANCHOR), to: new Date(clock), metrics: ALL_METRICS, stepSeconds: 60 }, signal);
    expect(sim.count('getMetrics')).toBe(2);
    // The job itself, read once: its tasks are returned as the nodes the series belong to.
    expect(sim.count('getJob')).toBe(1);
    expect(result.nodes!.map((n) => n.externalId)).toEqual(['worker-0', 'worker-1']);
    expect(result.covered).toEqual(ALL_METRICS);
    const lastMinute = Math.floor(clock / MINUTE) * MINUTE - MINUTE;
    expect(result.from.getTime()).toBe(lastMinute - 14 * MINUTE);
    expect(result.to.getTime()).toBe(lastMinute + MINUTE);
    // GPU job: no NPU series (all -1 upstream), four per task, all node-scoped ratios.
    expect(result.series).toHaveLength(8);
    const job = simJob('bert-ft');
    for (const s of result.series) {
      expect([s.scope, s.unit, s.gpuIndex, s.kind, s.keyedBy]).toEqual(['NODE', 'RATIO', null, 'system', 'time']);
      expect(s.rawName).toBe(RAW_NAME[s.name]);
      expect(s.points).toHaveLength(15);
      expect(s.points.at(-1)!.timestamp!.getTime()).toBe(lastMinute);
      for (const p of s.points) {
        const raw = metricValue(job, s.nodeExternalId!, s.rawName as never, p.timestamp!.getTime(), clock);
        expect(p.value).toBeCloseTo(raw / 100, 12);
        expect(p.value!).toBeGreaterThanOrEqual(0);
        expect(p.value!).toBeLessThanOrEqual(1);
      }
      expect(s.meta.timeAlignment).toMatchObject({ method: 'derived', intervalSeconds: 60, reference: 'server Date header' });
    }
  });

  it('asks per task whatever the metrics; returns only the ones asked for', async () => {
    const a = adapter();
    const ref = await refOf(a, 'bert-ft');
    sim.resetStats();
    const result = await a.fetchSystemMetrics(ref, { from: new Date(ANCHOR), to: new Date(clock), metrics: ['GPU_UTILIZATION'], stepSeconds: 60 }, signal);
    expect(sim.count('getMetrics')).toBe(2);
    expect(result.series.map((s) => [s.name, s.nodeExternalId])).toEqual([
      ['GPU_UTILIZATION', 'worker-0'],
      ['GPU_UTILIZATION', 'worker-1'],
    ]);
  });

  it('drops -1 markers: a CPU-only job has no GPU series, an Ascend job has NPU series and no GPU ones', async () => {
    const a = adapter();
    const cpu = await a.fetchSystemMetrics(
      await refOf(a, 'cpu-feature-etl'),
      { from: new Date(ANCHOR), to: new Date(clock), metrics: ALL_METRICS, stepSeconds: 60 },
      signal,
    );
    expect(cpu.series.map((s) => s.name).sort()).toEqual(['CPU_UTILIZATION', 'MEMORY_UTILIZATION']);
    const npu = await a.fetchSystemMetrics(
      await refOf(a, 'pangu-ascend-pretrain'),
      { from: new Date(ANCHOR), to: new Date(clock), metrics: ALL_METRICS, stepSeconds: 60 },
      signal,
    );
    expect(new Set(npu.series.map((s) => s.name))).toEqual(new Set(['CPU_UTILIZATION', 'MEMORY_UTILIZATION', 'NPU_UTILIZATION', 'NPU_MEMORY_UTILIZATION']));
    for (const s of [...cpu.series, ...npu.series]) expect(s.points.every((p) => p.value !== null && p.value >= 0)).toBe(true);
  });

  it('aligns a finished job to its finish and keeps only minutes inside the run', async () => {
    const a = adapter();
    const ref = await refOf(a, 'gpt-pretrain-4n');
    const job = simJob('gpt-pretrain-4n');
    const result = await a.fetchSystemMetrics(
      ref,
      { from: new Date(ANCHOR - 86_400_000), to: new Date(clock), metrics: ['CPU_UTILIZATION'], stepSeconds: 60 },
      signal,
    );
    expect(result.series).toHaveLength(4);
    const lastMinute = Math.floor(endTime(job)! / MINUTE) * MINUTE - MINUTE;
    for (const s of result.series) {
      expect(s.points.at(-1)!.timestamp!.getTime()).toBe(lastMinute);
      expect(s.meta.timeAlignment).toMatchObject({ reference: 'job finishedAt' });
      for (const p of s.points) {
        expect(p.value).toBeCloseTo(metricValue(job, s.nodeExternalId!, 'cpuUsage', p.timestamp!.getTime(), clock) / 100, 12);
      }
    }
  });

  it('treats 204 (started under a minute ago) as an empty answer, not an error, and records nothing complete while the job runs', async () => {
    clock = ANCHOR + 30_000;
    const a = adapter();
    const ref = await refOf(a, 'fresh-start-probe');
    const result = await a.fetchSystemMetrics(ref, { from: new Date(ANCHOR), to: new Date(clock), metrics: ALL_METRICS, stepSeconds: 60 }, signal);
    expect(result.series).toEqual([]);
    expect(result.covered).toEqual([]);
    expect(result.from.getTime()).toBe(result.to.getTime());
    expect(sim.count('getMetrics')).toBe(1);
  });
});

describe('logs', () => {
  it('reads the preview line by line and resumes at the byte offset without repeats', async () => {
    const a = adapter();
    const ref = await refOf(a, 'diffusion-stopping');
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 100; i++) {
      const page = await a.fetchLogs!(ref, { after: cursor, since: null, limit: 40 }, signal);
      seen.push(...page.lines.map((l) => l.message));
      cursor = page.nextCursor;
      if (page.lines.length === 0) break;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen[0]).toMatch(/^\[ModelArts Service Log\]\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - INFO - /);
    expect(seen[1]).toContain('starting PyTorch job diffusion-stopping');
    // Timestamps in every format the log mixes: the service's own, Python logging's, ISO-8601.
    const first = await a.fetchLogs!(ref, { after: null, since: null, limit: 3 }, signal);
    for (const line of first.lines) expect(line.level, line.message).toBe('INFO');
    expect(first.lines.map((l) => l.timestamp!.getTime())).toEqual([
      simJob('diffusion-stopping').startTime,
      simJob('diffusion-stopping').startTime,
      simJob('diffusion-stopping').startTime + 20_000,
    ]);
    expect(first.lines[0]!.node).toBe('worker-0');
    // A minute later, only the three new 20-second steps arrive.
    clock += MINUTE;
    const more = await a.fetchLogs!(ref, { after: cursor, since: null, limit: 100 }, signal);
    expect(more.lines).toHaveLength(3);
    expect(seen).not.toContain(more.lines[0]!.message);
  });
});

describe('failures', () => {
  it('maps 429 ModelArts.2799 with Retry-After to UPSTREAM_RATE_LIMITED', async () => {
    sim.inject({ kind: 'rate_limit', route: 'searchJobs', retryAfterSeconds: 7, times: 1 });
    const err = await failure(adapter().listJobs(null, signal));
    expect([err.code, err.retryAfterSeconds, err.status, err.details.upstreamCode]).toEqual(['UPSTREAM_RATE_LIMITED', 7, 429, 'ModelArts.2799']);
  });

  it('maps 5xx and connection resets to UPSTREAM_UNAVAILABLE', async () => {
    sim.inject({ kind: 'status', status: 503, route: 'getJob', times: 1 });
    expect((await failure(adapter().getJob({ externalId: simJob('bert-ft').id, projectExternalId: '0' }, signal))).code).toBe('UPSTREAM_UNAVAILABLE');
    sim.inject({ kind: 'reset', route: 'searchJobs', times: 1 });
    expect((await failure(adapter().listJobs(null, signal))).code).toBe('UPSTREAM_UNAVAILABLE');
  });

  it('times out after timeoutSeconds', async () => {
    sim.inject({ kind: 'timeout', route: 'getJob', times: 1 });
    // Held for ever by the simulator: only the adapter's time-out ends it, giving the request up.
    const before = sim.abandoned('getJob');
    const abandoned = once(sim.events, 'abandoned');
    const err = await failure(adapter({ timeoutSeconds: 0.5 }).getJob({ externalId: simJob('bert-ft').id, projectExternalId: '0' }, signal));
    expect(err.code).toBe('UPSTREAM_TIMEOUT');
    await abandoned;
    expect(sim.abandoned('getJob')).toBe(before + 1);
  });

  it('maps a malformed or wrongly shaped body to UPSTREAM_BAD_RESPONSE', async () => {
    const a = adapter();
    const ref = await refOf(a, 'bert-ft');
    sim.inject({ kind: 'malformed', route: 'getMetrics', times: 1 });
    expect(
      (await failure(a.fetchSystemMetrics(ref, { from: new Date(ANCHOR), to: new Date(clock), metrics: ALL_METRICS, stepSeconds: 60 }, signal))).code,
    ).toBe('UPSTREAM_BAD_RESPONSE');
    sim.inject({ kind: 'empty', route: 'searchJobs', times: 1 });
    expect((await failure(a.listJobs(null, signal))).code).toBe('UPSTREAM_BAD_RESPONSE');
  });

  it('rejects a wrong secret, and a stale X-Sdk-Date, as UPSTREAM_AUTH with ModelArts codes', async () => {
    const wrong = createModelArtsAdapter(akskConfig(), { ...secrets, HW_SK: 'not-the-secret' }, { now: () => clock });
    const err = await failure(wrong.listJobs(null, signal));
    expect([err.code, err.status, err.details.upstreamCode]).toEqual(['UPSTREAM_AUTH', 403, 'ModelArts.0206']);
    expect(err.message).not.toContain('not-the-secret');
    const skewed = adapter({}, () => clock - 16 * MINUTE);
    expect((await failure(skewed.listJobs(null, signal))).code).toBe('UPSTREAM_AUTH');
    // 14 minutes of skew is still inside the 15-minute window.
    expect((await adapter({}, () => clock - 14 * MINUTE).listJobs(null, signal)).jobs).toHaveLength(50);
  });

  it('rejects a project id the credentials do not own', async () => {
    const err = await failure(adapter({ projectId: 'another-project' }).listJobs(null, signal));
    expect([err.code, err.details.upstreamCode]).toEqual(['UPSTREAM_AUTH', 'ModelArts.0210']);
  });
});

describe('the simulator agrees with the readings the adapter checks', () => {
  it('every job of the simulated fleet, its metrics and logs: no shape mismatch reported', async () => {
    const seen: ShapeMismatch[] = [];
    const stop = onShapeMismatch((m) => seen.push(m));
    try {
      const a = adapter();
      for (const job of sim.fleet) {
        const ref = await a.getJob({ externalId: job.id, projectExternalId: '0' }, signal);
        if (!ref) continue;
        await a.fetchSystemMetrics(
          ref,
          { from: ref.startedAt ?? new Date(clock - 3600_000), to: new Date(clock), metrics: Object.keys(RAW_NAME) as SystemMetric[], stepSeconds: 60 },
          signal,
        );
        await a.fetchLogs!(ref, { after: null, since: null, limit: 200 }, signal);
      }
    } finally {
      stop();
    }
    expect(seen).toEqual([]);
  });
});
