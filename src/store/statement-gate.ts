// PGlite runs one statement at a time, on the event loop's own thread. Issue 44: behind client-
// aborted heavy queries the next trivial query waited 25.7 s and /healthz went unanswered for
// minutes, because every statement the abandoned work had queued still ran, back to back, each
// handed on in a microtask so no I/O was read between them. The gate holds PGlite's statements in
// a queue of its own: a read whose request is abandoned (time-out, client gone) is dropped when its
// turn comes, not run; between statements the event loop reads its I/O (health checks, time-outs
// that abandon queued work); and a health probe goes first, behind only the statement under way.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { PoolStats } from './pool-watch.js';

/** Statements run back to back at most this long before the event loop gets a turn. */
export const GATE_SLICE_MS = 10;

interface Job {
  run(): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** The request it was issued for was abandoned: not run. */
  dropped: (() => unknown) | null;
  queuedAt: number;
}

export class StatementGate {
  private readonly queue: Job[] = [];
  private running = false;
  private sliceStart = performance.now();
  private finished = 0;
  /** Statements dropped because their request had been abandoned (tests and metrics read it). */
  droppedCount = 0;

  /**
   * Runs `statement` when its turn comes: first with `priority` (health probes), otherwise in
   * order. `abandoned()` is asked at that turn; when it returns a reason the statement is not run
   * and the promise rejects with it.
   */
  run<T>(statement: () => Promise<T>, opts: { priority?: boolean; abandoned?: () => unknown } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        run: statement,
        resolve: resolve as (v: unknown) => void,
        reject,
        dropped: opts.abandoned ?? null,
        queuedAt: performance.now(),
      };
      if (opts.priority) this.queue.unshift(job);
      else this.queue.push(job);
      if (!this.running) void this.pump();
    });
  }

  stats(): PoolStats {
    return {
      max: 1,
      inUse: this.running ? 1 : 0,
      waiting: this.queue.length,
      oldestWaitStart: this.queue.reduce<number | null>((min, j) => (min === null || j.queuedAt < min ? j.queuedAt : min), null),
      progress: this.finished,
      dropped: this.droppedCount,
    };
  }

  private async pump(): Promise<void> {
    this.running = true;
    this.sliceStart = performance.now();
    try {
      for (;;) {
        if (performance.now() - this.sliceStart >= GATE_SLICE_MS) {
          await yieldToLoop();
          this.sliceStart = performance.now();
        }
        const job = this.queue.shift();
        if (!job) return;
        const reason = job.dropped?.();
        if (reason !== undefined && reason !== null && reason !== false) {
          this.droppedCount++;
          job.reject(reason);
          continue;
        }
        try {
          job.resolve(await job.run());
        } catch (err) {
          job.reject(err);
        } finally {
          this.finished++;
        }
      }
    } finally {
      this.running = false;
    }
  }
}
