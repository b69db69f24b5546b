// `npm run bench`: one table of ratios per database (PostgreSQL, then PGlite), each row against a
// baseline measured in the same run on the same data (timings on shared 2-core machines are noisy;
// ratios much less so). Also written as JSON to bench/results/latest.json. Flags: --jobs --nodes
// --gpus --points (fleet and series length), --postgres / --pglite (one database only), --db <url>
// (default DATABASE_URL or postgres://postgres@127.0.0.1:5432/), --quick (fewer samples), --no-live,
// --no-load (skip the live fan-out, or the warm reads under load of bench/load.ts), --no-promql (skip
// query_range against the real Prometheus, bench/promql.ts), --no-collect (skip the collector row,
// bench/collect.ts: 100 and 1,000 running jobs over the five simulators; 100 and 300 with --quick), --profile
// <folder> (CPU profiles of the cold and warm dashboard queries, with their top frames), --cold-only
// (the cold dashboard rows only, with this process's CPU time, then one warm answer; nothing written),
// --sim-priority <nice> (the simulator's scheduling priority, default -10: ahead of the server).
import { loadSecurityConfig } from '../src/config/security.js';
import { benchFleet } from './fleet.js';
import { freshServerDatabase } from './children.js';
import { summarizeProfile } from './cpu-profile-summary.js';
import { benchFootprint } from './footprint.js';
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, setPriority, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql, type SQL } from 'drizzle-orm';
import { pino } from 'pino';
import { startRuntime, type Runtime } from '../src/server/runtime.js';
import type { Repository } from '../src/store/repository.js';
import { round, type Row, tableOf } from './rows.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '50' },
    nodes: { type: 'string', default: '8' },
    gpus: { type: 'string', default: '8' },
    points: { type: 'string', default: '300' },
    pglite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
    quick: { type: 'boolean', default: false },
    growth: { type: 'string', default: '5,50,500' },
    live: { type: 'boolean', default: true },
    /** The collector against a bare loop (bench/collect.ts); --no-collect skips it. */
    collect: { type: 'boolean', default: true },
    /** The warm reads under load (bench/load.ts, needs wrk); --no-load skips them. */
    load: { type: 'boolean', default: true },
    /** The Prometheus query API against the real Prometheus (bench/promql.ts, needs /usr/bin/prometheus); --no-promql skips it. */
    promql: { type: 'boolean', default: true },
    'downsample-rows': { type: 'string', default: '1000000' },
    /** A folder: the cold and warm dashboard queries are CPU-profiled into it (this process: server and client). */
    profile: { type: 'string' },
    /** Only the cold dashboard rows (with this process's CPU time), printed and not written to latest.json. */
    'cold-only': { type: 'boolean', default: false },
    /**
     * The simulator's scheduling priority (nice, -20..19): by default ahead of this process, so the
     * platform keeps the pace it has on its own machines while the server and Postgres share the
     * rest; 0 puts them on an equal footing (the server's work then slows the simulator too).
     */
    'sim-priority': { type: 'string', default: '-10' },
  },
  allowNegative: true,
});
const JOBS = Number(flags.jobs);
const NODES = Number(flags.nodes);
const GPUS = Number(flags.gpus);
const POINTS = Number(flags.points);
// Growth: the same per-job shape at 5, 50 and 500 jobs.
const SCALE_JOBS = flags.growth!.split(',').map(Number);
const SCALE_NODES = 2;
const SCALE_GPUS = 2;
/** Cold answers measured per database, each against the upstream calls all at once. */
const COLD_SAMPLES = flags.quick ? 3 : 5;
const INGEST_ROWS = flags.quick ? 100_000 : 300_000;
const DOWNSAMPLE_ROWS = Number(flags['downsample-rows']);
const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);
// Running jobs sample every 15 s; a window of POINTS samples ending at the (pinned) clock, with
// maxPoints = POINTS, makes the store ask upstream for exactly that resolution.
const STEP_MS = 15_000;
const WINDOW = { from: new Date(ANCHOR - (POINTS - 1) * STEP_MS).toISOString(), to: new Date(ANCHOR).toISOString() };

const dashboard = (shape: string) => `query Dashboard($first: Int!, $from: DateTime, $to: DateTime, $maxPoints: Int) {
  jobs(first: $first, filter: { statuses: [RUNNING] }) {
    totalCount
    edges { node { id name status gpuType
      nodes { name gpus { index model
        utilization(from: $from, to: $to, maxPoints: $maxPoints) {
          unit
          ${shape}
          summary { avg max last }
        } } } } }
  }
}`;
const DASHBOARD = dashboard('points { timestamp value }');
/** The same dashboard with the points in columns (what charting clients take). */
const DASHBOARD_COLUMNAR = dashboard('timestamps values');

const started = performance.now();
const log = (...a: unknown[]) => console.error(`[${((performance.now() - started) / 1000).toFixed(1)}s]`, ...a);

// ---- statistics -----------------------------------------------------------------------------

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
}
const median = (xs: number[]) => quantile(xs, 0.5);

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

// ---- the simulator in a child process --------------------------------------------------------

interface SimChild {
  url: string;
  apiKey: string;
  stats(): Promise<Record<string, number>>;
  /** The simulator process's CPU time so far, ms. */
  cpuMs(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** The simulator's nice value as set (the flag's, or 0 where this user may not raise a priority). */
let simPriority = 0;

function prioritize(pid: number, nice: number): number {
  try {
    setPriority(pid, nice);
    return nice;
  } catch (err) {
    log(`simulator priority left at 0: ${(err as Error).message} (run as root, or with --sim-priority 0)`);
    return 0;
  }
}

async function startSim(fleet: Record<string, unknown>): Promise<SimChild> {
  const child: ChildProcess = fork(path.join(HERE, 'sim-child.ts'), [JSON.stringify({ seed: 7, anchorMs: ANCHOR, fleet })], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  simPriority = prioritize(child.pid!, Number(flags['sim-priority']));
  let seq = 0;
  const pending = new Map<number, (m: any) => void>();
  const ready = new Promise<{ url: string; apiKey: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`simulator exited (${code})`)));
    child.on('message', (m: any) => {
      if (m.ready) resolve(m);
      else pending.get(m.id)?.(m), pending.delete(m.id);
    });
  });
  const ask = (cmd: string) =>
    new Promise<any>((resolve) => {
      const id = ++seq;
      pending.set(id, resolve);
      child.send({ id, cmd });
    });
  const { url, apiKey } = await ready;
  return {
    url,
    apiKey,
    stats: async () => (await ask('stats')).stats,
    cpuMs: async () => (await ask('cpu')).cpuMs,
    reset: async () => void (await ask('reset')),
    close: async () => {
      child.removeAllListeners('exit');
      await Promise.race([ask('close'), new Promise((r) => setTimeout(r, 2000))]);
      child.kill();
    },
  };
}

const upstreamTotal = (s: Record<string, number>) => Object.values(s).reduce((a, b) => a + b, 0);

// ---- upstream call recording (every adapter goes through global fetch) ----------------------

interface UpstreamCall {
  url: string;
  init: RequestInit;
}
const realFetch = globalThis.fetch;
let recording: UpstreamCall[] | null = null;
/** When the last upstream body of the request being measured was read (performance.now()), for its tail. */
let lastBodyAt = Number.NaN;
// The answer passes through untouched, its text() only timed: reading it here and handing on a new
// Response of its text cost the measured server a UTF-8 encode and a second decode of every body
// (4% of the cold profile).
globalThis.fetch = async (input: any, init?: RequestInit) => {
  recording?.push({ url: String(input), init: { method: init?.method, headers: init?.headers, body: init?.body } });
  const res = await realFetch(input, init);
  const text = res.text.bind(res);
  res.text = async () => {
    const body = await text();
    lastBodyAt = performance.now();
    return body;
  };
  return res;
};

// ---- one fleet behind one runtime over a fresh database --------------------------------------

interface Raw {
  query(text: string, params?: unknown[]): Promise<any[]>;
  copyPoints(csv: string): Promise<void>;
}

interface Scenario {
  runtime: Runtime;
  sim: SimChild;
  raw: Raw;
  repo: Repository;
  dropCache(): Promise<void>;
  gql(query: string, variables: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

async function openScenario(fleet: { jobs: number; nodes: number; gpus: number }, pglite: boolean): Promise<Scenario> {
  const projects = fleet.jobs % 5 === 0 ? 5 : 1;
  const sim = await startSim({
    projects,
    jobsPerProject: fleet.jobs / projects,
    emptyProjects: 0,
    nodesPerJob: fleet.nodes,
    gpusPerNode: fleet.gpus,
    statuses: ['TRAINING_JOB_RUNNING'],
  });
  // PGlite on disk: in memory, a third of the cold dashboard's time went to growing table files.
  const database = await freshServerDatabase(
    pglite ? { pgliteDir: mkdtempSync(path.join(tmpdir(), 'tg-bench-pglite-')) } : { postgres: flags.db!, prefix: 'tg_bench' },
  );
  const runtime = await startRuntime({
    config: {
      ...database.config,
      providers: [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 120 }],
      // The default query cost and answer size: the dashboard is what they were sized for
      // (docs/limits.md). Only the time-out is lifted: a cold growth fleet of 500 jobs on a busy
      // machine is measured, not cut off by the public 30 s.
      security: loadSecurityConfig({ EXECUTION_TIMEOUT_MS: '900000' }),
    },
    env: { BT_KEY: sim.apiKey },
    logger: pino({ level: 'silent' }),
    clock: () => ANCHOR,
  });
  const client = (runtime.database.db as any).$client;
  const raw: Raw =
    runtime.database.driver === 'postgres'
      ? {
          query: (text, params = []) => client.unsafe(text, params as never[]),
          copyPoints: async (csv) => {
            const stream = await client`copy points (series_id, key, ts, step, value) from stdin with (format csv)`.writable();
            await pipeline(
              (async function* () {
                yield csv;
              })(),
              stream as Writable,
            );
          },
        }
      : {
          query: async (text, params = []) => (await client.query(text, params)).rows,
          copyPoints: async (csv) => {
            await client.query(`copy points (series_id, key, ts, step, value) from '/dev/blob' with (format csv)`, [], { blob: new Blob([csv]) });
          },
        };
  return {
    runtime,
    sim,
    raw,
    repo: runtime.readThrough.repo,
    dropCache: async () => {
      await raw.query('truncate points, series, fetches, fetch_errors, nodes, gpus, jobs, projects, provider_syncs, progress');
      // The jobs' sizes the cost estimate reads go with the tables (store/job-shapes.ts).
      await runtime.readThrough.repo.reloadShapes();
    },
    gql: async (query, variables) => {
      const res = await runtime.app.fetch('http://bench/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      const text = await res.text();
      if (res.status !== 200 || text.startsWith('{"errors"') || text.includes('"errors":[')) throw new Error(`query failed: ${text.slice(0, 400)}`);
      return text;
    },
    close: async () => {
      await runtime.close();
      await sim.close();
      await database.drop();
    },
  };
}

/** SQL statements and upstream calls of one request. */
/** One request: its time to answer, then the cache write that follows it (writeMs), and its SQL and upstream calls. */
/**
 * Runs `work` under V8's CPU profiler when --profile names a folder: writes <name>.cpuprofile and
 * prints its top frames (bench/cpu-profile-summary.ts). The server runs in this process, so the
 * profile holds the server's work and the bench client's (its fetch reading the answer).
 */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!flags.profile) return work();
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    mkdirSync(flags.profile, { recursive: true });
    const file = path.join(flags.profile, `${name}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    log(`profile ${name}: ${file}\n${summarizeProfile(file, { top: 30 })}`);
  }
}

async function costOf(
  s: Scenario,
  first: number,
): Promise<{
  ms: number;
  lastBodyMs: number;
  /** The simulator's CPU while the answer was made, ms. */
  simCpuMs: number;
  writeMs: number;
  cpuMs: number;
  writeCpuMs: number;
  sql: number;
  upstream: number;
  byRoute: Record<string, number>;
  body: string;
}> {
  await s.sim.reset();
  const before = s.runtime.database.statementCount();
  const simCpu0 = await s.sim.cpuMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  lastBodyAt = Number.NaN;
  const body = await s.gql(DASHBOARD, { first, ...WINDOW, maxPoints: POINTS });
  const ms = performance.now() - t0;
  const simCpuMs = (await s.sim.cpuMs()) - simCpu0;
  // NaN when the answer needed no upstream body (warm).
  const lastBodyMs = lastBodyAt - t0;
  const cpu1 = process.cpuUsage(cpu0);
  await s.runtime.readThrough.settle();
  const writeMs = performance.now() - t0 - ms;
  const cpu2 = process.cpuUsage(cpu0);
  const byRoute = await s.sim.stats();
  // This process's CPU (server and bench client; the simulator and the database run elsewhere):
  // the steadiest figure on a shared machine.
  const cpuMs = (cpu1.user + cpu1.system) / 1000;
  const writeCpuMs = (cpu2.user + cpu2.system) / 1000 - cpuMs;
  return {
    ms,
    lastBodyMs,
    simCpuMs,
    writeMs,
    cpuMs,
    writeCpuMs,
    sql: s.runtime.database.statementCount() - before,
    upstream: upstreamTotal(byRoute),
    byRoute,
    body,
  };
}

// ---- the hand-written floor of the warm dashboard query --------------------------------------

const FLOOR_SQL = `
  with js as (select id, name, status, gpu_type, sort_at from jobs where status = 'RUNNING' order by sort_at desc, id desc limit $1)
  select js.id as job_id, js.name as job_name, js.status, js.gpu_type, n.name as node_name, g.idx, g.model,
    array_agg(p.ts order by p.key) as ts, array_agg(p.value order by p.key) as vals,
    avg(p.value) as avg, max(p.value) as max, (array_agg(p.value order by p.key desc))[1] as last
  from js join nodes n on n.job_id = js.id join gpus g on g.node_id = n.id
    join series s on s.gpu_id = g.id and s.kind = 'system' and s.name = 'GPU_UTILIZATION'
    join points p on p.series_id = s.id and p.ts between $2 and $3
  group by js.id, js.name, js.status, js.gpu_type, js.sort_at, n.name, n.ord, g.idx, g.model, g.id
  order by js.sort_at desc, js.id desc, n.ord, g.idx`;

async function floorDashboard(raw: Raw, first: number): Promise<string> {
  const rows = await raw.query(FLOOR_SQL, [first, WINDOW.from, WINDOW.to]);
  const edges: any[] = [];
  let job: any = null;
  let node: any = null;
  for (const r of rows) {
    if (job?.id !== r.job_id) edges.push({ node: (job = { id: r.job_id, name: r.job_name, status: r.status, gpuType: r.gpu_type, nodes: [] }) }), (node = null);
    if (node?.name !== r.node_name) job.nodes.push((node = { name: r.node_name, gpus: [] }));
    const ts = typeof r.ts === 'string' ? parsePgArray(r.ts) : r.ts;
    const vals = typeof r.vals === 'string' ? parsePgArray(r.vals).map(Number) : r.vals;
    node.gpus.push({
      index: r.idx,
      model: r.model,
      utilization: {
        unit: 'RATIO',
        points: ts.map((t: unknown, i: number) => ({ timestamp: new Date(t as string).toISOString(), value: vals[i] })),
        summary: { avg: Number(r.avg), max: Number(r.max), last: Number(r.last) },
      },
    });
  }
  return JSON.stringify({ data: { jobs: { totalCount: edges.length, edges } } });
}

function parsePgArray(text: string): string[] {
  return text
    .slice(1, -1)
    .split(',')
    .map((x) => x.replace(/^"|"$/g, ''));
}

// ---- capturing the statement pointsOf sends, for EXPLAIN ------------------------------------

async function explainPointsOf(s: Scenario, call: () => Promise<unknown>): Promise<string> {
  const db = s.repo.db as any;
  const execute = db.execute;
  let captured: SQL | null = null;
  db.execute = (q: SQL) => {
    if (!captured && db.dialect.sqlToQuery(q).sql.includes('firsts as materialized')) captured = q;
    return execute.call(db, q);
  };
  try {
    await call();
  } finally {
    db.execute = execute;
  }
  const rows = (await s.runtime.database.db.execute(sql`explain (analyze, buffers) ${captured!}`)) as any;
  return (Array.isArray(rows) ? rows : rows.rows).map((r: any) => r['QUERY PLAN']).join('\n');
}

// ---- scenarios ---------------------------------------------------------------------------------

interface DbResult {
  rows: Row[];
  details: Record<string, unknown>;
  explains: string[];
}

async function benchDatabase(pglite: boolean): Promise<DbResult> {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const explains: string[] = [];
  const samples = flags.quick ? 2 : 3;
  const dbName = pglite ? 'PGlite' : 'PostgreSQL';

  log(`${dbName}: fleet ${JOBS} jobs x ${NODES} nodes x ${GPUS} GPUs, ${POINTS} points per series`);
  const s = await openScenario({ jobs: JOBS, nodes: NODES, gpus: GPUS }, pglite);
  try {
    // Cold: empty cache. The run records every upstream call it makes.
    await s.dropCache();
    const calls: UpstreamCall[] = [];
    recording = calls;
    const cold = await profiled(`${pglite ? 'pglite' : 'postgres'}-cold`, () => costOf(s, JOBS));
    recording = null;
    log(
      `cold: answered ${cold.ms.toFixed(0)} ms (process CPU ${cold.cpuMs.toFixed(0)} ms), written ${cold.writeMs.toFixed(0)} ms later (CPU ${cold.writeCpuMs.toFixed(0)} ms), ${cold.sql} SQL, upstream ${JSON.stringify(cold.byRoute)}`,
    );
    // Each upstream call alone, through the same fetch, body read; then all of them at once,
    // straight to the simulator: what the platform itself needs to answer this dashboard.
    const alone: { route: string; ms: number }[] = [];
    for (const c of calls) {
      const [ms] = await timed(async () => (await realFetch(c.url, c.init)).text());
      alone.push({ route: `${c.init.method ?? 'GET'} ${new URL(c.url).pathname.replace(/\/(?=[0-9a-z]*\d)[0-9a-z]{6,}(?=\/|$)/g, '/:id')}`, ms });
    }
    const slowest = alone.reduce((a, b) => (b.ms > a.ms ? b : a));
    const baselineSimCpu: number[] = [];
    const allAtOnceOnce = async () => {
      const simCpu0 = await s.sim.cpuMs();
      const [ms] = await timed(() => Promise.all(calls.map(async (c) => (await realFetch(c.url, c.init)).text())));
      baselineSimCpu.push((await s.sim.cpuMs()) - simCpu0);
      return ms;
    };
    // One cold answer against its baseline swings from 1.30x to 1.71x between runs on this
    // machine: more cold answers (each from an emptied cache), each paired with a baseline run
    // next to it (which goes first alternates), and the row is the median of the pairs' ratios.
    const pairs = [{ cold, allAtOnce: await allAtOnceOnce() }];
    for (let i = 1; i < COLD_SAMPLES; i++) {
      const baselineFirst = i % 2 === 1;
      const before = baselineFirst ? await allAtOnceOnce() : NaN;
      await s.dropCache();
      const again = await costOf(s, JOBS);
      pairs.push({ cold: again, allAtOnce: baselineFirst ? before : await allAtOnceOnce() });
    }
    const ratio = median(pairs.map((p) => p.cold.ms / p.allAtOnce));
    const allAtOnce = median(pairs.map((p) => p.allAtOnce));
    const coldMs = median(pairs.map((p) => p.cold.ms));
    const samplesText = pairs.map((p) => `${p.cold.ms.toFixed(0)}/${p.allAtOnce.toFixed(0)}`).join(', ');
    log(`cold samples (answer/all at once, ms): ${samplesText}`);
    // Where an answer's time goes: waiting for the bodies (last one read at), then what follows it.
    log(
      `cold last body read at (ms): ${pairs.map((p) => p.cold.lastBodyMs.toFixed(0)).join(', ')}; answered after it: ${pairs.map((p) => (p.cold.ms - p.cold.lastBodyMs).toFixed(0)).join(', ')}`,
    );
    // The simulator's CPU for the same bodies: more beside our answer than alone means the two share the cores.
    log(
      `simulator CPU (ms) during each answer: ${pairs.map((p) => p.cold.simCpuMs.toFixed(0)).join(', ')}; during the calls all at once: ${baselineSimCpu.map((x) => x.toFixed(0)).join(', ')}`,
    );
    rows.push({
      scenario: `cold dashboard (${JOBS} jobs x ${NODES} nodes x ${GPUS} GPUs, ${POINTS} points)`,
      measured: `answered in ${coldMs.toFixed(0)} ms, median of ${pairs.length} (cache write committed ${cold.writeMs.toFixed(0)} ms later in the first)`,
      baseline: `the same ${calls.length} upstream calls all at once: ${allAtOnce.toFixed(0)} ms (slowest alone ${slowest.ms.toFixed(0)} ms); pairs ${samplesText}; simulator at nice ${simPriority}`,
      ratio,
      goal: '<= 1.3x',
      met: ratio <= 1.3,
    });
    details.cold = {
      simulatorNice: simPriority,
      answerMs: round(cold.ms),
      writeMs: round(cold.writeMs),
      answerCpuMs: round(cold.cpuMs),
      writeCpuMs: round(cold.writeCpuMs),
      upstream: cold.byRoute,
      sql: cold.sql,
      slowestCall: slowest,
      allCallsAtOnceMs: round(allAtOnce),
      pairs: pairs.map((p) => ({
        answerMs: round(p.cold.ms),
        lastBodyMs: round(p.cold.lastBodyMs),
        cpuMs: round(p.cold.cpuMs),
        allAtOnceMs: round(p.allAtOnce),
      })),
      callsAloneMs: alone.map((a) => round(a.ms)),
    };
    const minimum = JOBS + 2; // Baseten: 2 list calls (projects, jobs) + 1 metrics call per job
    rows.push({
      scenario: 'upstream calls per job, cold',
      measured: `${round(cold.upstream / JOBS, 2)} (${Object.entries(cold.byRoute)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`,
      baseline: `platform minimum: 1 getMetrics per job + 2 list calls = ${round(minimum / JOBS, 2)}`,
      ratio: cold.upstream / minimum,
      goal: 'the minimum (1.0x)',
      met: cold.upstream <= minimum,
    });

    if (flags['cold-only']) {
      // One warm answer from the cache the cold one filled, with this process's CPU.
      const cpu0 = process.cpuUsage();
      const [warmMs] = await timed(() => s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS }));
      const cpu = process.cpuUsage(cpu0);
      details.warmOnce = { ms: round(warmMs), cpuMs: round((cpu.user + cpu.system) / 1000) };
      return { rows, details, explains };
    }

    // Warm: the cache holds every job (the clock is pinned, so nothing expires).
    const warmBody = await s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS });
    const floorBody = await floorDashboard(s.raw, JOBS);
    const columnarBody = await s.gql(DASHBOARD_COLUMNAR, { first: JOBS, ...WINDOW, maxPoints: POINTS });
    // Under the default limits (docs/limits.md): what the estimate and the answer counted.
    details.cost = { rows: JSON.parse(warmBody).extensions?.cost, columnar: JSON.parse(columnarBody).extensions?.cost };
    log(`${dbName}: dashboard cost under the default limits ${JSON.stringify(details.cost)}, ${warmBody.length} / ${columnarBody.length} bytes`);
    const gpuCount = (b: string) =>
      (JSON.parse(b).data.jobs.edges as any[]).reduce((a, e) => a + e.node.nodes.reduce((x: number, nd: any) => x + nd.gpus.length, 0), 0);
    const seriesPoints = JSON.parse(warmBody).data.jobs.edges[0].node.nodes[0].gpus[0].utilization.points.length;
    const answerShape = {
      gpus: gpuCount(warmBody),
      gpusFloor: gpuCount(floorBody),
      bytes: warmBody.length,
      bytesFloor: floorBody.length,
      bytesColumnar: columnarBody.length,
      pointsPerSeries: seriesPoints,
    };
    log(`warm answer: ${JSON.stringify(answerShape)}`);
    await s.sim.reset();
    const warmTimes: number[] = [];
    const floorTimes: number[] = [];
    const columnarTimes: number[] = [];
    for (let i = 0; i < samples; i++) {
      warmTimes.push((await timed(() => s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS })))[0]);
      floorTimes.push((await timed(() => floorDashboard(s.raw, JOBS)))[0]);
      columnarTimes.push((await timed(() => s.gql(DASHBOARD_COLUMNAR, { first: JOBS, ...WINDOW, maxPoints: POINTS })))[0]);
    }
    log(
      `warm samples: ${warmTimes.map((x) => x.toFixed(0)).join(', ')} ms; floor ${floorTimes.map((x) => x.toFixed(0)).join(', ')} ms; columnar ${columnarTimes.map((x) => x.toFixed(0)).join(', ')} ms`,
    );
    if (flags.profile) await profiled(`${pglite ? 'pglite' : 'postgres'}-warm`, () => s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS }));
    const warmUpstream = upstreamTotal(await s.sim.stats());
    const p = (xs: number[], q: number) => quantile(xs, q);
    rows.push({
      scenario: `warm dashboard (${answerShape.gpus} GPU series, ${(answerShape.bytes / 1e6).toFixed(1)} MB answer)`,
      measured: `p50 ${p(warmTimes, 0.5).toFixed(0)} ms, p99 ${p(warmTimes, 0.99).toFixed(0)} ms`,
      baseline: `one hand-written SQL + JSON.stringify: p50 ${p(floorTimes, 0.5).toFixed(0)} ms, p99 ${p(floorTimes, 0.99).toFixed(0)} ms`,
      ratio: p(warmTimes, 0.5) / p(floorTimes, 0.5),
      goal: '<= 1.3x',
      met: p(warmTimes, 0.5) / p(floorTimes, 0.5) <= 1.3,
    });
    rows.push({
      scenario: 'columnar points (timestamps + values) in the warm dashboard',
      measured: `${(answerShape.bytesColumnar / 1e6).toFixed(1)} MB, p50 ${p(columnarTimes, 0.5).toFixed(0)} ms`,
      baseline: `points { timestamp value }: ${(answerShape.bytes / 1e6).toFixed(1)} MB, p50 ${p(warmTimes, 0.5).toFixed(0)} ms`,
      ratio: p(columnarTimes, 0.5) / p(warmTimes, 0.5),
      goal: 'measured (bytes ' + round(answerShape.bytesColumnar / answerShape.bytes, 2) + 'x)',
      met: null,
    });
    details.warm = {
      samples,
      answerShape,
      upstreamCallsDuringWarm: warmUpstream,
      msGraphql: warmTimes.map((x) => round(x)),
      msFloor: floorTimes.map((x) => round(x)),
      msColumnar: columnarTimes.map((x) => round(x)),
    };
    log(`warm: ${rows.at(-2)!.measured} vs ${rows.at(-2)!.baseline}; upstream during warm ${warmUpstream}`);
    explains.push(
      `-- ${dbName}: hot statement of the warm dashboard query (Repository.pointsOf, one batch of GPU series)\n` +
        (await explainPointsOf(s, () => s.gql(DASHBOARD, { first: Math.min(JOBS, 5), ...WINDOW, maxPoints: POINTS }).then(() => undefined))),
    );

    // Fleet question over the same window, with the cache the dashboard filled (issue 9).
    const fleet = await benchFleet(s.runtime, { ...WINDOW, threshold: 0.3, forAtLeast: 'PT5M', samples: flags.quick ? 1 : 2 });
    rows.push({
      scenario: 'fleet query (same window)',
      measured: `warm p50 ${fleet.warmP50Ms.toFixed(0)} ms (${fleet.warmSql} SQL); ${fleet.jobs} jobs, ${fleet.idleGpus} idle GPUs`,
      baseline: `warm dashboard p50 ${p(warmTimes, 0.5).toFixed(0)} ms over the same points`,
      ratio: fleet.warmP50Ms / p(warmTimes, 0.5),
      goal: '<= 1x',
      met: fleet.warmP50Ms <= p(warmTimes, 0.5),
    });
    details.fleet = fleet;

    // Ingest: the same new rows through Repository.writePoints and through COPY into the same
    // table, alternating, best of two; then writePoints over rows that all exist (the merge).
    const ingestRows: [number, number, number | null, number | null, number | null][] = [];
    for (let i = 0; i < INGEST_ROWS; i++) {
      const series = 10_000_000 + Math.floor(i / 300);
      const key = ANCHOR - (i % 300) * STEP_MS;
      ingestRows.push([series, key, key, null, round(Math.sin(i) * 0.5 + 0.5, 4)]);
    }
    const csv = ingestRows.map((r) => `${r[0]},${r[1]},${new Date(r[2]!).toISOString()},,${r[4]}`).join('\n') + '\n';
    const clearIngest = async () => {
      await s.raw.query('delete from points where series_id >= 10000000');
      await s.raw.query('vacuum points');
    };
    const writeMs: number[] = [];
    const copyMs: number[] = [];
    const overwriteMs: number[] = [];
    for (let round_ = 0; round_ < 2; round_++) {
      await clearIngest();
      writeMs.push((await timed(() => s.repo.writePoints(ingestRows, { expectNew: true })))[0]);
      overwriteMs.push((await timed(() => s.repo.writePoints(ingestRows)))[0]);
      await clearIngest();
      copyMs.push((await timed(() => s.raw.copyPoints(csv)))[0]);
    }
    await clearIngest();
    const rate = (ms: number[]) => INGEST_ROWS / (Math.min(...ms) / 1000);
    rows.push({
      scenario: `ingest (Repository.writePoints, ${INGEST_ROWS.toLocaleString('en')} new points)`,
      measured: `${Math.round(rate(writeMs)).toLocaleString('en')} points/s`,
      baseline: `COPY into points: ${Math.round(rate(copyMs)).toLocaleString('en')} points/s`,
      ratio: rate(writeMs) / rate(copyMs),
      goal: '>= 0.8x',
      met: rate(writeMs) / rate(copyMs) >= 0.8,
    });
    rows.push({
      scenario: `ingest over existing points (writePoints: COPY to staging + merge)`,
      measured: `${Math.round(rate(overwriteMs)).toLocaleString('en')} points/s`,
      baseline: `COPY of new points: ${Math.round(rate(copyMs)).toLocaleString('en')} points/s`,
      ratio: rate(overwriteMs) / rate(copyMs),
      goal: 'measured',
      met: null,
    });
    details.ingest = {
      rows: INGEST_ROWS,
      writePointsNewMs: writeMs.map((x) => round(x)),
      writePointsOverwriteMs: overwriteMs.map((x) => round(x)),
      copyMs: copyMs.map((x) => round(x)),
    };
    log(`ingest: ${rows.at(-2)!.measured} vs ${rows.at(-2)!.baseline}; overwrite ${rows.at(-1)!.measured}`);

    // Downsample: one 1M-point series to 1,000 points.
    const bigSeries = 20_000_000;
    const first = ANCHOR - DOWNSAMPLE_ROWS * 1000;
    await s.raw.query(
      `insert into points (series_id, key, ts, step, value)
       select $1::bigint, $2::bigint + i * 1000, to_timestamp(($2::bigint + i * 1000) / 1000.0), null, (sin(i) + 1) / 2
       from generate_series(0, $3::int - 1) as i`,
      [bigSeries, first, DOWNSAMPLE_ROWS],
    );
    await s.raw.query('vacuum analyze points');
    const bin = Math.ceil(DOWNSAMPLE_ROWS / 1000); // seconds per bucket: one point per second
    const floorDownsample = `select date_bin('${bin} seconds'::interval, ts, to_timestamp(${first / 1000})) as b, avg(value)
      from points where series_id = $1 group by 1 order by 1`;
    const repoMs: number[] = [];
    const rawMs: number[] = [];
    for (let i = 0; i < (flags.quick ? 2 : 3); i++) {
      const [a] = await timed(() => s.repo.pointsOf([{ seriesId: bigSeries, from: null, to: null }], 1000, 'AVG'));
      const [b] = await timed(() => s.raw.query(floorDownsample, [bigSeries]));
      repoMs.push(a);
      rawMs.push(b);
    }
    rows.push({
      scenario: 'downsample 1M points to 1,000',
      measured: `${median(repoMs).toFixed(0)} ms (Repository.pointsOf)`,
      baseline: `date_bin + avg: ${median(rawMs).toFixed(0)} ms`,
      ratio: median(repoMs) / median(rawMs),
      goal: '<= 2x',
      met: median(repoMs) / median(rawMs) <= 2,
    });
    details.downsample = { repoMs: repoMs.map((x) => round(x)), rawMs: rawMs.map((x) => round(x)) };
    await s.raw.query(`delete from points where series_id = ${bigSeries}`);
  } finally {
    await s.close().catch(() => {});
  }

  // Growth: cold and warm at 5, 50 and 500 jobs of the same shape; time per job must stay flat.
  const maxJobs = Math.max(...SCALE_JOBS);
  log(`${dbName}: growth fleet ${maxJobs} jobs x ${SCALE_NODES} nodes x ${SCALE_GPUS} GPUs`);
  const big = await openScenario({ jobs: maxJobs, nodes: SCALE_NODES, gpus: SCALE_GPUS }, pglite);
  const growth: Record<number, { coldMs: number; coldWriteMs: number; warmMs: number; coldSql: number; warmSql: number; coldUpstream: number }> = {};
  try {
    for (const n of SCALE_JOBS) {
      await big.dropCache();
      const cold = await costOf(big, n);
      const warm = await costOf(big, n);
      growth[n] = {
        coldMs: round(cold.ms),
        coldWriteMs: round(cold.writeMs),
        warmMs: round(warm.ms),
        coldSql: cold.sql,
        warmSql: warm.sql,
        coldUpstream: cold.upstream,
      };
      log(
        `growth ${n}: cold ${cold.ms.toFixed(0)} ms (+${cold.writeMs.toFixed(0)} ms write), ${cold.sql} SQL, ${cold.upstream} upstream; warm ${warm.ms.toFixed(0)} ms, ${warm.sql} SQL`,
      );
    }
  } finally {
    await big.close();
  }
  const perJob = (n: number, k: 'coldMs' | 'warmMs') => growth[n]![k] / n;
  // The largest fleet against the one before it (--growth may list two sizes or more).
  const small = SCALE_JOBS[0]!;
  const large = SCALE_JOBS.at(-1)!;
  const step = (k: 'coldMs' | 'warmMs') => perJob(large, k) / perJob(SCALE_JOBS.at(-2) ?? small, k);
  for (const k of ['coldMs', 'warmMs'] as const) {
    rows.push({
      scenario: `${k === 'coldMs' ? 'cold' : 'warm'} dashboard time per job at ${SCALE_JOBS.join(' / ')} jobs (${SCALE_NODES} nodes x ${SCALE_GPUS} GPUs each)`,
      measured: SCALE_JOBS.map((n) => `${perJob(n, k).toFixed(1)}`).join(' / ') + ' ms per job',
      baseline: `per job at ${SCALE_JOBS.at(-2) ?? small} jobs`,
      ratio: step(k),
      goal: `flat: ${large} jobs <= 1.3x per job`,
      met: step(k) <= 1.3,
    });
  }
  rows.push({
    scenario: `SQL statements per request at ${SCALE_JOBS.join(' / ')} jobs`,
    measured: `cold ${SCALE_JOBS.map((n) => growth[n]!.coldSql).join(' / ')}, warm ${SCALE_JOBS.map((n) => growth[n]!.warmSql).join(' / ')}`,
    baseline: `at ${small} jobs`,
    ratio: growth[large]!.warmSql / growth[small]!.warmSql,
    goal: 'constant',
    met: SCALE_JOBS.every((n) => growth[n]!.warmSql === growth[small]!.warmSql && growth[n]!.coldSql === growth[small]!.coldSql),
  });
  details.growth = growth;
  return { rows, details, explains };
}

/** bench:live in its own process (it starts its own servers); its table row and output. */
function benchLive(): { row: Row; output: string } {
  const liveScript = path.join(HERE, 'live.ts');
  log('live fan-out: npm run bench:live');
  const res = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', liveScript], { encoding: 'utf8', timeout: 600_000 });
  const output = `${res.stdout ?? ''}`.trim();
  const line = output.split('\n').find((l) => l.startsWith('LIVE_RESULT '));
  if (!line) {
    return {
      row: {
        scenario: 'live fan-out',
        measured: `bench:live failed (exit ${res.status})`,
        baseline: 'raw ws broadcast',
        ratio: null,
        goal: 'p50, p99 <= 2x; <= 10 KiB per subscriber',
        met: false,
      },
      output,
    };
  }
  const r = JSON.parse(line.slice('LIVE_RESULT '.length));
  const a = r.graphqlWs;
  const b = r.rawWs;
  const p50 = a.p50 / Math.max(1, b.p50);
  const p99 = a.p99 / Math.max(1, b.p99);
  return {
    row: {
      scenario: `live fan-out, ${r.subscribers.toLocaleString('en')} graphql-ws subscribers`,
      measured: `p50 ${a.p50} ms, p99 ${a.p99} ms, ${a.rssKiB.toFixed(1)} KiB RSS per subscriber`,
      baseline: `raw ws broadcast of the same ${r.bytes} bytes: p50 ${b.p50} ms, p99 ${b.p99} ms, ${b.rssKiB.toFixed(1)} KiB`,
      ratio: Math.max(p50, p99),
      goal: 'p50 and p99 <= 2x; <= 10 KiB per subscriber',
      met: p50 <= 2 && p99 <= 2 && a.rssKiB <= 10,
    },
    output,
  };
}

/** bench:collect in its own process (it starts its own simulators, server and bare loop): its row and table. */
function benchCollect(): { row: Row; output: string } {
  log('collector against a bare loop: npm run bench:collect');
  const args = ['--import', 'tsx', path.join(HERE, 'collect.ts'), `--db=${flags.db}`, ...(flags.quick ? ['--quick'] : [])];
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_800_000 });
  const output = `${res.stdout ?? ''}`.trim();
  const line = output.split('\n').find((l) => l.startsWith('COLLECT_RESULT '));
  const goal = 'lag p99 <= 1 interval, calls = minimum, CPU <= 1.5x, RSS flat from 100 to 1,000 jobs';
  if (!line)
    return {
      row: { scenario: 'collector', measured: `bench:collect failed (exit ${res.status})`, baseline: 'bare loop', ratio: null, goal, met: false },
      output,
    };
  return { row: JSON.parse(line.slice('COLLECT_RESULT '.length)).row as Row, output };
}

/**
 * bench:load in its own process (it starts its own replicas, floors and wrk): its table and rows.
 * --quick: one round of 3 s per scenario instead of three of 5 s.
 */
function benchLoadRows(databases: boolean[]): { table: string; rows: unknown[] } {
  log('warm reads under load: npm run bench:load');
  const args = [
    '--import',
    'tsx',
    path.join(HERE, 'load.ts'),
    `--db=${flags.db}`,
    ...(flags.quick ? ['--rounds=1', '--seconds=3'] : []),
    ...(databases.length === 1 ? [databases[0] ? '--pglite' : '--postgres'] : []),
  ];
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_800_000 });
  const table = `${res.stdout ?? ''}`.trim();
  if (res.status !== 0 || !table.startsWith('|')) return { table: `bench:load failed (exit ${res.status})\n${table}`, rows: [] };
  return { table, rows: JSON.parse(readFileSync(path.join(HERE, 'results', 'load.json'), 'utf8')).rows };
}

/**
 * bench:promql in its own process (it starts its own Prometheus): query_range of 1,000 series over
 * 24 h against the real Prometheus holding the same samples; its table and rows. --quick: its --quick.
 */
function benchPromqlRows(databases: boolean[]): { table: string; rows: unknown[] } {
  log('query_range against the real Prometheus: npm run bench:promql');
  const args = [
    '--import',
    'tsx',
    path.join(HERE, 'promql.ts'),
    `--db=${flags.db}`,
    ...(flags.quick ? ['--quick'] : []),
    ...(databases.length === 1 ? [databases[0] ? '--pglite' : '--postgres'] : []),
  ];
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 3_600_000 });
  const table = `${res.stdout ?? ''}`.trim();
  if (res.status !== 0 || !table.startsWith('|')) return { table: res.status === 0 ? table : `bench:promql failed (exit ${res.status})\n${table}`, rows: [] };
  return { table, rows: JSON.parse(readFileSync(path.join(HERE, 'results', 'promql.json'), 'utf8')).rows };
}

/** bench:findings in its own process (its own database): one findings evaluation over 1,000 running jobs; its table row. */
function benchFindingsRow(pglite: boolean): Row {
  log(`findings: npm run bench:findings${pglite ? ' -- --pglite' : ''}`);
  const args = ['--import', 'tsx', path.join(HERE, 'findings.ts'), `--db=${flags.db}`, ...(pglite ? ['--pglite'] : [])];
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 1_800_000 });
  const line = `${res.stdout ?? ''}`.split('\n').find((l) => l.startsWith('FINDINGS_RESULT '));
  if (!line) {
    return {
      scenario: 'findings: one evaluation over 1,000 running jobs',
      measured: `bench:findings failed (exit ${res.status})`,
      baseline: '—',
      ratio: null,
      goal: 'constant SQL; <= 1 s per 1,000 jobs',
      met: false,
    };
  }
  return JSON.parse(line.slice('FINDINGS_RESULT '.length)).row as Row;
}

async function main() {
  const databases = flags.pglite && !flags.postgres ? [true] : flags.postgres && !flags.pglite ? [false] : [false, true];
  const results: Record<string, DbResult> = {};
  for (const pglite of databases) results[pglite ? 'pglite' : 'postgres'] = await benchDatabase(pglite);
  if (flags['cold-only']) {
    for (const [db, r] of Object.entries(results)) {
      console.log(`\n${db}: ${JSON.stringify(r.details.cold)}\nwarm once: ${JSON.stringify(r.details.warmOnce)}\n${tableOf(r.rows)}`);
    }
    return;
  }
  for (const pglite of databases) results[pglite ? 'pglite' : 'postgres']!.rows.push(benchFindingsRow(pglite));
  const live = flags.live
    ? benchLive()
    : {
        row: {
          scenario: 'live fan-out',
          measured: 'not run (--no-live)',
          baseline: 'raw ws broadcast',
          ratio: null,
          goal: 'p50 and p99 <= 2x; <= 10 KiB per subscriber',
          met: null,
        },
        output: '',
      };
  const collect = flags.collect
    ? benchCollect()
    : {
        row: {
          scenario: 'collector',
          measured: 'not run (--no-collect)',
          baseline: 'bare loop',
          ratio: null,
          goal: 'lag p99 <= 1 interval, CPU <= 1.5x',
          met: null,
        },
        output: '',
      };
  const load = flags.load ? benchLoadRows(databases) : { table: 'not run (--no-load)', rows: [] };
  const promql = flags.promql ? benchPromqlRows(databases) : { table: 'not run (--no-promql)', rows: [] };
  // The built server's memory and time to ready on both databases (issue 23), in processes of their own.
  log('footprint: node dist/main.js on PGlite and PostgreSQL (bench/footprint.ts)');
  const footprint = await benchFootprint({ postgresUrl: flags.db!, log });
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGiB: round(totalmem() / 2 ** 30, 1), node: process.version };
  const wallSeconds = (performance.now() - started) / 1000;
  const at = new Date().toISOString();
  console.log(
    `\n${Object.values(results)
      .flatMap((r) => r.explains)
      .join('\n\n')}\n\n-- npm run bench:live\n${live.output}\n\n-- npm run bench:collect\n${collect.output}\n`,
  );
  console.log(
    `${at.slice(0, 10)}, ${machine.cpus} cores (${machine.cpuModel}), ${machine.memGiB} GiB, Node ${machine.node}; wall time ${wallSeconds.toFixed(0)} s`,
  );
  for (const [db, r] of Object.entries(results)) {
    console.log(`\n${db === 'pglite' ? 'PGlite (embedded, in a folder)' : 'PostgreSQL'}:\n`);
    console.log(tableOf(db === 'postgres' || databases.length === 1 ? [...r.rows, live.row, collect.row] : r.rows));
  }
  console.log(`\nWarm reads under load (npm run bench:load):\n\n${load.table}`);
  console.log(`\nquery_range of 1,000 series over 24 h against the real Prometheus (npm run bench:promql; goal <= 2x):\n\n${promql.table}`);
  console.log(
    `\nFootprint (built server):\n\n` +
      [
        '| scenario | measured | baseline | goal | met |',
        '| --- | --- | --- | --- | --- |',
        ...footprint.rows.map((r) => `| ${r.scenario} | ${r.measured} | ${r.baseline} | ${r.goal} | ${r.met === null ? '—' : r.met ? 'yes' : 'no'} |`),
      ].join('\n'),
  );
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(
    path.join(HERE, 'results', 'latest.json'),
    JSON.stringify(
      {
        at,
        machine,
        fleet: { jobs: JOBS, nodes: NODES, gpus: GPUS, points: POINTS, growth: { jobs: SCALE_JOBS, nodes: SCALE_NODES, gpus: SCALE_GPUS } },
        wallSeconds: round(wallSeconds, 1),
        databases: Object.fromEntries(Object.entries(results).map(([db, r]) => [db, { rows: r.rows, details: r.details, explain: r.explains }])),
        live: { row: live.row, output: live.output.slice(-4000) },
        collect: { row: collect.row, output: collect.output.slice(-4000) },
        load: load.rows,
        promql: promql.rows,
        footprint: { rows: footprint.rows, details: footprint.details },
      },
      null,
      2,
    ),
  );
}

await main();
process.exit(0);
