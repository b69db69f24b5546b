// `npm run bench:load` (also run by `npm run bench`, unless --no-load): warm reads under concurrent
// load. wrk drives each query at 20 and 100 connections against one replica, and against its
// floor measured in the same run: the same rows from one SQL statement as JSON over plain HTTP
// (list, job page), or a bare graphql-yoga with the same resolver (trivial query). Then two
// replicas behind one port (node:cluster) against one, on the same Postgres (with a CPU limit per
// replica, the job list also on two replicas with twice the connections). Needs `wrk`
// (Debian: apt-get install wrk). Flags: --seconds per run (default 5), --rounds (default 3: ours
// and the baseline alternate, each row is the median of the rounds' ratios), --replica-cores
// (default 0.4: each replica's CPU limit in the scale-out rows), --scale-out-only (those rows
// alone), --no-scale-out, --scenarios list,page,trivial and --connections 20,100 (the rows to
// measure), --wrk-threads (default 1), --pool-size (the replicas' DATABASE_POOL_SIZE; default the
// server's), --pglite / --postgres (default both), --db <admin url>.
import { createCpuCap, type CpuCap } from './cpu-cap.js';
import { freePort, freshServerDatabase, post, startChild, wrkPostScript, type Child, type WrkPoster } from './children.js';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    'replica-cores': { type: 'string', default: '0.4' },
    'scale-out-only': { type: 'boolean', default: false },
    'no-scale-out': { type: 'boolean', default: false },
    // Rows to measure (a reviewer's quick check of one row): list,page,trivial and 20,100.
    scenarios: { type: 'string', default: 'list,page,trivial' },
    connections: { type: 'string', default: '20,100' },
    // One wrk thread: its second competed with the server for this 2-core machine's cores (the
    // trivial query at 100 connections: p99 227 -> 15 ms, rounds 0.56x-0.92x -> 0.81x-0.97x).
    'wrk-threads': { type: 'string', default: '1' },
    'pool-size': { type: 'string' },
    pglite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
  strict: false,
});
const SECONDS = Number(flags.seconds);
const ROUNDS = Math.max(1, Number(flags.rounds));
// 0.4 CPU: at 0.5, two replicas, PostgreSQL and wrk kept this 2-core machine 1.89 cores busy on
// the job list, so each replica's reads waited on a starved PostgreSQL (1.70x; 0.4: 1.93x).
const REPLICA_CORES = Number(flags['replica-cores']);
// 20 connections: at 100, one replica limited to 0.4-0.5 CPU holds 100 requests at once, answers
// past wrk's 2 s time-out and spends more CPU per request on them (overload, not scale-out),
// which flattered the ratio (2.7x).
const SCALE_CONNS = 20;
const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);
const CONNECTIONS = (flags.connections as string).split(',').map(Number);
const WRK_THREADS = Number(flags['wrk-threads']);
const SCENARIOS = new Set((flags.scenarios as string).split(','));
const log = (...a: unknown[]) => console.error('[load]', ...a);

export const LIST_QUERY = '{ jobs(first: 20) { edges { node { id name status provider { kind } } } } }';
export const PAGE_QUERY = `query Page($id: ID!) { job(id: $id) { id name status
  nodes { name gpus { index utilization(maxPoints: 300) { points { timestamp value } } } } } }`;
export const TRIVIAL_QUERY = '{ providers { id name } }';

/**
 * Fills the cache (the job list and the first job's page) from a replica of its own, closed
 * before the measured ones start, so none of them has made the cold fill (bench/load-ab.ts,
 * bench/load-profile.ts --fill-apart).
 */
export async function fillCacheApart(replicaOptions: unknown): Promise<void> {
  const warmer = await startChild('load-replica.ts', replicaOptions);
  const list = await post(`${warmer.url}/graphql`, { query: LIST_QUERY });
  await post(`${warmer.url}/graphql`, { query: PAGE_QUERY, variables: { id: list.data.jobs.edges[0].node.id } });
  await warmer.close();
}

// ---- wrk ------------------------------------------------------------------------------------

// Made on first use: bench/load-ab.ts and bench/load-profile.ts import this module for its
// queries and fillCacheApart, and would otherwise each leave an empty folder behind.
let poster: WrkPoster | null = null;
const wrkPoster = (): WrkPoster => (poster ??= wrkPostScript('tg-load-'));

interface Load {
  rps: number;
  p99Ms: number;
  errors: number;
  /** The server process's CPU time per completed request (robust on a busy machine). */
  cpuUsPerRequest: number;
  /** Cores the whole machine was busy during the run (wrk, Postgres, the server, anything else), and how many it has. */
  machineBusyCores: number;
  cores: number;
}

/** Busy and total jiffies of all CPUs (Linux /proc/stat); null elsewhere. */
function cpuTimes(): { busy: number; total: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((a, b) => a + b, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

/** wrk's load for `seconds`, not measured. */
function unmeasured(url: string, body: unknown, connections: number, seconds: number): void {
  wrkPoster().run(url, body, { connections, seconds, threads: WRK_THREADS });
}

async function wrk(server: Child | null, url: string, body: unknown, connections: number): Promise<Load> {
  // Three unmeasured seconds first, for ours and the floor alike: a process that sat idle while
  // the other was measured is slow at first (the first measured run of a replica, right after the
  // floor's, measured 779 µs per warm list request and a later run of the same replica 423), and
  // a query a replica has not served under load yet runs unoptimised code for a while (a fresh
  // replica's first 4 s of trivial queries: 62 µs each; every later run: 47-51). One second was
  // not enough for the trivial query; the floor, far less code, warms sooner.
  unmeasured(url, body, connections, 3);
  const cpuBefore = server ? await server.cpu() : NaN;
  const machineBefore = cpuTimes();
  const { stdout: text, rps, requests } = wrkPoster().run(url, body, { connections, seconds: SECONDS, latency: true, threads: WRK_THREADS });
  const p99 = toMs(/\s99%\s+(\S+)/.exec(text)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const errors = non2xx + (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  const machineAfter = cpuTimes();
  const cores = availableParallelism();
  const machineBusyCores =
    machineBefore && machineAfter ? (cores * (machineAfter.busy - machineBefore.busy)) / (machineAfter.total - machineBefore.total) : NaN;
  const cpuUsPerRequest = server ? ((await server.cpu()) - cpuBefore) / requests : NaN;
  return { rps, p99Ms: p99, errors, cpuUsPerRequest, machineBusyCores, cores };
}

// ---- one database -----------------------------------------------------------------------------

export interface LoadRow {
  database: 'postgres' | 'pglite';
  scenario: string;
  connections: number;
  rps: number;
  p99Ms: number;
  floorRps: number;
  floorP99Ms: number;
  /** The median of the rounds' ratios (each round runs both, the order alternating). */
  ratio: number;
  /** null: measured, no goal (the scale-out rows without a CPU limit). */
  goal: number | null;
  rounds: number;
  /** Each round's ratio, in the order measured. */
  roundRatios: number[];
  /** wrk's non-2xx answers and socket errors (time-outs at 2 s included), ours and the baseline's. */
  errors: number;
  floorErrors: number;
  /** Server CPU time per request, ours and the baseline's, in microseconds. */
  cpuUs: number;
  floorCpuUs: number;
  /** Cores the machine was busy (of `cores`) during our run and the baseline's. */
  busyCores: number;
  floorBusyCores: number;
  cores: number;
}

const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** One table row from the rounds of ours and of the baseline (paired by round). */
function rowOf(database: LoadRow['database'], scenario: string, connections: number, goal: number | null, ours: Load[], floor: Load[]): LoadRow {
  const of = (ls: Load[], f: (l: Load) => number) => median(ls.map(f));
  const roundRatios = ours.map((o, i) => o.rps / floor[i]!.rps);
  return {
    database,
    scenario,
    connections,
    rps: of(ours, (l) => l.rps),
    p99Ms: of(ours, (l) => l.p99Ms),
    floorRps: of(floor, (l) => l.rps),
    floorP99Ms: of(floor, (l) => l.p99Ms),
    ratio: median(roundRatios),
    goal,
    rounds: ours.length,
    roundRatios,
    errors: ours.reduce((a, l) => a + l.errors, 0),
    floorErrors: floor.reduce((a, l) => a + l.errors, 0),
    cpuUs: of(ours, (l) => l.cpuUsPerRequest),
    floorCpuUs: of(floor, (l) => l.cpuUsPerRequest),
    busyCores: of(ours, (l) => l.machineBusyCores),
    floorBusyCores: of(floor, (l) => l.machineBusyCores),
    cores: ours[0]!.cores,
  };
}

async function measureDatabase(database: 'postgres' | 'pglite'): Promise<LoadRow[]> {
  const sim = await startChild('sim-child.ts', {
    seed: 7,
    anchorMs: ANCHOR,
    fleet: { projects: 5, jobsPerProject: 10, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 8, statuses: ['TRAINING_JOB_RUNNING'] },
  });
  const store = await freshServerDatabase(
    database === 'postgres' ? { postgres: flags.db as string, prefix: 'tg_load' } : { pgliteDir: path.join(wrkPoster().dir, 'pglite') },
  );
  const { databaseUrl, dataDir } = store;
  const replicaOptions = (workers: number, port: number, cpuCaps?: string[]) => ({
    port,
    workers,
    cpuCaps,
    poolSize: flags['pool-size'] === undefined ? undefined : Number(flags['pool-size']),
    databaseUrl,
    dataDir,
    simUrl: sim.url,
    apiKey: sim.ready.apiKey,
    anchorMs: ANCHOR,
  });
  const rows: LoadRow[] = [];
  try {
    let replica = await startChild('load-replica.ts', replicaOptions(1, await freePort()));
    const gql = `${replica.url}/graphql`;
    // Warm-up: the list sync, every job's detail and the first job's series reach the cache.
    const list = await post(gql, { query: LIST_QUERY });
    const jobId: string = list.data.jobs.edges[0].node.id;
    const bodies = {
      list: { query: LIST_QUERY },
      page: { query: PAGE_QUERY, variables: { id: jobId } },
      trivial: { query: TRIVIAL_QUERY },
    };
    for (let i = 0; i < 3; i++) for (const b of Object.values(bodies)) await post(gql, b);
    const providers = (await post(gql, bodies.trivial)).data.providers;
    if (flags['scale-out-only']) {
      await replica.close();
      return database === 'postgres' ? await scaleOut(replicaOptions, bodies) : [];
    }

    const floorOpts = { databaseUrl, dataDir, providers };
    const goals = { list: 0.5, page: 0.4, trivial: 0.9 } as const;
    const scenarios = (
      [
        ['warm job list', 'list', '/list'],
        ['warm job page with series', 'page', '/page'],
        ['trivial query vs bare yoga', 'trivial', '/graphql'],
      ] as const
    ).filter(([, key]) => SCENARIOS.has(key));
    // Ours and the floor alternate round by round (which goes first swaps each round) for --rounds
    // rounds; each row is the median of the rounds' ratios, as the machine's speed drifts over
    // minutes and a lone run swung the trivial row from 0.71x to 1.06x. On PostgreSQL both run
    // side by side and alternate per scenario; PGlite is one process's database, so there the
    // floor and a replica open the same folder in turn.
    const runs = new Map<string, { ours: Load[]; floor: Load[] }>();
    const record = (key: string, which: 'ours' | 'floor', load: Load) => {
      const r = runs.get(key) ?? { ours: [], floor: [] };
      r[which].push(load);
      runs.set(key, r);
    };
    // A process just started runs every scenario for a while, unmeasured, before any is measured:
    // a PGlite replica's first job-list run cost 1,876 µs per request and, after two more runs,
    // 1,375 (its database's buffers and the JIT both warm up), while the floor warms sooner.
    const warmUp = (urlOf: (key: keyof typeof bodies, route: string) => string) => {
      for (const [, key, route] of scenarios) unmeasured(urlOf(key, route), bodies[key], 20, 5);
    };
    const startFloor = async () => {
      const floor = await startChild('load-floor.ts', floorOpts);
      warmUp((_key, route) => `${floor.url}${route}`);
      return floor;
    };
    const startReplica = async () => {
      const started = await startChild('load-replica.ts', replicaOptions(1, await freePort()));
      warmUp(() => `${started.url}/graphql`);
      return started;
    };
    if (database === 'pglite') {
      // One process at a time: each round starts the floor and a replica in turn (which goes
      // first alternates), and each runs every scenario before it closes.
      await replica.close();
      for (let round = 0; round < ROUNDS; round++) {
        const both = [
          async () => {
            const floor = await startFloor();
            for (const c of CONNECTIONS)
              for (const [, key, route] of scenarios) record(`${key}/${c}`, 'floor', await wrk(floor, `${floor.url}${route}`, bodies[key], c));
            await floor.close();
          },
          async () => {
            replica = await startReplica();
            for (const c of CONNECTIONS)
              for (const [, key] of scenarios) record(`${key}/${c}`, 'ours', await wrk(replica, `${replica.url}/graphql`, bodies[key], c));
            await replica.close();
          },
        ];
        for (const run of round % 2 === 0 ? both : both.reverse()) await run();
      }
    } else {
      const floor = await startFloor();
      warmUp(() => `${replica.url}/graphql`);
      for (const c of CONNECTIONS) {
        for (const [, key, route] of scenarios) {
          for (let round = 0; round < ROUNDS; round++) {
            const both = [
              async () => record(`${key}/${c}`, 'floor', await wrk(floor, `${floor.url}${route}`, bodies[key], c)),
              async () => record(`${key}/${c}`, 'ours', await wrk(replica, `${replica.url}/graphql`, bodies[key], c)),
            ];
            for (const run of round % 2 === 0 ? both : both.reverse()) await run();
          }
        }
      }
      await floor.close();
      await replica.close();
    }
    for (const c of CONNECTIONS) {
      for (const [name, key] of scenarios) {
        const { ours, floor } = runs.get(`${key}/${c}`)!;
        rows.push(rowOf(database, name, c, goals[key], ours, floor));
      }
    }

    if (database === 'postgres' && !flags['no-scale-out']) rows.push(...(await scaleOut(replicaOptions, bodies)));
  } finally {
    await sim.close();
    await store.drop();
  }
  return rows;
}

/**
 * Scale-out on the same PostgreSQL: one replica against two behind one port (node:cluster), both
 * running, alternated round by round. First with every serving process limited to --replica-cores
 * CPUs (bench/cpu-cap.ts), as replicas in pods of their own would be: on this 2-core machine an
 * unlimited replica already keeps most of the cores busy beside wrk and PostgreSQL, so a second
 * one has nowhere to run, whatever the code does. Then without a limit, measured for what this
 * machine allows (no goal).
 */
async function scaleOut(
  replicaOptions: (workers: number, port: number, cpuCaps?: string[]) => unknown,
  bodies: Record<'list' | 'trivial', unknown>,
): Promise<LoadRow[]> {
  const rows: LoadRow[] = [];
  const caps = [1, 2].map((i) => createCpuCap(`tg-load-${process.pid}-${i}`, REPLICA_CORES));
  const made = caps.filter((c): c is CpuCap => 'procsFile' in c);
  const refused = caps.find((c): c is { error: string } => 'error' in c);
  if (refused) log(`replicas cannot be given a CPU limit here (${refused.error}): the scale-out rows run without one`);
  const variants = [
    ...(refused ? [] : [{ label: `each replica limited to ${REPLICA_CORES} CPU`, caps: made, goal: 1.7 as number | null }]),
    { label: 'no CPU limit, on this machine', caps: null, goal: refused ? 1.7 : null },
  ];
  try {
    for (const variant of variants) {
      for (const [name, key] of [
        ['job list', 'list'],
        ['trivial', 'trivial'],
      ] as const) {
        const one = await startChild(
          'load-replica.ts',
          replicaOptions(
            1,
            await freePort(),
            variant.caps?.slice(0, 1).map((c) => c.procsFile),
          ),
        );
        const twoPort = await freePort();
        const two = await startChild(
          'load-replica.ts',
          replicaOptions(
            2,
            twoPort,
            variant.caps?.map((c) => c.procsFile),
          ),
        );
        const twoUrl = `http://127.0.0.1:${twoPort}/graphql`;
        // Both warm up first, unmeasured (node:cluster hands connections to both workers in turn).
        unmeasured(`${one.url}/graphql`, bodies[key], SCALE_CONNS, 5);
        unmeasured(twoUrl, bodies[key], SCALE_CONNS, 5);
        const singles: Load[] = [];
        const doubles: Load[] = [];
        // With a CPU limit, the job list also runs on two replicas with twice the connections: each
        // then holds as many requests at once as one replica alone did. A replica's CPU per job
        // list falls with the requests it holds at once (one replica at 0.4 CPU, 2026-11-27: about
        // 270 µs at 10 connections, 235 at 20, 195 at 40: fewer wake-ups and system calls per
        // request), so with 20 connections split over two, each spends more per request than one
        // replica holding all 20.
        const sameShare = variant.caps !== null && key === 'list';
        const shared: Load[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const runs = [
            async () => singles.push(await wrk(one, `${one.url}/graphql`, bodies[key], SCALE_CONNS)),
            async () => doubles.push(await wrk(two, twoUrl, bodies[key], SCALE_CONNS)),
            ...(sameShare ? [async () => shared.push(await wrk(two, twoUrl, bodies[key], 2 * SCALE_CONNS))] : []),
          ];
          for (const run of round % 2 === 0 ? runs : runs.reverse()) await run();
        }
        await Promise.all([one.close(), two.close()]);
        rows.push(rowOf('postgres', `two replicas vs one (${variant.label}): ${name}`, SCALE_CONNS, variant.goal, doubles, singles));
        if (sameShare)
          rows.push(
            rowOf(
              'postgres',
              `two replicas with ${2 * SCALE_CONNS} connections vs one with ${SCALE_CONNS} (${variant.label}): ${name}`,
              2 * SCALE_CONNS,
              null,
              shared,
              singles,
            ),
          );
      }
    }
  } finally {
    for (const c of made) c.remove();
  }
  return rows;
}

export async function benchLoad(databases: ('postgres' | 'pglite')[]): Promise<LoadRow[]> {
  if (spawnSync('wrk', ['--version']).error) {
    log('wrk is not installed (Debian: apt-get install wrk): load rows skipped');
    return [];
  }
  const rows: LoadRow[] = [];
  for (const d of databases) {
    log(`measuring ${d} (${SECONDS} s per run)`);
    rows.push(...(await measureDatabase(d)));
  }
  return rows;
}

/**
 * For a two-replica row: the cores the replicas themselves used (their CPU per request times
 * req/s), and how busy the whole machine was, one replica against two.
 */
function scaleNote(r: LoadRow): string {
  if (!r.scenario.startsWith('two replicas')) return '';
  const used = (cpuUs: number, rps: number) => ((cpuUs * rps) / 1e6).toFixed(2);
  return ` (replicas used ${used(r.floorCpuUs, r.floorRps)} / ${used(r.cpuUs, r.rps)} cores)`;
}

export function printLoad(rows: LoadRow[]): string {
  const fmt = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const goal = (r: LoadRow) => (r.goal === null ? 'measured' : `>= ${r.goal}x ${r.ratio >= r.goal ? 'met' : 'MISSED'}`);
  const lines = [
    '| database | scenario | conns | ours req/s | ours p99 ms | baseline req/s | baseline p99 ms | ratio (median of rounds) | goal | errors ours / baseline | CPU µs/req ours / baseline | machine busy cores ours / baseline |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.database} | ${r.scenario} | ${r.connections} | ${fmt(r.rps)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.floorRps)} | ${fmt(r.floorP99Ms, 1)} | ${fmt(r.ratio, 2)}x (${r.rounds}) | ${goal(r)}${scaleNote(r)} | ${r.errors} / ${r.floorErrors} | ${fmt(r.cpuUs)} / ${fmt(r.floorCpuUs)} | ${fmt(r.busyCores, 2)} / ${fmt(r.floorBusyCores, 2)} of ${r.cores} |`,
    ),
  ];
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const both = !flags.pglite && !flags.postgres;
  const databases = [...(both || flags.postgres ? (['postgres'] as const) : []), ...(both || flags.pglite ? (['pglite'] as const) : [])];
  const rows = await benchLoad(databases);
  const table = printLoad(rows);
  console.log(table);
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(
    path.join(HERE, 'results', 'load.json'),
    JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, rounds: ROUNDS, replicaCores: REPLICA_CORES, rows }, null, 2),
  );
  // Assigned in wrkPoster(), which the type checker does not follow here.
  const made = poster as WrkPoster | null;
  if (made) rmSync(made.dir, { recursive: true, force: true });
}
