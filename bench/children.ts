// What the load benches share: bench scripts started as child processes (forked, ready when they
// send their first message, answering commands by id), a fresh PostgreSQL database per run, a free
// port, a GraphQL POST that must succeed, and wrk runs that POST a JSON body.
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export interface Child {
  url: string;
  ready: any;
  /** Sends a command and resolves with the child's answer (the message carrying the same id). */
  request(message: Record<string, unknown>): Promise<any>;
  /** CPU time the child has used so far, in microseconds (children that answer `cpu`). */
  cpu(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Forks bench/<script> with its options as JSON; resolves with its first message. `root`: another
 * checkout whose script runs instead, with that checkout's own tsx and sources (bench/load-ab.ts).
 */
export function startChild(script: string, options: unknown, root = path.resolve(HERE, '..')): Promise<Child> {
  const child: ChildProcess = fork(path.join(root, 'bench', script), [JSON.stringify(options)], {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    // Servers and floors run as deployed (the Dockerfile sets NODE_ENV=production): graphql-js
    // otherwise checks every failed instanceof for a second copy of itself, on both sides.
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${path.join(root, 'bench', script)} exited (${code}) before it was ready`)));
    child.once('message', (m: any) => {
      child.removeAllListeners('exit');
      let seq = 0;
      const request = (message: Record<string, unknown>) =>
        new Promise<any>((done) => {
          const id = ++seq;
          const on = (r: any) => r.id === id && (child.off('message', on), done(r));
          child.on('message', on);
          child.send({ ...message, id });
        });
      resolve({
        url: m.url,
        ready: m,
        request,
        cpu: async () => (await request({ cmd: 'cpu' })).cpuUs,
        close: () =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => (child.kill('SIGKILL'), done()), 20_000);
            child.once('exit', () => (clearTimeout(timer), done()));
            child.send({ cmd: 'close' });
          }),
      });
    });
  });
}

/** A new database on the PostgreSQL of `adminUrl`, named `<prefix>_<pid>_<ms>`; drop() removes it. */
export async function freshPostgresDatabase(adminUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const { default: postgres } = await import('postgres');
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const name = `${prefix}_${process.pid}_${Date.now()}`;
  await admin.unsafe(`create database ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

/**
 * Where a benchmark's server keeps its data: a fresh Postgres database on the server at `adminUrl`
 * (named from `prefix`), or, with `pgliteDir`, PGlite in that folder on disk, as the embedded
 * default keeps it (in memory, its file system grows a table's file by copying it). drop() removes
 * either.
 */
export async function freshServerDatabase(choice: { postgres: string; prefix: string } | { pgliteDir: string }): Promise<ServerDatabase> {
  if ('postgres' in choice) {
    const fresh = await freshPostgresDatabase(choice.postgres, choice.prefix);
    return serverDatabase(fresh.url, 'memory://bench', fresh.drop);
  }
  mkdirSync(choice.pgliteDir, { recursive: true });
  return serverDatabase(null, choice.pgliteDir, async () => rmSync(choice.pgliteDir, { recursive: true, force: true }));
}

export interface ServerDatabase {
  databaseUrl: string | null;
  dataDir: string;
  /** An in-process server's settings on it: loopback on any free port, no Redis, no log. */
  config: { port: 0; host: '127.0.0.1'; databaseUrl: string | null; dataDir: string; redisUrl: null; logLevel: 'silent' };
  drop(): Promise<void>;
}

function serverDatabase(databaseUrl: string | null, dataDir: string, drop: () => Promise<void>): ServerDatabase {
  return { databaseUrl, dataDir, config: { port: 0, host: '127.0.0.1', databaseUrl, dataDir, redisUrl: null, logLevel: 'silent' }, drop };
}

/** A TCP port free on loopback now. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** POSTs a GraphQL request; throws unless it answered 200 without errors. */
export async function post(url: string, body: unknown): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as any;
  if (res.status !== 200 || json.errors) throw new Error(`${url}: ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

export interface WrkPoster {
  /** A folder of its own (the bench may keep other files there); removed by the caller. */
  dir: string;
  /**
   * wrk POSTing `body` as JSON to `url` for `seconds` with `connections` open (`threads`, default
   * one: a second competed with the server for a 2-core machine's cores; with `latency`, its
   * latency distribution too): its report, and the requests and req/s it counted.
   */
  run(
    url: string,
    body: unknown,
    o: { connections: number | string; seconds: number | string; latency?: boolean; threads?: number },
  ): { stdout: string; requests: number; rps: number };
}

/** wrk's runs that POST a JSON body, through a script in a folder of its own. */
export function wrkPostScript(prefix: string): WrkPoster {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const lua = path.join(dir, 'post.lua');
  writeFileSync(
    lua,
    `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BODY_FILE"), "r"); wrk.body = f:read("*a"); f:close()
`,
  );
  let seq = 0;
  return {
    dir,
    run(url, body, o) {
      const file = path.join(dir, `body-${++seq}.json`);
      writeFileSync(file, JSON.stringify(body));
      const args = [`-t${o.threads ?? 1}`, `-c${o.connections}`, `-d${o.seconds}s`, ...(o.latency ? ['--latency'] : []), '-s', lua, url];
      const out = spawnSync('wrk', args, { env: { ...process.env, BODY_FILE: file }, encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`wrk failed: ${out.stderr || out.stdout}`);
      return {
        stdout: out.stdout,
        requests: Number(/(\d+) requests in/.exec(out.stdout)?.[1] ?? NaN),
        rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out.stdout)?.[1] ?? NaN),
      };
    },
  };
}
