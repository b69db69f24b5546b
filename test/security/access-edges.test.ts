// The smaller holes, closed on every transport: over graphql-ws a limit refuses one operation
// (with its code) and the socket's other subscriptions live on; a revoked token's open
// subscriptions (graphql-ws and SSE) end when the token file changes; /metrics needs a token;
// CORS answers configured origins only; every body type is capped (chunked too) and a media
// type we do not take gets 415 with a code; edge inputs are BAD_INPUT over graphql-ws and SSE too.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSecurityConfig, sha256Hex } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';

const ADMIN = 'admin-token-0123456789abcdef';
const SCOPED = 'scoped-token-0123456789abcdef';
const DOOMED = 'doomed-token-0123456789abcdef';
const METRICS = 'metrics-token-0123456789abcdef';
const ORIGIN = 'https://dash.example.com';

describe('access and edges on every transport', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let tokensFile: string;
  let _jobId: string;
  const clients: Client[] = [];

  const writeTokens = (names: string[]) => {
    const all: Record<string, object> = {
      admin: { name: 'admin', sha256: sha256Hex(ADMIN) },
      scoped: { name: 'scoped', sha256: sha256Hex(SCOPED), providers: ['bt'], projects: ['bt:project:none'] },
      doomed: { name: 'doomed', sha256: sha256Hex(DOOMED) },
    };
    writeFileSync(tokensFile, JSON.stringify({ tokens: names.map((n) => all[n]) }));
  };

  function ws(token: string): Client {
    const c = createClient({ url: `${rt.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { token } });
    clients.push(c);
    return c;
  }

  async function post(body: string | ReadableStream<Uint8Array>, headers: Record<string, string>) {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, ...headers },
      body,
      duplex: 'half',
    } as RequestInit);
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'edges',
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2 },
    });
    db = await createTestDatabase();
    tokensFile = join(mkdtempSync(join(tmpdir(), 'tokens-')), 'tokens.json');
    writeTokens(['admin', 'scoped', 'doomed']);
    rt = await startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 10, pollIntervalSeconds: 1 }], {
      config: { security: loadSecurityConfig({ API_TOKENS_FILE: tokensFile, METRICS_TOKEN: METRICS, CORS_ORIGINS: ORIGIN, MAX_BODY_BYTES: '4096' }) },
      env: { BT_KEY: sim.apiKey },
    });
    const list = await post(JSON.stringify({ query: '{ jobs(first: 5) { edges { node { id status } } } }' }), { 'content-type': 'application/json' });
    const jobs = JSON.parse(list.text).data.jobs.edges.map((e: any) => e.node);
    _jobId = (jobs.find((j: any) => j.status === 'RUNNING') ?? jobs[0]).id;
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.dispose();
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('graphql-ws: a refused operation gets its code; the socket and its subscription live on', async () => {
    const c = ws(ADMIN);
    const events: unknown[] = [];
    const stop = c.subscribe(
      { query: 'subscription { jobStatusChanged { id status } }' },
      { next: (e) => events.push(e), error: (e) => events.push(e), complete: () => {} },
    );
    const refusals: [string, Record<string, unknown> | undefined, string][] = [
      [`{ providers { ${'id '.repeat(3000)} } }`, undefined, 'TOO_MANY_TOKENS'],
      ['query($n: Int) { jobs(first: $n) { edges { node { id metrics(maxPoints: 100) { values } } } } }', { n: 100000 }, 'QUERY_TOO_COSTLY'],
      ['query($v: ID!) { job(id: $v) { id } }', { v: 'bt:job:a\u0000b' }, 'BAD_INPUT'],
      [`{ jobs(filter: {providerIds: ${'['.repeat(3000)}"bt"${']'.repeat(3000)}}) { edges { node { id } } } }`, undefined, 'BAD_INPUT'],
      ['query($f: DateTime!) { fleet(from: $f, to: "2026-03-01T00:00:00Z") { jobCount } }', { f: '2026-02-30T00:00:00Z' }, 'BAD_INPUT'],
    ];
    for (const [query, variables, code] of refusals) {
      const got = await new Promise<any>((resolve) => {
        const out: unknown[] = [];
        c.subscribe({ query, variables }, { next: (r) => out.push(r), error: (e) => resolve({ error: e }), complete: () => resolve({ results: out }) });
      });
      const errors = got.error ?? got.results?.[0]?.errors;
      expect(Array.isArray(errors), JSON.stringify(got).slice(0, 300)).toBe(true);
      expect(errors[0].extensions?.code, JSON.stringify(errors).slice(0, 300)).toBe(code);
      expect(errors[0].message).not.toMatch(/^Syntax Error/);
    }
    // Still connected: a query answers on the same socket, and the subscription was never ended.
    const ok = await new Promise<any>((resolve) => {
      let r: unknown;
      c.subscribe({ query: '{ providers { id } }' }, { next: (x) => (r = x), error: resolve, complete: () => resolve(r) });
    });
    expect(ok).toMatchObject({ data: { providers: [{ id: 'bt' }] } });
    expect(events.filter((e) => e instanceof Error || (e as any)?.code)).toEqual([]);
    stop();
  }, 60_000);

  it('SSE: edge inputs are BAD_INPUT there too', async () => {
    const res = await post(
      JSON.stringify({ query: 'query($c: String) { jobs(first: 5, after: $c) { edges { node { id } } } }', variables: { c: 'x\u0000' } }),
      {
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
    );
    expect(res.text).toMatch(/"code":"BAD_INPUT"/);
  });

  it('ends the open subscriptions of a revoked token (graphql-ws and SSE), and only those', async () => {
    const doomedWs: unknown[] = [];
    let doomedWsDone = false;
    ws(DOOMED).subscribe(
      { query: 'subscription { jobStatusChanged { id } }' },
      { next: (e) => doomedWs.push(e), error: (e) => doomedWs.push(e), complete: () => (doomedWsDone = true) },
    );
    const keptEvents: unknown[] = [];
    let keptDone = false;
    ws(ADMIN).subscribe(
      { query: 'subscription { jobStatusChanged { id } }' },
      { next: (e) => keptEvents.push(e), error: () => (keptDone = true), complete: () => (keptDone = true) },
    );
    const sse = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${DOOMED}` },
      body: JSON.stringify({ query: 'subscription { jobStatusChanged { id } }' }),
    });
    let sseText = '';
    let sseEnded = false;
    void (async () => {
      const reader = sse.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) break;
        sseText += Buffer.from(value!).toString();
      }
      sseEnded = true;
    })();
    // Both subscriptions are set up (the server counts them) before the token goes.
    await eventually(async () => (await rt.live.hub.stats()).subscribers >= 3, 20_000, 'three live subscribers');
    writeTokens(['admin', 'scoped']);
    await eventually(() => doomedWsDone, 20_000, 'the revoked graphql-ws subscription to end');
    expect(JSON.stringify(doomedWs)).toMatch(/UNAUTHENTICATED/);
    await eventually(() => sseEnded, 20_000, 'the revoked SSE subscription to end');
    expect(sseText).toMatch(/UNAUTHENTICATED/);
    expect(keptDone).toBe(false);
  }, 60_000);

  it('/metrics needs the metrics token or an unscoped API token', async () => {
    const get = (token?: string) => fetch(`${rt.url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const none = await get();
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect((await get(SCOPED)).status).toBe(403);
    expect((await get('not-a-token-at-all-0000')).status).toBe(401);
    const m = await get(METRICS);
    expect(m.status).toBe(200);
    expect(await m.text()).toContain('training_graph_');
    expect((await get(ADMIN)).status).toBe(200);
  });

  it('CORS: configured origins only, none echoed otherwise', async () => {
    const preflight = (origin: string) =>
      fetch(`${rt.url}/graphql`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
      });
    const good = await preflight(ORIGIN);
    expect(good.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const evil = await preflight('https://evil.example.net');
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(evil.headers.get('access-control-allow-credentials')).toBeNull();
    const simple = await post(JSON.stringify({ query: '{ providers { id } }' }), { 'content-type': 'application/json', origin: 'https://evil.example.net' });
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('caps every body type, chunked too, and answers 415 with a code', async () => {
    const big = `{ providers { id } } # ${'x'.repeat(8000)}`;
    for (const [type, body] of [
      ['application/json', JSON.stringify({ query: big })],
      ['application/graphql', big],
      ['application/x-www-form-urlencoded', `query=${encodeURIComponent(big)}`],
    ] as const) {
      const sized = await post(body, { 'content-type': type });
      expect(sized.status, type).toBe(413);
      expect(JSON.parse(sized.text).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
      // The same body chunked, without a Content-Length.
      const bytes = new TextEncoder().encode(body);
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 1000) controller.enqueue(bytes.slice(i, i + 1000));
          controller.close();
        },
      });
      const streamed = await post(chunked, { 'content-type': type });
      expect(streamed.status, `${type} chunked`).toBe(413);
    }
    // Small bodies of each accepted type work.
    for (const [type, body] of [
      ['application/graphql', '{ providers { id } }'],
      ['application/x-www-form-urlencoded', `query=${encodeURIComponent('{ providers { id } }')}`],
    ] as const) {
      const ok = await post(body, { 'content-type': type });
      expect(JSON.parse(ok.text).data, type).toEqual({ providers: [{ id: 'bt' }] });
    }
    for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/xml', '']) {
      const res = await post('{ providers { id } }', type ? { 'content-type': type } : {});
      expect(res.status, type).toBe(415);
      expect(JSON.parse(res.text).errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
  });
});
