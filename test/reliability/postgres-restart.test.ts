// Postgres dies under a running server, in the middle of a burst of cold cache writes and a live
// poll, and comes back. The server is a real child process (src/main.ts, as in production), so an
// uncaught exception or an unhandled rejection would end it. It must stay up, answer with coded
// errors while the database is gone, answer normally again without a restart, and afterwards hold
// exactly what a second server that never saw the outage holds: no committed point lost, no range
// marked as fetched with its points missing, and no gap in what the live subscriber was sent.
// Two faults: every backend of the server's database terminated (pg_terminate_backend, as a
// failover or an admin does), and the whole Postgres killed with SIGKILL and started again (crash
// recovery). The second runs on a cluster of the test's own (test/support/private-services.ts).
// Sums are taken in numeric so the summation order of float8 cannot make equal caches differ.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client, subscribeUtilization, type Sample } from '../live/helpers.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-services.js';
import { eventually } from '../support/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const POLL_INTERVAL_S = 0.5;
const METRICS = `query($id: ID!) { job(id: $id) { metrics(maxPoints: 50) { name } } }`;
const CACHE_SHAPE = `
  select s.series_key as key, count(p.key)::int as n, coalesce(sum(p.value::numeric), 0)::text as total
  from series s left join points p on p.series_id = s.id
  where s.job_id = any($1::text[]) group by s.series_key order by s.series_key`;
const FETCHED_WITHOUT_SERIES = `
  select f.job_id, f.dataset from fetches f
  where f.dataset like 'metric:%' and not exists (select 1 from series s where s.job_id = f.job_id)`;
const COMMITTED_FETCHES = `select count(distinct job_id)::int as n from fetches where dataset like 'metric:%' and job_id = any($1::text[])`;

interface LogLine {
  level?: number;
  msg?: string;
  url?: string;
  fieldErrors?: number;
}

interface Server {
  url: string;
  child: ChildProcess;
  lines: LogLine[];
  exitCode(): number | null | undefined;
  /** The end of what it wrote to stderr (an uncaught exception's stack). */
  stderrTail(): string;
  stop(): Promise<void>;
}

type Answer = { status: number; body: { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } };

/** src/main.ts as production runs it, on its own database and a random port. */
async function startServer(databaseUrl: string, providersConfig: string, apiKey: string, redisUrl?: string): Promise<Server> {
  const { REDIS_URL: _redis, DATABASE_URL: _db, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      PROVIDERS_CONFIG: providersConfig,
      BT_KEY: apiKey,
      // This suite counts the live feeds' calls: no collector sweeps beside them (test/collect/ tests it).
      COLLECT: 'off',
      LOG_LEVEL: 'info',
      ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  let stderr = '';
  let buffered = '';
  let exit: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.on('close', (code, signal) => {
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
  const serving = await eventually(
    () => (exit !== undefined ? Promise.reject(new Error(`server exited ${exit}: ${stderr}`)) : lines.find((l) => l.msg === 'serving')),
    60_000,
    `the server to start (${stderr})`,
  );
  return {
    url: serving.url!.replace(/\/graphql$/, ''),
    child,
    lines,
    exitCode: () => exit,
    stderrTail: () => stderr.slice(-4000),
    async stop() {
      if (exit === undefined) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (exit === undefined) child.kill('SIGKILL');
    },
  };
}

async function gql(server: Server, query: string, variables?: Record<string, unknown>): Promise<Answer> {
  try {
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  } catch (err) {
    // Status 0: the request itself failed (hung past 20 s, connection dropped); undici says how in its cause.
    const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
    const how = cause ? ` (${[cause.code, cause.message].filter(Boolean).join(': ')})` : '';
    return { status: 0, body: { errors: [{ message: `${(err as Error).message}${how}` }] } };
  }
}

async function rows(url: string, query: string, params: unknown[] = []) {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    return [...(await sql.unsafe(query, params as never[]))];
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Every error of the answers, by code: what a client saw while the database was away. */
function codesOf(answers: Answer[]): string[] {
  return answers.flatMap((a) => (a.body.errors ?? []).map((e) => e.extensions?.code ?? `no code: ${e.message}`));
}

/**
 * Resolves once the server has no cache write pending (its gauge on /metrics): an answer goes out
 * before its write commits, so a cache read right after the answers could miss their points.
 */
async function writesCommitted(server: Server): Promise<void> {
  await eventually(
    async () => {
      const text = await (await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      return /^training_graph_cache_writes_pending 0$/m.test(text) || undefined;
    },
    30_000,
    'the cache writes to commit',
  );
}

/** Whether the server is still up, and what it said last: why a request of it failed on its own. */
function lastWords(server: Server): string {
  return `server exit code ${server.exitCode()}; its stderr: ${server.stderrTail()}; its last log lines: ${JSON.stringify(server.lines.slice(-8))}`;
}

async function readyz(server: Server): Promise<number> {
  return (await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(10_000) })).status;
}

describe.runIf(REAL_POSTGRES_URL)('Postgres lost during a write burst (real Postgres, server as a child process) [needs TEST_DATABASE_URL]', () => {
  let sim: BasetenSimulator;
  let dir: string;
  let providersConfig: string;
  let finishedIds: string[];
  let runningId: string;
  let controlDb: TestDatabase;
  let control: Server;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    // Finished jobs for the burst (their series are final, so two servers must end with equal
    // caches) and running ones for the live poll.
    sim = await startBasetenSimulator({
      seed: 'pg-restart',
      rateLimit: false,
      fleet: {
        projects: 3,
        jobsPerProject: 8,
        emptyProjects: 0,
        nodesPerJob: 2,
        gpusPerNode: 4,
        statuses: [
          'TRAINING_JOB_COMPLETED',
          'TRAINING_JOB_FAILED',
          'TRAINING_JOB_STOPPED',
          'TRAINING_JOB_COMPLETED',
          'TRAINING_JOB_FAILED',
          'TRAINING_JOB_STOPPED',
          'TRAINING_JOB_COMPLETED',
          'TRAINING_JOB_RUNNING',
        ],
      },
    });
    // A provider id of this run's own: the live events of the victim travel through the shared Redis.
    const providerId = `bt${Date.now().toString(36)}`;
    finishedIds = sim.fleet.jobs.filter((j) => j.status !== 'TRAINING_JOB_RUNNING').map((j) => `${providerId}:job:${j.id}`);
    runningId = `${providerId}:job:${sim.fleet.jobs.find((j) => j.status === 'TRAINING_JOB_RUNNING')!.id}`;
    dir = mkdtempSync(path.join(tmpdir(), 'tg-pg-restart-'));
    providersConfig = path.join(dir, 'providers.json');
    writeFileSync(
      providersConfig,
      JSON.stringify({
        providers: [{ id: providerId, kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 10, pollIntervalSeconds: POLL_INTERVAL_S }],
      }),
    );
    controlDb = await createTestDatabase();
    control = await startServer(controlDb.databaseUrl!, providersConfig, sim.apiKey);
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    await control?.stop();
    await controlDb?.drop();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The final check of both faults: the victim's cache of the finished jobs equals the control's. */
  async function expectSameCacheAsControl(victim: Server, victimUrl: string) {
    const after = await Promise.all(finishedIds.map((id) => gql(victim, METRICS, { id })));
    expect(codesOf(after)).toEqual([]);
    const reference = await Promise.all(finishedIds.map((id) => gql(control, METRICS, { id })));
    expect(codesOf(reference)).toEqual([]);
    await Promise.all([writesCommitted(victim), writesCommitted(control)]);
    const victimShape = await rows(victimUrl, CACHE_SHAPE, [finishedIds]);
    const controlShape = await rows(controlDb.databaseUrl!, CACHE_SHAPE, [finishedIds]);
    expect(victimShape.length).toBeGreaterThan(0);
    expect(victimShape.every((s) => s.n > 0)).toBe(true);
    expect(victimShape).toEqual(controlShape);
    expect(await rows(victimUrl, FETCHED_WITHOUT_SERIES)).toEqual([]);
  }

  it('every backend terminated three times mid-burst: no hang, no lost point, recovers without a restart', async () => {
    const victimDb = await createTestDatabase();
    cleanups.push(() => victimDb.drop());
    const victim = await startServer(victimDb.databaseUrl!, providersConfig, sim.apiKey);
    cleanups.push(() => victim.stop());
    const list = await gql(victim, `{ jobs(first: 100) { edges { node { id } } } }`);
    expect(codesOf([list])).toEqual([]);

    const dbName = new URL(victimDb.databaseUrl!).pathname.slice(1);
    const admin = postgres(REAL_POSTGRES_URL!, { max: 1, onnotice: () => {} });
    const kills: number[] = [];
    try {
      // The burst: every finished job's metrics, cold, so each answer is written as it arrives.
      const burst = Promise.all(finishedIds.map((id) => gql(victim, METRICS, { id })));
      let settled = false;
      const markSettled = () => {
        settled = true;
      };
      burst.then(markSettled, markSettled);
      // Three kills, each while the burst has a statement running (seen in pg_stat_activity), not
      // after fixed delays: a busy machine only makes the burst slower.
      for (let i = 0; i < 3 && !settled; i++) {
        await eventually(
          async () =>
            settled || (await admin`select 1 from pg_stat_activity where datname = ${dbName} and state = 'active' and pid <> pg_backend_pid()`).length > 0,
          30_000,
          'a statement of the burst running',
        );
        const [row] =
          await admin`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = ${dbName} and pid <> pg_backend_pid()`;
        kills.push(row!.n as number);
      }
      const during = await burst;
      expect(kills.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      // Every request was answered, none hung; what failed says why with a retryable code.
      expect(during.filter((r) => r.status !== 200)).toEqual([]);
      for (const code of codesOf(during)) expect(code).toBe('CACHE_UNAVAILABLE');
      expect(victim.exitCode()).toBeUndefined();

      await eventually(
        async () => (codesOf([await gql(victim, `{ jobs(first: 1) { edges { node { id } } } }`)]).length === 0 ? true : undefined),
        10_000,
        'a query to succeed again',
      );
      expect(await readyz(victim)).toBe(200);
      // As concurrent as the burst, so every pool slot is used: a slot left broken would time out here.
      await expectSameCacheAsControl(victim, victimDb.databaseUrl!);
      expect(victim.exitCode()).toBeUndefined();
      expect(victim.lines.filter((l) => (l.level ?? 0) >= 50).map((l) => l.msg)).toEqual([]);
    } finally {
      await admin.end();
    }
  }, 90_000);

  it('Postgres killed (SIGKILL) mid-burst and mid-poll, then started again: committed points survive, the live stream resumes with no gap', async () => {
    const pg: PrivatePostgres = await startPrivatePostgres();
    cleanups.push(() => pg.destroy());
    // With Redis the live feed's poller is chosen by a Postgres advisory lock, which dies with the
    // server: taking it again after the restart is part of recovering.
    const victim = await startServer(pg.url, providersConfig, sim.apiKey, REDIS_URL);
    cleanups.push(() => victim.stop());
    expect(codesOf([await gql(victim, `{ jobs(first: 100) { edges { node { id } } } }`)])).toEqual([]);

    const ws = client(victim.url);
    cleanups.push(async () => ws.dispose());
    const live = subscribeUtilization(ws, runningId);
    await eventually(
      () => (live.samples.filter((s) => gpuSeries(s).some((g) => g.points.length > 0)).length >= 1 ? true : undefined),
      20_000,
      'a first live sample with points',
    );

    // The burst; the kill lands as soon as its first writes have committed, so some jobs' points are
    // in the database and the rest are in flight.
    const burst = Promise.all(finishedIds.map((id) => gql(victim, METRICS, { id })));
    await eventually(
      async () => ((await rows(pg.url, COMMITTED_FETCHES, [finishedIds]))[0]!.n > 0 ? true : undefined),
      20_000,
      'the first burst writes to commit',
    );
    const committed = await rows(pg.url, CACHE_SHAPE, [finishedIds]);
    const errorsBeforeKill = live.errors.length;
    const killedAt = Date.now();
    await pg.kill();
    const during = await burst;
    expect(committed.length).toBeGreaterThan(0);

    // While it is down: the process stays up, answers every request with a coded error, and says
    // it is not ready; the live subscriber is told, on the same stream. A request that failed
    // itself (status 0) says whether the server was still up, and what it logged last.
    expect(
      during.filter((r) => r.status !== 200),
      `the burst while Postgres died (${lastWords(victim)})`,
    ).toEqual([]);
    for (const code of codesOf(during)) expect(code).toBe('CACHE_UNAVAILABLE');
    const down = await gql(victim, METRICS, { id: finishedIds.at(-1) });
    // Status 0 says the request itself failed: the message says how (time-out, reset, not JSON).
    expect(down.status, `${JSON.stringify(down.body).slice(0, 500)} (${lastWords(victim)})`).toBe(200);
    expect(codesOf([down])).toEqual(['CACHE_UNAVAILABLE']);
    expect(await readyz(victim)).toBe(503);
    expect((await fetch(`${victim.url}/healthz`)).status).toBe(200);
    await eventually(() => (live.errors.length > 0 ? true : undefined), 10_000, 'the live subscriber to hear of the outage');
    expect((live.errors as { extensions?: { code?: string } }[]).map((e) => e.extensions?.code)).toContain('CACHE_UNAVAILABLE');
    expect(errorsBeforeKill).toBe(0);

    await pg.start();
    const restartedAt = Date.now();
    await eventually(async () => ((await readyz(victim)) === 200 ? true : undefined), 15_000, '/readyz to be 200 again');
    await eventually(
      async () => (codesOf([await gql(victim, `{ jobs(first: 1) { edges { node { id } } } }`)]).length === 0 ? true : undefined),
      15_000,
      'a query to succeed again',
    );
    expect(victim.exitCode()).toBeUndefined();

    // Every point that had committed before the kill is still there (crash recovery from the WAL).
    // Writes in flight may still have committed between the snapshot and the kill: a series can
    // only have gained points, and one that gained none is exactly as it was.
    const survived = new Map((await rows(pg.url, CACHE_SHAPE, [finishedIds])).map((s) => [s.key, s]));
    for (const s of committed) {
      const now = survived.get(s.key);
      expect(now, s.key).toBeDefined();
      expect(Number(now!.n)).toBeGreaterThanOrEqual(Number(s.n));
      if (Number(now!.n) === Number(s.n)) expect(now).toEqual(s);
    }

    // The live stream goes on without a restart or a resubscribe, until it carries a point produced
    // after the outage; every point of the job between its first and last sample reached the
    // subscriber (nothing skipped while the writes failed).
    await eventually(
      () => (live.samples.some((s) => gpuSeries(s).some((g) => g.points.some((p) => Date.parse(p.timestamp) > killedAt))) ? true : undefined),
      40_000,
      'a live sample with a point from after the outage',
    );
    expect(live.completed).toBe(false);
    expect(live.samples.at(-1)!.polledAt > new Date(restartedAt).toISOString()).toBe(true);
    await expectLiveHasNoGap(victim, live.samples);

    await expectSameCacheAsControl(victim, pg.url);
    expect(victim.exitCode()).toBeUndefined();
    // Every failure was recognised for what it was (no masked INTERNAL, no unexplained poll
    // failure at error level), and the outage took a few warnings, not one per failed field.
    expect(victim.lines.filter((l) => (l.level ?? 0) >= 50).map((l) => l.msg)).toEqual([]);
    const warnings = victim.lines.filter((l) => l.msg === 'cache database unreachable');
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.length).toBeLessThanOrEqual(Math.ceil((restartedAt - killedAt) / 5000) + 2);
  }, 120_000);

  /** Each sample's per-GPU utilization series (MetricSeries over the job's window). */
  function gpuSeries(s: Sample) {
    return s.series.filter((x) => x.scope === 'GPU' && x.name === 'GPU_UTILIZATION');
  }

  /** The union of the samples' GPU points equals the stored history over the samples' whole span. */
  async function expectLiveHasNoGap(victim: Server, samples: Sample[]) {
    const from = samples[0]!.from;
    const to = samples.at(-1)!.to;
    const delivered = new Map<string, Map<string, number | null>>();
    for (const s of samples) {
      for (const g of gpuSeries(s)) {
        const byTime = delivered.get(g.gpu!.id) ?? new Map<string, number | null>();
        for (const p of g.points) if (p.timestamp >= from && p.timestamp <= to) byTime.set(p.timestamp, p.value);
        delivered.set(g.gpu!.id, byTime);
      }
    }
    const history = await gql(
      victim,
      `query H($id: ID!, $from: DateTime!, $to: DateTime!) { job(id: $id) { metrics(names: [GPU_UTILIZATION], scope: GPU, from: $from, to: $to, maxPoints: 10000) { gpu { id } points { timestamp value } } } }`,
      { id: runningId, from, to },
    );
    expect(codesOf([history])).toEqual([]);
    let compared = 0;
    for (const m of history.body.data.job.metrics as { gpu: { id: string }; points: { timestamp: string; value: number | null }[] }[]) {
      const sent = [...(delivered.get(m.gpu.id) ?? new Map()).entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([timestamp, value]) => ({ timestamp, value }));
      expect(sent).toEqual(m.points);
      compared += m.points.length;
    }
    expect(compared).toBeGreaterThan(0);
  }
});
