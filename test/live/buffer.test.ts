// The per-subscriber queue: bounded whatever the producer does, newest kept, clean on every exit.
import { describe, expect, it } from 'vitest';
import { BoundedChannel } from '../../src/live/buffer.js';
import { backoffMs } from '../../src/live/hub.js';

describe('BoundedChannel', () => {
  it('keeps at most `capacity` items for a reader that reads nothing, dropping the oldest', async () => {
    const ch = new BoundedChannel<number>({ capacity: 16 });
    for (let i = 0; i < 100_000; i++) ch.push(i);
    expect(ch.length).toBe(16);
    expect(ch.dropped).toBe(100_000 - 16);
    const got: number[] = [];
    for (let i = 0; i < 16; i++) got.push((await ch.next()).value as number);
    expect(got).toEqual(Array.from({ length: 16 }, (_, i) => 100_000 - 16 + i));
  });

  it('hands an item straight to a waiting reader', async () => {
    const ch = new BoundedChannel<string>({ capacity: 1 });
    const pending = ch.next();
    ch.push('a');
    expect(await pending).toEqual({ value: 'a', done: false });
    expect(ch.length).toBe(0);
  });

  it('drains what is queued after end(), then reports done and closes once', async () => {
    let closed = 0;
    const ch = new BoundedChannel<number>({ capacity: 4, onClose: () => closed++ });
    ch.push(1);
    ch.push(2);
    ch.end();
    ch.push(3);
    expect(closed).toBe(0);
    expect((await ch.next()).value).toBe(1);
    expect((await ch.next()).value).toBe(2);
    expect(closed).toBe(1);
    expect((await ch.next()).done).toBe(true);
    expect(closed).toBe(1);
  });

  it('return() (unsubscribe, disconnect) frees the queue, wakes a waiting reader and closes once', async () => {
    let closed = 0;
    const ch = new BoundedChannel<number>({ capacity: 4, onClose: () => closed++ });
    const waiting = ch.next();
    await ch.return();
    expect(await waiting).toEqual({ value: undefined, done: true });
    ch.push(1);
    expect(ch.length).toBe(0);
    await ch.return();
    expect(closed).toBe(1);
  });
});

describe('backoffMs', () => {
  it('grows exponentially from the interval, is capped, jittered within [ceiling/2, ceiling], and honours retry-after', () => {
    expect(backoffMs(1000, 1, 60_000, () => 0)).toBe(500);
    expect(backoffMs(1000, 1, 60_000, () => 1)).toBe(1000);
    expect(backoffMs(1000, 4, 60_000, () => 1)).toBe(8000);
    expect(backoffMs(1000, 30, 60_000, () => 1)).toBe(60_000);
    expect(backoffMs(1000, 1, 60_000, () => 0, 7)).toBe(7000);
  });
});
