// patches/@whatwg-node+promise-helpers+1.3.2.patch (applied by patch-package at install): yoga and
// envelop run every request's plugin hooks through these helpers. The patch must be applied (a
// fresh install without it allocated ~50 KiB more per warm list request) and must keep the
// helpers' contract: synchronous work stays synchronous, asynchronous work continues in order,
// errors reach the caller, endEarly stops the iteration.
import { fakePromise, handleMaybePromise, iterateAsync, mapMaybePromise } from '@whatwg-node/promise-helpers';
import { describe, expect, it } from 'vitest';

describe('the patched @whatwg-node/promise-helpers', () => {
  it('is applied: a synchronous input is handled without fake-promise objects', () => {
    let factories = 0;
    const out = handleMaybePromise(
      () => 2,
      (v) => {
        factories++;
        return v * 3;
      },
    );
    expect(out).toBe(6);
    expect(factories).toBe(1);
    expect(mapMaybePromise(4, (v: number) => v + 1)).toBe(5);
    // What tells the patched files from 1.3.2's (whose results above are the same): fake promises
    // share their methods through a class instead of carrying fresh closures, and one iteration
    // hands every hook the same endEarly instead of making one per hook.
    expect(Object.hasOwn(fakePromise(1), 'then')).toBe(false);
    const ends = new Set<unknown>();
    iterateAsync([1, 2, 3], (_v, endEarly) => void ends.add(endEarly));
    expect(ends.size).toBe(1);
  });

  it('handles promises, rejections and thrown errors as before', async () => {
    await expect(
      handleMaybePromise(
        () => Promise.resolve(2),
        (v) => v * 3,
      ),
    ).resolves.toBe(6);
    await expect(
      handleMaybePromise(
        () => Promise.reject(new Error('down')),
        () => 'unreached',
        (err) => `handled ${(err as Error).message}`,
      ),
    ).resolves.toBe('handled down');
    expect(() =>
      handleMaybePromise(
        () => {
          throw new Error('sync');
        },
        () => 'unreached',
      ),
    ).toThrow('sync');
    expect(
      handleMaybePromise(
        () => {
          throw new Error('sync');
        },
        () => 'unreached',
        () => 'recovered',
      ),
    ).toBe('recovered');
    expect(
      handleMaybePromise(
        () => fakePromise(7),
        (v) => v + 1,
      ),
    ).toBe(8);
  });

  it('iterates synchronous hooks in one loop and stops where a hook ends it', () => {
    const seen: number[] = [];
    const results: number[] = [];
    const out = iterateAsync(
      [1, 2, 3, 4],
      (v, endEarly) => {
        seen.push(v);
        if (v === 3) endEarly();
        return v * 10;
      },
      results,
    );
    expect(out).toBeUndefined();
    expect(seen).toEqual([1, 2, 3]);
    expect(results).toEqual([10, 20, 30]);
  });

  it('continues after an asynchronous hook, in order, and passes its rejection on', async () => {
    const order: string[] = [];
    const results: string[] = [];
    await iterateAsync(
      ['a', 'b', 'c'],
      (v) => {
        order.push(v);
        return v === 'b' ? Promise.resolve(`${v}!`) : `${v}!`;
      },
      results,
    );
    expect(order).toEqual(['a', 'b', 'c']);
    expect(results).toEqual(['a!', 'b!', 'c!']);
    await expect(iterateAsync([1, 2], (v) => (v === 1 ? Promise.reject(new Error('hook failed')) : v))).rejects.toThrow('hook failed');
    expect(() =>
      iterateAsync([1], () => {
        throw new Error('hook threw');
      }),
    ).toThrow('hook threw');
  });
});
