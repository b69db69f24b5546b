// `npm run bench`: one table of ratios, each against a floor measured in the same run on the same
// data (timings on shared 2-core machines are noisy; ratios much less so). Also written as JSON to
// bench/results/latest.json. Flags: --jobs --nodes --gpus --points (fleet and series length),
// --pglite (embedded PGlite instead of Postgres), --db <url> (default DATABASE_URL or
// postgres://postgres@127.0.0.1:5432/), --quick (fewer samples).
import { loadSecurityConfig } from '../src/config/security.js';
import { benchFleet } from './fleet.js';
import { benchFootprint } from './footprint.js';
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
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

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '50' },
    nodes: { type: 'string', default: '8' },
    gpus: { type: 'string', default: '8' },
    points: { type: 'string', default: '300' },
    pglite: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
    quick: { type: 'boolean', default: false },
  },
});
const JOBS = Number(flags.jobs);
const NODES = Number(flags.nodes);
const GPUS = Number(flags.gpus);
const POINTS = Number(flags.points);
const BIG_JOBS = 500;
const BIG_NODES = 2;
const BIG_GPUS = 2;
const INGEST_ROWS = flags.quick ? 100_000 : 300_000;
const DOWNSAMPLE_ROWS = 1_000_000;
const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);
// Running jobs sample every 15 s; a window of POINTS samples ending at the (pinned) clock, with
// maxPoints = POINTS, makes the store ask upstream for exactly that resolution.
const STEP_MS = 15_000;
const WINDOW = { from: new Date(ANCHOR - (POINTS - 1) * STEP_MS).toISOString(), to: new Date(ANCHOR).toISOString() };

const DASHBOARD = `query Dashboard($first: Int!, $from: DateTime, $to: DateTime, $maxPoints: Int) {
  jobs(first: $first, filter: { statuses: [RUNNING] }) {
    totalCount
    edges { node { id name status gpuType
      nodes { name gpus { index model
        utilization(from: $from, to: $to, maxPoints: $maxPoints) {
          unit
          points { timestamp value }
          summary { avg max last }
        } } } } }
  }
}`;

const started = performance.now();
const log = (...a: unknown[]) => console.error(`[${((performance.now() - started) / 1000).toFixed(1)}s]`, ...a);

// ---- statistics -----------------------------------------------------------------------------

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
}
const median = (xs: number[]) => quantile(xs, 0.5);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

/** Runs `fn` `n` times with `concurrency` in flight; returns completions per second. */
async function throughput(fn: () => Promise<unknown>, n: number, concurrency: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < n) await fn();
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

// ---- the simulator in a child process --------------------------------------------------------

interface SimChild {
  url: string;
  apiKey: string;
  stats(): Promise<Record<string, number>>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

async function startSim(fleet: Record<string, unknown>): Promise<SimChild> {
  const child: ChildProcess = fork(path.join(HERE, 'sim-child.ts'), [JSON.stringify({ seed: 7, anchorMs: ANCHOR, fleet })], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
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
  ms: number;
}
const realFetch = globalThis.fetch;
let recording: UpstreamCall[] | null = null;
globalThis.fetch = async (input: any, init?: RequestInit) => {
  if (!recording) return realFetch(input, init);
  const t0 = performance.now();
  const res = await realFetch(input, init);
  const text = await res.text();
  recording.push({ url: String(input), init: { method: init?.method, headers: init?.headers, body: init?.body }, ms: performance.now() - t0 });
  return new Response(text, { status: res.status, headers: res.headers });
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

async function openScenario(fleet: { jobs: number; nodes: number; gpus: number }): Promise<Scenario> {
  const projects = fleet.jobs % 5 === 0 ? 5 : 1;
  const sim = await startSim({
    projects,
    jobsPerProject: fleet.jobs / projects,
    emptyProjects: 0,
    nodesPerJob: fleet.nodes,
    gpusPerNode: fleet.gpus,
    statuses: ['TRAINING_JOB_RUNNING'],
  });
  let databaseUrl: string | null = null;
  let dropDatabase = async () => {};
  if (!flags.pglite) {
    const { default: postgres } = await import('postgres');
    const admin = postgres(flags.db!, { max: 1, onnotice: () => {} });
    const name = `tg_bench_${process.pid}_${Date.now()}`;
    await admin.unsafe(`create database ${name}`);
    const u = new URL(flags.db!);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    dropDatabase = async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    };
  }
  const runtime = await startRuntime({
    config: {
      port: 0,
      host: '127.0.0.1',
      databaseUrl,
      dataDir: 'memory://bench',
      redisUrl: null,
      logLevel: 'silent',
      providers: [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 120 }],
      // The cold query over the whole fleet is measured, not cut off by the public 30 s limit.
      security: loadSecurityConfig({ EXECUTION_TIMEOUT_MS: '900000', MAX_QUERY_COST: '100000000', MAX_RESPONSE_BYTES: '1000000000' }),
    },
    env: { BT_KEY: sim.apiKey },
    logger: pino({ level: 'silent' }),
    clock: () => ANCHOR,
  });
  const client = (runtime.database.db as any).$client;
  const raw: Raw = runtime.database.driver === 'postgres'
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
      await dropDatabase();
    },
  };
}

/** SQL statements and upstream calls of one request. */
async function costOf(s: Scenario, first: number): Promise<{ ms: number; sql: number; upstream: number; byRoute: Record<string, number>; body: string }> {
  await s.sim.reset();
  const before = s.runtime.database.statementCount();
  const [ms, body] = await timed(() => s.gql(DASHBOARD, { first, ...WINDOW, maxPoints: POINTS }));
  const byRoute = await s.sim.stats();
  return { ms, sql: s.runtime.database.statementCount() - before, upstream: upstreamTotal(byRoute), byRoute, body };
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
  return text.slice(1, -1).split(',').map((x) => x.replace(/^"|"$/g, ''));
}

// ---- capturing the statement pointsOf sends, for EXPLAIN ------------------------------------

async function explainPointsOf(s: Scenario, call: () => Promise<unknown>): Promise<string> {
  const db = s.repo.db as any;
  const execute = db.execute;
  let captured: SQL | null = null;
  db.execute = (q: SQL) => {
    if (!captured && db.dialect.sqlToQuery(q).sql.includes('bn as w')) captured = q;
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

interface Row {
  scenario: string;
  measured: string;
  baseline: string;
  ratio: number | null;
  goal: string;
  met: boolean | null;
}

async function main() {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const explains: string[] = [];
  const samples = flags.quick ? 2 : 3;

  log(`fleet ${JOBS} jobs x ${NODES} nodes x ${GPUS} GPUs, ${POINTS} points per series, ${flags.pglite ? 'PGlite' : 'PostgreSQL'}`);
  const s = await openScenario({ jobs: JOBS, nodes: NODES, gpus: GPUS });
  try {
    // Fan-out at 5 jobs, cold then warm (before the cold runs at JOBS, which leave the cache full).
    const fanout: Record<string, unknown> = {};
    {
      await s.dropCache();
      const cold = await costOf(s, 5);
      const warm = await costOf(s, 5);
      fanout[5] = { coldSql: cold.sql, coldUpstream: cold.byRoute, warmSql: warm.sql, warmUpstream: warm.upstream };
      log(`fan-out 5: cold ${cold.sql} SQL / ${cold.upstream} upstream ${JSON.stringify(cold.byRoute)}; warm ${warm.sql} SQL / ${warm.upstream} upstream`);
    }
    // Cold: empty cache each time. The first run also records every upstream call it makes.
    const colds: Awaited<ReturnType<typeof costOf>>[] = [];
    const calls: UpstreamCall[] = [];
    for (let i = 0; i < 1; i++) {
      await s.dropCache();
      if (i === 0) recording = calls;
      colds.push(await costOf(s, JOBS));
      recording = null;
      log(`cold run ${i + 1}: ${colds.at(-1)!.ms.toFixed(0)} ms, ${colds.at(-1)!.sql} SQL, upstream ${JSON.stringify(colds.at(-1)!.byRoute)}`);
    }
    // The same request again, while the cache holds all JOBS jobs: the warm fan-out at JOBS.
    const warmAtJobs = await costOf(s, JOBS);
    const seriesPoints = JSON.parse(colds[0]!.body).data.jobs.edges[0].node.nodes[0].gpus[0].utilization.points.length;
    // Each upstream call alone, through the same fetch, body read: the floor a cold query waits for.
    const alone: { route: string; ms: number }[] = [];
    for (const c of calls) {
      const [ms] = await timed(async () => (await realFetch(c.url, c.init)).text());
      alone.push({ route: `${c.init.method ?? 'GET'} ${new URL(c.url).pathname.replace(/\/(?=[0-9a-z]*\d)[0-9a-z]{6,}(?=\/|$)/g, '/:id')}`, ms });
    }
    const slowest = alone.reduce((a, b) => (b.ms > a.ms ? b : a));
    // All of the query's upstream calls at once, straight to the simulator: what the platform itself needs.
    const [allAtOnce] = await timed(() => Promise.all(calls.map(async (c) => (await realFetch(c.url, c.init)).text())));
    const coldMs = median(colds.map((c) => c.ms));
    rows.push({
      scenario: 'cold dashboard query',
      measured: `${coldMs.toFixed(0)} ms `,
      baseline: `slowest single upstream call ${slowest.ms.toFixed(0)} ms (${slowest.route}); all ${calls.length} calls at once ${allAtOnce.toFixed(0)} ms`,
      ratio: coldMs / slowest.ms,
      goal: '<= 1.2x',
      met: coldMs / slowest.ms <= 1.2,
    });
    details.cold = { runsMs: colds.map((c) => round(c.ms)), upstream: colds[0]!.byRoute, sql: colds.map((c) => c.sql), slowestCall: slowest, allCallsAtOnceMs: round(allAtOnce), callsAloneMs: alone.map((a) => round(a.ms)) };
    log(`upstream: slowest alone ${slowest.ms.toFixed(0)} ms, all ${calls.length} at once ${allAtOnce.toFixed(0)} ms`);

    fanout[JOBS] = { coldSql: colds[0]!.sql, coldUpstream: colds[0]!.byRoute, warmSql: warmAtJobs.sql, warmUpstream: warmAtJobs.upstream };
    // Warm: the cache holds every job (the clock is pinned, so nothing expires).
    const warmBody = await s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS });
    const floorBody = await floorDashboard(s.raw, JOBS);
    const gpuCount = (b: string) => (JSON.parse(b).data.jobs.edges as any[]).reduce((a, e) => a + e.node.nodes.reduce((x: number, nd: any) => x + nd.gpus.length, 0), 0);
    const answerShape = { gpus: gpuCount(warmBody), gpusFloor: gpuCount(floorBody), bytes: warmBody.length, bytesFloor: floorBody.length, pointsPerSeries: seriesPoints };
    log(`warm answer: ${JSON.stringify(answerShape)}`);
    await s.sim.reset();
    const warmTimes: number[] = [];
    const floorTimes: number[] = [];
    for (let i = 0; i < samples; i++) {
      warmTimes.push((await timed(() => s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS })))[0]);
      floorTimes.push((await timed(() => floorDashboard(s.raw, JOBS)))[0]);
    }
    log(`warm samples: ${warmTimes.map((x) => x.toFixed(0)).join(', ')} ms; floor ${floorTimes.map((x) => x.toFixed(0)).join(', ')} ms`);
    const warmRps = await throughput(() => s.gql(DASHBOARD, { first: JOBS, ...WINDOW, maxPoints: POINTS }), 2, 2);
    const floorRps = await throughput(() => floorDashboard(s.raw, JOBS), 2, 2);
    const warmUpstream = upstreamTotal(await s.sim.stats());
    const p = (xs: number[], q: number) => quantile(xs, q);
    rows.push({
      scenario: 'warm dashboard query',
      measured: `p50 ${p(warmTimes, 0.5).toFixed(0)} ms, p99 ${p(warmTimes, 0.99).toFixed(0)} ms, ${warmRps.toFixed(2)} req/s`,
      baseline: `p50 ${p(floorTimes, 0.5).toFixed(0)} ms, p99 ${p(floorTimes, 0.99).toFixed(0)} ms, ${floorRps.toFixed(2)} req/s`,
      ratio: p(warmTimes, 0.5) / p(floorTimes, 0.5),
      goal: '<= 2x',
      met: p(warmTimes, 0.5) / p(floorTimes, 0.5) <= 2,
    });
    details.warm = {
      samples,
      answerShape,
      upstreamCallsDuringWarm: warmUpstream,
      ratios: { p50: round(p(warmTimes, 0.5) / p(floorTimes, 0.5)), p99: round(p(warmTimes, 0.99) / p(floorTimes, 0.99)), reqPerSec: round(floorRps / warmRps) },
      msGraphql: warmTimes.map((x) => round(x)),
      msFloor: floorTimes.map((x) => round(x)),
    };
    log(`warm: ${rows.at(-1)!.measured} vs ${rows.at(-1)!.baseline}; upstream during warm ${warmUpstream}`);
    explains.push(`-- hot statement of the warm dashboard query (Repository.pointsOf, one batch of GPU series)\n` +
      (await explainPointsOf(s, () => s.gql(DASHBOARD, { first: Math.min(JOBS, 5), ...WINDOW, maxPoints: POINTS }).then(() => undefined))));

    // Fleet question over the same window, with the cache the dashboard filled (issue 9).
    const fleet = await benchFleet(s.runtime, { ...WINDOW, threshold: 0.3, forAtLeast: 'PT5M', samples: flags.quick ? 1 : 3 });
    rows.push({
      scenario: 'fleet query',
      measured: `first ${fleet.firstMs.toFixed(0)} ms (${fleet.firstSql} SQL), warm p50 ${fleet.warmP50Ms.toFixed(0)} ms (${fleet.warmSql} SQL); ${fleet.jobs} jobs, ${fleet.idleGpus} idle GPUs`,
      baseline: `warm dashboard query p50 ${p(warmTimes, 0.5).toFixed(0)} ms over the same points`,
      ratio: fleet.warmP50Ms / p(warmTimes, 0.5),
      goal: 'same SQL bound as other queries',
      met: fleet.warmSql <= warmAtJobs.sql,
    });
    details.fleet = fleet;
    log(`fleet: ${rows.at(-1)!.measured}`);

    // Ingest: the same rows through Repository.writePoints and through COPY, alternating, best of two.
    const ingestRows: [number, number, string | null, number | null, number | null][] = [];
    for (let i = 0; i < INGEST_ROWS; i++) {
      const series = 10_000_000 + Math.floor(i / 300);
      const key = ANCHOR - (i % 300) * STEP_MS;
      ingestRows.push([series, key, new Date(key).toISOString(), null, round(Math.sin(i) * 0.5 + 0.5, 4)]);
    }
    const csv = ingestRows.map((r) => `${r[0]},${r[1]},${r[2]},,${r[4]}`).join('\n') + '\n';
    const clearIngest = async () => {
      await s.raw.query('delete from points where series_id >= 10000000');
      await s.raw.query('vacuum points');
    };
    const writeMs: number[] = [];
    const copyMs: number[] = [];
    for (let round_ = 0; round_ < 2; round_++) {
      await clearIngest();
      writeMs.push((await timed(() => s.repo.writePoints(ingestRows)))[0]);
      await clearIngest();
      copyMs.push((await timed(() => s.raw.copyPoints(csv)))[0]);
    }
    await clearIngest();
    const writeRate = INGEST_ROWS / (Math.min(...writeMs) / 1000);
    const copyRate = INGEST_ROWS / (Math.min(...copyMs) / 1000);
    rows.push({
      scenario: 'ingest',
      measured: `${Math.round(writeRate).toLocaleString('en')} points/s (Repository.writePoints, ${INGEST_ROWS.toLocaleString('en')} new points)`,
      baseline: `${Math.round(copyRate).toLocaleString('en')} points/s (COPY)`,
      ratio: writeRate / copyRate,
      goal: '>= 0.5x',
      met: writeRate / copyRate >= 0.5,
    });
    details.ingest = { rows: INGEST_ROWS, writePointsMs: writeMs.map((x) => round(x)), copyMs: copyMs.map((x) => round(x)) };
    log(`ingest: ${rows.at(-1)!.measured} vs ${rows.at(-1)!.baseline}`);

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
    let buckets = 0;
    let rawBuckets = 0;
    for (let i = 0; i < (flags.quick ? 3 : 5); i++) {
      const [a, pts] = await timed(() => s.repo.pointsOf([{ seriesId: bigSeries, from: null, to: null }], 1000, 'AVG'));
      const [b, raws] = await timed(() => s.raw.query(floorDownsample, [bigSeries]));
      repoMs.push(a);
      rawMs.push(b);
      buckets = pts.length;
      rawBuckets = raws.length;
    }
    rows.push({
      scenario: 'downsample',
      measured: `${median(repoMs).toFixed(0)} ms (Repository.pointsOf, 1M -> ${buckets})`,
      baseline: `${median(rawMs).toFixed(0)} ms (date_bin + avg, 1M -> ${rawBuckets})`,
      ratio: median(repoMs) / median(rawMs),
      goal: '<= 2x',
      met: median(repoMs) / median(rawMs) <= 2,
    });
    details.downsample = { repoMs: repoMs.map((x) => round(x)), rawMs: rawMs.map((x) => round(x)) };
    log(`downsample: ${rows.at(-1)!.measured} vs ${rows.at(-1)!.baseline}`);
    explains.push(`-- downsample statement (Repository.pointsOf, 1M points -> 1,000)\n` +
      (await explainPointsOf(s, () => s.repo.pointsOf([{ seriesId: bigSeries, from: null, to: null }], 1000, 'AVG'))));
    await s.raw.query(`delete from points where series_id = ${bigSeries}`);

    // Fan-out at 500 jobs: a second fleet, smaller per job so the run fits in its time budget.
    await s.close().catch(() => {});
    log(`fan-out fleet ${BIG_JOBS} jobs x ${BIG_NODES} nodes x ${BIG_GPUS} GPUs`);
    const big = await openScenario({ jobs: BIG_JOBS, nodes: BIG_NODES, gpus: BIG_GPUS });
    try {
      const cold = await costOf(big, BIG_JOBS);
      const warm = await costOf(big, BIG_JOBS);
      fanout[BIG_JOBS] = { coldSql: cold.sql, coldUpstream: cold.byRoute, warmSql: warm.sql, warmUpstream: warm.upstream, fleet: `${BIG_NODES} nodes x ${BIG_GPUS} GPUs per job` };
      log(`fan-out ${BIG_JOBS}: cold ${cold.sql} SQL / ${cold.upstream} upstream ${JSON.stringify(cold.byRoute)}; warm ${warm.sql} SQL / ${warm.upstream} upstream`);
    } finally {
      await big.close();
    }
    const f = fanout as Record<number, any>;
    const sqlOf = (n: number, k: 'coldSql' | 'warmSql') => f[n][k];
    const upOf = (n: number) => upstreamTotal(f[n].coldUpstream);
    const perJob = (n: number) => round(upOf(n) / n, 2);
    const constantSql = [5, JOBS, BIG_JOBS].every((n) => sqlOf(n, 'warmSql') === sqlOf(5, 'warmSql'));
    rows.push({
      scenario: 'fan-out cost',
      measured:
        `warm SQL ${[5, JOBS, BIG_JOBS].map((n) => sqlOf(n, 'warmSql')).join(' / ')}, cold SQL ${[5, JOBS, BIG_JOBS].map((n) => sqlOf(n, 'coldSql')).join(' / ')}, ` +
        `cold upstream ${[5, JOBS, BIG_JOBS].map((n) => upOf(n)).join(' / ')} (${[5, JOBS, BIG_JOBS].map(perJob).join(' / ')} per job), warm upstream ${[5, JOBS, BIG_JOBS].map((n) => f[n].warmUpstream).join(' / ')} ` +
        `at 5 / ${JOBS} / ${BIG_JOBS} jobs (${BIG_JOBS}: ${BIG_NODES} nodes x ${BIG_GPUS} GPUs per job)`,
      baseline: `minimum upstream: 2 list calls + 1 getMetrics per job = ${[5, JOBS, BIG_JOBS].map((n) => n + 2).join(' / ')}`,
      ratio: upOf(JOBS) / (JOBS + 2),
      goal: 'constant SQL, minimum upstream',
      met: constantSql && [5, JOBS, BIG_JOBS].every((n) => upOf(n) <= n + 2),
    });
    details.fanout = fanout;
  } finally {
    await s.close().catch(() => {});
  }

  // Live fan-out belongs to the live subscriptions work (bench/live.ts).
  const liveScript = path.join(HERE, 'live.ts');
  if (existsSync(liveScript)) {
    log('live fan-out: npm run bench:live');
    const res = spawnSync(process.execPath, ['--import', 'tsx', liveScript], { encoding: 'utf8', timeout: 180_000 });
    const out = `${res.stdout ?? ''}`.trim();
    details.live = { exitCode: res.status, output: out.slice(-4000) };
    rows.push({ scenario: 'live fan-out', measured: res.status === 0 ? 'see bench:live output below' : `bench:live failed (exit ${res.status})`, baseline: 'raw ws broadcast', ratio: null, goal: '<= 3x', met: null });
    if (out) explains.push(`-- npm run bench:live\n${out}`);
  } else {
    rows.push({ scenario: 'live fan-out', measured: 'see npm run bench:live', baseline: 'raw ws broadcast', ratio: null, goal: '<= 3x', met: null });
  }

  const order = ['warm dashboard query', 'cold dashboard query', 'fan-out cost', 'fleet query', 'ingest', 'downsample', 'live fan-out'];
  rows.sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario));

  // The built server's memory and time to ready on both databases (issue 23), in processes of their own.
  log('footprint: node dist/main.js on PGlite and PostgreSQL (bench/footprint.ts)');
  const footprint = await benchFootprint({ postgresUrl: flags.db!, log });
  rows.push(...footprint.rows);
  details.footprint = footprint.details;
  const wallSeconds = (performance.now() - started) / 1000;
  const table = [
    '| scenario | measured | baseline (same run, same data) | ratio | goal | met |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.scenario} | ${r.measured} | ${r.baseline} | ${r.ratio === null ? '—' : `${round(r.ratio)}x`} | ${r.goal} | ${r.met === null ? '—' : r.met ? 'yes' : 'no'} |`),
  ].join('\n');
  console.log(`\n${explains.join('\n\n')}\n`);
  console.log(`fleet: ${JOBS} jobs x ${NODES} nodes x ${GPUS} GPUs, ${POINTS} points per series; ${flags.pglite ? 'PGlite (in-memory)' : 'PostgreSQL'}; wall time ${wallSeconds.toFixed(0)} s\n`);
  console.log(table);
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(
    path.join(HERE, 'results', 'latest.json'),
    JSON.stringify(
      {
        at: new Date().toISOString(),
        machine: { cpus: (await import('node:os')).cpus().length, memGiB: round((await import('node:os')).totalmem() / 2 ** 30, 1), node: process.version },
        database: flags.pglite ? 'pglite' : 'postgres',
        fleet: { jobs: JOBS, nodes: NODES, gpus: GPUS, points: POINTS },
        wallSeconds: round(wallSeconds, 1),
        rows,
        details,
        explain: explains,
      },
      null,
      2,
    ),
  );
}

await main();
process.exit(0);
