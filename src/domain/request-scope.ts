// What the work one GraphQL operation causes knows about that operation, wherever it runs (a
// loader batch, a store query, an upstream call): the signal that says nobody waits for it any
// more (execution time-out, client gone), and the tenant it is done for (the API token's name),
// whose share of each platform's budget it draws from. Passed down the one-way flow (resolver ->
// loaders -> store -> adapter) as a parameter, not carried by AsyncLocalStorage: on Node 20 an
// AsyncLocalStorage in use turns on promise hooks for every promise of the process, which cost a
// warm job list about 30% of its CPU (issue 22).
import { setMaxListeners } from 'node:events';

export interface RequestScope {
  signal: AbortSignal;
  /** The API token's name, or null with no tokens configured (one tenant). */
  tenant: string | null;
}

/** Where an operation learns that its client went away: graphql-ws' own signal, or the Fetch request's. */
interface ClientSide {
  clientGone?: AbortSignal;
  request?: { signal?: AbortSignal };
}

/**
 * One GraphQL operation's scope. Its AbortController is made when something first asks for the
 * signal (a store read, an upstream call, a shared fill): an operation answered from memory (a
 * trivial query) makes none and never touches the request's own signal (whatwg-node builds that
 * behind a proxy). A signal made after the client left, or after the operation was abandoned,
 * is made aborted; one made before follows the client's.
 */
export class OperationScope implements RequestScope {
  private controller: AbortController | null = null;
  private abandoned = false;
  private reason: unknown = undefined;
  private gone: AbortSignal | null = null;

  constructor(
    readonly tenant: string | null,
    private readonly client: ClientSide,
    private readonly goneReason: () => unknown,
  ) {}

  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const controller = new AbortController();
    this.controller = controller;
    setMaxListeners(0, controller.signal);
    if (this.abandoned) {
      controller.abort(this.reason);
      return controller.signal;
    }
    const gone = this.client.clientGone ?? this.client.request?.signal ?? null;
    if (gone?.aborted) controller.abort(this.goneReason());
    else if (gone) {
      this.gone = gone;
      gone.addEventListener('abort', this, { once: true });
    }
    return controller.signal;
  }

  /** The client went away (EventListener interface: no closure per operation). */
  handleEvent(): void {
    this.abandon(this.goneReason());
  }

  /** Nobody waits for the operation any more: its signal aborts (now, or when it is made). */
  abandon(reason: unknown): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  /** The operation is over: the client's leaving no longer concerns it. */
  end(): void {
    if (!this.gone) return;
    this.gone.removeEventListener('abort', this);
    this.gone = null;
  }
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

  /**
   * `work` runs under its own scope: the starting tenant's (its share of the platform), with a
   * signal that aborts only when the caller that owns it says nobody waits any more.
   */
  constructor(starter: RequestScope | undefined, work: (shared: RequestScope) => Promise<T>) {
    this.promise = work({ signal: this.controller.signal, tenant: starter?.tenant ?? null });
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

  /** The result for a caller (undefined: background work): its own abandonment ends its wait (and may cancel the work). */
  join(caller: RequestScope | undefined): Promise<T> {
    const signal = caller?.signal;
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
