// A Postgres cluster and a Redis server of the test's own, on free loopback ports, that the test may
// kill outright (SIGKILL, as an OOM kill or a lost container would) and start again on the same port
// and data: the shared services other test files use must never be the ones killed.
// Postgres runs from the machine's own binaries (pg_config --bindir); as root it runs as the
// `postgres` user, since Postgres refuses to run as root.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { accepts, freePort } from './net.js';
import { eventually } from './wait.js';

/** Every live process whose parent is `pid` (a postmaster's backends and workers). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name is in parentheses and may hold spaces; the parent pid is 2nd after it.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** SIGKILL the postmaster and every backend at once: a crash, not a shutdown. */
  kill(): Promise<void>;
  /** Starts it again on the same data directory (crash recovery from the WAL) and waits until it accepts logins. */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(path.join(tmpdir(), 'tg-private-pg-'));
  const dataDir = path.join(dir, 'data');
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
    chownSync(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) => {
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bindir, tool), ...args]] : [path.join(bindir, tool), args];
    return execFileSync(cmd as string, argv as string[], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  };
  run('initdb', ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const port = await freePort();
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c shared_buffers=32MB -c max_connections=60`;
  const logFile = path.join(dir, 'server.log');
  const start = async () => {
    try {
      run('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', serverOptions, 'start']);
    } catch (err) {
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') : '(no log)';
      throw new Error(`the private Postgres did not start: ${(err as Error).message}\n${log}`);
    }
    await eventually(() => accepts('127.0.0.1', port), 30_000, 'the private Postgres to accept connections');
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async kill() {
      const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const all = [pid, ...childrenOf(pid)];
      for (const p of all) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      // Until every process is reaped: a new postmaster refuses to start while the old pid exists.
      await eventually(async () => all.every((p) => !existsSync(`/proc/${p}`)), 10_000, 'the killed Postgres processes to be reaped');
      expect(await accepts('127.0.0.1', port)).toBe(false);
    },
    start,
    async destroy() {
      try {
        run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Not running (a test killed it and did not start it again).
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  kill(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** A Redis that keeps nothing on disk, as the machine's own: a restart empties it. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await eventually(() => accepts('127.0.0.1', port), 10_000, 'the private Redis to accept connections');
  };
  const kill = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, kill, start, destroy: kill };
}
