// Opens the cache database: embedded PGlite in a folder when no DATABASE_URL is given, a real
// Postgres through postgres.js otherwise. Both get the same drizzle schema and migrations.
import { randomUUID } from 'node:crypto';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { DEFAULT_DATABASE_POOL_SIZE } from '../config/index.js';
import { MIGRATIONS_DIR } from '../config/install.js';
import * as tables from './tables.js';
import type { RequestScope } from '../domain/request-scope.js';
import { PoolWatchdog, type PoolHealth, type PoolStats } from './pool-watch.js';
import { StatementGate } from './statement-gate.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof tables>;

export interface Database {
  db: Db;
  /**
   * The same database for the hot short reads (a job list's page): on Postgres a client of its own
   * with SHORT_READ_CONNECTIONS, so that concurrent pages go out pipelined on a few connections
   * (one write and one wake-up of Postgres for several) and never queue behind a long statement
   * or a COPY of the main pool. PGlite: `db` itself.
   */
  shortReads: Db;
  driver: 'pglite' | 'postgres';
  /** Statements sent since open; tests and the benchmark read it to prove batching. */
  statementCount(): number;
  /** Calls `fn` with each statement's text until the returned function is called (tests tell statements apart by it). */
  watchStatements(fn: (text: string) => void): () => void;
  /**
   * Answers when the database does, without queueing behind data work: on Postgres on a
   * connection of its own, on PGlite first in the statement gate (behind only the statement under
   * way). /readyz asks it.
   */
  probe(): Promise<void>;
  /** The main pool's slots, waiters and recoveries (PGlite: its statement gate, one slot). */
  poolHealth(): PoolHealth;
  /** The watchdog of the main pool (PoolWatchdog.check); its timer calls it every WATCHDOG_INTERVAL_MS. */
  watchdog: PoolWatchdog;
  close(): Promise<void>;
}

export { MIGRATIONS_DIR };

export interface OpenOptions {
  databaseUrl?: string | null;
  /** A folder for PGlite's files, or 'memory://' for an in-memory database. */
  dataDir?: string;
  /** Connections of the pool at most (DATABASE_POOL_SIZE; default DEFAULT_DATABASE_POOL_SIZE), beside shortReads. */
  maxConnections?: number;
  /**
   * No statement runs longer than this (Postgres `statement_timeout`); the execution time-out, so
   * SQL never outlives the request that asked for it. 0 = unbounded.
   */
  statementTimeoutMs?: number;
  /** The watchdog's own timer; false: only explicit watchdog.check() calls (tests, with a clock). */
  watchdogTimer?: boolean;
  /** The watchdog's clock (ms). */
  now?: () => number;
}

/** How often the watchdog looks at the pool. */
export const WATCHDOG_INTERVAL_MS = 5_000;
/** Waiters and no reply for this long while none of the pool's backends runs a statement: wedged. */
export const WATCHDOG_IDLE_STALL_MS = 10_000;

/**
 * The operation whose read is being issued: set only while a Repository method hands its statement
 * to the driver, which drizzle does synchronously from `.execute()` (see issueReadFor), so the
 * client.unsafe wrapper below knows which request a statement belongs to without
 * AsyncLocalStorage.
 */
let issuing: RequestScope | undefined;

/**
 * Issues a read for `scope`: `issue` must hand its statement to the driver synchronously (call a
 * prepared statement's or a query builder's `.execute()`, not `await` a builder, whose statement
 * is only made in a later microtask). The statement is then cancelled if the request is abandoned.
 */
export function issueReadFor<T>(scope: RequestScope | undefined, issue: () => T): T {
  if (!scope) return issue();
  const outer = issuing;
  issuing = scope;
  try {
    return issue();
  } finally {
    issuing = outer;
  }
}

/** Reads are cancelled with their request; writes (cache fills other requests may wait on) finish. */
const READ_STATEMENT = /^\s*(select|with)\b/i;

interface CancellableQuery {
  cancel(): unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** The unsettled reads of each long-lived scope's signal (one without trackRead: the collector's, a live feed's). */
const unsettledReads = new WeakMap<AbortSignal, Set<() => unknown>>();

/**
 * Calls `cancel` if `signal` aborts before the returned function is called. One listener a signal,
 * however many of its reads are unsettled: the collector's scope has a read of each concurrent
 * group queued at PGlite's statement gate at once, and a listener each passed the signal's 10 and
 * printed MaxListenersExceededWarning (test/store/pool-health.test.ts queues more); a signal that
 * lives for hours must not gather one a read either.
 */
function whileUnsettled(signal: AbortSignal, cancel: () => unknown): () => void {
  let reads = unsettledReads.get(signal);
  if (!reads) {
    const all = new Set<() => unknown>();
    unsettledReads.set(signal, (reads = all));
    signal.addEventListener(
      'abort',
      () => {
        for (const c of all) c();
      },
      { once: true },
    );
  }
  reads.add(cancel);
  return () => void reads.delete(cancel);
}

/**
 * Cancels a running postgres.js read when the request it runs for is abandoned (time-out, client
 * gone): `query.cancel()` sends Postgres a CancelRequest, so the statement leaves
 * pg_stat_activity instead of holding a pool connection for minutes. Only while the query is
 * unsettled: a cancel after it finished would hit whatever that connection runs next.
 */
function cancelWithRequest(query: CancellableQuery, signal: AbortSignal) {
  let settled = false;
  const cancel = () => {
    if (!settled) void Promise.resolve(query.cancel()).catch(() => {});
  };
  if (signal.aborted) return cancel();
  const forget = whileUnsettled(signal, cancel);
  const done = () => {
    settled = true;
    forget();
  };
  const { resolve, reject } = query;
  query.resolve = (value) => (done(), resolve(value));
  query.reject = (err) => (done(), reject(err));
}

/**
 * postgres.js waits before reconnecting a closed slot, by default 3^n/100 s after n failed attempts
 * of the pool, up to 20 s: after an outage of a few seconds queries sat in that wait long after
 * Postgres was back. Capped at 2 s, with jitter so the slots do not all reconnect at once.
 */
export function reconnectBackoffSeconds(failedAttempts: number): number {
  return Math.min(2, 0.05 * 2 ** failedAttempts) * (0.5 + Math.random() / 2);
}

/** postgres.js' pool as patches/postgres+3.4.9.patch opens it to the watchdog. */
interface PatchedPool {
  poolStats(): {
    max: number;
    open: number;
    busy: number;
    full: number;
    reserved: number;
    connecting: number;
    closed: number;
    waiting: number;
    oldestWaitStart: number | null;
    readyForQuery: number;
  };
  recoverPool(): number;
}

function statsOf(s: ReturnType<PatchedPool['poolStats']>): PoolStats {
  return {
    max: s.max,
    inUse: s.busy + s.full + s.reserved + s.connecting,
    waiting: s.waiting,
    oldestWaitStart: s.oldestWaitStart,
    progress: s.readyForQuery,
    dropped: 0,
  };
}

/** Beyond any statement's time-out: then a pool still without a reply is wedged whatever its backends do. */
function hardStallMs(statementTimeoutMs: number | undefined): number {
  return Math.max(60_000, 2 * (statementTimeoutMs || 30_000));
}

function watchEvery(watchdog: PoolWatchdog, enabled = true): () => void {
  if (!enabled) return () => {};
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    void watchdog.check().finally(() => (checking = false));
  }, WATCHDOG_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** The advisory lock key the migrations of a PostgreSQL database run under (any replica's). */
export const MIGRATION_LOCK_KEY = 4_172_601_041;

/** Connections of the short-read client (Database.shortReads), at most the pool's own size. */
export const SHORT_READ_CONNECTIONS = 2;

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  let statements = 0;
  const watchers = new Set<(text: string) => void>();
  const logger = {
    logQuery: (text: string) => {
      statements++;
      for (const fn of watchers) fn(text);
    },
  };
  const watchStatements = (fn: (text: string) => void) => {
    watchers.add(fn);
    return () => void watchers.delete(fn);
  };
  if (opts.databaseUrl) {
    const { default: postgres } = await import('postgres');
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const { migrate } = await import('drizzle-orm/postgres-js/migrator');
    const poolSize = opts.maxConnections ?? DEFAULT_DATABASE_POOL_SIZE;
    const clientOf = (max: number, appName: string | null) => {
      const client = postgres(opts.databaseUrl!, {
        max,
        onnotice: () => {},
        prepare: true,
        // JIT compiles for large cost estimates; on these short statements it cost ~1 s per query
        // (the downsample's per-bucket index scans run in 0.2 s, JIT added 1.07 s).
        connection: {
          jit: 'off',
          ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
          // Names this pool's backends in pg_stat_activity, where the watchdog asks whether any works.
          ...(appName ? { application_name: appName } : {}),
        },
        backoff: reconnectBackoffSeconds,
        // A login that has not finished in 10 s is not going to; the request gets CACHE_UNAVAILABLE.
        connect_timeout: 10,
      });
      // drizzle sends every statement outside transactions through client.unsafe.
      const unsafe = client.unsafe.bind(client);
      client.unsafe = ((query: string, ...rest: unknown[]) => {
        const pending = (unsafe as unknown as (...a: unknown[]) => CancellableQuery)(query, ...rest);
        if (issuing && READ_STATEMENT.test(query)) {
          if (issuing.trackRead) issuing.trackRead(pending);
          else cancelWithRequest(pending, issuing.signal);
        }
        return pending;
      }) as unknown as typeof client.unsafe;
      return client;
    };
    const appName = `training-graph ${process.pid} ${randomUUID().slice(0, 8)}`;
    const client = clientOf(poolSize, appName);
    // Connects on its first statement, like the main pool.
    const shortClient = clientOf(Math.min(SHORT_READ_CONNECTIONS, poolSize), null);
    // One connection of its own for probes: it answers while the pool's slots are all taken.
    const probeClient = postgres(opts.databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10, idle_timeout: 60, backoff: reconnectBackoffSeconds });
    const db = drizzle(client, { schema: tables, logger });
    // Replicas started together on one empty database would each create the same tables at once
    // (one failed on `CREATE TABLE "fetch_errors"`): the migrations run under a session advisory
    // lock on a connection of their own, one replica after another; the later ones find nothing to do.
    const migrator = postgres(opts.databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      await migrator.unsafe(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
      await migrate(drizzle(migrator), { migrationsFolder: MIGRATIONS_DIR });
    } finally {
      // Its session's end lets the lock go.
      await migrator.end({ timeout: 5 });
    }
    const pool = client as unknown as PatchedPool;
    const watchdog = new PoolWatchdog(
      {
        stats: () => statsOf(pool.poolStats()),
        recover: () => pool.recoverPool(),
        activeBackends: async () => {
          const [row] = await probeClient<
            { n: number }[]
          >`select count(*)::int as n from pg_stat_activity where application_name = ${appName} and state = 'active'`;
          return row?.n ?? 0;
        },
      },
      { idleStallMs: WATCHDOG_IDLE_STALL_MS, hardStallMs: hardStallMs(opts.statementTimeoutMs), now: opts.now },
    );
    const stopWatch = watchEvery(watchdog, opts.watchdogTimer);
    return {
      db: db as unknown as Db,
      shortReads: drizzle(shortClient, { schema: tables, logger }) as unknown as Db,
      driver: 'postgres',
      statementCount: () => statements,
      watchStatements,
      probe: async () => {
        await probeClient`select 1`;
      },
      poolHealth: () => watchdog.health(),
      watchdog,
      close: async () => {
        stopWatch();
        await Promise.all([client.end({ timeout: 5 }), shortClient.end({ timeout: 5 }), probeClient.end({ timeout: 5 })]);
      },
    };
  }
  // PGlite first: drizzle's PGlite driver imports it too, and loadPglite says what to do without it.
  const { openPglite } = await import('./pglite.js');
  const client = await openPglite(opts.dataDir ?? './.data');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  const gate = new StatementGate();
  const query = client.query.bind(client);
  // drizzle sends every statement outside transactions through client.query, in the tick
  // issueReadFor sets `issuing`: a read is dropped at its turn if its request was abandoned by then.
  client.query = ((text: string, ...rest: unknown[]) => {
    const scope = issuing && READ_STATEMENT.test(text) ? issuing : undefined;
    const run = () => (query as (...a: unknown[]) => Promise<unknown>)(text, ...rest);
    if (!scope) return gate.run(run);
    let abandoned: unknown;
    const read = { cancel: () => (abandoned ??= scope.signal.reason ?? new Error('the request was abandoned')) };
    if (scope.trackRead) scope.trackRead(read);
    else if (scope.signal.aborted) read.cancel();
    else {
      // A long-lived scope (the collector's, a live feed's) issues reads for hours: each is forgotten
      // with its statement (whileUnsettled).
      const forget = whileUnsettled(scope.signal, read.cancel);
      return gate.run(run, { abandoned: () => abandoned }).finally(forget);
    }
    return gate.run(run, { abandoned: () => abandoned });
  }) as typeof client.query;
  const db = drizzle(client, { schema: tables, logger });
  await migrate(db, { migrationsFolder: MIGRATIONS_DIR });
  const watchdog = new PoolWatchdog(
    // One slot, no pool to wedge: the gate's queue is shown, and a statement runs until it ends.
    { stats: () => gate.stats(), recover: () => 0, activeBackends: async () => (gate.stats().inUse > 0 ? 1 : 0) },
    { idleStallMs: WATCHDOG_IDLE_STALL_MS, hardStallMs: Number.POSITIVE_INFINITY, now: opts.now },
  );
  return {
    db: db as unknown as Db,
    shortReads: db as unknown as Db,
    driver: 'pglite',
    statementCount: () => statements,
    watchStatements,
    probe: async () => {
      await gate.run(() => query('select 1'), { priority: true });
    },
    poolHealth: () => watchdog.health(),
    watchdog,
    close: () => client.close(),
  };
}
