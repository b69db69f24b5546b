// A periodic job that one replica runs at a time: each replica steps on a timer and tries a named
// lease in the store (Postgres, shared by every replica); the holder does the work at a fixed
// cadence (the next step one interval after the last began), the others try again on a shorter
// one, so a dead holder's work is taken over once its lease runs out. The collector (one loop per
// provider), the findings evaluator and alert delivery each run one.
//
// A lease try that cannot be made (the store unreachable) keeps the lease while the lease this
// replica last took still runs: a blip does not hand the work over, a longer outage does (the
// other replicas can take it then). A holder whose work may outlast the lease renews it on its
// own timer (renewEveryMs), and stops the work under way (its signal aborts) once it loses it.
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { LiveTimers } from '../live/index.js';
import type { CollectionStore } from '../store/index.js';

/** The lease statements of the store's door (a test may lease on its own clock). */
export type LeaseStore = Pick<CollectionStore, 'tryLease' | 'releaseLease'>;

/** How a step's lease try went: taken or renewed, found with another holder, or not answered. */
export type LeaseTry = 'held' | 'taken' | 'failed';

export interface LoopStep<R> {
  /** The work's result; null when it did not run (not the holder) or threw. */
  result: R | null;
  /** The work ran in this step (this replica held the lease). */
  worked: boolean;
  lease: LeaseTry;
  /** When the step was scheduled to start and when it ended (the timers' clock, ms). */
  dueAt: number;
  endedAt: number;
}

export interface LeasedLoopOptions<R> {
  /** The lease's name in the store: one holder per name across replicas. */
  name: string;
  /** This replica's id in the lease table. */
  holder: string;
  store: LeaseStore;
  timers: LiveTimers;
  /** The holder's cadence, ms. */
  intervalMs: number;
  /** How long a lease runs from its last renewal, ms: a dead holder's work is taken over after it. */
  leaseMs: number;
  /** How often a replica that does not hold the lease tries it, ms. */
  followerTryMs: number;
  /** While holding: the lease renewed this often on its own timer, ms (a step longer than leaseMs keeps it); default only each step renews it. */
  renewEveryMs?: number;
  /** Listeners the work may hang on its signal at once (Node warns of a leak past 10). */
  signalListeners?: number;
  /** One step's work, while this replica holds the lease; the signal aborts when it loses it or stops. */
  work(signal: AbortSignal): Promise<R>;
  /** A lease try (during: 'lease') or the work threw. */
  onError(err: unknown, during: 'lease' | 'work'): void;
  /** This replica held the lease and no longer does (the work under way has been told to stop). */
  onLost?(why: string): void;
  /** A step ended: tests and benchmarks wait on it. */
  onStep?(step: LoopStep<R>): void;
}

export class LeasedLoop<R> {
  private timer: unknown = null;
  private running: Promise<void> | null = null;
  private renewTimer: unknown = null;
  private renewing: Promise<void> | null = null;
  private abort: AbortController;
  private stopped = false;
  private dueNow = false;
  private again = false;
  private holding = false;
  /** When the lease this replica last took runs out (its own clock). */
  private leaseUntil = Number.NEGATIVE_INFINITY;

  constructor(private readonly o: LeasedLoopOptions<R>) {
    this.abort = this.newAbort();
  }

  /** This replica holds the lease (as of its last try or renewal). */
  get leading(): boolean {
    return this.holding;
  }

  start(): this {
    this.schedule(0);
    return this;
  }

  /** A step is under way or due at once (tests that move the clock wait for it to be false). */
  busy(): boolean {
    return this.running !== null || this.dueNow;
  }

  /** Step now: at once if idle, else right after the step under way. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /** Stops stepping (the work under way is told to stop and awaited) and gives up the lease. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimers();
    this.abort.abort();
    await Promise.all([this.running, this.renewing]);
    if (this.holding) await this.o.store.releaseLease(this.o.name, this.o.holder).catch(() => {});
    this.holding = false;
  }

  private newAbort(): AbortController {
    const controller = new AbortController();
    if (this.o.signalListeners !== undefined) setMaxListeners(Math.max(10, this.o.signalListeners), controller.signal);
    return controller;
  }

  private clearTimers() {
    const timers = this.o.timers;
    if (this.timer !== null) timers.clearTimeout(this.timer);
    if (this.renewTimer !== null) timers.clearTimeout(this.renewTimer);
    this.timer = null;
    this.renewTimer = null;
  }

  private schedule(delayMs: number) {
    if (this.stopped) return;
    const timers = this.o.timers;
    if (this.timer !== null) timers.clearTimeout(this.timer);
    this.dueNow = delayMs <= 0;
    const dueAt = timers.now() + Math.max(0, delayMs);
    this.timer = timers.setTimeout(() => {
      this.timer = null;
      this.dueNow = false;
      this.running = this.step(dueAt).then((step) => {
        // Told once nothing runs any more: a waiter that hears of the step finds the loop idle.
        this.running = null;
        if (this.again && !this.stopped) this.schedule(0);
        this.again = false;
        this.o.onStep?.(step);
      });
    }, delayMs);
  }

  /** Tries the lease: held, taken by another, or failed (then the lease still held if it has not run out). */
  private async tryLease(): Promise<LeaseTry> {
    const at = this.o.timers.now();
    try {
      if (!(await this.o.store.tryLease(this.o.name, this.o.holder, this.o.leaseMs))) return 'taken';
      this.leaseUntil = at + this.o.leaseMs;
      return 'held';
    } catch (err) {
      this.o.onError(err, 'lease');
      return 'failed';
    }
  }

  /** After a lease try: leading or not, and if it was and is no more, the work told to stop. */
  private settle(lease: LeaseTry) {
    if (lease === 'held') {
      // Even when stopping: stop() gives it up once the step under way has ended.
      this.holding = true;
      return this.keepRenewing();
    }
    if (this.stopped || !this.holding) return;
    if (lease === 'failed' && this.o.timers.now() < this.leaseUntil) return this.keepRenewing();
    this.lose(lease === 'taken' ? 'another replica holds the lease' : 'the lease ran out before it could be renewed');
  }

  private async step(dueAt: number): Promise<LoopStep<R>> {
    const timers = this.o.timers;
    const started = timers.now();
    const lease = this.renewedOnItsOwn() ? 'held' : await this.tryLease();
    this.settle(lease);
    let result: R | null = null;
    let worked = false;
    if (lease === 'held' && this.holding && !this.stopped) {
      worked = true;
      try {
        result = await this.o.work(this.abort.signal);
      } catch (err) {
        this.o.onError(err, 'work');
      }
    }
    // The holder keeps a fixed cadence; a follower, a holder whose try failed, or one that lost the
    // lease during the work tries again sooner.
    if (worked && this.holding) this.schedule(Math.max(0, started + this.o.intervalMs - timers.now()));
    else this.schedule(this.o.followerTryMs);
    return { result, worked, lease, dueAt, endedAt: timers.now() };
  }

  /**
   * A holder renewing on its own timer whose last renewal is no older than the renewal period: the
   * lease has at least what it has whenever a renewal falls due, and the timer renews it next as it
   * does between steps, so a try of the step's own would only repeat a renewal. The collector's
   * step and its third renewal fell due together: four lease writes an interval for three
   * (Runicorn's interval is 2 s). Takeover times are the lease's and the followers', unchanged.
   */
  private renewedOnItsOwn(): boolean {
    const every = this.o.renewEveryMs;
    if (every === undefined || !this.holding || this.stopped || (this.renewTimer === null && this.renewing === null)) return false;
    return this.o.timers.now() - (this.leaseUntil - this.o.leaseMs) <= every;
  }

  private keepRenewing() {
    const every = this.o.renewEveryMs;
    if (every === undefined || this.renewTimer !== null || this.stopped || !this.holding) return;
    this.renewTimer = this.o.timers.setTimeout(() => {
      this.renewTimer = null;
      if (this.stopped || !this.holding) return;
      this.renewing = this.tryLease().then((lease) => {
        this.renewing = null;
        if (this.holding) this.settle(lease);
      });
    }, every);
  }

  private lose(why: string) {
    this.holding = false;
    if (this.renewTimer !== null) this.o.timers.clearTimeout(this.renewTimer);
    this.renewTimer = null;
    this.abort.abort();
    this.abort = this.newAbort();
    this.o.onLost?.(why);
  }
}

export interface LeasedWorkerOptions {
  name: string;
  holder: string;
  store: LeaseStore;
  timers: LiveTimers;
  intervalMs: number;
  logger: Pick<Logger, 'warn' | 'error'>;
  /** What a step does, for the log ('findings: evaluation'). */
  doing: string;
}

/**
 * Periodic work shorter than its interval (the findings evaluator, alert delivery): each step
 * renews a lease of 1.5 intervals, and a follower tries twice an interval, so a dead holder's work
 * is taken over within two intervals. A subclass gives the step and hears when each ends.
 */
export abstract class LeasedWorker<R> {
  readonly holder: string;
  private readonly loop: LeasedLoop<R>;

  constructor(o: LeasedWorkerOptions) {
    this.holder = o.holder;
    this.loop = new LeasedLoop<R>({
      ...o,
      leaseMs: o.intervalMs * 1.5,
      followerTryMs: o.intervalMs / 2,
      work: () => this.step(),
      onError: (err, during) => o.logger.error({ err, during }, `${o.doing} failed`),
      onLost: (why) => o.logger.warn({ why }, `${o.doing}: lost the lease; another replica takes over`),
      onStep: (step) => this.stepped(step.result),
    });
  }

  /** One step's work, while this replica holds the lease. */
  protected abstract step(): Promise<R>;

  /** A step ended (null: this replica did not hold the lease, or the work failed). */
  protected abstract stepped(result: R | null): void;

  /** This replica holds the lease. */
  get leading(): boolean {
    return this.loop.leading;
  }

  start(): this {
    this.loop.start();
    return this;
  }

  /** A step is under way or due at once. */
  busy(): boolean {
    return this.loop.busy();
  }

  /** Step now: at once if idle, else right after the step under way. */
  kick(): void {
    this.loop.kick();
  }

  /** Stops stepping (awaiting the step under way) and gives up the lease. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
