// Who polls a feed. One replica per feed: with several replicas sharing Postgres, a session-level
// advisory lock on one dedicated connection; the lock dies with that session, so when a replica
// dies (or its connection does) another replica's next try takes it over. With one process
// (PGlite, or no Redis to share events through) a local set does the same job.
import { createHash } from 'node:crypto';
import { reconnectBackoffSeconds } from '../store/index.js';

export interface PollLock {
  readonly kind: 'local' | 'advisory';
  /** False when another replica holds it; rejects when the lock's store cannot be reached. */
  tryAcquire(key: string): Promise<boolean>;
  /** Still ours? False after the lock session was lost (then another replica may hold it). */
  holds(key: string): Promise<boolean>;
  release(key: string): Promise<void>;
  close(): Promise<void>;
}

export function createLocalLock(): PollLock {
  const held = new Set<string>();
  return {
    kind: 'local',
    async tryAcquire(key) {
      if (held.has(key)) return false;
      held.add(key);
      return true;
    },
    async holds(key) {
      return held.has(key);
    },
    async release(key) {
      held.delete(key);
    },
    async close() {
      held.clear();
    },
  };
}

/** A signed 64-bit key from the feed name: hashtext's 32 bits would let two jobs share a lock. */
export function advisoryKey(key: string): string {
  return createHash('sha256').update(key).digest().readBigInt64BE(0).toString();
}

export async function createAdvisoryLock(databaseUrl: string): Promise<PollLock> {
  const { default: postgres } = await import('postgres');
  // One connection = one session: every lock this replica holds lives and dies with it.
  const sql = postgres(databaseUrl, { max: 1, idle_timeout: 0, max_lifetime: null, onnotice: () => {}, connect_timeout: 5, backoff: reconnectBackoffSeconds });
  /** The backend pid that took each lock: a reconnect gets a new session that holds none of them. */
  const held = new Map<string, number>();
  const backendPid = async (): Promise<number> => Number((await sql`select pg_backend_pid() as pid`)[0]!.pid);
  return {
    kind: 'advisory',
    // Throws when Postgres cannot be asked: "someone else polls" and "nobody can tell" differ.
    async tryAcquire(key) {
      if (held.has(key)) return false;
      const [row] = await sql`select pg_try_advisory_lock(${advisoryKey(key)}::bigint) as ok, pg_backend_pid() as pid`;
      if (!row?.ok) return false;
      held.set(key, Number(row.pid));
      return true;
    },
    async holds(key) {
      const pid = held.get(key);
      if (pid === undefined) return false;
      try {
        if ((await backendPid()) === pid) return true;
      } catch {
        // The session is gone, and the lock with it.
      }
      held.delete(key);
      return false;
    },
    async release(key) {
      const pid = held.get(key);
      held.delete(key);
      if (pid === undefined) return;
      try {
        await sql`select pg_advisory_unlock(${advisoryKey(key)}::bigint) where pg_backend_pid() = ${pid}`;
      } catch {
        // A dead session has released it already.
      }
    },
    async close() {
      held.clear();
      await sql.end({ timeout: 2 });
    },
  };
}
