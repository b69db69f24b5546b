// Runtime configuration: environment variables plus the optional providers file.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseSubgraphTypeNames } from '../domain/subgraph-type-names.js';
import { providersFile, type ProviderConfig } from './providers-config.js';
import type { LedgerConfig } from './ledger-config.js';
import type { AlertsConfig } from './alerts-config.js';
import { loadSecurityConfig, type SecurityConfig } from './security.js';

export * from './providers-config.js';
export { APP_ROOT, DIST_DIR, FROM_SOURCES, MIGRATIONS_DIR } from './install.js';
export {
  DEFAULT_LOOKUP_BUDGET,
  DEFAULT_REQUEST_LIMITS,
  isLoopbackHost,
  type LookupBudget,
  type RequestLimits,
  type TokenScope,
  type TokenStore,
} from './security.js';
export { ledgerConfig, ledgerSettings, type LedgerConfig } from './ledger-config.js';
export { alertsConfig, receiverSettings, type AlertMatchers, type AlertsConfig, type ReceiverSettings } from './alerts-config.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Connections a replica's pool opens to Postgres at most (DATABASE_POOL_SIZE). Concurrent
 * statements beyond it are pipelined on the open connections (postgres.js), which is cheaper per
 * statement than a connection each: fewer writes to the socket and fewer wake-ups of Postgres'
 * backends. Job lists' pages have a client of their own beside it (SHORT_READ_CONNECTIONS in
 * src/store/db.ts).
 */
export const DEFAULT_DATABASE_POOL_SIZE = 10;
/**
 * How much V8's old generation may grow past what the last full collection left alive before the
 * next one starts, in percent (V8_HEAP_GROWING_PERCENT): the limit is (1 + this/100) times the
 * live heap. 0 sets nothing: V8's own factor, dynamic, up to 4x under a high allocation rate,
 * with which the collector's RSS grew 1.28-1.39x from 100 to 1,000 jobs. 50 keeps it flat
 * (1.03-1.17x), and since the collector's writes were trimmed its CPU is within issue 37's bound
 * with it (1.32x the bare loop on a quiet machine: docs/collection.md, "A bounded old generation"
 * and the sections after it), so it is the default.
 */
export const DEFAULT_HEAP_GROWING_PERCENT = 50;

/** More connections than this only add backends competing for the database's cores. */
export const MAX_DATABASE_POOL_SIZE = 100;

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(MAX_DATABASE_POOL_SIZE).default(DEFAULT_DATABASE_POOL_SIZE),
  DATA_DIR: z.string().min(1).default('./.data'),
  REDIS_URL: z.string().url().optional(),
  PROVIDERS_CONFIG: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('training-graph'),
  GRAPHQL_EXECUTOR: z.enum(['jit', 'graphql-js']).default('jit'),
  COLLECT: z.enum(['on', 'off', 'true', 'false', '1', '0']).default('on'),
  COLLECT_CALLS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).optional(),
  COLLECT_MAX_CONCURRENT: z.coerce.number().int().min(1).max(256).optional(),
  SUBGRAPH_TYPE_NAMES: z.string().default(''),
  COLLECT_LOGS: z.enum(['on', 'off', 'true', 'false', '1', '0']).default('off'),
  RAW_POINTS_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).optional(),
  FINISHED_JOB_RAW_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).optional(),
  MINUTE_ROLLUP_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).optional(),
  HOUR_ROLLUP_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).optional(),
  COMPACT_RAW_POINTS_AFTER_DAYS: z.coerce.number().min(0).max(36_500).optional(),
  FINDINGS: z.enum(['on', 'off', 'true', 'false', '1', '0']).default('on'),
  FINDINGS_INTERVAL_SECONDS: z.coerce.number().min(1).max(3600).optional(),
  V8_HEAP_GROWING_PERCENT: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z.coerce.number().int().min(0).max(1000).default(DEFAULT_HEAP_GROWING_PERCENT),
  ),
});

export interface AppConfig {
  port: number;
  host: string;
  databaseUrl: string | null;
  /** Connections this replica's pool opens to DATABASE_URL at most (unset: DEFAULT_DATABASE_POOL_SIZE); job pages have their own 2. */
  databasePoolSize?: number;
  dataDir: string;
  redisUrl: string | null;
  logLevel: string;
  /** null = no providers file: run the built-in simulators as demo providers. */
  providers: ProviderConfig[] | null;
  /** API tokens, open mode and request limits (src/config/security.ts); absent = no tokens, default limits. */
  security?: SecurityConfig;
  /** V8_HEAP_GROWING_PERCENT: the bound on the old generation's garbage (DEFAULT_HEAP_GROWING_PERCENT; src/server/gc-tuning.ts); absent = V8's own. */
  v8HeapGrowingPercent?: number;
  /** OpenTelemetry tracing: spans go to this OTLP/HTTP endpoint; unset = no tracing. */
  tracing?: { endpoint: string; serviceName: string } | null;
  /**
   * What executes queries: `jit` (default) compiles each document once with graphql-jit;
   * `graphql-js` is the reference executor, kept as a switch should a query ever answer differently.
   */
  executor?: 'jit' | 'graphql-js';
  /**
   * The continuous collector (src/collect/). loadConfig turns it on unless COLLECT=off; a config
   * built by hand without it (tests, benches) runs read-through only. `callsPerMinute` and
   * `maxConcurrent` override every provider's default, and `logs` (COLLECT_LOGS=on) collects every provider's logs, and `rawRetentionDays` (RAW_POINTS_RETENTION_DAYS; default 30, 0 = never) drops every provider's raw points older than that, and `compactAfterDays` (COMPACT_RAW_POINTS_AFTER_DAYS; 0 = never) compacts every provider's raw points of days older than that, `finishedJobRawRetentionDays` (FINISHED_JOB_RAW_RETENTION_DAYS; 0 = as raw) keeps a finished job's raw points that long after its end, `minuteRollupRetentionDays` (MINUTE_ROLLUP_RETENTION_DAYS; default 365, 0 = never) and `hourRollupRetentionDays` (HOUR_ROLLUP_RETENTION_DAYS; default never, 0 = never) drop every provider's 1-minute and 1-hour rollup rows older than that (a provider's own `collect` entry wins).
   */
  collect?: {
    enabled: boolean;
    callsPerMinute?: number;
    maxConcurrent?: number;
    logs?: boolean;
    rawRetentionDays?: number;
    compactAfterDays?: number;
    finishedJobRawRetentionDays?: number;
    minuteRollupRetentionDays?: number;
    hourRollupRetentionDays?: number;
  };
  /**
   * The findings evaluator (src/findings/): on where the collector is (FINDINGS=off turns it off),
   * every `intervalSeconds` (FINDINGS_INTERVAL_SECONDS, default 60).
   */
  findings?: { enabled: boolean; intervalSeconds?: number };
  /**
   * SUBGRAPH_TYPE_NAMES: other names for output-only enums and scalars in the subgraph SDL only
   * (`_service { sdl }`), e.g. JobStatus -> TrainingJobStatus beside a subgraph whose own JobStatus
   * is an argument type; the server refuses at start a type a router could name (src/schema/subgraph-names.ts).
   */
  subgraphTypeNames?: ReadonlyMap<string, string>;
  /** The providers file's `ledger` entry: prices, average power, MFU peaks (docs/ledger.md); absent = no prices (the demo brings its example table). */
  ledger?: LedgerConfig;
  /** The providers file's `alerts` entry: receivers and routes of finding notifications (docs/findings.md, "Alerts"); absent = none sent. */
  alerts?: AlertsConfig;
}

function describeIssues(prefix: string, error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
      return `${prefix}${path}: ${i.message}`;
    })
    .join('\n');
}

export function parseProvidersFile(text: string, fileName: string): ProviderConfig[] {
  return parseConfigFile(text, fileName).providers;
}

/** The providers file whole: its providers and its optional ledger entry. */
export function parseConfigFile(text: string, fileName: string): { providers: ProviderConfig[]; ledger?: LedgerConfig; alerts?: AlertsConfig } {
  let raw: unknown;
  try {
    raw = fileName.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${fileName}: not valid ${fileName.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
  const parsed = providersFile.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describeIssues(fileName, parsed.error));
  return {
    providers: parsed.data.providers,
    ...(parsed.data.ledger ? { ledger: parsed.data.ledger } : {}),
    ...(parsed.data.alerts ? { alerts: parsed.data.alerts } : {}),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(describeIssues('environment', parsed.error));
  const e = parsed.data;
  let providers: ProviderConfig[] | null = null;
  let ledger: LedgerConfig | undefined;
  let alerts: AlertsConfig | undefined;
  if (e.PROVIDERS_CONFIG) {
    let text: string;
    try {
      text = readFileSync(e.PROVIDERS_CONFIG, 'utf8');
    } catch (err) {
      throw new ConfigError(`PROVIDERS_CONFIG: cannot read ${e.PROVIDERS_CONFIG}: ${(err as Error).message}`);
    }
    ({ providers, ledger, alerts } = parseConfigFile(text, e.PROVIDERS_CONFIG));
  }
  let subgraphTypeNames: Map<string, string>;
  try {
    subgraphTypeNames = parseSubgraphTypeNames(e.SUBGRAPH_TYPE_NAMES);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  let security: SecurityConfig;
  try {
    security = loadSecurityConfig(env);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return {
    security,
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL ?? null,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    dataDir: e.DATA_DIR,
    redisUrl: e.REDIS_URL ?? null,
    logLevel: e.LOG_LEVEL,
    providers,
    ...(ledger ? { ledger } : {}),
    ...(alerts ? { alerts } : {}),
    executor: e.GRAPHQL_EXECUTOR,
    v8HeapGrowingPercent: e.V8_HEAP_GROWING_PERCENT,
    collect: {
      enabled: !['off', 'false', '0'].includes(e.COLLECT),
      ...(e.COLLECT_CALLS_PER_MINUTE ? { callsPerMinute: e.COLLECT_CALLS_PER_MINUTE } : {}),
      ...(e.COLLECT_MAX_CONCURRENT ? { maxConcurrent: e.COLLECT_MAX_CONCURRENT } : {}),
      ...(['on', 'true', '1'].includes(e.COLLECT_LOGS) ? { logs: true } : {}),
      ...(e.RAW_POINTS_RETENTION_DAYS !== undefined ? { rawRetentionDays: e.RAW_POINTS_RETENTION_DAYS } : {}),
      ...(e.FINISHED_JOB_RAW_RETENTION_DAYS !== undefined ? { finishedJobRawRetentionDays: e.FINISHED_JOB_RAW_RETENTION_DAYS } : {}),
      ...(e.MINUTE_ROLLUP_RETENTION_DAYS !== undefined ? { minuteRollupRetentionDays: e.MINUTE_ROLLUP_RETENTION_DAYS } : {}),
      ...(e.HOUR_ROLLUP_RETENTION_DAYS !== undefined ? { hourRollupRetentionDays: e.HOUR_ROLLUP_RETENTION_DAYS } : {}),
      ...(e.COMPACT_RAW_POINTS_AFTER_DAYS !== undefined ? { compactAfterDays: e.COMPACT_RAW_POINTS_AFTER_DAYS } : {}),
    },
    findings: {
      enabled: !['off', 'false', '0'].includes(e.COLLECT) && !['off', 'false', '0'].includes(e.FINDINGS),
      ...(e.FINDINGS_INTERVAL_SECONDS ? { intervalSeconds: e.FINDINGS_INTERVAL_SECONDS } : {}),
    },
    subgraphTypeNames,
    tracing: e.OTEL_EXPORTER_OTLP_ENDPOINT ? { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: e.OTEL_SERVICE_NAME } : null,
  };
}
