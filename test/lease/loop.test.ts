// The leased loop the collector, the findings evaluator and alert delivery run in, on the test's
// clock over the real lease table: one holder works at a fixed cadence and the other replica
// takes over once the holder stops; a lease try the store cannot answer keeps the lease while it
// runs and loses it after; a holder renewing on its own timer that finds its lease taken aborts
// the work under way.
import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeasedLoop, type LeasedLoopOptions, type LeaseStore, type LoopStep } from '../../src/lease/index.js';
import { useTestRepository } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const INTERVAL_MS = 10_000;

describe('a leased loop', () => {
  const t = useTestRepository();
  let timers: ManualTimers;
  const loops: LeasedLoop<unknown>[] = [];

  beforeEach(async () => {
    timers = new ManualTimers(T0);
    await t.db.db.execute(sql`delete from collect_leases`);
  });
  afterEach(async () => {
    await Promise.all(loops.splice(0).map((l) => l.stop()));
  });

  /**
   * The lease table on the test's clock; `down()` makes it throw as an unreachable store would,
   * `nextTry()` resolves once the next lease try has been answered.
   */
  function leaseStore() {
    let failing = false;
    let waiting: (() => void)[] = [];
    const store: LeaseStore = {
      tryLease: async (name, holder, ttlMs) => {
        try {
          if (failing) throw new Error('the store cannot be reached');
          return await t.repo.tryLease(name, holder, new Date(timers.now()), new Date(timers.now() + ttlMs));
        } finally {
          const w = waiting;
          waiting = [];
          for (const r of w) r();
        }
      },
      releaseLease: (name, holder) => t.repo.releaseLease(name, holder),
    };
    return { store, down: (v: boolean) => (failing = v), nextTry: () => new Promise<void>((r) => waiting.push(r)) };
  }

  /** A loop whose steps are recorded; `next()` resolves on its next step. */
  function loop<R>(holder: string, store: LeaseStore, o: Partial<LeasedLoopOptions<R>> & Pick<LeasedLoopOptions<R>, 'work'>) {
    const steps: LoopStep<R>[] = [];
    const lost: string[] = [];
    const errors: string[] = [];
    let waiting: (() => void)[] = [];
    const l = new LeasedLoop<R>({
      name: 'test:loop',
      holder,
      store,
      timers,
      intervalMs: INTERVAL_MS,
      leaseMs: 1.5 * INTERVAL_MS,
      followerTryMs: INTERVAL_MS / 2,
      onError: (_err, during) => errors.push(during),
      onLost: (why) => lost.push(why),
      onStep: (s) => {
        steps.push(s);
        const w = waiting;
        waiting = [];
        for (const r of w) r();
      },
      ...o,
    });
    loops.push(l as LeasedLoop<unknown>);
    const next = () => new Promise<void>((r) => waiting.push(r));
    return { l, steps, lost, errors, next };
  }

  /** Starts a loop and waits for its first step (due at once). */
  async function startAndStep(x: { l: LeasedLoop<any>; next(): Promise<void> }) {
    const stepped = x.next();
    x.l.start();
    timers.advance(0);
    await stepped;
  }

  /** Moves the clock by `ms` and waits for the steps it makes due (one per loop given). */
  async function advance(ms: number, ...due: { next(): Promise<void> }[]) {
    const stepped = due.map((d) => d.next());
    timers.advance(ms);
    await Promise.all(stepped);
  }

  it('one holder works at a fixed cadence; the other takes over once it stops', async () => {
    const { store } = leaseStore();
    const a = loop('a', store, { work: async () => 'a' });
    const b = loop('b', store, { work: async () => 'b' });
    // b starts once a holds the lease: who wins a race is not under test.
    await startAndStep(a);
    await startAndStep(b);
    expect([a.l.leading, b.l.leading]).toEqual([true, false]);
    expect(a.steps[0]).toMatchObject({ worked: true, lease: 'held', result: 'a' });
    expect(b.steps[0]).toMatchObject({ worked: false, lease: 'taken', result: null });

    // The follower tries twice an interval, the holder works once.
    await advance(INTERVAL_MS / 2, b);
    await advance(INTERVAL_MS / 2, a, b);
    expect(a.steps.filter((s) => s.worked)).toHaveLength(2);
    expect(b.steps.filter((s) => s.worked)).toHaveLength(0);

    await a.l.stop();
    await advance(INTERVAL_MS / 2, b);
    expect(b.l.leading).toBe(true);
    expect(b.steps.at(-1)).toMatchObject({ worked: true, result: 'b' });
  });

  it('a lease try the store cannot answer keeps the lease while it runs, and loses it after', async () => {
    const { store, down } = leaseStore();
    const a = loop('a', store, { work: async () => null });
    await startAndStep(a);
    expect(a.l.leading).toBe(true);

    down(true);
    // 1 interval on: the lease (1.5 intervals) still runs.
    await advance(INTERVAL_MS, a);
    expect(a.steps.at(-1)).toMatchObject({ worked: false, lease: 'failed' });
    expect(a.l.leading).toBe(true);
    expect(a.lost).toEqual([]);
    // Tried again half an interval later: the lease ran out at 1.5 intervals.
    await advance(INTERVAL_MS / 2, a);
    expect(a.l.leading).toBe(false);
    expect(a.lost).toEqual(['the lease ran out before it could be renewed']);
    expect(a.errors).toEqual(['lease', 'lease']);

    down(false);
    await advance(INTERVAL_MS / 2, a);
    expect(a.l.leading).toBe(true);
    expect(a.steps.at(-1)).toMatchObject({ worked: true, lease: 'held' });
  });

  it('renewing on its own timer, a holder that finds its lease taken aborts the work under way', async () => {
    const { store, nextTry } = leaseStore();
    let aborted = false;
    let started!: () => void;
    const working = new Promise<void>((r) => (started = r));
    const a = loop('a', store, {
      leaseMs: INTERVAL_MS,
      renewEveryMs: INTERVAL_MS / 3,
      // Works until told to stop, longer than the lease.
      work: (signal) =>
        new Promise<void>((resolve) => {
          started();
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
        }),
    });
    const first = a.next();
    a.l.start();
    timers.advance(0);
    await working;
    // Renewed while the work runs: still the holder past the lease's first end.
    for (let i = 0; i < 4; i++) {
      const renewed = nextTry();
      timers.advance(INTERVAL_MS / 3);
      await renewed;
      // The loop sets its next renewal timer once it has read the answer (its microtasks, then this).
      await new Promise((r) => setImmediate(r));
    }
    expect(a.l.leading).toBe(true);
    expect(aborted).toBe(false);

    // Another replica takes it, as one whose clock says it ran out would.
    const late = new Date(timers.now() + 2 * INTERVAL_MS);
    expect(await t.repo.tryLease('test:loop', 'b', late, new Date(late.getTime() + 100 * INTERVAL_MS))).toBe(true);
    timers.advance(INTERVAL_MS / 3);
    await first;
    expect(aborted).toBe(true);
    expect(a.l.leading).toBe(false);
    expect(a.lost).toEqual(['another replica holds the lease']);
    expect(a.steps[0]).toMatchObject({ worked: true, lease: 'held' });
  });

  it('renewing on its own timer, a holder writes its lease once per renewal (not again at each step), never with less left than at a renewal due', async () => {
    const { store, nextTry } = leaseStore();
    let tries = 0;
    const counted: LeaseStore = { ...store, tryLease: (...args) => (tries++, store.tryLease(...args)) };
    // An interval of whole thirds: the renewals fall due with the steps to the millisecond.
    const interval = 9_000;
    const a = loop('a', counted, { intervalMs: interval, leaseMs: interval, renewEveryMs: interval / 3, work: async () => null });
    await startAndStep(a);
    const expiresIn = async () => {
      const rows = (await t.db.db.execute(
        sql`select (extract(epoch from expires_at) * 1000)::float8 as at from collect_leases where name = 'test:loop'`,
      )) as unknown;
      const [row] = (Array.isArray(rows) ? rows : (rows as { rows: { at: number }[] }).rows) as { at: number }[];
      return Number(row!.at) - timers.now();
    };
    const tries0 = tries;
    for (let i = 1; i <= 9; i++) {
      const renewed = nextTry();
      const stepped = i % 3 === 0 ? a.next() : null;
      timers.advance(interval / 3);
      await Promise.all([renewed, stepped]);
      // The loop sets its next renewal timer once it has read the answer (its microtasks, then this).
      await new Promise((r) => setImmediate(r));
      expect(await expiresIn()).toBeGreaterThanOrEqual(interval - interval / 3);
    }
    expect(a.steps.filter((x) => x.worked)).toHaveLength(4);
    expect(a.l.leading).toBe(true);
    // Three intervals, three renewals each; the steps' tries were a fourth each.
    expect(tries - tries0).toBe(9);
  });
});
