// The persisted-query store is bounded by bytes (issue 44, item 9): anyone may register any text,
// and 1,000 junk queries of 90 KB under a count-only bound added ~100 MB of RSS.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteBoundedApqStore } from '../../src/server/apq-store.js';
import { startTestServer, type TestServer } from '../support/runtime.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const BUDGET = 1024 * 1024;

describe('the persisted-query store', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ securityEnv: { APQ_STORE_MAX_BYTES: String(BUDGET) } });
  });
  afterAll(() => s.close());

  const post = async (body: unknown) => {
    const res = await fetch(`${s.runtime.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await res.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] };
  };
  const byHash = (query: string) => post({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } });

  it('keeps at most its byte budget of registered text, evicting the least recently used', async () => {
    const first = '{ providers { id } }';
    expect((await post({ query: first, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(first) } } })).data).toBeDefined();
    expect((await byHash(first)).data).toEqual({ providers: [{ id: 'bt' }] });
    // 40 queries of ~90 KB: 3.6 MB of text, well under the 1000-query count bound.
    const junk = Array.from({ length: 40 }, (_, i) => `{ providers { id } } # ${String(i).padStart(3, '0')}${'x'.repeat(90_000)}`);
    for (const q of junk) await post({ query: q, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(q) } } });
    const size = s.runtime.apqStore.size();
    expect(size.bytes).toBeLessThanOrEqual(BUDGET);
    expect(size.entries).toBeGreaterThan(0);
    expect(size.entries).toBeLessThan(junk.length);
    // The oldest were evicted; the newest is still answered by its hash.
    expect((await byHash(first)).errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect((await byHash(junk.at(-1)!)).data).toEqual({ providers: [{ id: 'bt' }] });
  });

  it('evicts by use, not by age, and keeps no text bigger than the whole budget', () => {
    const store = createByteBoundedApqStore(1000, 10);
    store.set('a', 'x'.repeat(200));
    store.set('b', 'x'.repeat(200));
    store.get('a');
    store.set('c', 'x'.repeat(200));
    expect([store.get('a'), store.get('b'), store.get('c')].map((v) => v !== undefined)).toEqual([true, false, true]);
    store.set('huge', 'x'.repeat(600));
    expect(store.get('huge')).toBeUndefined();
    expect(store.size().bytes).toBeLessThanOrEqual(1000);
  });
});
