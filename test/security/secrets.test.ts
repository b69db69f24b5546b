// No provider secret leaves the server, in any spelling, on any transport. A platform that quotes
// the credential it was sent in its error bodies (as ModelArts does: "access key HPUAX... does not
// exist"), here raw, URL-encoded, base64'd in a Basic pair and hex'd, with a key holding `"`, `\`,
// `/`, `+`, `=`, `%` and a space, fails while HTTP queries, SSE (queries and subscriptions) and
// graphql-ws (queries and subscriptions) ask for every field an upstream message reaches:
// providers.health.lastError, jobs.sourceErrors, freshness.error, fleet problems, errors[] and
// subscription error events. Every byte the server sends goes through a TCP tap and is grepped
// for every spelling; so is every log line.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formsOf, secretForms } from '../../src/domain/secrets.js';
import { UpstreamError } from '../../src/domain/errors.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';
import { OutgoingGuard } from '../../src/server/outgoing-guard.js';
import { pino } from 'pino';

const SECRET = 'sk-"q"\\b/s+p=e%c~0123456789abcdef';

/** What the leaking platform says when it refuses a key: the key in four spellings. */
function leakedMessage(key: string): string {
  return `invalid API key ${key} (url: ${encodeURIComponent(key)}, basic: ${Buffer.from(`svc:${key}`).toString('base64')}, hex: ${Buffer.from(key).toString('hex')})`;
}

describe('secrets never leave', () => {
  let sim: BasetenSimulator;
  let leaky: http.Server;
  let tap: net.Server;
  let rt: Runtime;
  let db: TestDatabase;
  let leaking = false;
  let base = '';
  const sent: Buffer[] = [];
  const logLines: string[] = [];

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'secrets',
      apiKey: SECRET,
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2 },
    });
    // In front of the simulator: passes requests through, or (leaking) refuses them quoting the key.
    leaky = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const key = String(req.headers.authorization ?? '').replace(/^Api-Key /, '');
        if (leaking) {
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: leakedMessage(key) }));
          return;
        }
        const body = Buffer.concat(chunks);
        void fetch(`${sim.url}${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, body: body.length ? body : undefined }).then(
          async (r) => {
            res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()));
          },
        );
      });
    });
    await new Promise<void>((r) => leaky.listen(0, '127.0.0.1', () => r()));
    db = await createTestDatabase();
    rt = await startRuntimeOn(
      db,
      [
        {
          id: 'leaky',
          kind: 'BASETEN',
          baseUrl: `http://127.0.0.1:${(leaky.address() as AddressInfo).port}`,
          apiKeyEnv: 'LEAKY_KEY',
          timeoutSeconds: 5,
          pollIntervalSeconds: 1,
        },
      ],
      {
        config: { logLevel: 'debug' },
        env: { LEAKY_KEY: SECRET },
        // Every read goes upstream, so every field below meets the failure.
        cachePolicy: { listTtlMs: 0, detailTtlMs: 0, metricsTtlMs: 0 },
        resilience: { retries: 0 },
        logDestination: new Writable({
          write(chunk, _enc, done) {
            logLines.push(String(chunk));
            done();
          },
        }),
      },
    );
    // The tap: clients talk to the server through it, and it keeps every byte the server sends.
    const target = Number(new URL(rt.url).port);
    tap = net.createServer((client) => {
      const upstream = net.connect(target, '127.0.0.1');
      client.pipe(upstream);
      upstream.on('data', (d: Buffer) => sent.push(d));
      upstream.pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((r) => tap.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(tap.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    tap?.close();
    leaky?.close();
    await sim?.close();
    await db?.drop();
  });

  async function post(query: string, variables?: Record<string, unknown>, accept = 'application/json') {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept },
      body: JSON.stringify({ query, variables }),
    });
    return res.text();
  }

  it('sends no secret spelling over HTTP, SSE or graphql-ws while the platform quotes the key', async () => {
    const warm = JSON.parse(await post('{ jobs(first: 10) { edges { node { id status } } } }'));
    expect(warm.errors, JSON.stringify(warm)).toBeUndefined();
    const jobs: { id: string; status: string }[] = warm.data.jobs.edges.map((e: any) => e.node);
    const jobId = (jobs.find((j) => j.status === 'RUNNING') ?? jobs[0]!).id;
    const from = new Date(Date.now() - 3600_000).toISOString();
    const to = new Date().toISOString();
    await post('query($id: ID!) { job(id: $id) { metrics(maxPoints: 10) { name } } }', { id: jobId });
    await post('query($f: DateTime!, $t: DateTime!) { fleet(from: $f, to: $t) { jobCount } }', { f: from, t: to });

    leaking = true;
    const QUERIES: [string, Record<string, unknown>][] = [
      ['{ jobs(first: 10) { edges { node { id } } sourceErrors { provider { id } code message } } }', {}],
      ['query($id: ID!) { job(id: $id) { status metrics(maxPoints: 10) { name freshness { stale error { code message } } } } }', { id: jobId }],
      ['query($f: DateTime!, $t: DateTime!) { fleet(from: $f, to: $t) { jobCount problems { code message } } }', { f: from, t: to }],
      ['{ providers { id health { state lastError { code message } } } }', {}],
    ];
    // HTTP, then the same queries answered as SSE streams.
    for (const [q, v] of QUERIES) await post(q, v);
    for (const [q, v] of QUERIES) await post(q, v, 'text/event-stream');

    // SSE subscription: read its stream until an error event arrives.
    const sseAbort = new AbortController();
    const sse = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { jobStatusChanged { id status } }' }),
      signal: sseAbort.signal,
    });
    let sseText = '';
    const sseDone = (async () => {
      const reader = sse.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        sseText += Buffer.from(value!).toString('utf8');
      }
    })();

    // graphql-ws: the same queries, and a subscription until its error arrives.
    const ws = createClient({ url: `${base.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
    for (const [q, v] of QUERIES) {
      await new Promise<void>((resolve) => ws.subscribe({ query: q, variables: v }, { next: () => {}, error: () => resolve(), complete: () => resolve() }));
    }
    const wsEvents: unknown[] = [];
    const stopWs = ws.subscribe(
      { query: 'subscription { jobStatusChanged { id status } }' },
      { next: (e) => wsEvents.push(e), error: (e) => wsEvents.push(e), complete: () => {} },
    );
    await eventually(() => wsEvents.some((e) => JSON.stringify(e).includes('invalid API key')), 30_000, 'a graphql-ws subscription error event');
    await eventually(() => sseText.includes('invalid API key'), 30_000, 'an SSE subscription error event');
    stopWs();
    await ws.dispose();
    sseAbort.abort();
    await sseDone;

    const bytes = Buffer.concat(sent);
    const text = bytes.toString('utf8');
    // The platform's words did reach every transport (so the grep below looks at real answers)...
    expect(text).toContain('invalid API key [redacted]');
    expect(text).toContain('"sourceErrors":[{');
    // ...and not one spelling of the key did, on the wire or in the log.
    const forms = formsOf([SECRET]);
    expect(forms.length).toBeGreaterThan(6);
    for (const f of forms) {
      expect(bytes.indexOf(Buffer.from(f)), `sent ${JSON.stringify(f)}`).toBe(-1);
      for (const line of logLines) expect(line.includes(f), `logged ${JSON.stringify(f)}: ${line.slice(0, 200)}`).toBe(false);
    }
    // The sanitising where errors are made did it all: the last line never had to step in.
    const metrics = await fetch(`${rt.url}/metrics`).then((r) => r.text());
    expect(metrics).not.toMatch(/secret_findings_total\{[^}]*\} [1-9]/);
  }, 180_000);

  it('scrubs an UpstreamError made anywhere, and the last line masks what skipped it', () => {
    const err = new UpstreamError('UPSTREAM_AUTH', 'leaky', leakedMessage(SECRET), { upstreamCode: SECRET });
    for (const f of secretForms(SECRET)) {
      expect(err.message.includes(f), f).toBe(false);
      expect(JSON.stringify(err.details).includes(f), f).toBe(false);
    }
    let findings = 0;
    const guard = new OutgoingGuard(pino({ level: 'silent' }), () => findings++);
    const payload = Buffer.from(
      JSON.stringify({
        errors: [{ message: `${SECRET} ${JSON.stringify(SECRET)} ${encodeURIComponent(SECRET)} ${Buffer.from(`x${SECRET}`).toString('base64')}` }],
      }),
    );
    const { out, found } = guard.mask(payload);
    expect(found).toBe(true);
    expect(out.length).toBe(payload.length);
    expect(() => JSON.parse(out.toString())).not.toThrow();
    for (const f of secretForms(SECRET)) expect(out.indexOf(Buffer.from(f)), f).toBe(-1);
  });
});
