// Upstream fills under way, one per key: every caller meanwhile shares it (SharedWork), and it is
// cancelled once every request waiting on it has been abandoned.
import { UpstreamError } from '../domain/errors.js';
import { SharedWork, type RequestScope } from '../domain/request-scope.js';

/** Concurrent identical refreshes share one upstream call. */
export class InflightFills {
  private readonly inflight = new Map<string, SharedWork<unknown>>();

  /**
   * One upstream fill per key, shared by every caller meanwhile. It is cancelled (its upstream
   * call aborted) when every request waiting on it has been abandoned, and a later caller then
   * starts a new one; a background caller (live poller) keeps it going.
   */
  once<T>(key: string, providerId: string, scope: RequestScope | undefined, work: (shared: RequestScope) => Promise<T>): Promise<T> {
    const late = () =>
      new UpstreamError('UPSTREAM_TIMEOUT', providerId, 'no answer before the request deadline; the fetch goes on and fills the cache, ask again', {
        retryAfterSeconds: 1,
      });
    const existing = this.inflight.get(key) as SharedWork<T> | undefined;
    if (existing && !existing.cancelled) return existing.join(scope, late);
    const shared = new SharedWork(scope, work);
    this.inflight.set(key, shared);
    void shared.promise
      .catch(() => {})
      .finally(() => {
        if (this.inflight.get(key) === shared) this.inflight.delete(key);
      });
    return shared.join(scope, late);
  }

  /** Whether a fill of `key` is under way. */
  has(key: string): boolean {
    return this.inflight.has(key);
  }

  /** How many fills are under way. */
  get size(): number {
    return this.inflight.size;
  }

  /** The fills under way, to wait for. */
  promises(): Promise<unknown>[] {
    return [...this.inflight.values()].map((w) => w.promise);
  }

  /** Requests waiting on upstream fills under way (each counted once per fill it waits on). */
  waiters(): number {
    let n = 0;
    for (const w of this.inflight.values()) n += w.waiting;
    return n;
  }
}
