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
  private readonly items: (T | undefined)[];
  private head = 0;
  private size = 0;
  private waiting: ((r: IteratorResult<T>) => void) | null = null;
  private ended = false;
  private closedNotified = false;
  /** Items dropped because the consumer lagged; exposed so tests and metrics can see it. */
  dropped = 0;

  constructor(private readonly opts: BoundedChannelOptions) {
    if (!Number.isInteger(opts.capacity) || opts.capacity < 1) throw new Error('capacity must be a positive integer');
    this.items = new Array(opts.capacity);
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
    const cap = this.items.length;
    if (this.size === cap) {
      // Full: overwrite the oldest slot.
      this.items[this.head] = item;
      this.head = (this.head + 1) % cap;
      this.dropped++;
      return;
    }
    this.items[(this.head + this.size) % cap] = item;
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
    if (this.size > 0) {
      const item = this.items[this.head] as T;
      this.items[this.head] = undefined;
      this.head = (this.head + 1) % this.items.length;
      this.size--;
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
    this.items.fill(undefined);
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
    this.opts.onClose?.();
  }
}
