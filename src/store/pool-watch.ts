// The health of the cache database's connections, and the watchdog that recovers a wedged pool.
// Issue 44: the pool's bookkeeping once lost every slot (a cancelled query parked its connection
// for good; patches/postgres+3.4.9.patch fixes that cause), and every query then waited out its
// time-out for as long as the process lived, while the database itself answered. Whatever else
// may wedge it, the pool must come back by itself, and a scrape must show it happening.

/** What one client's bookkeeping says (postgres.js' pool as patched, or the PGlite statement gate). */
export interface PoolStats {
  /** Slots at most. */
  max: number;
  /** Slots running statements or held by a transaction. */
  inUse: number;
  /** Statements waiting for a slot. */
  waiting: number;
  /** performance.now() when the statement waiting longest began to wait; null when none waits. */
  oldestWaitStart: number | null;
  /** Replies the database has finished (ReadyForQuery) since the pool opened: what progress is. */
  progress: number;
  /** Reads not run because their request had been abandoned by their turn (PGlite's gate; 0 on Postgres, which cancels them). */
  dropped: number;
}

/** The pool's health as /metrics and /readyz show it. */
export interface PoolHealth {
  max: number;
  inUse: number;
  waiting: number;
  /** How long the statement waiting longest has waited, ms (0 when none waits). */
  oldestWaitMs: number;
  /** Times the watchdog found the pool wedged and replaced its stuck connections. */
  recoveries: number;
  /** Reads dropped at their turn because their request had been abandoned (PGlite). */
  dropped: number;
}

export interface WatchedPool {
  stats(): PoolStats;
  /** Ends the connections that are neither idle nor closed (their statements fail, waiters get fresh ones); how many. */
  recover(): number;
  /**
   * Asks the database, on a connection of its own, how many of this pool's backends are running a
   * statement; rejects if the database does not answer.
   */
  activeBackends(): Promise<number>;
}

export interface WatchdogOptions {
  /** Waiters and no reply for this long, while the database says none of the pool's backends works: wedged. */
  idleStallMs: number;
  /** Waiters and no reply for this long, whatever the backends do (longer than any statement may run). */
  hardStallMs: number;
  now?: () => number;
}

export type WatchVerdict = 'ok' | 'waiting' | 'recovered' | 'database not answering';

export class PoolWatchdog {
  private lastProgress = -1;
  private progressAt = 0;
  private recoveries = 0;
  private readonly now: () => number;

  constructor(
    private readonly pool: WatchedPool,
    private readonly opts: WatchdogOptions,
  ) {
    this.now = opts.now ?? (() => performance.now());
  }

  health(): PoolHealth {
    const s = this.pool.stats();
    return {
      max: s.max,
      inUse: s.inUse,
      waiting: s.waiting,
      oldestWaitMs: s.oldestWaitStart === null ? 0 : Math.max(0, performance.now() - s.oldestWaitStart),
      recoveries: this.recoveries,
      dropped: s.dropped,
    };
  }

  /** One look at the pool: recovers it when statements wait and nothing has moved for too long while the database answers. */
  async check(): Promise<WatchVerdict> {
    const s = this.pool.stats();
    const now = this.now();
    if (s.waiting === 0 || s.progress !== this.lastProgress) {
      this.lastProgress = s.progress;
      this.progressAt = now;
      return 'ok';
    }
    const stalled = now - this.progressAt;
    if (stalled < this.opts.idleStallMs) return 'waiting';
    let active: number;
    try {
      active = await this.pool.activeBackends();
    } catch {
      // The database itself is down: the driver's reconnects deal with that, not a new pool.
      return 'database not answering';
    }
    if (active > 0 && stalled < this.opts.hardStallMs) return 'waiting';
    // Recheck: a reply may have come while the database was asked.
    if (this.pool.stats().progress !== this.lastProgress) return 'ok';
    this.pool.recover();
    this.recoveries++;
    this.progressAt = this.now();
    return 'recovered';
  }
}
