// A real server for tests: the Baseten simulator on loopback with a controllable clock, our
// runtime in front of it, and a GraphQL helper that goes through yoga's fetch like a client.
import { pino } from 'pino';
import { expect } from 'vitest';
import { loadSecurityConfig } from '../../src/config/security.js';
import { startBasetenSimulator, type BasetenSimulator, type BasetenSimulatorOptions } from '../../src/simulators/baseten/server.js';
import type { PaiDlcSimulator } from '../../src/simulators/pai-dlc/index.js';
import { startRuntime, type Runtime, type RuntimeOptions } from '../../src/server/runtime.js';
import type { ProviderConfig } from '../../src/config/index.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface Clock {
  now(): number;
  set(ms: number): void;
  advance(ms: number): void;
}

export function manualClock(start: number): Clock {
  let t = start;
  return { now: () => t, set: (ms) => (t = ms), advance: (ms) => (t += ms) };
}

/** A fixed instant for deterministic fleets: 2026-11-20T12:00:00Z. */
export const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);

export interface GqlResult<T = any> {
  data?: T;
  errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[];
}

export interface TestServer {
  runtime: Runtime;
  sim: BasetenSimulator;
  clock: Clock;
  db: TestDatabase;
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<GqlResult<T>>;
  /** Stops the runtime (the database and simulator stay, e.g. for a restart). */
  stopRuntime(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  fleet?: BasetenSimulatorOptions['fleet'];
  cachePolicy?: RuntimeOptions['cachePolicy'];
  dataDir?: string;
  clockStart?: number;
  /** Request-limit settings as environment variables (e.g. MAX_QUERY_COST), for tests whose queries are large on purpose. */
  securityEnv?: Record<string, string>;
  /** Any other server setting (e.g. subgraphTypeNames). */
  config?: Partial<RuntimeOptions['config']>;
}

/** POSTs one GraphQL operation to a server over HTTP and returns its JSON answer (an abort rejects). */
export async function postGraphql(baseUrl: string, query: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<GqlResult> {
  const res = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
    signal,
  });
  return (await res.json()) as GqlResult;
}

/**
 * A GraphQL client of the server at `baseUrl` (read at each call: a suite's runtime starts in its
 * beforeAll), with `token` as its bearer when given, that fails the test on any error and answers the data.
 */
export function graphqlData(baseUrl: () => string, token?: string): (query: string, variables?: Record<string, unknown>) => Promise<any> {
  return async (query, variables) => {
    const res = await fetch(`${baseUrl()}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as GqlResult;
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    return body.data;
  };
}

/** The API tokens of startScopedDemoOn: `admin` sees every platform, `lensOnly` the Primus-Lens demo's jobs only. */
export const DEMO_TOKENS = { admin: 'admin-token-0123456789abcdef', lensOnly: 'lens-token-0123456789abcdef' } as const;

/** The embedded demo on `db`, on `clock`, with DEMO_TOKENS as its API tokens (the token scope under test). */
export function startScopedDemoOn(db: Pick<TestDatabase, 'databaseUrl' | 'dataDir'>, clock: Pick<Clock, 'now'>): Promise<Runtime> {
  return startRuntimeOn(db, null, {
    clock: clock.now,
    config: {
      security: loadSecurityConfig({
        API_TOKENS: JSON.stringify([
          { name: 'admin', token: DEMO_TOKENS.admin },
          { name: 'lens', token: DEMO_TOKENS.lensOnly, providers: ['primus-lens-demo'] },
        ]),
      }),
    },
  });
}

/**
 * A runtime on a test database with the given providers (null: the embedded demo), silent unless
 * given a `logDestination`, on a free loopback port; `config` overrides any other server setting (security, Redis...). The
 * collector is off unless `config.collect` turns it on: its sweeps on the wall clock would add
 * upstream calls the tests of other things count (test/collect/ drives it on the test's clock).
 */
export function startRuntimeOn(
  db: Pick<TestDatabase, 'databaseUrl' | 'dataDir'>,
  providers: ProviderConfig[] | null,
  opts: Omit<RuntimeOptions, 'config'> & { config?: Partial<RuntimeOptions['config']> } = {},
): Promise<Runtime> {
  const { config, ...rest } = opts;
  return startRuntime({
    config: {
      port: 0,
      host: '127.0.0.1',
      databaseUrl: db.databaseUrl,
      dataDir: db.dataDir,
      redisUrl: null,
      logLevel: 'silent',
      providers,
      collect: { enabled: false },
      ...config,
    },
    // A test that reads the log lines gives their destination (and a logLevel in `config`).
    logger: rest.logDestination ? undefined : pino({ level: 'silent' }),
    ...rest,
  });
}

/** A runtime on `db` over one PAI-DLC simulator (provider id `dlc`), with its credentials. */
export function startPaiDlcRuntimeOn(db: Pick<TestDatabase, 'databaseUrl' | 'dataDir'>, sim: PaiDlcSimulator): Promise<Runtime> {
  return startRuntimeOn(
    db,
    [{ id: 'dlc', kind: 'PAI_DLC', baseUrl: sim.url, regionId: sim.regionId, accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK', timeoutSeconds: 10 }],
    { env: { AK: sim.accessKeyId, SK: sim.accessKeySecret } },
  );
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const clock = manualClock(opts.clockStart ?? ANCHOR);
  const sim = await startBasetenSimulator({ seed: 7, anchorMs: ANCHOR, now: clock.now, fleet: opts.fleet, rateLimit: false });
  const db = await createTestDatabase(opts.dataDir);
  const providers: ProviderConfig[] = [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 10 }];
  const start = () =>
    startRuntimeOn(db, providers, {
      config: { ...opts.config, ...(opts.securityEnv ? { security: loadSecurityConfig(opts.securityEnv) } : {}) },
      env: { BT_KEY: sim.apiKey },
      cachePolicy: opts.cachePolicy,
      clock: clock.now,
    });
  let runtime = await start();
  const server: TestServer = {
    get runtime() {
      return runtime;
    },
    sim,
    clock,
    db,
    async gql(query, variables) {
      const res = await runtime.app.fetch('http://yoga/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      return (await res.json()) as GqlResult;
    },
    async stopRuntime() {
      await runtime.close();
    },
    async restart() {
      runtime = await start();
    },
    async close() {
      await runtime.close().catch(() => {});
      await sim.close();
      await db.drop();
    },
  };
  return server;
}

/** Resolves when the simulator receives its next request of `route` (subscribe before causing it). */
export function nextRequest(sim: { events: import('node:events').EventEmitter }, route: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const onRequest = (r: string) => {
      if (r !== route) return;
      sim.events.off('request', onRequest);
      resolve();
    };
    sim.events.on('request', onRequest);
  });
}
