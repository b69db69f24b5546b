// Probes and GraphiQL over real HTTP on loopback.
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pickEncoding } from '../../src/server/plugins/use-compressed-graphiql.js';
import { startTestServer, type TestServer } from '../support/runtime.js';

/** The raw bytes and headers (fetch would decode them). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

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

  it("sends GraphiQL's 9 MB page compressed in the encoding the browser accepts", async () => {
    const page = (encoding: string) => rawGet(`${s.runtime.url}/graphql`, { accept: 'text/html', 'accept-encoding': encoding });
    const plain = await page('identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const html = plain.body.toString('utf8');
    expect(html).toContain('GraphiQL');
    expect(plain.body.length).toBeGreaterThan(5_000_000);

    const gz = await page('gzip, deflate');
    expect(gz.status).toBe(200);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers.vary).toMatch(/accept-encoding/i);
    expect(gz.body.length).toBeLessThan(plain.body.length / 3);
    expect(zlib.gunzipSync(gz.body).toString('utf8')).toBe(html);

    const br = await page('gzip, deflate, br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.body.length).toBeLessThan(gz.body.length);
    expect(zlib.brotliDecompressSync(br.body).toString('utf8')).toBe(html);

    // GraphQL answers are not touched.
    const q = await rawGet(`${s.runtime.url}/graphql?query=${encodeURIComponent('{ providers { id } }')}`, {
      accept: 'application/json',
      'accept-encoding': 'gzip, br',
    });
    expect(q.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(q.body.toString('utf8')).data.providers).toEqual([{ id: 'bt' }]);
  });

  it('picks br, then gzip, honouring q=0 and *', () => {
    expect(pickEncoding(null)).toBeNull();
    expect(pickEncoding('identity')).toBeNull();
    expect(pickEncoding('gzip, deflate, br, zstd')).toBe('br');
    expect(pickEncoding('br;q=0, gzip;q=0.5')).toBe('gzip');
    expect(pickEncoding('*')).toBe('br');
    expect(pickEncoding('*, br;q=0')).toBe('gzip');
    expect(pickEncoding('gzip;q=0')).toBeNull();
  });

  it('answers GraphQL over HTTP GET and POST', async () => {
    const q = encodeURIComponent('{ providers { id kind simulated } }');
    const get = await fetch(`${s.runtime.url}/graphql?query=${q}`, { headers: { accept: 'application/json' } });
    expect(((await get.json()) as any).data.providers).toEqual([{ id: 'bt', kind: 'BASETEN', simulated: false }]);
  });
});
