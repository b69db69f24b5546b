// The answer-size limit measures only answers that may pass it: jsonBytesAtMost is an upper bound
// of JSON.stringify's bytes for any answer, and an answer over MAX_RESPONSE_BYTES is still refused.
import { GraphQLError } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBytesAtMost } from '../../src/server/plugins/use-limits.js';
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
