// A clock the test moves: the live feeds' timers (LiveTimers) fire only when advance() passes
// their time, so "one poll per interval" is counted in intervals the test advanced, whatever the
// machine's speed. A timer due at once (0 ms) runs on the next turn of the event loop, as Node's would.
import type { LiveHub, LiveTimers } from '../../src/live/hub.js';
import { eventually } from './wait.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export class ManualTimers implements LiveTimers {
  private t: number;
  private seq = 0;
  private readonly queue: Timer[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    if (ms <= 0) {
      setImmediate(() => {
        if (!timer.cancelled) (timer.cancelled = true), fn();
      });
    } else {
      this.queue.push(timer);
    }
    return timer;
  }

  clearTimeout(handle: unknown): void {
    const timer = handle as Timer;
    timer.cancelled = true;
    const i = this.queue.indexOf(timer);
    if (i >= 0) this.queue.splice(i, 1);
  }

  /** Timers waiting for a later time (cancelled ones left out). */
  pending(): number {
    return this.queue.length;
  }

  /** Moves time forward by `ms`, firing each timer that falls due, in time order. */
  advance(ms: number): void {
    const target = this.t + ms;
    for (;;) {
      this.queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.queue[0];
      if (!next || next.at > target) break;
      this.queue.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = target;
  }
}

/** Resolves when the hub's feed on `topic` has finished its next step (a poll, a failed poll, a lock try). */
export function nextStep(hub: LiveHub, topic: string): Promise<void> {
  return new Promise((resolve) => {
    const on = (t: string) => {
      if (t !== topic) return;
      hub.events.off('step', on);
      resolve();
    };
    hub.events.on('step', on);
  });
}

/**
 * One step of each hub's feed on `topic`, on the test's clock: waits until every feed is between
 * steps with its next one scheduled (a step under way would schedule its successor after the clock
 * moved, so the move would be lost and the wait would hang), then moves the clock by `ms` and
 * resolves when each feed has finished the step that fell due. A feed that ended fails it by name.
 */
export async function stepFeeds(hubs: LiveHub | readonly LiveHub[], topic: string, timers: ManualTimers, ms: number): Promise<void> {
  const all = Array.isArray(hubs) ? (hubs as readonly LiveHub[]) : [hubs as LiveHub];
  await eventually(() => all.every((hub) => hub.feedWaiting(topic)) || undefined, 30_000, `the feed ${topic} to wait for its next step`);
  const stepped = Promise.all(all.map((hub) => nextStep(hub, topic)));
  timers.advance(ms);
  await stepped;
}

/**
 * Answers `ask()` while a platform holds every call it gets (a simulator's 'timeout' fault), its
 * upstream calls timing out on `clock` (RuntimeOptions.upstreamTimers): each time `calls()` (the
 * platform's count of requests received) grows, the clock moves by `timeoutMs`, as the held call
 * would have waited in real time. Every call of that platform in flight then times out; none of
 * another platform's, whose clocks stay put.
 */
export async function answerWithHeldCalls<T>(ask: () => Promise<T>, calls: () => Promise<number>, clock: ManualTimers, timeoutMs: number): Promise<T> {
  let seen = await calls();
  let settled = false;
  const answer = ask();
  answer.then(
    () => (settled = true),
    () => (settled = true),
  );
  await eventually(
    async () => {
      if (settled) return true;
      const now = await calls();
      if (now > seen) {
        seen = now;
        clock.advance(timeoutMs);
      }
      return false;
    },
    30_000,
    'an answer while the platform holds its calls',
  );
  return answer;
}
