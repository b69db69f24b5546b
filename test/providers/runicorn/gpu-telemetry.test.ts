// Runicorn's /api/gpu/telemetry (viewer mode): nvidia-smi on the viewer's host, tied to no run. A
// running run gets host-wide GPU series (utilization, memory, power, temperature) marked as such,
// never as its own GPUs; a finished run's are what was cached while it ran; a viewer without
// nvidia-smi claims nothing. The captured fixture is replayed over HTTP; the simulator serves the
// rest as the real viewer does.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRef } from '../../../src/domain/types.js';
import { createRunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { createRun, type RunicornRunWriter } from '../../../src/simulators/runicorn/storage-writer.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { rowsOf } from '../../../src/store/sql-util.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { postGraphql, startRuntimeOn } from '../../support/runtime.js';
import { FIXTURES, signal } from './helpers.js';

const MIB = 1024 * 1024;
const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);
const METRICS = ['GPU_UTILIZATION', 'GPU_MEMORY_USED', 'GPU_POWER', 'GPU_TEMPERATURE'] as const;
const window = { from: new Date(NOW - 600_000), to: new Date(NOW), metrics: [...METRICS], stepSeconds: 15 };

let dir: string;
let running: RunicornRunWriter;
let finished: RunicornRunWriter;
let withGpus: RunicornViewerHandle;
let without: RunicornViewerHandle;

const ref = (run: RunicornRunWriter, status: JobRef['status']): JobRef => ({
  externalId: run.id,
  projectExternalId: run.path,
  status,
  createdAt: null,
  startedAt: null,
  finishedAt: null,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runicorn-telemetry-'));
  running = createRun(dir, { path: 'gpu/live', createdAt: NOW / 1000 - 600, hostname: 'trainer', pid: process.pid });
  running.logMetrics({ loss: 1 }, { ts: NOW / 1000 - 300, stage: 'train' });
  finished = createRun(dir, { path: 'gpu/done', createdAt: NOW / 1000 - 7200, hostname: 'trainer', pid: 99_999_999 });
  finished.finish(NOW / 1000 - 3600);
  const gpus = [
    { name: 'NVIDIA H100 80GB HBM3', memTotalMib: 81559 },
    { name: 'NVIDIA H100 80GB HBM3', memTotalMib: 81559 },
  ];
  withGpus = await startRunicornViewer({ storageDir: dir, now: () => NOW, gpus });
  without = await startRunicornViewer({ storageDir: dir, now: () => NOW });
});
afterAll(async () => {
  await withGpus.close();
  await without.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('viewer GPU telemetry', () => {
  it('replays the captured answer: units converted exactly, one point at the reading time, host-wide', async () => {
    const body = readFileSync(join(FIXTURES, 'responses/gpu_telemetry_simulated_smi.json'), 'utf8');
    const server = http.createServer((req, res) => {
      res.writeHead(req.url === '/api/gpu/telemetry' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(req.url === '/api/gpu/telemetry' ? body : '{"detail":"Not Found"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, {});
      expect(adapter.capabilities.systemMetrics).toEqual([...METRICS]);
      const res = await adapter.fetchSystemMetrics(ref(running, 'RUNNING'), window, signal());
      expect(res.covered).toEqual([...METRICS]);
      const at = new Date(Math.round(1795314862.3275926 * 1000));
      const value = (name: string, gpu: number) => {
        const s = res.series.find((x) => x.name === name && x.gpuIndex === gpu)!;
        expect(s).toMatchObject({ scope: 'GPU', nodeExternalId: 'host', source: 'runicorn:host', meta: { hostWide: true, gpuName: 'NVIDIA H100 80GB HBM3' } });
        expect(s.points).toHaveLength(1);
        expect(s.points[0]!.timestamp).toEqual(at);
        return s.points[0]!.value;
      };
      expect([value('GPU_UTILIZATION', 0), value('GPU_UTILIZATION', 1)]).toEqual([0.87, 0.03]);
      expect([value('GPU_MEMORY_USED', 0), value('GPU_MEMORY_USED', 1)]).toEqual([40213 * MIB, 4 * MIB]);
      expect([value('GPU_POWER', 0), value('GPU_POWER', 1)]).toEqual([512.34, 71.2]);
      expect([value('GPU_TEMPERATURE', 0), value('GPU_TEMPERATURE', 1)]).toEqual([61, 34]);
      expect(res.series).toHaveLength(8);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('asks the viewer only for a running run; a finished one is complete with what the cache holds', async () => {
    const adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: withGpus.url }, {});
    withGpus.resetStats();
    const live = await adapter.fetchSystemMetrics(ref(running, 'RUNNING'), window, signal());
    expect(live.series.filter((s) => s.name === 'GPU_UTILIZATION')).toHaveLength(2);
    expect(withGpus.count('gpu_telemetry')).toBe(1);
    const done = await adapter.fetchSystemMetrics(ref(finished, 'SUCCEEDED'), window, signal());
    expect(done).toEqual({ series: [], covered: [...METRICS], from: window.from, to: window.to });
    expect(withGpus.count('gpu_telemetry')).toBe(1);
  });

  it('a viewer without nvidia-smi claims nothing; a malformed answer is a coded error; storage mode has none', async () => {
    const none = await createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: without.url }, {}).fetchSystemMetrics(
      ref(running, 'RUNNING'),
      window,
      signal(),
    );
    expect(none).toEqual({ series: [], covered: [], from: window.from, to: window.to });
    withGpus.inject({ kind: 'malformed', route: 'gpu_telemetry', times: 1 });
    await expect(
      createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: withGpus.url }, {}).fetchSystemMetrics(ref(running, 'RUNNING'), window, signal()),
    ).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
    });
    expect(createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', storageDir: dir }, {}).capabilities.systemMetrics).toEqual([]);
  });
});

describe('through the graph', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a running Runicorn run answers host-wide GPU series, cached as points', async () => {
    const rt = await startRuntimeOn(db, [{ id: 'rc', kind: 'RUNICORN', baseUrl: withGpus.url }], { clock: () => NOW });
    try {
      const res = await postGraphql(
        rt.url,
        `query($id: ID!) { job(id: $id) { status metrics(names: [GPU_UTILIZATION, GPU_TEMPERATURE], scope: GPU) { name unit scope points { timestamp value } } } }`,
        { id: `rc:job:${running.id}` },
      );
      expect(res.errors).toBeUndefined();
      expect(res.data.job.status).toBe('RUNNING');
      const series = res.data.job.metrics as { name: string; unit: string; scope: string; points: { timestamp: string; value: number }[] }[];
      expect(series.map((s) => `${s.name}/${s.unit}`).sort()).toEqual([
        'GPU_TEMPERATURE/CELSIUS',
        'GPU_TEMPERATURE/CELSIUS',
        'GPU_UTILIZATION/RATIO',
        'GPU_UTILIZATION/RATIO',
      ]);
      for (const s of series) {
        expect(s.points).toEqual([{ timestamp: new Date(NOW).toISOString(), value: expect.any(Number) }]);
      }
      // The answer goes out before its cache write commits: once it has, the readings are points.
      await rt.readThrough.writesSettled();
      const [stored] = await rowsOf<{ n: number }>(
        rt.database.db,
        sql`select count(*)::int as n from points p join series s on s.id = p.series_id where s.job_id = ${`rc:job:${running.id}`}`,
      );
      expect(Number(stored!.n)).toBeGreaterThanOrEqual(4);
    } finally {
      await rt.close();
    }
  });
});
