// Graceful shutdown: close() (and SIGTERM in src/main.ts) lets an in-flight request finish,
// refuses new connections, closes graphql-ws subscribers with 1001 Going Away and releases the
// poll locks before the database goes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { providersFile, runningJobId, startSim, startTestRuntime, subscribeUtilization, waitFor, wsUrl } from '../live/helpers.js';

/** The child runs on its own embedded database and no Redis, whatever the test run was given. */
function withoutServerSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DATABASE_URL: _db, REDIS_URL: _redis, ...rest } = env;
  return rest;
}

const JOBS = '{ jobs(first: 3) { edges { node { id name status } } } }';

describe('graceful shutdown', () => {
  let sim: BasetenSimulator;
  beforeAll(async () => {
    sim = await startSim();
  });
  afterAll(async () => {
    await sim.close();
  });

  it('finishes an in-flight request, closes subscribers with 1001 and releases the poll locks', async () => {
    const rt = await startTestRuntime(sim, 1, {}, { shutdownGraceMs: 5000 });
    let closeCode: number | null = null;
    const ws = createClient({
      url: wsUrl(rt.url),
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: true,
      on: { closed: (e) => void (closeCode = (e as { code: number }).code) },
    });
    const sub = subscribeUtilization(ws, runningJobId(sim));
    await waitFor(() => sub.samples.length > 0, 10_000, 'a live sample');
    const leading = rt.live.hub.stats().leading;
    expect(leading).toHaveLength(1);
    const released: string[] = [];
    const release = rt.live.lock.release.bind(rt.live.lock);
    rt.live.lock.release = async (key) => {
      released.push(key);
      await release(key);
    };

    // The platform holds the request's first upstream call for a second: it is in flight at close().
    const calls = sim.count('listProjects');
    sim.inject({ kind: 'timeout', delayMs: 1000, route: 'listProjects', times: 1 });
    const inFlight = fetch(`${rt.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: JOBS }) });
    await waitFor(() => sim.count('listProjects') > calls, 5000, 'the upstream call');

    const closing = rt.close();
    // New connections are refused at once.
    await expect(fetch(`${rt.url}/healthz`)).rejects.toThrow();
    const res = await inFlight;
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.jobs.edges.length).toBeGreaterThan(0);
    await closing;

    await waitFor(() => closeCode !== null, 2000, 'the socket to close');
    expect(closeCode).toBe(1001);
    expect(rt.live.hub.stats()).toMatchObject({ feeds: 0, leading: [] });
    expect(released).toEqual(leading);
    await ws.dispose();
  });

  it('drains on SIGTERM and exits 0', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tg-sigterm-'));
    const config = path.join(dir, 'providers.json');
    writeFileSync(config, JSON.stringify(providersFile(sim, 1)));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: {
        ...withoutServerSettings(process.env),
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: 'memory://',
        PROVIDERS_CONFIG: config,
        LIVE_TEST_BASETEN_KEY: sim.apiKey,
        // This suite counts the live feeds' calls: no collector sweeps beside them (test/collect/ tests it).
        COLLECT: 'off',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: { msg?: string; url?: string; signal?: string }[] = [];
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    let buffered = '';
    child.stdout.on('data', (c) => {
      buffered += c;
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const p of parts) if (p.startsWith('{')) lines.push(JSON.parse(p));
    });
    // 'close', not 'exit': 'exit' can fire before the child's last stdout lines have been read.
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      await waitFor(() => lines.some((l) => l.msg === 'serving'), 60_000, `the server to start (${stderr})`);
      const url = lines.find((l) => l.msg === 'serving')!.url!;
      const calls = sim.count('listProjects');
      sim.inject({ kind: 'timeout', delayMs: 800, route: 'listProjects', times: 1 });
      const inFlight = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: JOBS }) });
      await waitFor(() => sim.count('listProjects') > calls, 5000, 'the upstream call');
      child.kill('SIGTERM');
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect((await res.json()).data.jobs.edges.length).toBeGreaterThan(0);
      expect(await exited).toBe(0);
      expect(lines.find((l) => l.signal === 'SIGTERM')).toBeDefined();
      expect(lines.at(-1)?.msg, JSON.stringify(lines.slice(-4))).toBe('stopped');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
