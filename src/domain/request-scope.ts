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
  /**
   * Cancels `read` (a statement under way) if the operation is abandoned before it ends, without
   * making the signal: OperationScope has it, a shared fill's scope does not (store/db.ts then
   * follows the signal).
   */
  trackRead?(read: CancellableRead): void;
  /**
   * When (epoch ms) a field waiting on a platform stops waiting and fails alone with
   * UPSTREAM_TIMEOUT: set before the operation's execution time-out, so one slow platform never
   * erases the whole answer. The fetch itself goes on and fills the cache. Undefined: no deadline.
   */
  deadline?: number;
}

/**
 * A store statement that can be cancelled. Cancelling one that has finished does nothing: a
 * postgres.js query is no longer active once settled, so its cancel() only marks it (no
 * CancelRequest reaches the statement its connection runs next).
 */
export interface CancellableRead {
  cancel(): unknown;
}

/** The parts of Node's http.ServerResponse the scope listens to (domain/ knows no Node HTTP). */
interface ServerResponseLike {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
}

/**
 * Where an operation learns that its client went away: graphql-ws' own signal; over HTTP the Node
 * response closing before it finished (yoga's server context), else the Fetch request's signal.
 */
interface ClientSide {
  clientGone?: AbortSignal;
  res?: ServerResponseLike;
  request?: { signal?: AbortSignal };
}

/**
 * One GraphQL operation's scope. Nothing is made for an operation answered from memory (a trivial
 * query). Its store reads are tracked and cancelled if it is abandoned (trackRead); its
 * AbortController is made only when something asks for the signal (an upstream call, a shared
 * fill). Either way it starts following the client then: over HTTP the Node response's 'close',
 * not the Fetch request's signal (whatwg-node makes that a Proxy over an EventTarget). Listening
 * on it, an AbortController and a listener per read cost a warm job list about 120 µs of CPU per
 * request (npx tsx bench/load-ab.ts: 555 against 436 µs without any of it). A signal made after
 * the client left, or after the operation was abandoned, is made aborted.
 */
export class OperationScope implements RequestScope {
  private controller: AbortController | null = null;
  private abandoned = false;
  private reason: unknown = undefined;
  private watching = false;
  private gone: AbortSignal | null = null;
  private closing: ServerResponseLike | null = null;
  /** The response closed: abandoned if it had not finished (a closure only for operations that wait on something). */
  private onClose: (() => void) | null = null;
  /** Store reads issued for it while it runs. */
  private reads: CancellableRead[] | null = null;
  deadline?: number;

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
    if (this.abandoned) controller.abort(this.reason);
    else this.watchClient();
    return controller.signal;
  }

  trackRead(read: CancellableRead): void {
    if (this.abandoned) {
      cancelRead(read);
      return;
    }
    (this.reads ??= []).push(read);
    this.watchClient();
  }

  /** From now on the client's leaving abandons the operation (once; at once if it has left). */
  private watchClient(): void {
    if (this.watching) return;
    this.watching = true;
    const res = this.client.clientGone ? undefined : this.client.res;
    if (res) {
      if (res.destroyed && !res.writableFinished) {
        this.abandon(this.goneReason());
        return;
      }
      this.closing = res;
      this.onClose = () => {
        if (!res.writableFinished) this.abandon(this.goneReason());
      };
      res.once('close', this.onClose);
      return;
    }
    const gone = this.client.clientGone ?? this.client.request?.signal ?? null;
    if (gone?.aborted) this.abandon(this.goneReason());
    else if (gone) {
      this.gone = gone;
      gone.addEventListener('abort', this, { once: true });
    }
  }

  /** The client went away (EventListener interface: no closure per operation). */
  handleEvent(): void {
    this.abandon(this.goneReason());
  }

  /** Nobody waits for the operation any more: its signal aborts (now, or when it is made), its reads are cancelled. */
  abandon(reason: unknown): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.reason = reason;
    this.controller?.abort(reason);
    const reads = this.reads;
    this.reads = null;
    if (reads) for (const read of reads) cancelRead(read);
  }

  /** The operation is over: the client's leaving no longer concerns it, and its reads have ended. */
  end(): void {
    this.reads = null;
    if (this.closing) {
      this.closing.off('close', this.onClose!);
      this.closing = null;
    }
    if (!this.gone) return;
    this.gone.removeEventListener('abort', this);
    this.gone = null;
  }
}

function cancelRead(read: CancellableRead): void {
  void Promise.resolve(read.cancel()).catch(() => {});
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

  /**
   * The result for a caller (undefined: background work): its own abandonment ends its wait (and
   * may cancel the work); its deadline ends its wait with `late()` and leaves the work running.
   */
  join(caller: RequestScope | undefined, late?: () => Error): Promise<T> {
    const signal = caller?.signal;
    if (!signal) {
      this.background = true;
      return this.promise;
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    this.requests++;
    return new Promise<T>((resolve, reject) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        if (done) return false;
        done = true;
        this.requests--;
        clearTimeout(timer);
        signal.removeEventListener('abort', leave);
        return true;
      };
      if (late && caller?.deadline !== undefined) {
        timer = setTimeout(() => finish() && reject(late()), Math.max(0, caller.deadline - Date.now()));
      }
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
