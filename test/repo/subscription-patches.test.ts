// patches/@whatwg-node+promise-helpers+1.3.2.patch (mapAsyncIterator), patches/@envelop+core+5.6.1.patch
// and patches/graphql-ws+6.4.2.patch, applied by patch-package at install: what a live subscription
// keeps for its whole life, made smaller (issue 17; `npm run bench:live`, heap per subscriber from
// a 1,000- and a 3,000-subscriber snapshot). The iterator wrappers are classes instead of object
// literals of closures, envelop empties the hook arrays its wrappers' scopes keep, and graphql-ws'
// suspended message handlers let go of the message once it is parsed. The patches must be applied,
// and the wrappers must behave as before: values mapped, onEnd once, errors mapped or passed on,
// return() reaching the source.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { envelop, errorAsyncIterator, finalAsyncIterator, type Plugin, useEngine } from '@envelop/core';
import { mapAsyncIterator } from '@whatwg-node/promise-helpers';
import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';

/** An async generator of `values` that throws `failure` after them (when given), recording its end. */
function source<T>(values: T[], failure?: Error) {
  const log = { finished: 0 };
  async function* run() {
    try {
      for (const v of values) yield v;
      if (failure) throw failure;
    } finally {
      log.finished++;
    }
  }
  return { iterator: run(), log };
}

async function drain<T>(it: AsyncIterator<T>, max = 100): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < max; i++) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

describe('the patched subscription wrappers', () => {
  it('are applied: the wrappers keep their methods on a prototype, graphql-ws lets go of the message', () => {
    const wrappers = [
      mapAsyncIterator(source([1]).iterator, (v: number) => v),
      finalAsyncIterator(source([1]).iterator, () => {}),
      errorAsyncIterator(source([1]).iterator, () => {}),
    ];
    for (const w of wrappers) {
      expect(Object.hasOwn(w, 'next')).toBe(false);
      expect(typeof w.next).toBe('function');
      expect((w as AsyncIterableIterator<unknown>)[Symbol.asyncIterator]()).toBe(w);
    }
    const require = createRequire(import.meta.url);
    const envelopRoot = path.dirname(path.dirname(require.resolve('@envelop/core')));
    for (const f of ['cjs/orchestrator.js', 'esm/orchestrator.js']) {
      expect(readFileSync(path.join(envelopRoot, f), 'utf8'), f).toContain('afterCallbacks.length = 0;');
    }
    const dist = path.dirname(require.resolve('graphql-ws'));
    const servers = readdirSync(dist).filter((f) => /^server-.*\.(c?js)$/.test(f));
    expect(servers.length).toBeGreaterThan(0);
    for (const f of [...servers.map((s) => path.join(dist, s)), path.join(dist, 'use/ws.js'), path.join(dist, 'use/ws.cjs')]) {
      expect(readFileSync(f, 'utf8'), f).toMatch(/(data|event) = void 0;/);
    }
  });

  it('mapAsyncIterator maps every value, ends once, and return() reaches the source', async () => {
    let ends = 0;
    const a = source([1, 2, 3]);
    expect(
      await drain(
        mapAsyncIterator(
          a.iterator,
          (v: number) => v * 10,
          undefined,
          () => void ends++,
        ),
      ),
    ).toEqual([10, 20, 30]);
    expect([ends, a.log.finished]).toEqual([1, 1]);

    const b = source([1, 2, 3]);
    const mapped = mapAsyncIterator(
      b.iterator,
      (v: number) => v + 1,
      undefined,
      () => void ends++,
    );
    expect((await mapped.next()).value).toBe(2);
    expect(await mapped.return!()).toEqual({ done: true, value: undefined });
    expect([ends, b.log.finished]).toEqual([2, 1]);
  });

  it('mapAsyncIterator closes the source when a mapping throws, and maps or passes on its errors', async () => {
    const a = source([1, 2]);
    const failing = mapAsyncIterator(a.iterator, () => {
      throw new Error('mapping failed');
    });
    await expect(failing.next()).rejects.toThrow('mapping failed');
    expect(a.log.finished).toBe(1);

    const b = source([1], new Error('source failed'));
    const recovered = mapAsyncIterator(
      b.iterator,
      (v: number) => v,
      (err: Error) => `recovered from ${err.message}`,
    );
    expect(await recovered.next()).toEqual({ value: 1, done: false });
    expect(await recovered.next()).toEqual({ value: 'recovered from source failed', done: false });

    const c = source([], new Error('passed on'));
    await expect(mapAsyncIterator(c.iterator, (v: never) => v).next()).rejects.toThrow('passed on');
  });

  it('finalAsyncIterator calls its final hook once, whether the source ends or is returned', async () => {
    let finals = 0;
    expect(await drain(finalAsyncIterator(source([1, 2]).iterator as AsyncIterable<number>, () => void finals++))).toEqual([1, 2]);
    expect(finals).toBe(1);
    const returned = finalAsyncIterator(source([1, 2]).iterator as AsyncIterable<number>, () => void finals++);
    await returned.next();
    await returned.return!(undefined);
    await returned.return!(undefined);
    expect(finals).toBe(2);
  });

  it('errorAsyncIterator hands a failure to its hook, which may replace it', async () => {
    const seen: string[] = [];
    const wrapped = errorAsyncIterator(source([7], new Error('boom')).iterator as AsyncIterable<number>, (err) => {
      seen.push((err as Error).message);
      throw new Error('masked');
    });
    expect(await wrapped.next()).toEqual({ value: 7, done: false });
    await expect(wrapped.next()).rejects.toThrow('masked');
    expect(seen).toEqual(['boom']);
  });

  it("an envelop subscription runs every plugin's onNext and error hooks as before", async () => {
    const hooks = (tag: string): Plugin => ({
      onSubscribe() {
        return {
          onSubscribeResult() {
            return {
              onNext({ result, setResult }: { result: unknown; setResult: (r: never) => void }) {
                const r = result as { data: { tags: string[] } };
                setResult({ data: { tags: [...r.data.tags, tag] } } as never);
              },
            };
          },
          onSubscribeError({ error, setError }: { error: unknown; setError: (e: unknown) => void }) {
            setError(new Error(`${(error as Error).message} via ${tag}`));
          },
        };
      },
    });
    const a = source([{ data: { tags: ['event 1'] } }, { data: { tags: ['event 2'] } }], new Error('feed lost'));
    const getEnveloped = envelop({
      plugins: [useEngine({ parse, validate: () => [], execute: () => ({}), subscribe: () => a.iterator }), hooks('a'), hooks('b')],
    });
    const { subscribe, schema } = getEnveloped();
    const stream = (await subscribe({ schema, document: parse('subscription { x }'), contextValue: {} })) as AsyncIterator<{ data: { tags: string[] } }>;
    expect((await stream.next()).value).toEqual({ data: { tags: ['event 1', 'a', 'b'] } });
    expect((await stream.next()).value).toEqual({ data: { tags: ['event 2', 'a', 'b'] } });
    await expect(stream.next()).rejects.toThrow('feed lost via a via b');
    expect(a.log.finished).toBe(1);
  });
});
