// What the work one GraphQL operation causes knows about that operation, wherever it runs (a
// loader batch, a store query, an upstream call): the signal that says nobody waits for it any
// more (execution time-out, client gone), and the tenant it is done for (the API token's name),
// whose share of each platform's budget it draws from. Carried by AsyncLocalStorage, so the
// one-way flow (resolver -> loaders -> store -> adapter) needs no extra parameter at each step.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestScope {
  signal: AbortSignal;
  /** The API token's name, or null with no tokens configured (one tenant). */
  tenant: string | null;
}

const storage = new AsyncLocalStorage<RequestScope>();

export function runInRequestScope<T>(scope: RequestScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The operation the current work is done for; undefined for background work (live pollers, syncs). */
export function currentRequestScope(): RequestScope | undefined {
  return storage.getStore();
}

/**
 * Runs work other requests may come to share (a de-duplicated cache fill) under its own signal:
 * it stays the starting tenant's (its share of the platform), and is cancelled only when the
 * caller that owns `signal` says nobody waits for it any more (see SharedWork).
 */
export function runShared<T>(signal: AbortSignal, fn: () => T): T {
  const scope = storage.getStore();
  return storage.run({ signal, tenant: scope?.tenant ?? null }, fn);
}

/**
 * Work shared by several waiters: cancelled when the last request waiting on it is abandoned,
 * never while a background waiter (a live poller, a sync: no request scope) needs it. Each
 * request waiter stops waiting at once when its own signal aborts.
 */
export class SharedWork<T> {
  readonly promise: Promise<T>;
  private readonly controller = new AbortController();
  private requests = 0;
  private background = false;

  constructor(work: () => Promise<T>) {
    this.promise = runShared(this.controller.signal, work);
    // A cancelled fill nobody awaits any more must not surface as an unhandled rejection.
    this.promise.catch(() => {});
  }

  /** Requests waiting on it now. */
  get waiting(): number {
    return this.requests;
  }

  get cancelled(): boolean {
    return this.controller.signal.aborted;
  }

  /** The result for the current caller: its own abandonment ends its wait (and may cancel the work). */
  join(): Promise<T> {
    const signal = storage.getStore()?.signal;
    if (!signal) {
      this.background = true;
      return this.promise;
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    this.requests++;
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const finish = () => {
        if (done) return false;
        done = true;
        this.requests--;
        signal.removeEventListener('abort', leave);
        return true;
      };
      const leave = () => {
        if (!finish()) return;
        if (this.requests === 0 && !this.background) this.controller.abort(signal.reason);
        reject(signal.reason);
      };
      signal.addEventListener('abort', leave, { once: true });
      this.promise.then(
        (v) => finish() && resolve(v),
        (e) => finish() && reject(e),
      );
    });
  }
}
