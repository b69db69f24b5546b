// Wires one running server: database, providers (configured or the demo simulators), the
// read-through store, the yoga app, and one HTTP server with the probes.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { AppConfig, ProviderConfig, SecretSource } from '../config/index.js';
import { ProviderSet, type ProviderInstance } from '../providers/provider-set.js';
import { createAdapter } from '../providers/registry.js';
import { startDemoProviders, type DemoProvider } from '../simulators/demo.js';
import { openDatabase, type Database } from '../store/db.js';
import { DEFAULT_CACHE_POLICY, ReadThrough, type CachePolicy } from '../store/read-through.js';
import { Repository } from '../store/repository.js';
import type { Limits } from '../schema/context.js';
import { createApp, type App } from './yoga.js';
import { startLive, type LiveRuntime } from './live.js';
import type { LiveOptions } from '../live/hub.js';
import { attachGraphqlWs, DEFAULT_WS_LIMITS, type WsLimits } from './ws.js';

export interface RuntimeOptions {
  config: AppConfig;
  /** Where provider *Env names are resolved; the process environment by default. */
  env?: SecretSource;
  logger?: Logger;
  cachePolicy?: Partial<CachePolicy>;
  limits?: Limits;
  clock?: () => number;
  /** Demo simulators' working folder (Runicorn writes its storage there). */
  demoWorkDir?: string;
  live?: Partial<LiveOptions>;
  ws?: Partial<WsLimits>;
}

export interface Runtime {
  url: string;
  app: App;
  server: http.Server;
  database: Database;
  readThrough: ReadThrough;
  providers: ProviderSet;
  demo: DemoProvider[];
  logger: Logger;
  live: LiveRuntime;
  close(): Promise<void>;
}

export function buildProviders(configs: ProviderConfig[], env: SecretSource, simulated: boolean): ProviderInstance[] {
  return configs.map((c) => ({
    id: c.id,
    kind: c.kind,
    name: c.name ?? c.id,
    simulated,
    pollIntervalSeconds: c.pollIntervalSeconds ?? null,
    adapter: createAdapter(c, env),
  }));
}

export async function startRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const { config } = opts;
  const logger = opts.logger ?? pino({ level: config.logLevel, redact: { paths: ['*.password', '*.secret', '*.apiKey', '*.token'], censor: '[redacted]' } });
  const demo = config.providers ? [] : await startDemoProviders({ workDir: opts.demoWorkDir, now: opts.clock });
  const configs = config.providers ?? demo.map((d) => d.config);
  const env: SecretSource = config.providers ? (opts.env ?? process.env) : Object.assign({}, ...demo.map((d) => d.secrets));
  const providers = new ProviderSet(buildProviders(configs, env, !config.providers));

  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const repo = new Repository(database.db);
  await repo.upsertProviders(providers.all().map((p) => ({ id: p.id, kind: p.kind, name: p.name, simulated: p.simulated })));
  const readThrough = new ReadThrough(repo, providers, { ...DEFAULT_CACHE_POLICY, ...opts.cachePolicy }, opts.clock);
  const live = await startLive({ config, readThrough, logger, options: opts.live });
  const app = createApp({ readThrough, providers, logger, limits: opts.limits, live: live.hub });

  let ready = true;
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (req.url === '/readyz') {
      void readiness(database, ready).then(([status, body]) => res.writeHead(status, { 'content-type': 'application/json' }).end(body));
      return;
    }
    void app.handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const ws = attachGraphqlWs(server, app, { ...DEFAULT_WS_LIMITS, ...opts.ws });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  logger.info({ url: `${url}/graphql`, database: database.driver, providers: providers.all().map((p) => `${p.id} (${p.kind}${p.simulated ? ', simulated' : ''})`) }, 'serving');

  return {
    url,
    app,
    server,
    database,
    readThrough,
    providers,
    demo,
    logger,
    live,
    async close() {
      ready = false;
      await ws.close();
      await live.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await providers.close();
      await Promise.all(demo.map((d) => d.close()));
      await database.close();
    },
  };
}

async function readiness(database: Database, accepting: boolean): Promise<[number, string]> {
  if (!accepting) return [503, '{"status":"shutting down"}'];
  try {
    await database.db.execute('select 1' as never);
    return [200, '{"status":"ready"}'];
  } catch {
    return [503, '{"status":"database unavailable"}'];
  }
}
