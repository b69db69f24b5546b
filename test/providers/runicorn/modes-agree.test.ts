// Replaying the captured viewer responses (viewer mode) and reading the captured storage folder
// (storage mode) give identical series, jobs and logs for the same runs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { JobRef, SeriesData } from '../../../src/domain/types.js';
import { createRunicornAdapter, type RunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { FINISHED_RUN, LIVE_RUN, FIXTURES, copyFixtureStorage, fixtureIndex, signal } from './helpers.js';

/** Serves each captured body at its captured method, path and query (the first capture wins). */
function startReplayServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const byRequest = new Map<string, { status: number; body: string; headers: Record<string, string> }>();
  for (const e of fixtureIndex().filter((x) => x.file.startsWith('responses/'))) {
    const key = `${e.method} ${e.path}${e.query ? `?${e.query}` : ''}`;
    if (!byRequest.has(key)) byRequest.set(key, { status: e.status, body: readFileSync(join(FIXTURES, e.file), 'utf8'), headers: e.headers });
  }
  const frames = new Map<string, { messages: string[]; closes: boolean }>();
  for (const f of ['ws_logs_finished', 'ws_logs_live', 'ws_logs_not_found', 'ws_logs_no_logs_file']) {
    const cap = JSON.parse(readFileSync(join(FIXTURES, 'ws', `${f}.json`), 'utf8')) as { uri: string; messages: string[] };
    frames.set(new URL(cap.uri.replace('HOST', 'h')).pathname, {
      messages: cap.messages.filter((m) => !m.startsWith('<<')),
      closes: cap.messages.some((m) => m.startsWith('<<server closed')),
    });
  }
  const server = http.createServer((req, res) => {
    const hit = byRequest.get(`${req.method} ${req.url}`);
    if (!hit) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      return;
    }
    res.writeHead(hit.status, { 'content-type': 'application/json', ...hit.headers }).end(hit.body);
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws, req) => {
    const cap = frames.get(new URL(req.url ?? '/', 'http://h').pathname);
    for (const m of cap?.messages ?? ['[error] run not found']) ws.send(m);
    if (!cap || cap.closes) ws.close(1000);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((r) => {
            for (const c of wss.clients) c.terminate();
            wss.close();
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    }),
  );
}

let replay: { url: string; close: () => Promise<void> };
let storage: { dir: string; cleanup: () => void };
let viewerMode: RunicornAdapter;
let storageMode: RunicornAdapter;

beforeAll(async () => {
  replay = await startReplayServer();
  storage = copyFixtureStorage();
  viewerMode = createRunicornAdapter({ id: 'rc-viewer', kind: 'RUNICORN', baseUrl: replay.url, timeoutSeconds: 5 }, {});
  storageMode = createRunicornAdapter({ id: 'rc-storage', kind: 'RUNICORN', storageDir: storage.dir }, {});
});
afterAll(async () => {
  await viewerMode.close!();
  await replay.close();
  storage.cleanup();
});

const ref = (externalId: string, createdAt: Date | null = null): JobRef => ({
  externalId,
  projectExternalId: 'demo/mnist',
  status: 'SUCCEEDED',
  createdAt,
  startedAt: null,
  finishedAt: null,
});
const all = { from: null, to: null, names: null };
const pointsOf = (series: SeriesData[], name: string, stage: string | null) =>
  series.find((s) => s.name === name && s.stage === stage)?.points.map((p) => [p.step, p.value]);

describe('viewer mode (captured responses) and storage mode (captured folder) agree', () => {
  it('storage mode keeps every value in the stage of the event that logged it (captured run)', async () => {
    const fromStorage = await storageMode.fetchTrainingMetrics!(ref(FINISHED_RUN), all, signal());
    // The SDK wrote loss/lr under warmup (steps 1-2) and train (3-10), val_acc under eval at steps
    // 5 and 10, where a train event of the same step came first. No metric appears in a stage it
    // was never logged in, and loss/train has no holes at 5 and 10.
    expect(fromStorage.map((s) => `${s.name}/${s.stage}`)).toEqual(['loss/train', 'loss/warmup', 'lr/train', 'lr/warmup', 'val_acc/eval']);
    expect(pointsOf(fromStorage, 'loss', 'warmup')).toEqual([
      [1, 2.3],
      [2, 1.15],
    ]);
    expect(pointsOf(fromStorage, 'loss', 'train')).toEqual([
      [3, 0.7667],
      [4, 0.575],
      [5, 0.46],
      [6, 0.3833],
      [7, 0.3286],
      [8, 0.2875],
      [9, 0.2556],
      [10, 0.23],
    ]);
    expect(pointsOf(fromStorage, 'val_acc', 'eval')).toEqual([
      [5, 0.65],
      [10, 0.8],
    ]);
    const first = fromStorage.find((s) => s.name === 'loss' && s.stage === 'warmup')!;
    expect(first).toMatchObject({ kind: 'training', keyedBy: 'step', source: 'runicorn', scope: 'JOB', rawName: 'loss', unit: 'NONE' });
    expect(first.meta.stage).toMatch(/^exact/);
    expect(first.points[0]!.timestamp?.toISOString()).toBe('2026-11-22T02:32:54.818Z');
    // Each value carries its own event's time (epoch 1795314775.0375 for the train loss at step 5).
    const train = fromStorage.find((s) => s.name === 'loss' && s.stage === 'train')!;
    expect(train.points.find((p) => p.step === 5)!.timestamp?.toISOString()).toBe('2026-11-22T02:32:55.038Z');
    expect(fromStorage.find((s) => s.name === 'val_acc')!.points[0]!.timestamp?.toISOString()).toBe('2026-11-22T02:32:55.038Z');
  });

  it('viewer mode says where the merged rows cannot tell the stage, and never relabels a value', async () => {
    const fromViewer = await viewerMode.fetchTrainingMetrics!(ref(FINISHED_RUN), all, signal());
    // metrics_step merged the train and eval events of steps 5 and 10 into rows of stage eval:
    // loss and lr came in rows of three stages, so their stage cannot be told; val_acc only in eval rows.
    expect(fromViewer.map((s) => `${s.name}/${s.stage}`)).toEqual(['loss/null', 'lr/null', 'val_acc/eval']);
    const loss = fromViewer.find((s) => s.name === 'loss')!;
    expect(loss.meta).toMatchObject({ stage: null, stageExact: false, stagesSeen: ['eval', 'train', 'warmup'] });
    expect(loss.meta.stageNote).toMatch(/cannot be told/);
    expect(loss.points.map((p) => p.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(fromViewer.find((s) => s.name === 'val_acc')!.meta).toMatchObject({ stage: 'eval', stageExact: false });
    // The values themselves agree with storage mode, whatever the stage.
    const fromStorage = await storageMode.fetchTrainingMetrics!(ref(FINISHED_RUN), all, signal());
    const storageLoss = fromStorage.filter((s) => s.name === 'loss').flatMap((s) => s.points.map((p) => [p.step, p.value]));
    expect(loss.points.map((p) => [p.step, p.value])).toEqual(storageLoss.sort((a, b) => a[0]! - b[0]!));
    expect(pointsOf(fromViewer, 'val_acc', 'eval')).toEqual(pointsOf(fromStorage, 'val_acc', 'eval'));
  });

  it('give the same points for the run captured mid-way (6 rows) when the folder holds those 6 lines', async () => {
    const events = join(storage.dir, 'runs/demo/live', LIVE_RUN, 'events.jsonl');
    const original = readFileSync(events, 'utf8');
    writeFileSync(events, `${original.split('\n').slice(0, 6).join('\n')}\n`);
    try {
      const fresh = createRunicornAdapter({ id: 'rc-storage-2', kind: 'RUNICORN', storageDir: storage.dir }, {});
      const fromViewer = await viewerMode.fetchTrainingMetrics!(ref(LIVE_RUN), all, signal());
      const fromStorage = await fresh.fetchTrainingMetrics!(ref(LIVE_RUN), all, signal());
      // One stage per step in this run, so both modes name the same stages and the same points.
      const shape = (series: SeriesData[]) => series.map((s) => [s.name, s.stage, s.points]);
      expect(shape(fromStorage)).toEqual(shape(fromViewer));
      expect(pointsOf(fromViewer, 'gpu_util', 'train')).toHaveLength(6);
    } finally {
      writeFileSync(events, original);
    }
  });

  it('list the same jobs and projects', async () => {
    const viewerJobs = (await viewerMode.listJobs(null, signal())).jobs;
    const storageJobs = (await storageMode.listJobs(null, signal())).jobs;
    const comparable = (j: (typeof viewerJobs)[number]) => [j.externalId, j.projectExternalId, j.name, j.status, j.rawStatus, j.createdAt?.toISOString()];
    expect(storageJobs.map(comparable).sort()).toEqual(viewerJobs.map(comparable).sort());
    const crashed = viewerJobs.find((j) => j.name === 'crashed-run')!;
    expect(crashed).toMatchObject({ status: 'FAILED', rawStatus: 'failed', projectExternalId: 'demo/mnist', gpuCount: null });
    expect((await viewerMode.listProjects(signal())).map((p) => p.externalId)).toEqual(['demo/big', 'demo/live', 'demo/mnist']);
    expect(await storageMode.listProjects(signal())).toEqual(await viewerMode.listProjects(signal()));
  });

  it('storage mode has start and end from status.json; the viewer only its last metric event', async () => {
    const fromStorage = await storageMode.getJob({ externalId: FINISHED_RUN, projectExternalId: 'demo/mnist' }, signal());
    expect(fromStorage?.startedAt?.toISOString()).toBe('2026-11-22T02:32:54.809Z');
    expect(fromStorage?.finishedAt?.toISOString()).toBe('2026-11-22T02:32:55.372Z');
    expect(fromStorage?.nodes).toEqual([{ externalId: 'host', name: 'vm', gpus: [] }]);
    const fromViewer = await viewerMode.getJob({ externalId: FINISHED_RUN, projectExternalId: 'demo/mnist' }, signal());
    // The viewer serves no end: its answer is the last metric event, 64 ms before ended_at.
    expect(fromViewer).toMatchObject({
      status: 'SUCCEEDED',
      finishedAt: new Date('2026-11-22T02:32:55.308Z'),
      createdAt: new Date('2026-11-22T02:32:54.808Z'),
    });
    expect(fromViewer?.nodes).toEqual([{ externalId: 'host', name: 'host', gpus: [] }]);
  });

  it('return null for an unknown run in both modes', async () => {
    expect(await viewerMode.getJob({ externalId: 'nope_123', projectExternalId: 'x' }, signal())).toBeNull();
    expect(await storageMode.getJob({ externalId: 'nope_123', projectExternalId: 'x' }, signal())).toBeNull();
  });

  it('give identical log pages (WebSocket replay vs logs.txt), with dated timestamps', async () => {
    const job = ref(FINISHED_RUN, new Date('2026-11-22T02:32:54.808Z'));
    const request = { after: null, since: null, limit: 5 };
    const fromViewer = await viewerMode.fetchLogs!(job, request, signal());
    expect(await storageMode.fetchLogs!(job, request, signal())).toEqual(fromViewer);
    expect(fromViewer.lines.map((l) => l.message)).toEqual([
      '02:32:54 | starting training',
      '02:32:54 | step 1 done',
      '02:32:54 | step 2 done',
      '02:32:54 | step 3 done',
      '02:32:54 | step 4 done',
    ]);
    expect(fromViewer.lines[0]!.timestamp?.toISOString()).toBe('2026-11-22T02:32:54.000Z');
    expect(fromViewer.nextCursor).toBe('5');
    const rest = await viewerMode.fetchLogs!(job, { ...request, after: fromViewer.nextCursor }, signal());
    expect(rest.lines.map((l) => l.cursor)).toEqual(['6', '7', '8', '9', '10']);
    expect(await storageMode.fetchLogs!(job, { ...request, after: '5' }, signal())).toEqual(rest);
  });

  it('read a run without logs.txt as no lines in both modes', async () => {
    const job = ref('20261122_023302_808751');
    const request = { after: null, since: null, limit: 100 };
    expect((await viewerMode.fetchLogs!(job, request, signal())).lines).toEqual([]);
    expect((await storageMode.fetchLogs!(job, request, signal())).lines).toEqual([]);
  });
});
