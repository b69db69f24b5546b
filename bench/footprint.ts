// The server's footprint (issue 23): resident memory when idle and after the README's example
// queries, and time to ready, for the built server (`node dist/main.js`, as in production and the
// image) on embedded PGlite (a new folder, then a restart on it) and on PostgreSQL. Each server is
// its own process, measured from outside (/proc/<pid>/status VmRSS), so nothing of the bench is
// counted. The embedded default also runs an hour of the live page (bench/live-hour.mjs).
// Rows for bench/run.ts; alone: `npm run bench:footprint` (--db <postgres url>).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import type { Row } from './rows.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MB = 2 ** 20;

/** A footprint figure, as every benchmark's result row. */
export type FootprintRow = Row;

export interface Footprint {
  driver: 'pglite' | 'postgres';
  /** Process start to the first 200 from /readyz, ms. */
  readyMs: number;
  idleRssMb: number;
  afterQueriesRssMb: number;
  peakRssMb: number;
}

/** Resident set of a process, MB (VmRSS), and its high-water mark (VmHWM). */
function rssOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)![1]);
  return { rss: Math.round((kb('VmRSS') * 1024) / MB), hwm: Math.round((kb('VmHWM') * 1024) / MB) };
}

const readmeQueries = () => [...readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** How long an idle server is left alone before its memory is read: timers, first GCs, lazy work. */
const SETTLE_MS = 5000;

/** Starts `node dist/main.js`, measures it, stops it. `env` holds DATABASE_URL or DATA_DIR. */
export async function measureServer(env: Record<string, string>, opts: { queries?: boolean } = {}): Promise<Footprint> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/main.js')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'serving') resolve(entry.url!.replace(/\/graphql$/, ''));
      });
      child.once('exit', (code) => reject(new Error(`dist/main.js exited ${code} before serving`)));
    });
    // "serving" is logged once listening; ready is what a probe sees.
    while ((await fetch(`${url}/readyz`).catch(() => null))?.status !== 200) await new Promise((r) => setTimeout(r, 20));
    const readyMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const idle = rssOf(child.pid!);
    let after = idle;
    if (opts.queries !== false) {
      for (const query of readmeQueries()) {
        const res = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
        await res.text();
      }
      after = rssOf(child.pid!);
    }
    return { driver: env.DATABASE_URL ? 'postgres' : 'pglite', readyMs, idleRssMb: idle.rss, afterQueriesRssMb: after.rss, peakRssMb: rssOf(child.pid!).hwm };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

/** An hour of the live page on the embedded default, time-compressed (bench/live-hour.mjs). */
export function measureLiveHour(dataDir: string): {
  rssMb: number;
  peakRssMb: number;
  watchedJobs: number;
  events: number;
  errors: number;
  errorSamples: string[];
} {
  const res = spawnSync(process.execPath, [path.join(ROOT, 'bench/live-hour.mjs'), dataDir], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 600_000,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (res.status !== 0) throw new Error(`live-hour failed (exit ${res.status})`);
  return JSON.parse(res.stdout.trim().split('\n').at(-1)!);
}

export async function benchFootprint(opts: {
  postgresUrl: string;
  log?: (...a: unknown[]) => void;
}): Promise<{ rows: FootprintRow[]; details: Record<string, unknown> }> {
  const log = opts.log ?? console.error;
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (build.status !== 0) throw new Error('npm run build failed');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tg-footprint-'));
  const admin = postgres(opts.postgresUrl, { max: 1, onnotice: () => {} });
  const dbName = `tg_footprint_${process.pid}`;
  try {
    const first = await measureServer({ DATA_DIR: dataDir });
    log(`footprint: embedded, new folder: ${JSON.stringify(first)}`);
    const embedded = await measureServer({ DATA_DIR: dataDir });
    log(`footprint: embedded, restart: ${JSON.stringify(embedded)}`);
    const live = measureLiveHour(dataDir);
    log(`footprint: embedded, an hour of the live page: ${JSON.stringify(live)}`);
    await admin.unsafe(`drop database if exists ${dbName}`);
    await admin.unsafe(`create database ${dbName}`);
    const url = new URL(opts.postgresUrl);
    url.pathname = `/${dbName}`;
    const pg = await measureServer({ DATABASE_URL: url.toString() });
    log(`footprint: PostgreSQL: ${JSON.stringify(pg)}`);
    const pgSecond = await measureServer({ DATABASE_URL: url.toString() }, { queries: false });
    const rows: FootprintRow[] = [
      {
        scenario: 'idle RSS, embedded',
        measured: `${embedded.idleRssMb} MB (new folder ${first.idleRssMb} MB)`,
        baseline: `the same server on PostgreSQL ${pg.idleRssMb} MB`,
        ratio: embedded.idleRssMb / pg.idleRssMb,
        goal: '<= 400 MB',
        met: Math.max(embedded.idleRssMb, first.idleRssMb) <= 400,
      },
      {
        scenario: 'RSS after the README queries and an hour of the live page, embedded',
        measured: `${embedded.afterQueriesRssMb} MB after the queries (new folder ${first.afterQueriesRssMb} MB); ${live.rssMb} MB after the hour (${live.watchedJobs} jobs watched, ${live.events} events, ${live.errors} errors), peak ${Math.max(embedded.peakRssMb, first.peakRssMb, live.peakRssMb)} MB`,
        baseline: `PostgreSQL ${pg.afterQueriesRssMb} MB after the queries`,
        ratio: Math.max(embedded.afterQueriesRssMb, live.rssMb) / pg.afterQueriesRssMb,
        goal: '< 600 MB',
        // An hour that delivered nothing (or errors) measured an idle server, not the live page.
        met: Math.max(embedded.afterQueriesRssMb, first.afterQueriesRssMb, live.rssMb) < 600 && live.errors === 0 && live.events > 0,
      },
      {
        scenario: 'idle RSS and RSS after the README queries, PostgreSQL',
        measured: `${pg.idleRssMb} MB idle, ${pg.afterQueriesRssMb} MB after the queries`,
        baseline: 'none (the floor the embedded rows are compared with)',
        ratio: null,
        goal: 'report',
        met: null,
      },
      {
        scenario: 'time to ready, embedded',
        measured: `${(embedded.readyMs / 1000).toFixed(2)} s (new folder, initdb included: ${(first.readyMs / 1000).toFixed(2)} s)`,
        baseline: `PostgreSQL ${(pgSecond.readyMs / 1000).toFixed(2)} s`,
        ratio: embedded.readyMs / pgSecond.readyMs,
        goal: '<= 3 s',
        met: embedded.readyMs <= 3000,
      },
      {
        scenario: 'time to ready, PostgreSQL',
        measured: `${(pgSecond.readyMs / 1000).toFixed(2)} s (new database, migrations included: ${(pg.readyMs / 1000).toFixed(2)} s)`,
        baseline: 'none',
        ratio: null,
        goal: '<= 1.5 s',
        met: pgSecond.readyMs <= 1500,
      },
    ];
    return { rows, details: { embeddedNewFolder: first, embedded, liveHour: live, postgres: pg, postgresRestart: pgSecond } };
  } finally {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`).catch(() => {});
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' } } });
  const { rows, details } = await benchFootprint({ postgresUrl: values.db! });
  console.log(JSON.stringify(details, null, 2));
  console.log(
    [
      '| scenario | measured | baseline | goal | met |',
      '| --- | --- | --- | --- | --- |',
      ...rows.map((r) => `| ${r.scenario} | ${r.measured} | ${r.baseline} | ${r.goal} | ${r.met === null ? '—' : r.met ? 'yes' : 'no'} |`),
    ].join('\n'),
  );
  process.exit(0);
}
