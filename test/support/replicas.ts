// Server processes (src/main.ts) as production runs them, several at once on one database, for the
// tests of what replicas share (leases, locks, the event bus): each test keeps its own set, kills
// one when it wants to, and ends every survivor in its afterAll.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './net.js';
import { eventually } from './wait.js';

export interface Replica {
  url: string;
  child: ChildProcess;
}

/** Resolves once the process has exited (at once when it already has). */
export const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));

export class ReplicaSet {
  private readonly children: ChildProcess[] = [];

  /** Starts one server with `env` (its whole environment; PORT and HOST are added) and waits until it is ready. */
  async start(env: NodeJS.ProcessEnv, name = 'a replica'): Promise<Replica> {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    this.children.push(child);
    const url = `http://127.0.0.1:${port}`;
    await eventually(async () => (await fetch(`${url}/readyz`).catch(() => null))?.status === 200, 30_000, `${name} to become ready`);
    return { url, child };
  }

  /** Kills every replica still running and waits for them to exit. */
  async close(): Promise<void> {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(this.children.map(exited));
  }
}

/** A replica's own word: the value of the /metrics line that starts with `series` (its name, with its labels if any). */
export async function gaugeOf(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (!line) throw new Error(`no ${series} in /metrics`);
  return Number(line.slice(series.length + 1).split(' ')[0]);
}
