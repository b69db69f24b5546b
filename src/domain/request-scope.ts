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

const NEVER = new AbortController().signal;

/**
 * Runs work other requests may come to share (a de-duplicated cache fill): it stays the starting
 * tenant's (its share of the platform) but is not cancelled when that one request is abandoned,
 * since others may be waiting on it.
 */
export function runShared<T>(fn: () => T): T {
  const scope = storage.getStore();
  return scope ? storage.run({ signal: NEVER, tenant: scope.tenant }, fn) : fn();
}
