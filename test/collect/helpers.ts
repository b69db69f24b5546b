// Driving a runtime's collector on a clock the test moves: time passes in steps, and each step
// waits for the sweeps it made due to finish, so "one sweep per interval" holds whatever the
// machine's speed.
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { startClockedBaseten } from '../support/clocked-baseten.js';
import type { TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { ANCHOR, startRuntimeOn } from '../support/runtime.js';
import { HANG_MS } from '../support/wait.js';

export interface CollectedBaseten {
  timers: ManualTimers;
  sim: BasetenSimulator;
  db: TestDatabase;
  rt: Runtime;
  close(): Promise<void>;
}

/**
 * One Baseten platform (provider id `bt`) collected on the test's clock from ANCHOR, on `db` (the
 * test file opens it: test/support/passes.ts finds the files of the Postgres pass by that call),
 * dropped by close(). The simulator's data, the cache, the feeds' and the collector's timers all
 * read `timers`. `provider` adds to the provider's entry (its collect settings), `runtime` to the server's options.
 */
export async function startCollectedBaseten(
  db: TestDatabase,
  seed: string,
  fleet: Parameters<typeof startClockedBaseten>[2],
  opts: { intervalMs: number; provider?: Partial<Extract<ProviderConfig, { kind: 'BASETEN' }>>; runtime?: Parameters<typeof startRuntimeOn>[2] },
): Promise<CollectedBaseten> {
  const timers = new ManualTimers(ANCHOR);
  const sim = await startClockedBaseten(seed, timers, fleet);
  const { config, ...runtime } = opts.runtime ?? {};
  const rt = await startRuntimeOn(
    db,
    [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', pollIntervalSeconds: opts.intervalMs / 1000, ...opts.provider }],
    { env: { BT_KEY: sim.apiKey }, config: { collect: { enabled: true }, ...config }, clock: () => timers.now(), liveTimers: timers, ...runtime },
  ).catch(async (err) => {
    await sim.close();
    await db.drop();
    throw err;
  });
  return {
    timers,
    sim,
    db,
    rt,
    async close() {
      await rt.close();
      await sim.close();
      await db.drop();
    },
  };
}

/**
 * Waits until no sweep is under way or due at once, nor any cache write (on the collector's events,
 * not by polling). A sweep is called hung only after HANG_MS in which it sent the database nothing:
 * a first sweep that fills hours of history into PGlite took more than HANG_MS on a loaded machine
 * while working all along.
 */
export async function sweepsSettled(rt: Runtime): Promise<void> {
  const collector = rt.collector!;
  while (collector.busy()) {
    await new Promise<void>((resolve, reject) => {
      let statements = rt.database.statementCount();
      let movedAt = Date.now();
      const watch = setInterval(() => {
        const now = rt.database.statementCount();
        if (now !== statements) {
          statements = now;
          movedAt = Date.now();
        } else if (Date.now() - movedAt > HANG_MS) {
          clearInterval(watch);
          collector.events.off('sweep', ended);
          reject(new Error(`timed out waiting for a collector sweep to finish (no statement for ${HANG_MS} ms)`));
        }
      }, 1000);
      const ended = () => {
        clearInterval(watch);
        resolve();
      };
      collector.events.once('sweep', ended);
    });
  }
  await rt.readThrough.settle();
}

/** Moves the clock `totalMs` forward in `stepMs` steps, letting each step's sweeps finish. */
export async function runFor(rt: Runtime, timers: ManualTimers, totalMs: number, stepMs = 1000): Promise<void> {
  await sweepsSettled(rt);
  for (let t = 0; t < totalMs; t += stepMs) {
    timers.advance(Math.min(stepMs, totalMs - t));
    await sweepsSettled(rt);
  }
}

export async function gql(rt: Runtime, query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await rt.app.fetch('http://yoga/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return res.json();
}

export interface ScrapeReading {
  labels: Record<string, string>;
  value: number;
  ts: number;
}

/** The per-accelerator readings of GET /metrics/jobs (Prometheus text, ms stamps). */
export async function scrapeJobs(rt: Runtime): Promise<ScrapeReading[]> {
  const text = await (await fetch(`${rt.url}/metrics/jobs`)).text();
  const out: ScrapeReading[] = [];
  for (const line of text.split('\n')) {
    const m = /^(training_graph_accelerator_\w+)\{(.*)\} (\S+) (\d+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    out.push({ labels: { ...labels, family: m[1]! }, value: Number(m[3]), ts: Number(m[4]) });
  }
  return out;
}
