// The HTTP front on a bare node:http server: each request is counted and logged exactly once when
// its response closes (one shared listener, however often 'close' is emitted), the in-flight count
// returns to zero (SSE streams are not counted), and the request id is echoed or made.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpFront, FrontResponse, pathOf } from '../../src/server/http-front.js';
import type { Metrics } from '../../src/server/metrics.js';
import { eventually } from '../support/wait.js';

function fakeMetrics() {
  const answered: [string, number][] = [];
  const metrics = { countInFlight() {}, httpAnswered: (route: string, status: number) => void answered.push([route, status]) };
  return { metrics: metrics as unknown as Metrics, answered };
}

// The server's own response class, and plain responses (wrap() works with either).
describe.each([
  ['FrontResponse', FrontResponse],
  ['plain responses', http.ServerResponse],
])('HTTP front with %s', (_name, ServerResponse) => {
  let server: http.Server | null = null;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = null;
  });

  async function serve(
    listener: http.RequestListener,
  ): Promise<{ url: string; front: ReturnType<typeof createHttpFront>; answered: [string, number][]; logs: Record<string, unknown>[] }> {
    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    const { metrics, answered } = fakeMetrics();
    const front = createHttpFront(logger, metrics);
    server = http.createServer({ ServerResponse: ServerResponse as typeof http.ServerResponse }, front.wrap(listener));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, front, answered, logs };
  }

  it('counts and logs each request once, even when its response emits close twice', async () => {
    const { url, front, answered, logs } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      res.once('close', () => res.emit('close'));
    });
    const first = await fetch(`${url}/graphql?x=1`, { headers: { 'x-request-id': 'abc-1' } });
    expect(first.headers.get('x-request-id')).toBe('abc-1');
    await first.text();
    const second = await fetch(`${url}/somewhere`, { headers: { 'x-request-id': 'not sane!' } });
    expect(second.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    await second.text();
    // Both responses have closed once both are counted (a second count of one would come in the same turn as its first).
    await eventually(() => answered.length >= 2, 10_000, 'both responses to close');
    expect(answered).toEqual([
      ['/graphql', 200],
      ['other', 200],
    ]);
    expect(logs.filter((l) => l.msg === 'request').map((l) => [l.reqId, l.path, l.status])).toEqual([
      ['abc-1', '/graphql', 200],
      [second.headers.get('x-request-id'), '/somewhere', 200],
    ]);
    expect(front.inFlight()).toBe(0);
  });

  it('counts a request in flight until its response closes, but not an SSE stream', async () => {
    let release: (() => void) | null = null;
    const { url, front } = await serve((req, res) => {
      if (req.url === '/slow') release = () => res.end('done');
      else res.end('ok');
    });
    const slow = fetch(`${url}/slow`);
    await eventually(() => release !== null, 10_000, 'the slow request to reach its handler');
    expect(front.inFlight()).toBe(1);
    const drained = front.drained(5000);
    release!();
    await (await slow).text();
    expect(await drained).toBe(true);
    expect(front.inFlight()).toBe(0);

    const sse = await fetch(`${url}/stream`, { headers: { accept: 'text/event-stream' } });
    await sse.text();
    expect(front.inFlight()).toBe(0);
  });

  it('sends the request id however the response starts', async () => {
    const starts: Record<string, (res: http.ServerResponse) => void> = {
      '/object': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'),
      '/message': (res) => res.writeHead(200, 'Fine', { 'content-type': 'text/plain' }).end('ok'),
      '/pairs': (res) => res.writeHead(200, ['content-type', 'text/plain']).end('ok'),
      '/set-then-head': (res) => {
        res.setHeader('content-type', 'text/plain');
        res.writeHead(201).end('ok');
      },
      '/implicit': (res) => res.end('ok'),
      '/write-first': (res) => {
        res.write('o');
        res.end('k');
      },
      '/own-id': (res) => res.writeHead(200, { 'x-request-id': 'mine' }).end('ok'),
    };
    const { url } = await serve((req, res) => starts[pathOf(req.url)]!(res));
    for (const route of Object.keys(starts)) {
      const answer = await fetch(`${url}${route}`, { headers: { 'x-request-id': `id${route.replace(/\//g, '-')}` } });
      expect(await answer.text(), route).toBe('ok');
      // A handler that names its own id keeps it.
      expect(answer.headers.get('x-request-id'), route).toBe(route === '/own-id' ? 'mine' : `id${route.replace(/\//g, '-')}`);
      if (route !== '/pairs') expect(answer.headers.get('content-type') ?? 'text/plain', route).toBe('text/plain');
    }
  });

  it('takes the path before the query string', () => {
    expect(pathOf(undefined)).toBe('/');
    expect(pathOf('/graphql')).toBe('/graphql');
    expect(pathOf('/graphql?query=x?y')).toBe('/graphql');
  });
});
