// Wires one running server: database, providers (configured or the demo simulators), the
// read-through store, the yoga app, and one HTTP server with the probes.
import { tuneGarbageCollector } from './gc-tuning.js';
import { PromApi } from '../promql/index.js';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { destination, pino, type DestinationStream, type Logger } from 'pino';
import {
  type AppConfig,
  type ProviderConfig,
  type SecretSource,
  ConfigError,
  DEFAULT_HEAP_GROWING_PERCENT,
  DEFAULT_REQUEST_LIMITS,
  isLoopbackHost,
  ledgerSettings,
  receiverSettings,
  type TokenStore,
} from '../config/index.js';
import { ProviderSet, type ProviderInstance, type ResilienceOptions } from '../providers/provider-set.js';
import { type AdapterOptions, createAdapter } from '../providers/registry.js';
import { onShapeMismatch } from '../providers/shape-watch.js';
import type { DemoProvider } from '../simulators/demo.js';
import { openDatabase, type Database } from '../store/db.js';
import { DEFAULT_CACHE_POLICY, ReadThrough, type CachePolicy } from '../store/read-through.js';
import { Repository } from '../store/repository.js';
import { Store } from '../store/index.js';
import { type Limits, printedSubgraph, SubgraphNamesError } from '../schema/index.js';
import { createApp, type App } from './yoga.js';
import type { Plugin } from 'graphql-yoga';
import { startLive, type LiveRuntime } from './live.js';
import { type LiveOptions, type LiveTimers, REAL_TIMERS } from '../live/index.js';
import { attachGraphqlWs, DEFAULT_WS_LIMITS, type WsLimits } from './ws.js';
import { scrubSecrets } from '../domain/secrets.js';
import { OutgoingGuard } from './outgoing-guard.js';
import { Metrics } from './metrics.js';
import { createHttpFront, type HttpFront } from './http-front.js';
import { useMetrics } from './plugins/use-metrics.js';
import { useTracing } from './plugins/use-tracing.js';
import { Collector, defaultSettings, type CollectSettings } from '../collect/index.js';
import { FindingsEngine, type ThresholdOverride } from '../findings/index.js';
import { AlertDeliverer, routesOf } from '../alerts/index.js';
import { projectGlobalId } from '../domain/ids.js';
import { type ByteBoundedApqStore, createByteBoundedApqStore } from './apq-store.js';
import { createRuntimeServer } from './runtime-http.js';
import type { Tracing } from './tracing.js';

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
  /** The instant the demo fleets are laid out around; default the start of the current UTC day (DemoOptions.anchorMs). */
  demoAnchorMs?: number;
  live?: Partial<LiveOptions>;
  /** The live feeds' clock and timers (tests advance their own); default the real ones. */
  liveTimers?: LiveTimers;
  /** The collector's clock and timers; default liveTimers, else the real ones. */
  collectTimers?: LiveTimers;
  /** The findings evaluator's clock and timers; default collectTimers, then liveTimers, else the real ones. */
  findingsTimers?: LiveTimers;
  /** Alert delivery's clock and timers; default findingsTimers, then collectTimers, then liveTimers, else the real ones. */
  alertTimers?: LiveTimers;
  /** What a provider's upstream calls time out on (AdapterOptions.timers), by provider id; default the real clock. */
  upstreamTimers?: (providerId: string) => AdapterOptions['timers'];
  ws?: Partial<WsLimits>;
  /** Envelop plugins after the server's own (tests use one to change results per subscriber). */
  plugins?: Plugin[];
  /** Retries, circuit breaker and concurrency limit around every upstream call (src/providers/provider-set.ts). */
  resilience?: Partial<ResilienceOptions>;
  /** Where the runtime's own logger writes (stdout by default); ignored when `logger` is given. */
  logDestination?: DestinationStream;
  /** How long close() waits for in-flight requests and cache writes before cutting them off. Default 10000 ms. */
  shutdownGraceMs?: number;
}

export interface Runtime {
  url: string;
  app: App;
  server: http.Server;
  database: Database;
  /** The store's door, as the server holds it (what HTTP routes beside GraphQL read through). */
  store: Store;
  tokens: TokenStore | null;
  readThrough: ReadThrough;
  providers: ProviderSet;
  demo: DemoProvider[];
  logger: Logger;
  live: LiveRuntime;
  /** The continuous collector; null with COLLECT=off (read-through only). */
  collector: Collector | null;
  /** The findings evaluator (src/findings/); null when off (FINDINGS=off, or no collector). */
  findings: FindingsEngine | null;
  /** Alert delivery (src/alerts/): on wherever the evaluator is, whether or not `alerts:` names receivers (it empties the outbox). */
  alerts: AlertDeliverer | null;
  metrics: Metrics;
  /** The persisted queries (APQ) this replica knows, bounded by requestLimits.apqStoreMaxBytes. */
  apqStore: ByteBoundedApqStore;
  /**
   * Graceful stop: refuses new connections (readyz turns 503), lets in-flight requests finish
   * (bounded by shutdownGraceMs), closes graphql-ws subscribers with 1001 Going Away, stops the
   * pollers once their cache writes are done (their locks released), then closes the rest.
   */
  close(): Promise<void>;
}

/**
 * `clock`: the server's (RuntimeOptions.clock), which adapters that sign requests sign with;
 * `timers`: what each provider's calls time out on (RuntimeOptions.upstreamTimers).
 */
export function buildProviders(
  configs: ProviderConfig[],
  env: SecretSource,
  simulated: boolean,
  clock?: () => number,
  timers?: RuntimeOptions['upstreamTimers'],
): ProviderInstance[] {
  return configs.map((c) => {
    const upstream = timers?.(c.id);
    return {
      id: c.id,
      kind: c.kind,
      name: c.name ?? c.id,
      simulated,
      pollIntervalSeconds: c.pollIntervalSeconds ?? null,
      adapter: createAdapter(c, env, { ...(clock ? { now: clock } : {}), ...(upstream ? { timers: upstream } : {}) }),
    };
  });
}

export async function startRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const { config } = opts;
  tuneGarbageCollector(config.v8HeapGrowingPercent ?? DEFAULT_HEAP_GROWING_PERCENT);
  const tokens = config.security?.tokens ?? null;
  const { subgraphSdl, receivers } = checkStartupConfig({ config, tokens, env: opts.env });
  const logger = createRuntimeLogger(opts);
  const { demo, ledger, configs, providers } = await buildProviderSet(opts);
  const { database, readThrough, store } = await openStore({ opts, providers, demo });
  // With the collector on, a live poll is served by a fetch anyone made in the interval (one call per job and interval).
  const live = await startLive({ config, store, logger, options: { shareFetches: Boolean(config.collect?.enabled), ...opts.live }, timers: opts.liveTimers });
  const { collector, findings, alerts, metrics } = buildCollectorFindingsAlerts({
    opts,
    configs,
    receivers,
    database,
    store,
    readThrough,
    providers,
    live,
    logger,
  });
  const stopShapeWarnings = warnOnShapeMismatches(
    providers.all().map((p) => p.id),
    logger,
  );
  const tracingModule = config.tracing ? await import('./tracing.js') : null;
  const tracing = config.tracing && tracingModule ? tracingModule.startTracing(config.tracing) : null;
  if (tracing) tracingModule!.traceUpstreamCalls(providers, tracing.tracer);
  const front = createHttpFront(logger, metrics);
  const requestLimits = config.security?.requestLimits ?? DEFAULT_REQUEST_LIMITS;
  // One persisted-query store for HTTP and graphql-ws: a hash registered over one is known to the other.
  const apqStore = createByteBoundedApqStore(requestLimits.apqStoreMaxBytes);
  const app = createApp({
    apqStore,
    store,
    logger,
    limits: opts.limits,
    live: live.hub,
    requestLimits: config.security?.requestLimits,
    tokens,
    corsOrigins: config.security?.corsOrigins,
    executor: config.executor,
    subgraphSdl,
    ledger,
    plugins: [useMetrics(metrics, logger), ...(tracing ? [useTracing(tracing.tracer)] : []), ...(opts.plugins ?? [])],
  });
  const graceMs = opts.shutdownGraceMs ?? 10_000;

  const limits = config.security?.requestLimits ?? DEFAULT_REQUEST_LIMITS;
  // The query API's time limit is the graph's execution timeout: one limit for every read.
  const promApi = new PromApi({ store, timeoutMs: limits.executionTimeoutMs });
  const guard = new OutgoingGuard(logger, (transport) => metrics.secretFindings.inc({ transport }));
  let ready = true;
  const server = createRuntimeServer({
    app,
    store,
    tokens,
    metricsToken: config.security?.metricsToken ?? null,
    logger,
    metrics,
    front,
    guard,
    promApi,
    maxBodyBytes: limits.maxBodyBytes,
    limits: opts.limits,
    readiness: () => readiness(database, ready),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const ws = attachGraphqlWs(server, app, { ...DEFAULT_WS_LIMITS, ...opts.ws }, tokens, guard, apqStore, {
    next: (payload) => metrics.wsNextMessages.inc({ payload }),
    sharedPayload: () => metrics.wsSharedPayloads.inc(),
  });
  // Started once the server answers: readiness and the first requests never wait on the first sweep.
  collector?.start();
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  logger.info(
    { url: `${url}/graphql`, database: database.driver, providers: providers.all().map((p) => `${p.id} (${p.kind}${p.simulated ? ', simulated' : ''})`) },
    'serving',
  );

  return {
    url,
    app,
    server,
    database,
    store,
    tokens,
    readThrough,
    providers,
    demo,
    logger,
    live,
    collector,
    findings,
    alerts,
    metrics,
    apqStore,
    async close() {
      ready = false;
      await closeRuntime({
        server,
        ws,
        front,
        graceMs,
        logger,
        findings,
        alerts,
        collector,
        live,
        readThrough,
        tracing,
        providers,
        stopShapeWarnings,
        metrics,
        demo,
        database,
      });
    },
  };
}

/** The configuration's checks made before anything starts, and what they yield. */
function checkStartupConfig(ctx: { config: AppConfig; tokens: TokenStore | null; env: SecretSource | undefined }): {
  subgraphSdl: string | undefined;
  receivers: ReturnType<typeof receiverSettings>;
} {
  const { config, tokens } = ctx;
  // The demo (no providers file: simulators in process) has nothing to protect, so `docker compose
  // up` serves it with nothing to prepare; a providers file needs tokens or ALLOW_OPEN.
  if (!tokens?.configured && !config.security?.allowOpen && !isLoopbackHost(config.host) && config.providers !== null) {
    throw new ConfigError(
      `HOST=${config.host} is not a loopback address and no API tokens are configured (API_TOKENS or API_TOKENS_FILE): ` +
        'anyone who can reach it would see every provider. Configure tokens, bind to 127.0.0.1, or set ALLOW_OPEN=true behind something that authenticates.',
    );
  }
  // Checked before anything starts: a type a router could name cannot take another name.
  let subgraphSdl: string | undefined;
  if (config.subgraphTypeNames && config.subgraphTypeNames.size > 0) {
    try {
      subgraphSdl = printedSubgraph(config.subgraphTypeNames);
    } catch (err) {
      if (err instanceof SubgraphNamesError) throw new ConfigError(err.message);
      throw err;
    }
  }
  // Alert receivers' URLs and tokens from the environment, checked before anything starts.
  let receivers: ReturnType<typeof receiverSettings> = [];
  try {
    receivers = config.alerts ? receiverSettings(config.alerts, ctx.env ?? process.env) : [];
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return { subgraphSdl, receivers };
}

/** RuntimeOptions.logger, else the runtime's own. */
function createRuntimeLogger(opts: RuntimeOptions): Logger {
  // Every log line is scrubbed of every provider secret (registered as adapters read them), in any spelling.
  const loggerOptions = {
    level: opts.config.logLevel,
    redact: { paths: ['*.password', '*.secret', '*.apiKey', '*.token', '*.authorization', '*.headers.authorization'], censor: '[redacted]' },
    hooks: { streamWrite: (line: string) => scrubSecrets(line) },
  };
  // stdout is written synchronously: pino's default async stream, flushed by process.exit(), can
  // reorder or drop the last lines when a write is still in the thread pool (seen on SIGTERM).
  return opts.logger ?? pino(loggerOptions, opts.logDestination ?? destination({ dest: 1, sync: true }));
}

/** The providers: the providers file's, or the demo simulators started in process. */
async function buildProviderSet(opts: RuntimeOptions): Promise<{
  demo: DemoProvider[];
  ledger: ReturnType<typeof ledgerSettings>;
  configs: ProviderConfig[];
  providers: ProviderSet;
}> {
  const { config } = opts;
  // The simulators (and the OpenTelemetry SDK below) are loaded only when used: a deployment with a
  // providers file never has them in memory.
  const demoModule = config.providers ? null : await import('../simulators/demo.js');
  const demo = demoModule ? await demoModule.startDemoProviders({ workDir: opts.demoWorkDir, now: opts.clock, anchorMs: opts.demoAnchorMs }) : [];
  // The demo brings its example price table; a providers file its own `ledger` entry, or none.
  const ledger = ledgerSettings(config.ledger ?? demoModule?.DEMO_LEDGER);
  const configs = config.providers ?? demo.map((d) => d.config);
  const env: SecretSource = config.providers ? (opts.env ?? process.env) : Object.assign({}, ...demo.map((d) => d.secrets));
  const providers = new ProviderSet(buildProviders(configs, env, !config.providers, opts.clock, opts.upstreamTimers), opts.resilience);
  return { demo, ledger, configs, providers };
}

/** The database, with the providers recorded, and the read-through store over it. */
async function openStore(ctx: { opts: RuntimeOptions; providers: ProviderSet; demo: DemoProvider[] }): Promise<{
  database: Database;
  readThrough: ReadThrough;
  store: Store;
}> {
  const { opts, providers, demo } = ctx;
  const { config } = opts;
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    maxConnections: config.databasePoolSize,
    statementTimeoutMs: (config.security?.requestLimits ?? DEFAULT_REQUEST_LIMITS).executionTimeoutMs,
  });
  const repo = Repository.of(database);
  await repo.upsertProviders(providers.all().map((p) => ({ id: p.id, kind: p.kind, name: p.name, simulated: p.simulated })));
  // The demo's simulators start afresh each time: a job list cached by an earlier process is not theirs.
  if (demo.length > 0) await repo.expireJobLists(demo.map((d) => d.config.id));
  const readThrough = new ReadThrough(
    repo,
    providers,
    { ...DEFAULT_CACHE_POLICY, ...(config.security ? { unknownIdLookups: config.security.unknownIdLookups } : {}), ...opts.cachePolicy },
    opts.clock,
  );
  const store = new Store(readThrough);
  return { database, readThrough, store };
}

/**
 * The collector, the findings evaluator and alert delivery (each null when off), and the metrics,
 * built between them: they count the collector and the deliverer, and the deliverer counts into them.
 */
function buildCollectorFindingsAlerts(ctx: {
  opts: RuntimeOptions;
  configs: ProviderConfig[];
  receivers: ReturnType<typeof receiverSettings>;
  database: Database;
  store: Store;
  readThrough: ReadThrough;
  providers: ProviderSet;
  live: LiveRuntime;
  logger: Logger;
}): { collector: Collector | null; findings: FindingsEngine | null; alerts: AlertDeliverer | null; metrics: Metrics } {
  const { opts, configs, receivers, database, store, readThrough, providers, live, logger } = ctx;
  const { config } = opts;
  const collector = config.collect?.enabled
    ? new Collector({
        store,
        logger,
        timers: opts.collectTimers ?? opts.liveTimers ?? REAL_TIMERS,
        settings: (p) => collectSettings(p.kind, config.collect!, configs.find((c) => c.id === p.id)?.collect),
        watched: () => live.hub.watchedJobs(),
        // Half the pool (at least 2): its first sweep (every running job's history) must not hold
        // every connection while the server starts answering.
        maxConcurrentTotal: Math.max(2, Math.floor(database.poolHealth().max / 2)),
      })
    : null;
  const findings = config.findings?.enabled
    ? new FindingsEngine({
        store,
        logger,
        timers: opts.findingsTimers ?? opts.collectTimers ?? opts.liveTimers ?? REAL_TIMERS,
        bus: live.hub.bus,
        intervalSeconds: config.findings.intervalSeconds,
        overrides: thresholdOverrides(configs),
      }).start()
    : null;
  const delivery = config.alerts?.delivery;
  let alerts: AlertDeliverer | null = null;
  const metrics: Metrics = new Metrics({
    providers,
    readThrough,
    live: live.hub,
    collector,
    pool: () => database.poolHealth(),
    alerts: findings ? { store: store.alerts, leading: () => alerts?.leading ?? false } : null,
  });
  alerts = findings
    ? new AlertDeliverer({
        store,
        logger,
        timers: opts.alertTimers ?? opts.findingsTimers ?? opts.collectTimers ?? opts.liveTimers ?? REAL_TIMERS,
        receivers,
        routes: routesOf(config.alerts),
        settings: {
          ...(delivery?.intervalSeconds ? { intervalMs: delivery.intervalSeconds * 1000 } : {}),
          ...(delivery?.initialBackoffSeconds ? { initialBackoffMs: delivery.initialBackoffSeconds * 1000 } : {}),
          ...(delivery?.maxBackoffSeconds ? { maxBackoffMs: delivery.maxBackoffSeconds * 1000 } : {}),
          ...(delivery?.giveUpAfterHours ? { giveUpAfterMs: delivery.giveUpAfterHours * 3_600_000 } : {}),
        },
        onOutcome: (receiver, outcome) => metrics.alertOutcomes.inc({ receiver, outcome }),
      }).start()
    : null;
  // New transitions are in the outbox: route and send them now rather than at the next interval.
  findings?.events.on('evaluated', (e) => {
    if (e && (e.fired.length > 0 || e.resolved.length > 0)) alerts?.kick();
  });
  return { collector, findings, alerts, metrics };
}

/** Runtime.close() once readyz answers 503: the steps in the order that interface's comment gives. */
async function closeRuntime(ctx: {
  server: http.Server;
  ws: ReturnType<typeof attachGraphqlWs>;
  front: HttpFront;
  graceMs: number;
  logger: Logger;
  findings: FindingsEngine | null;
  alerts: AlertDeliverer | null;
  collector: Collector | null;
  live: LiveRuntime;
  readThrough: ReadThrough;
  tracing: Tracing | null;
  providers: ProviderSet;
  stopShapeWarnings: () => void;
  metrics: Metrics;
  demo: DemoProvider[];
  database: Database;
}): Promise<void> {
  const { server, ws, front, graceMs, logger, findings, alerts, collector, live, readThrough, tracing, providers, stopShapeWarnings, metrics, demo, database } =
    ctx;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const [, drained] = await Promise.all([ws.close(), front.drained(graceMs)]);
  if (!drained) logger.warn({ inFlight: front.inFlight(), graceMs }, 'shutdown: requests still in flight after the grace period are cut off');
  // SSE subscription streams, and whatever outlived the grace period.
  server.closeAllConnections();
  await closed;
  await findings?.stop();
  await alerts?.stop();
  await collector?.close();
  await live.close();
  await readThrough.settle(graceMs);
  await tracing?.shutdown();
  await providers.close();
  stopShapeWarnings();
  metrics.dispose();
  await Promise.all(demo.map((d) => d.close()));
  await database.close();
}

/** Each provider's finding thresholds, and its projects' (providers file, `findings:`). */
function thresholdOverrides(configs: readonly ProviderConfig[]): ThresholdOverride[] {
  const out: ThresholdOverride[] = [];
  for (const c of configs) {
    if (!c.findings) continue;
    const { projects, ...own } = c.findings;
    out.push({ ...own, providerId: c.id });
    for (const [project, t] of Object.entries(projects ?? {})) out.push({ ...t, providerId: c.id, projectId: projectGlobalId(c.id, project) });
  }
  return out;
}

/** A provider's collector settings: its defaults, the server-wide overrides, then its own `collect` entry. */
export function collectSettings(kind: ProviderConfig['kind'], server: NonNullable<AppConfig['collect']>, own: ProviderConfig['collect']): CollectSettings {
  const base = defaultSettings(kind, server.enabled);
  return {
    ...base,
    ...(server.callsPerMinute ? { callsPerMinute: server.callsPerMinute } : {}),
    ...(server.maxConcurrent ? { maxConcurrent: server.maxConcurrent } : {}),
    ...(server.logs ? { logs: true } : {}),
    ...(server.rawRetentionDays !== undefined ? { rawRetentionDays: server.rawRetentionDays || null } : {}),
    ...(server.finishedJobRawRetentionDays !== undefined ? { finishedJobRawRetentionDays: server.finishedJobRawRetentionDays || null } : {}),
    ...(server.minuteRollupRetentionDays !== undefined ? { minuteRollupRetentionDays: server.minuteRollupRetentionDays || null } : {}),
    ...(server.hourRollupRetentionDays !== undefined ? { hourRollupRetentionDays: server.hourRollupRetentionDays || null } : {}),
    ...(server.compactAfterDays !== undefined ? { compactAfterDays: server.compactAfterDays || null } : {}),
    ...Object.fromEntries(Object.entries(own ?? {}).filter(([, v]) => v !== undefined)),
  };
}

/**
 * A warning per unexpected upstream shape: the first of each (provider, assumption) and then every
 * 100th, so a platform that changed its API is visible without flooding the log.
 */
function warnOnShapeMismatches(providerIds: readonly string[], logger: Logger): () => void {
  const own = new Set(providerIds);
  const seen = new Map<string, number>();
  return onShapeMismatch((m) => {
    if (!own.has(m.providerId)) return;
    const key = `${m.providerId}|${m.assumption}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    if (n === 1 || n % 100 === 0) {
      logger.warn(
        { provider: m.providerId, assumption: m.assumption, detail: m.detail, occurrences: n },
        'upstream answer does not match an unconfirmed reading of its API',
      );
    }
  });
}

const READINESS_TIMEOUT_MS = 1500;

async function readiness(database: Database, accepting: boolean): Promise<[number, string]> {
  if (!accepting) return [503, '{"status":"shutting down"}'];
  // Probes give up after a second or two; an answer that late is no answer, so it is 503 in time.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), READINESS_TIMEOUT_MS)));
  try {
    // The probe does not queue behind data work (its own connection; first in PGlite's gate), so
    // "not answering" means the database, and the pool's own state is shown beside it.
    const outcome = await Promise.race([database.probe().then(() => 'ok' as const), late]);
    const pool = database.poolHealth();
    return outcome === 'ok' ? [200, JSON.stringify({ status: 'ready', pool })] : [503, JSON.stringify({ status: 'database not answering', pool })];
  } catch {
    return [503, JSON.stringify({ status: 'database unavailable', pool: database.poolHealth() })];
  } finally {
    clearTimeout(timer);
  }
}
