// The real Postgres loses every connection of a running server (pg_terminate_backend on all its
// backends, three times) in the middle of a burst of cold cache writes. The server is a real child
// process (src/main.ts, as in production), so an uncaught exception would end it: it must stay up,
// answer again without a restart, report ready again, and afterwards its cache must hold exactly
// what a second server that never saw the outage holds: no committed point lost, no range marked as
// fetched with its points missing. postgres.js 3.4.9 throws from a write on a killed connection
// (porsager/postgres#1154); src/store/postgres-guard.ts is what keeps the process alive through it.
// Sums are taken in numeric so the summation order of float8 cannot make equal caches differ.
// Gated behind TEST_PG_KILL=1 for now: with the guard the process survives the TypeError, but the
// same postgres.js bug leaves a killed connection "poisoned" (closed() clears nextWriteTimer without
// nulling it and keeps the stale chunk, so the next startup message is never flushed): queries that
// land on it hang for connect_timeout (30 s) and the slot does not recover (LanternOps/breeze#3214,
// #3225). Some runs also saw the child exit 1 or fetches fail mid-burst. Un-gate once fixed.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const METRICS = `query($id: ID!) { job(id: $id) { metrics(maxPoints: 50) { name } } }`;
const CACHE_SHAPE = `
  select s.series_key as key, count(p.key)::int as n, coalesce(sum(p.value::numeric), 0)::text as total
  from series s left join points p on p.series_id = s.id group by s.series_key order by s.series_key`;
const FETCHED_WITHOUT_SERIES = `
  select f.job_id, f.dataset from fetches f
  where f.dataset like 'metric:%' and not exists (select 1 from series s where s.job_id = f.job_id)`;

interface LogLine {
  level?: number;
  msg?: string;
  url?: string;
  issue?: string;
}

interface Server {
  url: string;
  child: ChildProcess;
  lines: LogLine[];
  exitCode(): number | null | undefined;
  stop(): Promise<void>;
}

async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** src/main.ts as production runs it, on its own database and a random port. */
async function startServer(databaseUrl: string, providersConfig: string, apiKey: string): Promise<Server> {
  const { REDIS_URL: _redis, DATABASE_URL: _db, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: databaseUrl, PROVIDERS_CONFIG: providersConfig, BT_KEY: apiKey, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  let stderr = '';
  let buffered = '';
  let exit: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (code, signal) => {
      exit = code ?? (signal ? -1 : null);
      resolve();
    }),
  );
  child.stderr!.on('data', (c) => (stderr += c));
  child.stdout!.on('data', (c) => {
    buffered += c;
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    for (const p of parts) if (p.startsWith('{')) lines.push(JSON.parse(p) as LogLine);
  });
  const serving = await waitFor(() => (exit !== undefined ? Promise.reject(new Error(`server exited ${exit}: ${stderr}`)) : lines.find((l) => l.msg === 'serving')), 60_000, `the server to start (${stderr})`);
  return {
    url: serving.url!.replace(/\/graphql$/, ''),
    child,
    lines,
    exitCode: () => exit,
    async stop() {
      if (exit === undefined) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (exit === undefined) child.kill('SIGKILL');
    },
  };
}

async function gql(server: Server, query: string, variables?: Record<string, unknown>) {
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } };
}

// KNOWN FAILING, not a passing check: issue 8's "server recovers without a restart" is not met yet.
// postgres.js 3.4.9 (newest on npm) leaves a killed connection poisoned (its unsent bytes survive
// the close, so the reconnect never logs in: porsager/postgres#1154, #1208) and queries on it hang
// for the 30 s connect timeout. The guard in src/store/postgres-guard.ts keeps the process alive;
// recovery needs a patched driver or replacing the client on CONNECT_TIMEOUT. Run it with
// TEST_PG_KILL=1 to see the gap; it is off in CI so the suite does not claim what it cannot show.
describe.runIf(REAL_POSTGRES_URL && process.env.TEST_PG_KILL === '1')('Postgres connections killed during a write burst (real Postgres, server as a child process)', () => {
  let sim: BasetenSimulator;
  let dir: string;
  let victimDb: TestDatabase;
  let controlDb: TestDatabase;
  let victim: Server;
  let control: Server;

  beforeAll(async () => {
    // Finished jobs only: their series are final, so the two servers must end with equal caches.
    sim = await startBasetenSimulator({
      seed: 'pg-kill',
      rateLimit: false,
      fleet: { projects: 2, jobsPerProject: 10, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 4, statuses: ['TRAINING_JOB_COMPLETED', 'TRAINING_JOB_FAILED', 'TRAINING_JOB_STOPPED'] },
    });
    dir = mkdtempSync(path.join(tmpdir(), 'tg-pg-kill-'));
    const providersConfig = path.join(dir, 'providers.json');
    writeFileSync(providersConfig, JSON.stringify({ providers: [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 10 }] }));
    [victimDb, controlDb] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    [victim, control] = await Promise.all([startServer(victimDb.databaseUrl!, providersConfig, sim.apiKey), startServer(controlDb.databaseUrl!, providersConfig, sim.apiKey)]);
  });
  afterAll(async () => {
    await Promise.all([victim?.stop(), control?.stop()]);
    await Promise.all([victimDb?.drop(), controlDb?.drop()]);
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stays up, recovers without a restart and loses no committed point', async () => {
    const list = await gql(victim, `{ jobs(first: 100) { edges { node { id } } } }`);
    expect(list.body.errors).toBeUndefined();
    const ids: string[] = list.body.data.jobs.edges.map((e: any) => e.node.id);
    expect(ids).toHaveLength(sim.fleet.jobs.length);

    const dbName = new URL(victimDb.databaseUrl!).pathname.slice(1);
    const admin = postgres(REAL_POSTGRES_URL!, { max: 1, onnotice: () => {} });
    const kills: number[] = [];
    try {
      // The burst: every job's metrics, cold, so each answer is written to the cache as it arrives;
      // the kills land while those writes are in flight.
      const burst = Promise.all(ids.map((id) => gql(victim, METRICS, { id }).catch((err: Error) => ({ status: 0, body: { errors: [{ message: err.message }] } }))));
      for (const delayMs of [150, 250, 250]) {
        await new Promise((r) => setTimeout(r, delayMs));
        const [row] = await admin`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = ${dbName} and pid <> pg_backend_pid()`;
        kills.push(row!.n as number);
      }
      const during = await burst;
      expect(kills.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      // Every request was answered (possibly with a field error), none hung or broke the connection.
      for (const r of during) expect(r.status).toBe(200);
      expect(victim.exitCode()).toBeUndefined();

      // The same process answers again and reports ready once its pool has reconnected.
      await waitFor(async () => ((await gql(victim, `{ jobs(first: 1) { edges { node { id } } } }`)).body.errors ? undefined : true), 10_000, 'a query to succeed again');
      await waitFor(async () => ((await fetch(`${victim.url}/readyz`)).status === 200 ? true : undefined), 10_000, '/readyz to be 200 again');

      // The final full query, as concurrent as the burst (it needs the whole pool, poisoned slots
      // would show as time-outs): what failed is fetched now, what committed is served from the cache.
      const after = await Promise.all(ids.map((id) => gql(victim, METRICS, { id })));
      for (const r of after) expect(r.body.errors).toBeUndefined();
      const reference = await Promise.all(ids.map((id) => gql(control, METRICS, { id })));
      for (const r of reference) expect(r.body.errors).toBeUndefined();
      expect(victim.exitCode()).toBeUndefined();

      const shapeOf = async (url: string, query: string) => {
        const sql = postgres(url, { max: 1, onnotice: () => {} });
        try {
          return [...(await sql.unsafe(query))];
        } finally {
          await sql.end();
        }
      };
      const victimShape = await shapeOf(victimDb.databaseUrl!, CACHE_SHAPE);
      const controlShape = await shapeOf(controlDb.databaseUrl!, CACHE_SHAPE);
      expect(victimShape.length).toBeGreaterThan(0);
      expect(victimShape.every((s) => s.n > 0)).toBe(true);
      expect(victimShape).toEqual(controlShape);
      expect(await shapeOf(victimDb.databaseUrl!, FETCHED_WITHOUT_SERIES)).toEqual([]);
    } finally {
      await admin.end();
    }
  }, 60_000);
});
