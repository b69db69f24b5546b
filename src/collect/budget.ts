// A provider's call budget: at most `perMinute` upstream calls in any 60 s (every call to the
// platform counts, whoever made it: a query's and a live feed's share the platform's quota with
// the collector's) and at most `concurrent` jobs collected at once. Calls are counted as they start
// (ProviderSet's observer, retries included); the collector reserves a group's expected calls before
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
    return this.takeUpTo(calls, 1, keep) === 1;
  }

  /**
   * As many as fit of `most` jobs costing `callsPerJob` each (a group collected together): within
   * the minute's calls (beside `keep`) and the free slots, one slot per job. Taken; 0 when none fits.
   */
  takeUpTo(callsPerJob: number, most: number, keep = 0): number {
    const byCalls = callsPerJob > 0 ? Math.floor((this.perMinute - this.used() - this.reserved - keep) / callsPerJob) : most;
    const jobs = Math.max(0, Math.min(most, this.concurrent - this.inFlight, byCalls));
    this.reserved += jobs * callsPerJob;
    this.inFlight += jobs;
    return jobs;
  }

  /** The collection of `jobs` that took `calls` is over: its real calls are counted by record() by now. */
  give(calls: number, jobs = 1): void {
    this.reserved -= calls;
    this.inFlight -= jobs;
  }

  get slotsFree(): boolean {
    return this.inFlight < this.concurrent;
  }
}
