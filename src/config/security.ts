// Security settings from the environment: API tokens (inline or a file of SHA-256 hashes), each
// scoped to the providers and projects it may see; open mode; introspection; request limits.
import { createHash } from 'node:crypto';
import { readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** Upstream lookups of ids the cache has never seen, per API token (the bucket store/lookup-budget.ts keeps). */
export interface LookupBudget {
  /** Lookups one token may make at once after a quiet spell (the bucket's size). */
  burst: number;
  /** Lookups a minute the bucket refills by. */
  perMinute: number;
}

/** About what one person typing ids by hand, or a dashboard finding new jobs before the next list sync, needs. */
export const DEFAULT_LOOKUP_BUDGET: LookupBudget = { burst: 20, perMinute: 20 };

export interface RequestLimits {
  /** Deepest selection (graphql-armor maxDepth). */
  maxDepth: number;
  /** Aliases per operation (graphql-armor maxAliases). */
  maxAliases: number;
  /** Lexer tokens per document (graphql-armor maxTokens). */
  maxTokens: number;
  /** Directives per operation (graphql-armor maxDirectives). */
  maxDirectives: number;
  /**
   * Values an answer may hold at most (objects, scalars, list elements), estimated before it runs
   * from `first`, `maxPoints`, id lists and what the store knows of the jobs, literals and variables
   * alike (server/plugins/query-cost.ts), and counted again while it runs (use-limits.ts).
   */
  maxCost: number;
  /** Largest answer in bytes (a query's JSON result); bigger ones get RESPONSE_TOO_LARGE instead. */
  maxResponseBytes: number;
  /** Largest request body; bigger ones get 413 PAYLOAD_TOO_LARGE without being read whole. */
  maxBodyBytes: number;
  /** An operation still running after this answers EXECUTION_TIMEOUT (upstream fetches finish into the cache). */
  executionTimeoutMs: number;
  /** Schema introspection (__schema, __type); turn off for public deployments. */
  introspection: boolean;
  /**
   * Bytes of query text the persisted-query store (APQ) keeps per replica, least recently used
   * evicted first (server/apq-store.ts); at most 1000 queries either way. Default 8 MiB.
   */
  apqStoreMaxBytes: number;
}

export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  maxDepth: 12,
  maxAliases: 30,
  maxTokens: 2000,
  maxDirectives: 20,
  // Sized by what one replica serves within the time-out and the answer size (docs/limits.md): the
  // benchmark's dashboard (50 jobs x 64 GPUs x 300 points, about 2.9 M values, 54 MB) fits both.
  maxCost: 4_000_000,
  maxResponseBytes: 64 * 1024 * 1024,
  maxBodyBytes: 100 * 1024,
  executionTimeoutMs: 30_000,
  introspection: true,
  apqStoreMaxBytes: 8 * 1024 * 1024,
};

/** What one token may see: null = everything of that kind. */
export interface TokenScope {
  name: string;
  providers: readonly string[] | null;
  projects: readonly string[] | null;
  /** May silence and acknowledge findings (the mutations), within what it sees; false unless the entry says `write: true`. */
  write?: boolean;
}

interface TokenEntry extends TokenScope {
  sha256: string;
}

const tokenEntry = z
  .object({
    name: z.string().min(1).optional(),
    token: z.string().min(16, 'a token must be at least 16 characters').optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'sha256 must be 64 hex digits')
      .optional(),
    providers: z.array(z.string().min(1)).optional(),
    projects: z.array(z.string().min(1)).optional(),
    write: z.boolean().optional(),
  })
  .refine((e) => (e.token === undefined) !== (e.sha256 === undefined), 'give exactly one of "token" or "sha256"');
const tokenList = z.array(tokenEntry);

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function toEntries(raw: unknown, where: string): TokenEntry[] {
  const list = Array.isArray(raw) ? raw : (raw as { tokens?: unknown } | null)?.tokens;
  const parsed = tokenList.safeParse(list);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${where}${issue.path.map((p) => `[${String(p)}]`).join('')}: ${issue.message}`);
  }
  return parsed.data.map((e, i) => ({
    name: e.name ?? `token ${i + 1}`,
    sha256: (e.sha256 ?? sha256Hex(e.token!)).toLowerCase(),
    providers: e.providers ?? null,
    projects: e.projects ?? null,
    write: e.write ?? false,
  }));
}

/**
 * The configured tokens. Only hashes are kept in memory; a presented token is hashed and looked up.
 * The file is re-read when it changes (checked at most once a second, and at once when the file
 * system reports a change while anyone listens), so revoking a token takes effect on the next
 * request without a restart, and ends its open subscriptions (server/plugins/use-revocation.ts).
 */
export class TokenStore {
  private fileEntries: TokenEntry[] = [];
  private fileStamp = -1;
  private checkedAt = 0;
  private readonly listeners = new Set<() => void>();
  private watcher: FSWatcher | null = null;

  constructor(
    private readonly inline: TokenEntry[],
    private readonly file: string | null,
  ) {
    if (file) this.reload(true);
  }

  private reload(strict: boolean) {
    if (!this.file) return;
    try {
      const stamp = statSync(this.file).mtimeMs;
      if (stamp === this.fileStamp) return;
      const text = readFileSync(this.file, 'utf8');
      this.fileEntries = toEntries(this.file.endsWith('.json') ? JSON.parse(text) : parseYaml(text), this.file);
      this.fileStamp = stamp;
    } catch (err) {
      // At start-up a bad file is fatal; later, the last good list stays in force.
      if (strict) throw new Error(`API_TOKENS_FILE: ${(err as Error).message}`);
    }
  }

  /**
   * Calls `listener` after the token file changed (and was re-read); returns the unsubscribe.
   * The directory is watched, not the file: editors and deploy tools replace files by renaming.
   */
  onChange(listener: () => void): () => void {
    if (!this.file) return () => {};
    this.listeners.add(listener);
    if (!this.watcher) {
      const name = basename(this.file);
      try {
        this.watcher = watch(dirname(this.file), (_event, changed) => {
          if (changed !== null && changed !== name) return;
          const before = this.fileStamp;
          this.reload(false);
          if (this.fileStamp !== before) for (const l of [...this.listeners]) l();
        });
        this.watcher.unref();
      } catch {
        // No watch support: revocation still applies to every new request and subscription.
      }
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.watcher?.close();
        this.watcher = null;
      }
    };
  }

  get configured(): boolean {
    return this.inline.length > 0 || this.file !== null;
  }

  /** The scope of a presented token, or null when it is not one of ours. */
  lookup(token: string): TokenScope | null {
    const now = Date.now();
    if (this.file && now - this.checkedAt >= 1000) {
      this.checkedAt = now;
      this.reload(false);
    }
    const hash = sha256Hex(token);
    const entry = this.inline.find((e) => e.sha256 === hash) ?? this.fileEntries.find((e) => e.sha256 === hash);
    return entry ? { name: entry.name, providers: entry.providers, projects: entry.projects, write: entry.write ?? false } : null;
  }
}

export interface SecurityConfig {
  tokens: TokenStore;
  /** Serve without tokens on a non-loopback address (ALLOW_OPEN=true): only behind something that authenticates. */
  allowOpen: boolean;
  requestLimits: RequestLimits;
  /** Browser origins allowed to call the API cross-origin (CORS_ORIGINS, comma-separated); none by default. */
  corsOrigins: string[];
  /** A token that may read /metrics only (METRICS_TOKEN); with API tokens configured, /metrics needs it or an unscoped API token. */
  metricsToken: string | null;
  /** Each API token's upstream lookups of ids the cache has never seen (UNKNOWN_ID_LOOKUP_BURST, UNKNOWN_ID_LOOKUPS_PER_MINUTE). */
  unknownIdLookups: LookupBudget;
}

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const positive = z.coerce.number().int().positive();
const envSchema = z.object({
  API_TOKENS: z.string().min(1).optional(),
  API_TOKENS_FILE: z.string().min(1).optional(),
  ALLOW_OPEN: bool.default(false),
  GRAPHQL_INTROSPECTION: bool.default(DEFAULT_REQUEST_LIMITS.introspection),
  MAX_QUERY_DEPTH: positive.default(DEFAULT_REQUEST_LIMITS.maxDepth),
  MAX_QUERY_ALIASES: positive.default(DEFAULT_REQUEST_LIMITS.maxAliases),
  MAX_QUERY_TOKENS: positive.default(DEFAULT_REQUEST_LIMITS.maxTokens),
  MAX_QUERY_DIRECTIVES: positive.default(DEFAULT_REQUEST_LIMITS.maxDirectives),
  MAX_QUERY_COST: positive.default(DEFAULT_REQUEST_LIMITS.maxCost),
  MAX_RESPONSE_BYTES: positive.default(DEFAULT_REQUEST_LIMITS.maxResponseBytes),
  CORS_ORIGINS: z.string().optional(),
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  MAX_BODY_BYTES: positive.default(DEFAULT_REQUEST_LIMITS.maxBodyBytes),
  EXECUTION_TIMEOUT_MS: positive.default(DEFAULT_REQUEST_LIMITS.executionTimeoutMs),
  UNKNOWN_ID_LOOKUP_BURST: positive.default(DEFAULT_LOOKUP_BUDGET.burst),
  UNKNOWN_ID_LOOKUPS_PER_MINUTE: positive.default(DEFAULT_LOOKUP_BUDGET.perMinute),
  APQ_STORE_MAX_BYTES: positive.default(DEFAULT_REQUEST_LIMITS.apqStoreMaxBytes),
});

/** Throws an Error naming the variable for bad values (loadConfig turns it into a ConfigError). */
export function loadSecurityConfig(env: NodeJS.ProcessEnv): SecurityConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`environment.${issue.path.join('.')}: ${issue.message}`);
  }
  const e = parsed.data;
  let inline: TokenEntry[] = [];
  if (e.API_TOKENS) {
    let raw: unknown;
    try {
      raw = JSON.parse(e.API_TOKENS);
    } catch {
      throw new Error('API_TOKENS: not valid JSON (a list of {token | sha256, providers?, projects?, name?})');
    }
    inline = toEntries(raw, 'API_TOKENS');
  }
  return {
    tokens: new TokenStore(inline, e.API_TOKENS_FILE ?? null),
    allowOpen: e.ALLOW_OPEN,
    corsOrigins: (e.CORS_ORIGINS ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o.length > 0),
    metricsToken: e.METRICS_TOKEN ?? null,
    unknownIdLookups: { burst: e.UNKNOWN_ID_LOOKUP_BURST, perMinute: e.UNKNOWN_ID_LOOKUPS_PER_MINUTE },
    requestLimits: {
      maxDepth: e.MAX_QUERY_DEPTH,
      maxAliases: e.MAX_QUERY_ALIASES,
      maxTokens: e.MAX_QUERY_TOKENS,
      maxDirectives: e.MAX_QUERY_DIRECTIVES,
      maxCost: e.MAX_QUERY_COST,
      maxResponseBytes: e.MAX_RESPONSE_BYTES,
      maxBodyBytes: e.MAX_BODY_BYTES,
      executionTimeoutMs: e.EXECUTION_TIMEOUT_MS,
      introspection: e.GRAPHQL_INTROSPECTION,
      apqStoreMaxBytes: e.APQ_STORE_MAX_BYTES,
    },
  };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '::ffff:127.0.0.1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}
