// A per-subscriber queue with a fixed capacity: a consumer that reads slower than events arrive
// loses the oldest ones (a dashboard wants the newest sample, not a backlog), so memory per
// subscriber is bounded whatever the consumer does. It is the async iterator a subscription returns.

export interface BoundedChannelOptions {
  /** Items kept for a consumer that is not reading; the oldest is dropped beyond it. */
  capacity: number;
  /** Called once when the consumer stops (return/throw) or the producer closes and the queue drains. */
  onClose?: () => void;
}

export class BoundedChannel<T> implements AsyncIterableIterator<T> {
  /**
   * The queue, made when the consumer lags and let go when it caught up: a consumer that keeps
   * up is handed each item directly and never needs one (thousands of live subscribers each held
   * an empty `capacity`-slot array).
   */
  private items: (T | undefined)[] | null = null;
  private readonly capacity: number;
  private readonly onClose: (() => void) | undefined;
  private head = 0;
  private size = 0;
  private waiting: ((r: IteratorResult<T>) => void) | null = null;
  private ended = false;
  private closedNotified = false;
  /** Items dropped because the consumer lagged; exposed so tests and metrics can see it. */
  dropped = 0;

  constructor(opts: BoundedChannelOptions) {
    if (!Number.isInteger(opts.capacity) || opts.capacity < 1) throw new Error('capacity must be a positive integer');
    this.capacity = opts.capacity;
    this.onClose = opts.onClose;
  }

  get length(): number {
    return this.size;
  }

  get closed(): boolean {
    return this.ended;
  }

  push(item: T): void {
    if (this.ended) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: item, done: false });
      return;
    }
    const cap = this.capacity;
    const items = (this.items ??= new Array(cap));
    if (this.size === cap) {
      // Full: overwrite the oldest slot.
      items[this.head] = item;
      this.head = (this.head + 1) % cap;
      this.dropped++;
      return;
    }
    items[(this.head + this.size) % cap] = item;
    this.size++;
  }

  /** The producer is done: the consumer still drains what is queued, then sees done. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: undefined, done: true });
    }
    if (this.size === 0) this.notifyClosed();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.size > 0 && this.items) {
      const item = this.items[this.head] as T;
      this.items[this.head] = undefined;
      this.head = (this.head + 1) % this.capacity;
      this.size--;
      if (this.size === 0) {
        this.items = null;
        this.head = 0;
      }
      if (this.ended && this.size === 0) this.notifyClosed();
      return Promise.resolve({ value: item, done: false });
    }
    if (this.ended) {
      this.notifyClosed();
      return Promise.resolve({ value: undefined, done: true });
    }
    // One reader at a time, as graphql-js and for-await use an iterator.
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  /** The consumer left (unsubscribe, disconnect): drop everything and release the producer side. */
  return(): Promise<IteratorResult<T>> {
    this.ended = true;
    this.items = null;
    this.head = 0;
    this.size = 0;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: undefined, done: true });
    }
    this.notifyClosed();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(err?: unknown): Promise<IteratorResult<T>> {
    void this.return();
    return Promise.reject(err);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private notifyClosed() {
    if (this.closedNotified) return;
    this.closedNotified = true;
    this.closedOnce();
  }

  /** Runs once when the channel closes; a subclass that is its own producer's handle releases it here. */
  protected closedOnce(): void {
    this.onClose?.();
  }
}
