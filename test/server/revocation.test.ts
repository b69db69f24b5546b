// A subscription under an API token ends once the token is revoked (use-revocation.ts); until
// then it must hold nothing of the events it passed on. A race against the revocation per event
// kept each event (and its result) reachable from the never-settled revocation promise: every
// live subscriber of a server with tokens kept every poll's result for its whole life.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { BoundedChannel } from '../../src/live/buffer.js';
import { endOnRevocation } from '../../src/server/plugins/use-revocation.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** A turn of the event loop: WeakRefs made in a job keep their targets until it ends. */
const turn = () => new Promise((r) => setImmediate(r));

describe('endOnRevocation', () => {
  it('holds nothing of past events while the token stays valid', async () => {
    const source = new BoundedChannel<object>({ capacity: 4 });
    let released = 0;
    const stream = endOnRevocation(source, new Promise<void>(() => {}), () => released++);
    const passed: WeakRef<object>[] = [];
    // In a function of its own, whose frame (holding the last event) is gone when it returns.
    const pass = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const event = { n: i, data: 'x'.repeat(1000) };
        passed.push(new WeakRef(event));
        source.push(event);
        expect((await stream.next()).value).toBe(event);
      }
    };
    await pass(50);
    await turn();
    gc();
    expect(passed.filter((r) => r.deref() !== undefined).length).toBe(0);
    await stream.return?.();
    expect(released).toBe(1);
    expect(source.closed).toBe(true);
  });

  it('answers a waiting reader with one UNAUTHENTICATED error once revoked, ends the source and releases once', async () => {
    const source = new BoundedChannel<object>({ capacity: 4 });
    let released = 0;
    let revoke = () => {};
    const stream = endOnRevocation(source, new Promise<void>((r) => (revoke = r)), () => released++);
    source.push({ n: 1 });
    expect((await stream.next()).value).toEqual({ n: 1 });
    const waiting = stream.next();
    revoke();
    const r = await waiting;
    expect(r.done).toBe(false);
    expect((r.value as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('UNAUTHENTICATED');
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(source.closed).toBe(true);
    expect(released).toBe(1);
  });

  it('a revocation between events ends the stream at the next read', async () => {
    const source = new BoundedChannel<object>({ capacity: 4 });
    let revoke = () => {};
    const stream = endOnRevocation(source, new Promise<void>((r) => (revoke = r)), () => {});
    revoke();
    await turn();
    source.push({ n: 1 });
    const r = await stream.next();
    expect((r.value as { errors: unknown[] }).errors).toHaveLength(1);
    expect((await stream.next()).done).toBe(true);
  });
});
