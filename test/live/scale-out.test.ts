// Two server processes (src/main.ts) sharing a real Postgres and Redis: events cross replicas
// through Redis, one replica polls a job at a time (advisory lock), and killing the poller moves
// polling to the survivor within about one interval, resuming where the dead one stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client, sleep, startSim, subscribeUtilization, waitFor, type Sample } from './helpers.js';
import { freePort, reachable } from '../support/net.js';

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const INTERVAL_S = 0.5;
const INTERVAL_MS = INTERVAL_S * 1000;

// Skipped only where neither service answers and no test database was named (CI has both).
const available = (await reachable(ADMIN_URL, 5432)) && (await reachable(REDIS_URL, 6379));
const run = available || process.env.TEST_DATABASE_URL ? describe : describe.skip;

const dbName = `live_scaleout_${process.pid}_${Date.now().toString(36)}`;
const providerId = `bt-${Date.now().toString(36)}`;
let sim: BasetenSimulator;
const children: ChildProcess[] = [];

async function startReplica(name: string, configPath: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL,
      PROVIDERS_CONFIG: configPath,
      LIVE_TEST_BASETEN_KEY: sim.apiKey,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitForReady(url, name);
  return { url, child };
}

async function waitForReady(url: string, name: string) {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`replica ${name} did not become ready`);
}

const newestPoint = (samples: Sample[]): string | null => {
  let newest: string | null = null;
  for (const s of samples) for (const g of s.series) for (const p of g.points) if (!newest || p.timestamp > newest) newest = p.timestamp;
  return newest;
};

run('two replicas sharing Postgres and Redis', () => {
  let admin: postgres.Sql;
  beforeAll(async () => {
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${dbName}`);
    sim = await startSim();
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await sleep(300);
    await sim?.close();
    await admin?.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin?.end();
  });

  it('B receives what A polls; killing A moves polling to B within an interval, losing no data', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'live-scaleout-'));
    const configPath = path.join(dir, 'providers.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        providers: [{ id: providerId, kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'LIVE_TEST_BASETEN_KEY', pollIntervalSeconds: INTERVAL_S }],
      }),
    );
    const a = await startReplica('A', configPath);
    const b = await startReplica('B', configPath);
    const job = sim.fleet.jobs.find((j) => j.status === 'TRAINING_JOB_RUNNING')!;
    const jobId = `${providerId}:job:${job.id}`;

    // A's subscriber comes first, so A takes the poll lock.
    const ca = client(a.url);
    const subA = subscribeUtilization(ca, jobId);
    await waitFor(() => subA.samples.length >= 1, 15_000, 'a sample on A');
    const cb = client(b.url);
    const subB = subscribeUtilization(cb, jobId);
    await waitFor(() => subB.samples.length >= 2, 15_000, 'samples on B');

    // One poller across both replicas: each getMetrics call is one sample, seen on both.
    const i0 = subB.samples.length;
    const c0 = sim.count('getMetrics');
    await sleep(6 * INTERVAL_MS);
    const polls = sim.count('getMetrics') - c0;
    const seen = subB.samples.length - i0;
    expect(Math.abs(polls - seen)).toBeLessThanOrEqual(1);
    expect(polls).toBeLessThanOrEqual(8);
    const polledOnA = new Set(subA.samples.map((s) => s.polledAt));
    const common = subB.samples.slice(i0, -1).filter((s) => polledOnA.has(s.polledAt));
    expect(common.length).toBeGreaterThanOrEqual(seen - 2);

    // Kill A: its Postgres session ends, the advisory lock with it; B's next try takes it.
    const beforeKill = subB.samples.length;
    const cursorBefore = newestPoint(subB.samples);
    const lastBefore = Date.parse(subB.samples.at(-1)!.polledAt);
    a.child.kill('SIGKILL');
    await waitFor(() => subB.samples.length >= beforeKill + 4, 20_000, 'samples on B after A died');
    const after = subB.samples.slice(beforeKill);
    const firstGap = Date.parse(after[0]!.polledAt) - lastBefore;
    // One interval lost at most: the lock retry runs every interval (plus a poll's own time).
    expect(firstGap).toBeLessThanOrEqual(2 * INTERVAL_MS + 400);
    // B resumes exactly after the newest point A had published: no point is skipped.
    if (cursorBefore) expect(after[0]!.from).toBe(cursorBefore);
    for (let i = 1; i < after.length; i++) {
      expect(Date.parse(after[i]!.polledAt) - Date.parse(after[i - 1]!.polledAt)).toBeLessThanOrEqual(INTERVAL_MS + 400);
    }
    // Still one poller: B alone now.
    const c1 = sim.count('getMetrics');
    const j1 = subB.samples.length;
    await sleep(4 * INTERVAL_MS);
    expect(Math.abs(sim.count('getMetrics') - c1 - (subB.samples.length - j1))).toBeLessThanOrEqual(1);
    expect(subB.errors).toEqual([]);

    subA.stop();
    subB.stop();
    await Promise.allSettled([ca.dispose(), cb.dispose()]);
    const cStop = sim.count('getMetrics');
    await sleep(3 * INTERVAL_MS);
    expect(sim.count('getMetrics') - cStop).toBeLessThanOrEqual(1);
    b.child.kill('SIGTERM');
  }, 90_000);
});
