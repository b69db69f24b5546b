// The viewer simulator, served the captured storage folder, answers what the real viewer answered.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { BIG_RUN, CRASHED_RUN, FINISHED_RUN, LIVE_RUN, copyFixtureStorage, fixtureIndex, fixtureJson, relocate } from '../../providers/runicorn/helpers.js';

let viewer: RunicornViewerHandle;
let storage: { dir: string; cleanup: () => void };

beforeAll(async () => {
  storage = copyFixtureStorage();
  viewer = await startRunicornViewer({ storageDir: storage.dir, gpus: [] });
});
afterAll(async () => {
  await viewer.close();
  storage.cleanup();
});

const get = async (path: string) => {
  const res = await fetch(`${viewer.url}${path}`);
  return { status: res.status, headers: res.headers, body: (await res.json()) as unknown };
};

// Captures that depend on state the folder no longer has (mid-run, a stub nvidia-smi, an earlier
// folder, host stats, cache counters) are checked separately below or not at all.
const STATEFUL = new Set([
  'responses/run_detail_running.json',
  'responses/metrics_step_running_t1.json',
  'responses/metrics_step_running_t2.json',
  'responses/gpu_telemetry_simulated_smi.json',
  'responses/system_monitor.json',
  'responses/storage_stats.json',
  'responses/metrics_cache_stats.json',
  'responses/health.json',
]);

describe('replaying the captured requests against the simulator', () => {
  const entries = fixtureIndex().filter((e) => e.file.startsWith('responses/') && !STATEFUL.has(e.file));

  it.each(entries.map((e) => [e.file, e] as const))('%s', async (_file, entry) => {
    const query = entry.query ? `?${entry.query}` : '';
    const res = await get(`${entry.path}${query}`);
    expect(res.status).toBe(entry.status);
    expect(res.body).toEqual(relocate(fixtureJson(entry.file), storage.dir));
    for (const [name, value] of Object.entries(entry.headers)) {
      if (name === 'content-type') expect(res.headers.get(name)).toContain('application/json');
      else expect(res.headers.get(name)).toBe(value);
    }
  });

  it('health matches except the storage root', async () => {
    const res = await get('/api/health');
    expect(res.body).toEqual({ ...(relocate(fixtureJson('responses/health.json'), storage.dir) as object), cache: expect.any(Object) });
    expect((res.body as { version: string }).version).toBe('0.6.0');
  });

  it('every /api answer carries the rate-limit headers', async () => {
    const res = await fetch(`${viewer.url}/api/runs/${FINISHED_RUN}/metrics_step`);
    expect(res.headers.get('x-ratelimit-limit')).toBe('10000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('10000');
    expect(res.headers.get('x-ratelimit-reset')).toBe('60');
    expect((await fetch(`${viewer.url}/api/paths`)).headers.get('x-ratelimit-limit')).toBe('6000');
  });

  it("the LTTB result keeps the real server's duplicated last row", async () => {
    const res = await get(`/api/runs/${BIG_RUN}/metrics_step?downsample=100`);
    const steps = (res.body as { rows: { global_step: number }[] }).rows.map((r) => r.global_step);
    expect(steps.slice(-2)).toEqual([300, 300]);
  });

  it('downsample above 50000 is a 422 with a pydantic-style detail', async () => {
    const res = await get(`/api/runs/${FINISHED_RUN}/metrics_step?downsample=50001`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          loc: ['query', 'downsample'],
          msg: 'ensure this value is less than or equal to 50000',
          type: 'value_error.number.not_le',
          ctx: { limit_value: 50000 },
        },
      ],
    });
  });

  it('counts requests per route', async () => {
    viewer.resetStats();
    await get('/api/runs');
    await get(`/api/runs/${FINISHED_RUN}/metrics_step`);
    await get(`/api/runs/${FINISHED_RUN}/metrics_step`);
    expect(viewer.count('runs')).toBe(1);
    expect(viewer.count('metrics_step')).toBe(2);
  });
});

describe('a run that is still being written', () => {
  it('answers t1 and t2 like the capture when events.jsonl holds 6, then 14 lines', async () => {
    const live = copyFixtureStorage();
    const sim = await startRunicornViewer({ storageDir: live.dir });
    try {
      const events = join(live.dir, 'runs/demo/live', LIVE_RUN, 'events.jsonl');
      const lines = readFileSync(events, 'utf8').split('\n');
      writeFileSync(events, `${lines.slice(0, 6).join('\n')}\n`);
      const t1 = await fetch(`${sim.url}/api/runs/${LIVE_RUN}/metrics_step`);
      expect(await t1.json()).toEqual(fixtureJson('responses/metrics_step_running_t1.json'));
      appendFileSync(events, `${lines.slice(6, 14).join('\n')}\n`);
      const t2 = await fetch(`${sim.url}/api/runs/${LIVE_RUN}/metrics_step`);
      expect(await t2.json()).toEqual(fixtureJson('responses/metrics_step_running_t2.json'));
      expect(t2.headers.get('x-last-step')).toBe('14');
    } finally {
      await sim.close();
      live.cleanup();
    }
  });

  it('marks a running run of this host whose pid is gone as failed / process_not_found', async () => {
    const dir = copyFixtureStorage();
    const sim = await startRunicornViewer({ storageDir: dir.dir, hostname: 'vm', isProcessAlive: () => false, now: () => 1_800_000_000_000 });
    try {
      const statusFile = join(dir.dir, 'runs/demo/live', LIVE_RUN, 'status.json');
      writeFileSync(statusFile, JSON.stringify({ status: 'running', started_at: 1795314815.7480223 }));
      const res = await fetch(`${sim.url}/api/runs/${LIVE_RUN}`);
      expect(((await res.json()) as { status: string }).status).toBe('failed');
      expect(JSON.parse(readFileSync(statusFile, 'utf8'))).toEqual({
        status: 'failed',
        started_at: 1795314815.7480223,
        ended_at: 1_800_000_000,
        exit_reason: 'process_not_found',
      });
    } finally {
      await sim.close();
      dir.cleanup();
    }
  });

  it('leaves runs written on another host alone', async () => {
    const dir = copyFixtureStorage();
    const sim = await startRunicornViewer({ storageDir: dir.dir, hostname: 'other-host', isProcessAlive: () => false });
    try {
      writeFileSync(join(dir.dir, 'runs/demo/live', LIVE_RUN, 'status.json'), JSON.stringify({ status: 'running', started_at: 1 }));
      const runs = (await (await fetch(`${sim.url}/api/runs`)).json()) as { id: string; status: string }[];
      expect(runs.find((r) => r.id === LIVE_RUN)?.status).toBe('running');
    } finally {
      await sim.close();
      dir.cleanup();
    }
  });
});

interface FrameLog {
  frames: string[];
  /** The server's close code, or null while the socket is open. */
  closeCode: number | null;
  elapsedMs: number;
  /** Waits until `done(frames)` holds or the server closes (a hang fails the test by its own time-out). */
  until(done: (frames: string[]) => boolean): Promise<void>;
  /** Resolves when a ping is answered: the socket is open and served. */
  ping(): Promise<void>;
  close(): void;
}

/** Opens the log socket and records every frame and the close, for the test to wait on. */
async function openFrames(url: string): Promise<FrameLog> {
  const started = Date.now();
  const ws = new WebSocket(url);
  const waiters = new Set<() => void>();
  const log: FrameLog = {
    frames: [],
    closeCode: null,
    elapsedMs: 0,
    until: (done) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (done(log.frames) || log.closeCode !== null) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      }),
    ping: () =>
      new Promise<void>((resolve, reject) => {
        ws.once('pong', () => resolve());
        ws.ping((err?: Error) => err && reject(err));
      }),
    close: () => ws.terminate(),
  };
  const notify = () => {
    log.elapsedMs = Date.now() - started;
    for (const w of [...waiters]) w();
  };
  ws.on('message', (d) => {
    log.frames.push(d.toString());
    notify();
  });
  ws.on('close', (code) => {
    log.closeCode = code;
    notify();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return log;
}

const capturedFrames = (file: string) => (fixtureJson(file) as { messages: string[] }).messages.filter((m) => !m.startsWith('<<'));

describe('the log WebSocket', () => {
  const wsUrl = (id: string) => `${viewer.url.replace('http', 'ws')}/api/runs/${id}/logs/ws`;

  it('replays a finished run like the capture and keeps the socket open', async () => {
    const expected = capturedFrames('ws/ws_logs_finished.json');
    const log = await openFrames(wsUrl(FINISHED_RUN));
    await log.until((f) => f.length >= expected.length);
    expect(log.frames).toEqual(expected);
    // Still open and served after the replay (the viewer tails the file).
    await log.ping();
    expect(log.closeCode).toBeNull();
    log.close();
  });

  it('answers an unknown run with [error] run not found and close 1000', async () => {
    const log = await openFrames(wsUrl('nope_123'));
    await log.until(() => false);
    expect(log.frames).toEqual(capturedFrames('ws/ws_logs_not_found.json'));
    expect(log.closeCode).toBe(1000);
  });

  it('drops a run without logs.txt about 2 s after the info line', async () => {
    const log = await openFrames(wsUrl(CRASHED_RUN));
    await log.until(() => false);
    expect(log.frames).toEqual(capturedFrames('ws/ws_logs_no_logs_file.json'));
    expect(log.closeCode).toBe(1000);
    // A lower bound only: a busy machine makes the drop later, never sooner.
    expect(log.elapsedMs).toBeGreaterThanOrEqual(1900);
  });

  it('tails lines appended after the replay', async () => {
    const logs = join(storage.dir, 'runs/demo/live', LIVE_RUN, 'logs.txt');
    const original = readFileSync(logs, 'utf8');
    try {
      const replay = capturedFrames('ws/ws_logs_live.json');
      const log = await openFrames(wsUrl(LIVE_RUN));
      await log.until((f) => f.length >= replay.length);
      appendFileSync(logs, '02:33:51 | live step 31\n\n');
      await log.until((f) => f.length >= replay.length + 1);
      log.close();
      expect(log.frames).toEqual([...replay, '02:33:51 | live step 31']);
      expect(viewer.count('logs_ws')).toBeGreaterThan(0);
    } finally {
      writeFileSync(logs, original);
    }
  });
});
