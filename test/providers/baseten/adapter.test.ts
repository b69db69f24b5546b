// The Baseten adapter against the Baseten simulator over real HTTP. The simulator was written
// from the fact sheet independently of the adapter; values are checked against its ground truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBasetenAdapter } from '../../../src/providers/baseten/adapter.js';
import type { ProviderAdapter } from '../../../src/providers/provider.js';
import { UpstreamError } from '../../../src/domain/errors.js';
import type { JobRef } from '../../../src/domain/types.js';
import { metricValue, nodeIds, rankKeys, type FleetJob } from '../../../src/simulators/baseten/fleet.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../../src/simulators/baseten/server.js';

const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);
const signal = new AbortController().signal;

describe('Baseten adapter', () => {
  let sim: BasetenSimulator;
  let adapter: ProviderAdapter;
  const now = ANCHOR;

  beforeAll(async () => {
    sim = await startBasetenSimulator({ seed: 11, anchorMs: ANCHOR, now: () => now, rateLimit: false });
    adapter = createBasetenAdapter(
      // Generous for a busy machine; the time-out case below uses its own short one.
      { id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'K', timeoutSeconds: 10 },
      { K: sim.apiKey },
    );
  });
  afterAll(() => sim.close());

  const fleetJob = (pred: (j: FleetJob) => boolean) => {
    const j = sim.fleet.jobs.find(pred);
    if (!j) throw new Error('the fleet lacks such a job');
    return j;
  };
  const ref = (j: FleetJob): JobRef => ({
    externalId: j.id,
    projectExternalId: j.projectId,
    status: 'RUNNING',
    createdAt: new Date(j.createdAtMs),
    startedAt: j.startedAtMs ? new Date(j.startedAtMs) : null,
    finishedAt: j.finishedAtMs ? new Date(j.finishedAtMs) : null,
  });

  it('lists projects and every job, mapping statuses', async () => {
    const projects = await adapter.listProjects(signal);
    expect(projects.map((p) => p.externalId).sort()).toEqual(sim.fleet.projects.map((p) => p.id).sort());
    const page = await adapter.listJobs(null, signal);
    expect(page.nextCursor).toBeNull();
    expect(page.jobs).toHaveLength(sim.fleet.jobs.length);
    const statuses = new Map(page.jobs.map((j) => [j.rawStatus, j.status]));
    expect(statuses.get('TRAINING_JOB_RUNNING')).toBe('RUNNING');
    expect(statuses.get('TRAINING_JOB_COMPLETED')).toBe('SUCCEEDED');
    expect(statuses.get('TRAINING_JOB_DEPLOY_FAILED')).toBe('FAILED');
    expect(statuses.get('TRAINING_JOB_STOPPED')).toBe('STOPPED');
    expect(statuses.get('TRAINING_JOB_QUEUED')).toBe('PENDING');
    expect(statuses.get('TRAINING_JOB_DEPLOYING')).toBe('PENDING');
    for (const j of page.jobs) {
      const truth = sim.fleet.jobs.find((f) => f.id === j.externalId)!;
      expect(j.projectExternalId).toBe(truth.projectId);
      expect(j.gpuType).toBe(truth.instanceType.gpu_type);
      // The job resource has no finish time: a terminal job's last update is its upper bound.
      if (j.status === 'SUCCEEDED' || j.status === 'FAILED' || j.status === 'STOPPED') expect(j.finishedAt?.getTime()).toBe(truth.updatedAtMs);
      else expect(j.finishedAt).toBeNull();
      // Waiting for capacity, or being created and deployed, is not having started.
      if (['TRAINING_JOB_PENDING', 'TRAINING_JOB_QUEUED', 'TRAINING_JOB_CREATED', 'TRAINING_JOB_DEPLOYING'].includes(j.rawStatus!))
        expect(j.startedAt).toBeNull();
      else expect(j.startedAt?.getTime()).toBe(truth.createdAtMs);
      expect(j.consoleUrl).toBe(`https://app.baseten.co/training/${truth.projectId}/logs/${truth.id}`);
      expect(j.failureReason).toBe(j.status === 'FAILED' || j.status === 'STOPPED' ? truth.errorMessage || null : null);
    }
  });

  it('gets one job by id, with or without its project, and null for an unknown one', async () => {
    const truth = fleetJob((j) => j.status === 'TRAINING_JOB_RUNNING');
    const withProject = await adapter.getJob({ externalId: truth.id, projectExternalId: truth.projectId }, signal);
    const bare = await adapter.getJob({ externalId: truth.id, projectExternalId: '' }, signal);
    expect(withProject?.externalId).toBe(truth.id);
    expect(withProject?.nodes).toBeNull(); // nodes appear only with per_node_metrics
    expect(bare).toEqual(withProject);
    expect(await adapter.getJob({ externalId: 'zzzzzzz', projectExternalId: truth.projectId }, signal)).toBeNull();
    expect(await adapter.getJob({ externalId: 'zzzzzzz', projectExternalId: '' }, signal)).toBeNull();
  });

  it('maps per_node_metrics to nodes and GPU ranks with values equal to the platform, leader not doubled', async () => {
    const truth = fleetJob((j) => j.status === 'TRAINING_JOB_RUNNING' && j.nodeCount > 1 && j.gpusPerNode > 1);
    const from = new Date(now - 30 * 60_000);
    const to = new Date(now);
    const res = await adapter.fetchSystemMetrics(ref(truth), { from, to, metrics: ['GPU_UTILIZATION'], stepSeconds: 60 }, signal);
    expect(res.nodes!.map((n) => n.externalId)).toEqual(nodeIds(truth));
    for (const n of res.nodes!) {
      expect(n.gpus.map((g) => g.index)).toEqual(rankKeys(truth).map(Number));
      expect(n.gpus[0]!.memoryTotalBytes).toBe(truth.instanceType.gpu_memory_limit_mib! * 1024 * 1024);
    }
    const util = res.series.filter((s) => s.name === 'GPU_UTILIZATION');
    expect(util).toHaveLength(truth.nodeCount * truth.gpusPerNode);
    // Top-level series describe the leader only: no JOB-scope copy of node-0's numbers.
    expect(res.series.filter((s) => s.scope === 'JOB' && s.name.startsWith('GPU'))).toHaveLength(0);
    for (const s of util) {
      expect(s.unit).toBe('RATIO');
      expect(s.scope).toBe('GPU');
      expect(s.rawName).toBe('gpu_utilization');
      expect(s.points.length).toBeGreaterThanOrEqual(25);
      const nodeIndex = Number(s.nodeExternalId!.split('-')[1]);
      for (const p of s.points) {
        expect(p.value).toBeCloseTo(metricValue(truth, nodeIndex, 'gpu_utilization', s.gpuIndex!, p.timestamp!.getTime()), 9);
        expect(p.value!).toBeGreaterThanOrEqual(0);
        expect(p.value!).toBeLessThanOrEqual(1);
      }
    }
    expect(res.covered).toContain('CPU_USAGE');
  });

  it('derives GPU memory utilization from gpu_memory_limit_mib and marks it derived', async () => {
    const truth = fleetJob((j) => j.status === 'TRAINING_JOB_RUNNING' && j.instanceType.gpu_memory_limit_mib !== null);
    const res = await adapter.fetchSystemMetrics(
      ref(truth),
      { from: new Date(now - 600_000), to: new Date(now), metrics: ['GPU_MEMORY_UTILIZATION'], stepSeconds: 60 },
      signal,
    );
    const used = res.series.find((s) => s.name === 'GPU_MEMORY_USED' && s.gpuIndex === 0 && s.nodeExternalId === 'node-0')!;
    const ratio = res.series.find((s) => s.name === 'GPU_MEMORY_UTILIZATION' && s.gpuIndex === 0 && s.nodeExternalId === 'node-0')!;
    expect(used.unit).toBe('BYTES');
    expect(ratio.unit).toBe('RATIO');
    expect(ratio.meta.derived).toBe(true);
    const limit = truth.instanceType.gpu_memory_limit_mib! * 1024 * 1024;
    ratio.points.forEach((p, i) => {
      expect(p.value).toBeCloseTo(used.points[i]!.value! / limit, 12);
    });
    const cpu = res.series.find((s) => s.name === 'CPU_USAGE')!;
    expect(cpu.unit).toBe('CORES');
    expect(cpu.scope).toBe('NODE');
  });

  it('returns no series for a job that has not started (empty per_node_metrics)', async () => {
    const truth = fleetJob((j) => j.status === 'TRAINING_JOB_PENDING');
    const res = await adapter.fetchSystemMetrics(
      ref(truth),
      { from: new Date(now - 3600_000), to: new Date(now), metrics: ['GPU_UTILIZATION'], stepSeconds: 60 },
      signal,
    );
    expect(res.nodes).toEqual([]);
    expect(res.series.filter((s) => s.points.length > 0)).toHaveLength(0);
  });

  it('pages logs by time with nanosecond cursors, without duplicates or gaps', async () => {
    const truth = fleetJob((j) => j.status === 'TRAINING_JOB_COMPLETED');
    const all: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 200; i++) {
      const page = await adapter.fetchLogs!(ref(truth), { after, since: new Date(truth.createdAtMs), limit: 37 }, signal);
      if (page.lines.length === 0) break;
      all.push(...page.lines.map((l) => `${l.timestamp!.toISOString()} ${l.message}`));
      after = page.nextCursor;
    }
    // The reference: the Python client's own paging (next start = last ms + 1, limit 1000).
    const truthLines: string[] = [];
    for (let start = truth.createdAtMs; ; ) {
      const res = await fetch(
        `${sim.url}/v1/training_projects/${truth.projectId}/jobs/${truth.id}/logs?start_epoch_millis=${start}&end_epoch_millis=${truth.finishedAtMs! + 1}&limit=1000&direction=asc`,
        { headers: { authorization: `Api-Key ${sim.apiKey}` } },
      );
      const logs = ((await res.json()) as any).logs as { timestamp: string; message: string }[];
      truthLines.push(...logs.map((l) => `${new Date(Number(BigInt(l.timestamp) / 1_000_000n)).toISOString()} ${l.message}`));
      if (logs.length < 1000) break;
      start = Number(BigInt(logs.at(-1)!.timestamp) / 1_000_000n) + 1;
    }
    expect(truthLines.length).toBeGreaterThan(37);
    expect(all).toEqual(truthLines);
  });

  const failures: [string, Parameters<BasetenSimulator['inject']>[0], string, number | null][] = [
    ['auth failure', { kind: 'auth' }, 'UPSTREAM_AUTH', null],
    ['429 with retry_after', { kind: 'rate_limit', retryAfterSeconds: 9 }, 'UPSTREAM_RATE_LIMITED', 9],
    ['5xx', { kind: 'status', status: 502 }, 'UPSTREAM_UNAVAILABLE', null],
    ['time-out', { kind: 'timeout' }, 'UPSTREAM_TIMEOUT', null],
    ['malformed JSON', { kind: 'malformed' }, 'UPSTREAM_BAD_RESPONSE', null],
    ['empty body', { kind: 'empty' }, 'UPSTREAM_BAD_RESPONSE', null],
    ['connection reset', { kind: 'reset' }, 'UPSTREAM_UNAVAILABLE', null],
  ];
  for (const [what, fault, code, retryAfter] of failures) {
    it(`turns ${what} into ${code}`, async () => {
      sim.inject({ ...fault, times: 1 });
      const subject =
        fault.kind === 'timeout'
          ? createBasetenAdapter({ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'K', timeoutSeconds: 0.5 }, { K: sim.apiKey })
          : adapter;
      const err = await subject.listJobs(null, signal).catch((e) => e);
      sim.clearFaults();
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err.code).toBe(code);
      expect(err.retryAfterSeconds).toBe(retryAfter);
      expect(err.message).not.toContain(sim.apiKey);
    });
  }

  it('rejects a wrong key as UPSTREAM_AUTH and never echoes it', async () => {
    const wrong = createBasetenAdapter({ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'K' }, { K: 'not-the-key' });
    const err = await wrong.listProjects(signal).catch((e) => e);
    expect(err.code).toBe('UPSTREAM_AUTH');
    expect(JSON.stringify(err)).not.toContain('not-the-key');
  });

  it("honours the platform's real rate limit", async () => {
    const limited = await startBasetenSimulator({ seed: 11, anchorMs: ANCHOR, now: () => now, rateLimit: { requestsPerWindow: 2, windowSeconds: 60 } });
    const a = createBasetenAdapter({ id: 'bt', kind: 'BASETEN', baseUrl: limited.url, apiKeyEnv: 'K' }, { K: limited.apiKey });
    await a.listProjects(signal);
    await a.listProjects(signal);
    const err = await a.listProjects(signal).catch((e) => e);
    await limited.close();
    expect(err.code).toBe('UPSTREAM_RATE_LIMITED');
    expect(err.retryAfterSeconds).toBeGreaterThan(0);
  });
});

describe('Baseten log pages after a cursor', () => {
  it('are full pages of `first` lines', async () => {
    const sim = await startBasetenSimulator({ seed: 11, anchorMs: ANCHOR, now: () => ANCHOR, rateLimit: false });
    const a = createBasetenAdapter({ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'K' }, { K: sim.apiKey });
    const truth = sim.fleet.jobs.find((j) => j.status === 'TRAINING_JOB_COMPLETED')!;
    const r: JobRef = {
      externalId: truth.id,
      projectExternalId: truth.projectId,
      status: 'SUCCEEDED',
      createdAt: new Date(truth.createdAtMs),
      startedAt: null,
      finishedAt: null,
    };
    const first = await a.fetchLogs!(r, { after: null, since: new Date(truth.createdAtMs), limit: 25 }, signal);
    const second = await a.fetchLogs!(r, { after: first.nextCursor, since: null, limit: 25 }, signal);
    await sim.close();
    expect(first.lines).toHaveLength(25);
    expect(second.lines).toHaveLength(25);
    expect(second.lines[0]!.timestamp!.getTime()).toBeGreaterThanOrEqual(first.lines[24]!.timestamp!.getTime());
    expect(new Set([...first.lines, ...second.lines].map((l) => l.cursor)).size).toBe(50);
  });
});
