// The request scope travels as a parameter (issue 22): these check what it carries into shared
// work, and that nothing brings AsyncLocalStorage back onto the request path, where on Node 20 it
// switches on promise hooks for every promise of the process (a warm job list cost 30% more CPU).
import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OperationScope, SharedWork, type RequestScope } from '../../src/domain/request-scope.js';

const SRC = path.resolve(import.meta.dirname, '../../src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? tsFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** A promise settled from outside, so the test decides when shared work finishes. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const scopeOf = (tenant: string | null): RequestScope & { abort(reason: unknown): void } => {
  const controller = new AbortController();
  return { signal: controller.signal, tenant, abort: (reason) => controller.abort(reason) };
};

describe('SharedWork', () => {
  it("runs under the starting request's tenant with its own signal, and answers every waiter", async () => {
    const started = scopeOf('team-a');
    const done = deferred<number>();
    let seen: RequestScope | null = null;
    const work = new SharedWork(started, (shared) => {
      seen = shared;
      return done.promise;
    });
    const first = work.join(started);
    const second = work.join(scopeOf('team-b'));
    expect(work.waiting).toBe(2);
    expect(seen!.tenant).toBe('team-a');
    expect(seen!.signal).not.toBe(started.signal);
    done.resolve(42);
    expect(await Promise.all([first, second])).toEqual([42, 42]);
    expect(work.waiting).toBe(0);
  });

  it('is cancelled when its last request waiter is abandoned, not before', async () => {
    const a = scopeOf('a');
    const b = scopeOf('b');
    let shared!: RequestScope;
    const work = new SharedWork(a, (s) => {
      shared = s;
      return new Promise<never>(() => {});
    });
    const waitA = work.join(a);
    const waitB = work.join(b);
    a.abort(new Error('a left'));
    await expect(waitA).rejects.toThrow('a left');
    expect(shared.signal.aborted).toBe(false);
    b.abort(new Error('b left'));
    await expect(waitB).rejects.toThrow('b left');
    expect(shared.signal.aborted).toBe(true);
    expect(work.cancelled).toBe(true);
  });

  it('keeps going for a background waiter (no scope) after every request left', async () => {
    const a = scopeOf('a');
    const done = deferred<string>();
    let shared!: RequestScope;
    const work = new SharedWork(a, (s) => {
      shared = s;
      return done.promise;
    });
    const waitA = work.join(a);
    const poller = work.join(undefined);
    a.abort(new Error('gone'));
    await expect(waitA).rejects.toThrow('gone');
    expect(shared.signal.aborted).toBe(false);
    done.resolve('polled');
    expect(await poller).toBe('polled');
  });

  it('a background start has no tenant (no share of the platform is drawn)', async () => {
    let tenant: string | null | undefined;
    const work = new SharedWork(undefined, async (s) => {
      tenant = s.tenant;
      return 1;
    });
    expect(await work.join(undefined)).toBe(1);
    expect(tenant).toBeNull();
  });
});

describe('OperationScope', () => {
  it('makes its signal only when asked, aborted already when the client left before', () => {
    const client = new AbortController();
    const scope = new OperationScope('t', { request: { signal: client.signal } }, () => new Error('client gone'));
    client.abort();
    expect(scope.signal.aborted).toBe(true);
    expect((scope.signal.reason as Error).message).toBe('client gone');
  });
});

/** The parts of a Node ServerResponse the scope follows. */
class FakeResponse extends EventEmitter {
  writableFinished = false;
  destroyed = false;
}

describe('OperationScope reads', () => {
  const read = () => ({
    cancelled: 0,
    cancel() {
      this.cancelled++;
    },
  });

  it('cancels the reads under way when the client closes the response before it finished', () => {
    const res = new FakeResponse();
    const scope = new OperationScope(null, { res }, () => new Error('client gone'));
    const a = read();
    const b = read();
    scope.trackRead(a);
    scope.trackRead(b);
    expect(res.listenerCount('close')).toBe(1);
    res.destroyed = true;
    res.emit('close');
    expect([a.cancelled, b.cancelled]).toEqual([1, 1]);
    expect((scope.signal.reason as Error).message).toBe('client gone');
  });

  it('cancels nothing when the response closes after it finished, and stops listening when the operation ends', () => {
    const res = new FakeResponse();
    const scope = new OperationScope(null, { res }, () => new Error('client gone'));
    const a = read();
    scope.trackRead(a);
    res.writableFinished = true;
    res.emit('close');
    expect(a.cancelled).toBe(0);
    scope.end();
    expect(res.listenerCount('close')).toBe(0);
  });

  it('cancels on abandonment (the time-out), and a read issued after it at once; none after the operation ended', () => {
    const scope = new OperationScope(null, { res: new FakeResponse() }, () => new Error('client gone'));
    const a = read();
    scope.trackRead(a);
    scope.abandon(new Error('timed out'));
    expect(a.cancelled).toBe(1);
    const late = read();
    scope.trackRead(late);
    expect(late.cancelled).toBe(1);
    const other = new OperationScope(null, { res: new FakeResponse() }, () => new Error('client gone'));
    const done = read();
    other.trackRead(done);
    other.end();
    other.abandon(new Error('too late'));
    expect(done.cancelled).toBe(0);
  });
});

describe('the request path', () => {
  it('uses no AsyncLocalStorage (only the opt-in OpenTelemetry tracing does)', () => {
    const offenders = tsFiles(SRC)
      .filter((f) => path.relative(SRC, f) !== path.join('server', 'tracing.ts'))
      .filter((f) => /\bAsyncLocalStorage\b|from 'node:async_hooks'|from 'async_hooks'/.test(readFileSync(f, 'utf8').replace(/^\s*(\/\/|\*).*$/gm, '')))
      .map((f) => path.relative(SRC, f));
    expect(offenders).toEqual([]);
  });
});
