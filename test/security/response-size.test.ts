// The answer-size limit: an answer without errors is serialised once, measured, and that text is
// what yoga sends (the result's own `stringify`); one with errors is bounded by jsonBytesAtMost, an
// upper bound of JSON.stringify's bytes for any answer. An answer over MAX_RESPONSE_BYTES is refused.
import { GraphQLError } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerBytes, jsonBytesAtMost } from '../../src/server/plugins/answer-size.js';
import { postGraphql, startTestServer, type TestServer } from '../support/runtime.js';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('jsonBytesAtMost', () => {
  it('is never below the bytes JSON.stringify writes', () => {
    const samples: unknown[] = [
      null,
      true,
      0,
      -1.2345678901234567e-308,
      Number.MAX_VALUE,
      Number.NaN,
      '',
      'plain',
      'quotes " and \\ backslashes',
      'control \u0000\u0001\u001f characters',
      'ünïcödé ✓ 漢字 😀',
      'lone \ud800 surrogate',
      [],
      [1, 'two', null, [3, [4]]],
      { a: 1, ключ: 'значение', nested: { list: [{ x: undefined, y: () => 1 }] } },
      { data: { when: new Date(Date.UTC(2026, 0, 1)) }, errors: [new GraphQLError('bad', { extensions: { code: 'BAD_INPUT' } })] },
      { data: { points: Array.from({ length: 500 }, (_, i) => ({ timestamp: new Date(i * 1000).toISOString(), value: i / 7 })) } },
    ];
    for (const s of samples) expect(jsonBytesAtMost(s, Number.MAX_SAFE_INTEGER), JSON.stringify(s)?.slice(0, 60)).toBeGreaterThanOrEqual(bytes(s) ?? 0);
  });

  it('answers Infinity once the bound passes the limit', () => {
    expect(jsonBytesAtMost({ text: 'x'.repeat(1000) }, 100)).toBe(Number.POSITIVE_INFINITY);
    expect(jsonBytesAtMost({ text: 'x' }, 100)).toBeLessThanOrEqual(100);
    // A cycle (JSON.stringify refuses it) is left to the exact measure, not walked forever.
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(jsonBytesAtMost(cycle, Number.MAX_SAFE_INTEGER)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('answerBytes', () => {
  type Result = { data?: unknown; errors?: GraphQLError[]; extensions?: Record<string, unknown>; stringify?: (v: unknown) => string };

  it('serialises an answer without errors once and hands that text to the HTTP answer', () => {
    // Larger than a small answer (bounded by a short walk instead, below).
    const points = Array.from({ length: 1000 }, (_, i) => ({ timestamp: new Date(i * 1000), value: i / 1000 }));
    const result: Result = { data: { name: 'ünïcödé ✓ 漢字 😀', points } };
    expect(jsonBytesAtMost(result, Number.MAX_SAFE_INTEGER)).toBeGreaterThan(16 * 1024);
    const text = JSON.stringify(result);
    expect(answerBytes(result as never, 1_000_000)).toBe(0);
    expect(result.stringify?.(result)).toBe(text);
    // A plugin's `{ ...result }` copy serialises to the same text; a copy that changed, anew.
    const copy = { ...result } as Result;
    expect(copy.stringify?.(copy)).toBe(text);
    const changed = { ...result, errors: [new GraphQLError('late')] } as Result;
    expect(changed.stringify?.(changed)).toBe(JSON.stringify(changed));
    expect(changed.stringify?.({ ...result, hasNext: false })).toBe(JSON.stringify({ ...result, hasNext: false }));
    // Changed in place after it was measured: serialised anew.
    result.extensions = { note: 1 };
    expect(result.stringify?.(result)).toBe(JSON.stringify(result));
    // Another object handed to it (yoga's copy without internals) is serialised as it is.
    expect(result.stringify?.({ data: 1 })).toBe('{"data":1}');
  });

  it("bounds a small answer by a walk and leaves its serialisation to yoga (graphql-jit's own stringify)", () => {
    const own = (v: unknown) => JSON.stringify(v);
    const result: Result = { data: { name: 'ünïcödé ✓ 漢字 😀', points: [{ timestamp: new Date(0), value: 0.5 }] }, stringify: own };
    expect(answerBytes(result as never, 1_000_000)).toBe(0);
    expect(result.stringify).toBe(own);
    // Under a limit smaller than a small answer, it is measured as before.
    const exact = bytes({ data: result.data });
    expect(answerBytes({ data: result.data } as never, exact - 1)).toBe(exact);
  });

  it('counts UTF-8 bytes exactly where the limit needs them', () => {
    const result = { data: { name: 'é'.repeat(100) } };
    const exact = Buffer.byteLength(JSON.stringify(result));
    // 100 two-byte characters: the text's length is under the limit, its bytes are over it.
    expect(JSON.stringify(result).length).toBeLessThan(200);
    expect(answerBytes({ ...result }, 200)).toBe(exact);
    expect(answerBytes({ ...result }, exact)).toBeLessThanOrEqual(exact);
    expect(answerBytes({ ...result }, 3 * exact)).toBe(0);
  });

  it('bounds an answer with errors without serialising it, and leaves its serialiser alone', () => {
    const result: Result = { data: { x: 'y' }, errors: [new GraphQLError('bad', { extensions: { code: 'BAD_INPUT' } })] };
    expect(answerBytes(result as never, 1_000_000)).toBe(0);
    expect(result.stringify).toBeUndefined();
    expect(answerBytes(result as never, 10)).toBe(bytes(result));
  });
});

describe('MAX_RESPONSE_BYTES', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ securityEnv: { MAX_RESPONSE_BYTES: '300' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('refuses an answer over the limit and serves one under it', async () => {
    const small = await postGraphql(server.runtime.url, '{ providers { id } }');
    expect(small.errors).toBeUndefined();
    const large = await postGraphql(server.runtime.url, '{ providers { id name kind simulated } jobs(first: 20) { edges { node { id name status } } } }');
    expect(large.errors?.[0]?.extensions?.code).toBe('RESPONSE_TOO_LARGE');
  });
});
