// Shared setup for the live tests: a Baseten simulator, runtimes wired to it, graphql-ws clients.
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { memoryDataDir } from '../support/pglite-template.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';
import type { AppConfig } from '../../src/config/index.js';
import type { Runtime, RuntimeOptions } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator, type BasetenSimulatorOptions } from '../../src/simulators/baseten/server.js';

export const PROVIDER_ID = 'bt';

/** The live tests' fleet; `clock` puts its data on a clock the test moves (default: the wall clock). */
export async function startSim(clock: Pick<BasetenSimulatorOptions, 'anchorMs' | 'now'> = {}): Promise<BasetenSimulator> {
  return startBasetenSimulator({
    seed: 'live-test',
    rateLimit: false,
    fleet: { projects: 1, jobsPerProject: 4, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 4 },
    ...clock,
  });
}

export function runningJobId(sim: BasetenSimulator): string {
  const job = sim.fleet.jobs.find((j) => j.status === 'TRAINING_JOB_RUNNING');
  if (!job) throw new Error('fleet has no running job');
  return `${PROVIDER_ID}:job:${job.id}`;
}

export function providersFile(sim: BasetenSimulator, pollIntervalSeconds: number) {
  return { providers: [{ id: PROVIDER_ID, kind: 'BASETEN' as const, baseUrl: sim.url, apiKeyEnv: 'LIVE_TEST_BASETEN_KEY', pollIntervalSeconds }] };
}

export async function startTestRuntime(
  sim: BasetenSimulator,
  pollIntervalSeconds: number,
  extra: Partial<AppConfig> = {},
  opts: Partial<Omit<RuntimeOptions, 'config'>> = {},
): Promise<Runtime> {
  // An in-memory PGlite unless `extra` names a database.
  return startRuntimeOn({ databaseUrl: null, dataDir: memoryDataDir() }, providersFile(sim, pollIntervalSeconds).providers, {
    env: { LIVE_TEST_BASETEN_KEY: sim.apiKey },
    ...opts,
    config: extra,
  });
}

export function wsUrl(httpUrl: string): string {
  return `${httpUrl.replace(/^http/, 'ws')}/graphql`;
}

export function client(httpUrl: string): Client {
  return createClient({ url: wsUrl(httpUrl), webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
}

/** The selection of a full sample: its series are MetricSeries, as Job.metrics answers them. */
export const SAMPLE_FIELDS = /* GraphQL */ `
  job { id status } polledAt from to granularity final interval
  series { id name scope unit node { id name } gpu { id index } points { timestamp value } }`;

/** Just the poll: what a test of poll sharing needs (no series read per subscriber). */
export const POLL_FIELDS = /* GraphQL */ `polledAt from to granularity final interval`;

export const utilizationQuery = (fields: string = SAMPLE_FIELDS, maxPoints = 5_000) => /* GraphQL */ `
  subscription U($id: ID!) {
    jobUtilization(jobId: $id, maxPoints: ${maxPoints}) { ${fields} }
  }`;

export interface LiveSeries {
  id: string;
  name: string;
  scope: 'GPU' | 'NODE' | 'JOB';
  unit: string;
  node: { id: string; name: string } | null;
  gpu: { id: string; index: number } | null;
  points: { timestamp: string; value: number | null }[];
}

export interface Sample {
  job: { id: string; status: string } | null;
  polledAt: string;
  from: string;
  to: string;
  granularity: string;
  final: boolean;
  /** ISO-8601 duration. */
  interval: string;
  series: LiveSeries[];
}

/** Every point of every series of a sample with the given metric name. */
export function seriesNamed(s: Sample, name: string): LiveSeries[] {
  return s.series.filter((x) => x.name === name);
}

export interface Subscriber {
  samples: Sample[];
  errors: unknown[];
  completed: boolean;
  stop(): void;
}

export function subscribeUtilization(c: Client, jobId: string, fields: string = SAMPLE_FIELDS): Subscriber {
  const sub: Subscriber = { samples: [], errors: [], completed: false, stop: () => {} };
  sub.stop = c.subscribe<{ jobUtilization: Sample }>(
    { query: utilizationQuery(fields), variables: { id: jobId } },
    {
      next: (r) => {
        if (r.data?.jobUtilization) sub.samples.push(r.data.jobUtilization);
        if (r.errors) sub.errors.push(...r.errors);
      },
      error: (e) => sub.errors.push(e),
      complete: () => {
        sub.completed = true;
      },
    },
  );
  return sub;
}

/** Waits for `cond` to hold; the time-out only calls a hang (at least HANG_MS, test/support/wait.ts). */
export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  await eventually(() => cond() || undefined, timeoutMs, what);
}
