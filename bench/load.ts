// `npm run bench:load` (also the "load" rows of `npm run bench`): warm reads under concurrent
// load. wrk drives each query at 20 and 100 connections against one replica, and against its
// floor measured in the same run: the same rows from one SQL statement as JSON over plain HTTP
// (list, job page), or a bare graphql-yoga with the same resolver (trivial query). Then two
// replicas behind one port (node:cluster) against one, on the same Postgres. Needs `wrk`
// (Debian: apt-get install wrk). Flags: --seconds per run (default 5), --pglite / --postgres
// (default both), --db <admin url>.
import { freePort, freshPostgresDatabase, post, startChild, wrkPostScript, type Child } from './children.js';
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
    pglite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
  strict: false,
});
const SECONDS = Number(flags.seconds);
const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);
const CONNECTIONS = [20, 100];
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

const { dir: WORK, lua: LUA } = wrkPostScript('tg-load-');

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

let bodySeq = 0;
async function wrk(server: Child | null, url: string, body: unknown, connections: number): Promise<Load> {
  const file = path.join(WORK, `body-${++bodySeq}.json`);
  writeFileSync(file, JSON.stringify(body));
  // Three unmeasured seconds first, for ours and the floor alike: a process that sat idle while
  // the other was measured is slow at first (the first measured run of a replica, right after the
  // floor's, measured 779 µs per warm list request and a later run of the same replica 423), and
  // a query a replica has not served under load yet runs unoptimised code for a while (a fresh
  // replica's first 4 s of trivial queries: 62 µs each; every later run: 47-51). One second was
  // not enough for the trivial query; the floor, far less code, warms sooner.
  spawnSync('wrk', ['-t2', `-c${connections}`, '-d3s', '-s', LUA, url], { env: { ...process.env, BODY_FILE: file }, encoding: 'utf8' });
  const cpuBefore = server ? await server.cpu() : NaN;
  const machineBefore = cpuTimes();
  const out = spawnSync('wrk', ['-t2', `-c${connections}`, `-d${SECONDS}s`, '--latency', '-s', LUA, url], {
    env: { ...process.env, BODY_FILE: file },
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`wrk failed: ${out.stderr || out.stdout}`);
  const text = out.stdout;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN);
  const p99 = toMs(/\s99%\s+(\S+)/.exec(text)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const errors = non2xx + (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? NaN);
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
  ratio: number;
  goal: number;
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

async function measureDatabase(database: 'postgres' | 'pglite'): Promise<LoadRow[]> {
  const sim = await startChild('sim-child.ts', {
    seed: 7,
    anchorMs: ANCHOR,
    fleet: { projects: 5, jobsPerProject: 10, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 8, statuses: ['TRAINING_JOB_RUNNING'] },
  });
  let databaseUrl: string | null = null;
  let dataDir = 'memory://';
  let dropDatabase = async () => {};
  if (database === 'postgres') {
    const fresh = await freshPostgresDatabase(flags.db as string, 'tg_load');
    databaseUrl = fresh.url;
    dropDatabase = fresh.drop;
  } else {
    dataDir = path.join(WORK, 'pglite');
    mkdirSync(dataDir, { recursive: true });
  }
  const replicaOptions = (workers: number, port: number) => ({
    port,
    workers,
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

    // PGlite is one process's database: the floor opens the same folder once the replica is gone.
    const floorOpts = { databaseUrl, dataDir, providers };
    const goals = { list: 0.5, page: 0.4, trivial: 0.9 } as const;
    const scenarios = [
      ['warm job list', 'list', '/list'],
      ['warm job page with series', 'page', '/page'],
      ['trivial query vs bare yoga', 'trivial', '/graphql'],
    ] as const;
    const ours = new Map<string, Load>();
    const floors = new Map<string, Load>();
    const measureOurs = async (server: Child) => {
      for (const c of CONNECTIONS) for (const [, key] of scenarios) ours.set(`${key}/${c}`, await wrk(server, `${server.url}/graphql`, bodies[key], c));
    };
    const measureFloor = async () => {
      const floor = await startChild('load-floor.ts', floorOpts);
      await post(`${floor.url}/list`, bodies.list);
      await post(`${floor.url}/page`, bodies.page);
      for (const c of CONNECTIONS) for (const [, key, route] of scenarios) floors.set(`${key}/${c}`, await wrk(floor, `${floor.url}${route}`, bodies[key], c));
      await floor.close();
    };
    if (database === 'pglite') {
      await replica.close();
      await measureFloor();
      replica = await startChild('load-replica.ts', replicaOptions(1, await freePort()));
      await measureOurs(replica);
    } else {
      await measureFloor();
      await measureOurs(replica);
    }
    for (const c of CONNECTIONS) {
      for (const [name, key] of scenarios) {
        const o = ours.get(`${key}/${c}`)!;
        const f = floors.get(`${key}/${c}`)!;
        rows.push({
          database,
          scenario: name,
          connections: c,
          rps: o.rps,
          p99Ms: o.p99Ms,
          floorRps: f.rps,
          floorP99Ms: f.p99Ms,
          ratio: o.rps / f.rps,
          goal: goals[key],
          errors: o.errors,
          floorErrors: f.errors,
          cpuUs: o.cpuUsPerRequest,
          floorCpuUs: f.cpuUsPerRequest,
          busyCores: o.machineBusyCores,
          floorBusyCores: f.machineBusyCores,
          cores: o.cores,
        });
      }
    }
    await replica.close();

    if (database === 'postgres') {
      // Scale-out: the same port served by one process, then by two (node:cluster), same Postgres.
      for (const [name, key] of [
        ['two replicas vs one: job list', 'list'],
        ['two replicas vs one: trivial', 'trivial'],
      ] as const) {
        const one = await startChild('load-replica.ts', replicaOptions(1, await freePort()));
        await post(`${one.url}/graphql`, bodies[key]);
        const single = await wrk(one, `${one.url}/graphql`, bodies[key], 100);
        await one.close();
        const port = await freePort();
        const two = await startChild('load-replica.ts', replicaOptions(2, port));
        const twoUrl = `http://127.0.0.1:${port}`;
        for (let i = 0; i < 4; i++) await post(`${twoUrl}/graphql`, bodies[key]);
        const double = await wrk(two, `${twoUrl}/graphql`, bodies[key], 100);
        await two.close();
        rows.push({
          database,
          scenario: name,
          connections: 100,
          rps: double.rps,
          p99Ms: double.p99Ms,
          floorRps: single.rps,
          floorP99Ms: single.p99Ms,
          ratio: double.rps / single.rps,
          goal: 1.7,
          errors: double.errors,
          floorErrors: single.errors,
          cpuUs: double.cpuUsPerRequest,
          floorCpuUs: single.cpuUsPerRequest,
          busyCores: double.machineBusyCores,
          floorBusyCores: single.machineBusyCores,
          cores: double.cores,
        });
      }
    }
  } finally {
    await sim.close();
    await dropDatabase();
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
 * For a two-replica row: how busy one replica kept the machine (wrk and Postgres beside it). With
 * both cores near busy already, two replicas have little room to scale into on this machine.
 */
function machineBound(r: LoadRow): string {
  if (!r.scenario.startsWith('two replicas') || !(r.floorBusyCores > 0)) return '';
  return ` (one replica kept ${r.floorBusyCores.toFixed(2)} of ${r.cores} cores busy)`;
}

export function printLoad(rows: LoadRow[]): string {
  const fmt = (n: number, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const lines = [
    '| database | scenario | conns | ours req/s | ours p99 ms | baseline req/s | baseline p99 ms | ratio | goal | errors ours / baseline | CPU µs/req ours / baseline | machine busy cores ours / baseline |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.database} | ${r.scenario} | ${r.connections} | ${fmt(r.rps)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.floorRps)} | ${fmt(r.floorP99Ms, 1)} | ${fmt(r.ratio, 2)}x | >= ${r.goal}x ${r.ratio >= r.goal ? 'met' : 'MISSED'}${machineBound(r)} | ${r.errors} / ${r.floorErrors} | ${fmt(r.cpuUs)} / ${fmt(r.floorCpuUs)} | ${fmt(r.busyCores, 2)} / ${fmt(r.floorBusyCores, 2)} of ${r.cores} |`,
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
  writeFileSync(path.join(HERE, 'results', 'load.json'), JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, rows }, null, 2));
  rmSync(WORK, { recursive: true, force: true });
}
