// Probes and GraphiQL over real HTTP on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/runtime.js';

describe('http server', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('answers /healthz and /readyz', async () => {
    expect((await fetch(`${s.runtime.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${s.runtime.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', pool: { waiting: 0 } });
  });

  it('serves GraphiQL to a browser without any CDN', async () => {
    const res = await fetch(`${s.runtime.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('GraphiQL');
    expect(html).not.toMatch(/unpkg\.com|jsdelivr|cdnjs/);
  });

  it('answers GraphQL over HTTP GET and POST', async () => {
    const q = encodeURIComponent('{ providers { id kind simulated } }');
    const get = await fetch(`${s.runtime.url}/graphql?query=${q}`, { headers: { accept: 'application/json' } });
    expect(((await get.json()) as any).data.providers).toEqual([{ id: 'bt', kind: 'BASETEN', simulated: false }]);
  });
});
