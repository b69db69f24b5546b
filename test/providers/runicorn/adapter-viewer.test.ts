// The adapter in viewer mode against the viewer simulator over real HTTP and WebSocket, serving a
// demo fleet: runs, detail, metrics, logs, errors; and storage mode agreeing on the same folder.
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRef, SeriesData } from '../../../src/domain/types.js';
import { createRunicornAdapter, type RunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { startRunicornDemo } from '../../../src/simulators/runicorn/demo.js';
import { LIVE_TARGET_STEPS, writeDemoFleet, type RunicornFleet } from '../../../src/simulators/runicorn/fleet.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { eventually } from '../../support/wait.js';
import { signal } from './helpers.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
let dir: string;
let fleet: RunicornFleet;
let viewer: RunicornViewerHandle;
let adapter: RunicornAdapter;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runicorn-fleet-'));
  fleet = writeDemoFleet({ storageDir: dir, hostname: hostname(), livePid: process.pid, nowMs: NOW });
  viewer = await startRunicornViewer({ storageDir: dir, now: () => NOW });
  adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 5 }, {});
});
afterAll(async () => {
  await adapter.close!();
  await viewer.close();
  rmSync(dir, { recursive: true, force: true });
});

const runNamed = (alias: string) => fleet.runs.find((r) => r.alias === alias)!;
const ref = (externalId: string, createdAt: Date | null = null): JobRef => ({
  externalId,
  projectExternalId: 'p',
  status: 'RUNNING',
  createdAt,
  startedAt: null,
  finishedAt: null,
});
const all = { from: null, to: null, names: null };

describe('viewer mode against the simulator', () => {
  it('lists every visible run with mapped statuses (crashed, interrupted, legacy; deleted hidden)', async () => {
    const { jobs, nextCursor } = await adapter.listJobs(null, signal());
    expect(nextCursor).toBeNull();
    const visible = fleet.runs.filter((r) => !r.deleted);
    expect(jobs.map((j) => j.externalId).sort()).toEqual(visible.map((r) => r.id).sort());
    const byAlias = new Map(jobs.map((j) => [j.name, j]));
    expect(byAlias.get('oom-crash')).toMatchObject({ status: 'FAILED', rawStatus: 'failed' });
    expect(byAlias.get('stopped-early')).toMatchObject({ status: 'STOPPED', rawStatus: 'interrupted' });
    expect(byAlias.get('old-layout')).toMatchObject({ projectExternalId: 'legacy/cifar', status: 'SUCCEEDED' });
    expect(byAlias.get('live-run')).toMatchObject({ status: 'RUNNING', projectExternalId: 'demo/live' });
    expect(byAlias.has('deleted-run')).toBe(false);
    expect((await adapter.listProjects(signal())).map((p) => p.externalId)).toEqual(['demo/live', 'demo/mnist', 'demo/resnet', 'legacy/cifar']);
  });

  it('gets a run with its host node and no GPUs, and null for an unknown run', async () => {
    const job = await adapter.getJob({ externalId: runNamed('baseline').id, projectExternalId: 'demo/mnist' }, signal());
    expect(job).toMatchObject({ status: 'SUCCEEDED', name: 'baseline', gpuCount: null, nodes: [{ externalId: 'host', gpus: [] }] });
    expect(await adapter.getJob({ externalId: 'nope_123', projectExternalId: 'demo/mnist' }, signal())).toBeNull();
  });

  it('reads training series by step and stage, and progress of the running run', async () => {
    const series = await adapter.fetchTrainingMetrics!(ref(runNamed('baseline').id), all, signal());
    // Every 50th step merges a train and an eval event into one row of stage eval: the viewer's
    // answer cannot tell loss's stage, so it gets none (and says why); val_acc only came in eval rows.
    expect(series.map((s) => `${s.name}/${s.stage}`)).toEqual(['loss/null', 'lr/null', 'val_acc/eval']);
    expect(series[0]!.meta).toMatchObject({ stageExact: false, stagesSeen: ['eval', 'train', 'warmup'] });
    expect(series.find((s) => s.name === 'val_acc')!.points.map((p) => p.step)).toEqual([50, 100, 150, 200, 250, 300, 350, 400]);
    const onlyLoss = await adapter.fetchTrainingMetrics!(ref(runNamed('baseline').id), { ...all, names: ['loss'] }, signal());
    expect(new Set(onlyLoss.map((s) => s.name))).toEqual(new Set(['loss']));

    const progress = await adapter.fetchProgress!(ref(runNamed('live-run').id), signal());
    // The 0.6.0 viewer exposes no summary, so the run's total_steps is out of reach here.
    expect(progress).toMatchObject({ iteration: 300, targetIteration: null });
    expect(progress!.rate).toBeCloseTo(0.5, 4);
  });

  it('reads logs over the WebSocket with a line-number cursor that never repeats', async () => {
    const live = runNamed('live-run');
    const job = ref(live.id, new Date(NOW - 600_000));
    const first = await adapter.fetchLogs!(job, { after: null, since: null, limit: 10 }, signal());
    expect(first.lines[0]!.message).toMatch(/\| starting training$/);
    expect(first.lines[0]!.timestamp).toEqual(new Date(Math.floor((NOW - 600_000) / 1000) * 1000));
    const rest = await adapter.fetchLogs!(job, { after: first.nextCursor, since: null, limit: 1000 }, signal());
    const cursors = [...first.lines, ...rest.lines].map((l) => Number(l.cursor));
    expect(cursors).toEqual(cursors.map((_, i) => i + 1));
    // Both pages came from one replay; the running run's socket stays open to tail it.
    expect(viewer.count('logs_ws')).toBe(1);
    expect(adapter.openLogSockets()).toBe(1);
    // New lines arrive on that socket and appear after the cursor, without another replay.
    expect(fleet.advance(NOW + 20_000)).toBe(10);
    const newer = await eventually(
      async () => {
        const page = await adapter.fetchLogs!(job, { after: rest.nextCursor, since: null, limit: 1000 }, signal());
        return page.lines.length === 2 && page;
      },
      10_000,
      'the appended lines',
    );
    expect(newer.lines.map((l) => l.message)).toEqual([expect.stringMatching(/\| step 301 loss=/), expect.stringMatching(/\| step 310 loss=/)]);
    expect(viewer.count('logs_ws')).toBe(1);
  });

  it('makes one list call per refresh and one detail call per job lookup', async () => {
    const fresh = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 5 }, {});
    viewer.resetStats();
    // A refresh: projects, then jobs.
    await fresh.listProjects(signal());
    await fresh.listJobs(null, signal());
    expect(viewer.count('runs')).toBe(1);
    // Job lookups: the detail only; created_time is known from the list and never changes.
    const live = runNamed('live-run');
    for (let i = 0; i < 3; i++) await fresh.getJob({ externalId: live.id, projectExternalId: 'demo/live' }, signal());
    expect(viewer.count('run_detail')).toBe(3);
    expect(viewer.count('runs')).toBe(1);
  });

  it("gives a finished run's end as its last metric event, once (the 0.6.0 viewer serves no end time)", async () => {
    const fresh = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 5 }, {});
    const baseline = runNamed('baseline');
    viewer.resetStats();
    const job = await fresh.getJob({ externalId: baseline.id, projectExternalId: 'demo/mnist' }, signal());
    // The fleet's baseline logs step 400 at anchor - 6 h + 800 s and its eval 0.4 ms later; finish() at + 801 s.
    const anchor = Date.UTC(2026, 10, 22) / 1000;
    expect(job!.finishedAt!.getTime()).toBe(Math.round((anchor - 6 * 3600 + 800.0004) * 1000));
    await fresh.getJob({ externalId: baseline.id, projectExternalId: 'demo/mnist' }, signal());
    expect(viewer.count('metrics_step')).toBe(1);
    // A running run has no end.
    expect((await fresh.getJob({ externalId: runNamed('live-run').id, projectExternalId: 'demo/live' }, signal()))!.finishedAt).toBeNull();
  });

  it('fails with UPSTREAM_NOT_FOUND for the logs or metrics of an unknown run', async () => {
    await expect(adapter.fetchLogs!(ref('nope_123'), { after: null, since: null, limit: 5 }, signal())).rejects.toMatchObject({ code: 'UPSTREAM_NOT_FOUND' });
    await expect(adapter.fetchTrainingMetrics!(ref('nope_123'), all, signal())).rejects.toMatchObject({ code: 'UPSTREAM_NOT_FOUND' });
  });

  it('maps 429 with Retry-After, 5xx, a time-out and a malformed body', async () => {
    viewer.inject({ kind: 'rate_limit', route: 'runs', retryAfterSeconds: 7, times: 1 });
    await expect(adapter.listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: 7 });
    viewer.inject({ kind: 'status', route: 'metrics_step', status: 500, times: 1 });
    await expect(adapter.fetchTrainingMetrics!(ref(runNamed('baseline').id), all, signal())).rejects.toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      status: 500,
    });
    viewer.inject({ kind: 'timeout', route: 'run_detail', times: 1 });
    await expect(adapter.getJob({ externalId: runNamed('baseline').id, projectExternalId: 'x' }, signal())).rejects.toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    viewer.inject({ kind: 'malformed', route: 'metrics_step', times: 1 });
    await expect(adapter.fetchTrainingMetrics!(ref(runNamed('baseline').id), all, signal())).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    // The viewer has no auth; a proxy in front of it may still refuse.
    viewer.inject({ kind: 'auth', route: 'runs', times: 1 });
    await expect(adapter.listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_AUTH', status: 403 });
    viewer.inject({ kind: 'empty', route: 'runs', times: 1 });
    await expect(adapter.listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
  });

  it("gets the enforced limiter's 429 and Retry-After when rate limiting is switched on", async () => {
    const strict = await startRunicornViewer({ storageDir: dir, now: () => NOW, rateLimit: { enforce: true, runsLimit: 1 } });
    try {
      const a = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: strict.url }, {});
      const b = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: strict.url }, {});
      await a.listJobs(null, signal());
      await expect(b.listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: 61 });
    } finally {
      await strict.close();
    }
  });

  it('fails with UPSTREAM_UNAVAILABLE when nothing listens', async () => {
    const closed = await startRunicornViewer({ storageDir: dir });
    const url = closed.url;
    await closed.close();
    const a = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: url }, {});
    await expect(a.listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    await expect(a.fetchLogs!(ref('x'), { after: null, since: null, limit: 1 }, signal())).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });

  it('agrees with storage mode on the same folder (series for every run, jobs)', async () => {
    const storage = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', storageDir: dir }, {});
    // The same values at the same steps; storage mode also knows each value's own stage.
    const values = (series: SeriesData[]) => series.flatMap((s) => s.points.map((p) => `${s.name} ${p.step} ${p.value}`)).sort();
    for (const run of fleet.runs.filter((r) => !r.deleted)) {
      const exact = await storage.fetchTrainingMetrics!(ref(run.id), all, signal());
      expect(values(exact)).toEqual(values(await adapter.fetchTrainingMetrics!(ref(run.id), all, signal())));
      expect(exact.every((s) => s.meta.stage === 'exact: the stage of the event that logged the value (events.jsonl)')).toBe(true);
    }
    const baseline = await storage.fetchTrainingMetrics!(ref(runNamed('baseline').id), all, signal());
    expect(baseline.map((s) => `${s.name}/${s.stage}`)).toEqual(['loss/train', 'loss/warmup', 'lr/train', 'lr/warmup', 'val_acc/eval']);
    expect(baseline.find((s) => s.name === 'loss' && s.stage === 'train')!.points).toHaveLength(380);
    const key = (j: { externalId: string; status: string; projectExternalId: string }) => `${j.externalId} ${j.status} ${j.projectExternalId}`;
    expect((await storage.listJobs(null, signal())).jobs.map(key).sort()).toEqual((await adapter.listJobs(null, signal())).jobs.map(key).sort());
  });
});

describe('the demo starter', () => {
  it('serves a fleet whose running run progresses while the demo runs', async () => {
    const workDir = mkdtempSync(join(tmpdir(), 'runicorn-demo-test-'));
    let now = NOW;
    const demo = await startRunicornDemo({ workDir, now: () => now });
    try {
      // Storage mode: only the folder carries summary.json, so progress has a target and an ETA.
      expect(demo.config).toMatchObject({ id: 'runicorn-demo', kind: 'RUNICORN', name: 'Runicorn (simulated)', storageDir: join(workDir, 'runicorn-storage') });
      const a = createRunicornAdapter(demo.config as Parameters<typeof createRunicornAdapter>[0], demo.secrets);
      const live = (await a.listJobs(null, signal())).jobs.find((j) => j.status === 'RUNNING')!;
      const before = await a.fetchProgress!(ref(live.externalId), signal());
      expect(before).toMatchObject({ iteration: 300, targetIteration: LIVE_TARGET_STEPS });
      now += 10_000;
      // The demo's writer appends on its own cadence: wait for the step it owes, not for a duration.
      const after = await eventually(
        async () => {
          const p = await a.fetchProgress!(ref(live.externalId), signal());
          return (p?.iteration ?? 0) > 300 && p;
        },
        30_000,
        'the demo run to log its next steps',
      );
      expect(after!.iteration).toBe(305);
      expect(LIVE_TARGET_STEPS).toBeGreaterThan(305);
    } finally {
      await demo.close();
      rmSync(workDir, { recursive: true, force: true });
    }
  });
});
