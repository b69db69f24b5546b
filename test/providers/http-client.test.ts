// The one HTTP call helper every adapter uses, against a real server on loopback: Retry-After is
// decided once (the longer of the standard header and the platform's own hint), failures come out
// typed, and a body that is not what the schema says is UPSTREAM_BAD_RESPONSE.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { requestJson, retryAfterSeconds, type ErrorClassifier } from '../../src/providers/http-client.js';

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

let server: http.Server;
let base: string;
const answers = new Map<string, Answer>();
const held = new Set<http.ServerResponse>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/hang') {
      held.add(res);
      return;
    }
    const a = answers.get(req.url ?? '') ?? { status: 404, body: 'no route' };
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(a.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await new Promise((resolve) => server.close(resolve));
});

// A platform whose 429 body carries `retry_after` (as Baseten's and Runicorn's do).
const classify: ErrorClassifier = (res, body) => {
  const hint =
    body && typeof body === 'object' && typeof (body as { retry_after?: unknown }).retry_after === 'number'
      ? (body as { retry_after: number }).retry_after
      : null;
  return { message: `answered ${res.status}`, retryAfterSeconds: hint };
};

function call(path: string, timeoutMs = 5000) {
  return requestJson('p', { method: 'GET', url: `${base}${path}`, timeoutMs, schema: z.object({ ok: z.literal(true) }), what: `GET ${path}`, classify });
}

async function rateLimited(header: string | null, bodyRetryAfter: number | null) {
  const path = `/429-${header}-${bodyRetryAfter}`;
  answers.set(path, {
    status: 429,
    headers: header === null ? {} : { 'retry-after': header },
    body: JSON.stringify(bodyRetryAfter === null ? { error: 'slow down' } : { error: 'slow down', retry_after: bodyRetryAfter }),
  });
  return call(path).catch((e) => e);
}

describe('Retry-After', () => {
  it('waits for the longer of the header and the body when both say', async () => {
    expect(await rateLimited('5', 9)).toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: 9, status: 429 });
    expect(await rateLimited('12', 9)).toMatchObject({ code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: 12 });
  });

  it('takes whichever one is there, and null when neither is', async () => {
    expect((await rateLimited('7', null)).retryAfterSeconds).toBe(7);
    expect((await rateLimited(null, 4)).retryAfterSeconds).toBe(4);
    expect((await rateLimited(null, null)).retryAfterSeconds).toBeNull();
  });

  it('reads an HTTP-date header against the clock', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const headers = new Headers({ 'retry-after': new Date(now + 30_000).toUTCString() });
    expect(retryAfterSeconds(headers, null, now)).toBe(30);
    expect(retryAfterSeconds(headers, 45, now)).toBe(45);
  });

  it('is not set on failures other than rate limits', async () => {
    answers.set('/503', { status: 503, headers: { 'retry-after': '3' }, body: '{"retry_after": 3}' });
    expect(await call('/503').catch((e) => e)).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', retryAfterSeconds: null });
  });
});

describe('requestJson', () => {
  it('returns the validated body of a 2xx answer', async () => {
    answers.set('/ok', { status: 200, body: '{"ok": true, "extra": 1}' });
    expect(await call('/ok')).toEqual({ ok: true });
  });

  it('answers malformed JSON and a wrong shape with UPSTREAM_BAD_RESPONSE', async () => {
    answers.set('/html', { status: 200, body: '<html>' });
    answers.set('/shape', { status: 200, body: '{"ok": "yes"}' });
    expect(await call('/html').catch((e) => e)).toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    const err = await call('/shape').catch((e) => e);
    expect(err).toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    expect(err.message).toMatch(/^GET \/shape: unexpected shape at ok/);
  });

  it('classifies by status where the platform has no better reading, with its message', async () => {
    answers.set('/401', { status: 401, body: 'denied' });
    answers.set('/500', { status: 500, body: '' });
    expect(await call('/401').catch((e) => e)).toMatchObject({ code: 'UPSTREAM_AUTH', message: 'answered 401' });
    expect(await call('/500').catch((e) => e)).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });

  it('times out with UPSTREAM_TIMEOUT, and a refused connection is UPSTREAM_UNAVAILABLE', async () => {
    expect(await call('/hang', 200).catch((e) => e)).toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const err = await requestJson('p', {
      method: 'GET',
      url: `http://127.0.0.1:${port}/`,
      timeoutMs: 2000,
      schema: z.unknown(),
      what: 'GET /',
      classify,
    }).catch((e) => e);
    expect(err).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });
});
