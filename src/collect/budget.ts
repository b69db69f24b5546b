// A provider's call budget: at most `perMinute` upstream calls in any 60 s (every call to the
// platform counts, whoever made it: a query's and a live feed's share the platform's quota with
// the collector's) and at most `concurrent` collections at once. Calls are counted as they start
// (ProviderSet's observer, retries included); the collector reserves a job's expected calls before
// starting it and gives the reservation back once its calls have been counted.

const WINDOW_MS = 60_000;

export class CallBudget {
  private readonly calls: number[] = [];
  private reserved = 0;
  private inFlight = 0;

  constructor(
    readonly perMinute: number,
    readonly concurrent: number,
    private readonly now: () => number,
  ) {}

  /** An upstream call to the provider started. */
  record(): void {
    this.calls.push(this.now());
  }

  /** Calls started in the last minute. */
  used(): number {
    const since = this.now() - WINDOW_MS;
    while (this.calls.length > 0 && this.calls[0]! <= since) this.calls.shift();
    return this.calls.length;
  }

  /** Room for `calls` more within the minute (beside `keep` held back) and a free slot: taken, or false. */
  tryTake(calls: number, keep = 0): boolean {
    if (this.inFlight >= this.concurrent) return false;
    if (this.used() + this.reserved + calls + keep > this.perMinute) return false;
    this.reserved += calls;
    this.inFlight++;
    return true;
  }

  /** The collection that took `calls` is over: its real calls are counted by record() by now. */
  give(calls: number): void {
    this.reserved -= calls;
    this.inFlight--;
  }

  get slotsFree(): boolean {
    return this.inFlight < this.concurrent;
  }
}
