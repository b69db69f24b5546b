// A refused operation over graphql-ws ends alone (issue 44, item 7): graphql-armor's limits
// (aliases, depth, directives) and a persisted query sent by hash alone used to close the whole
// socket (4500, 4400), ending the client's other live subscriptions with it.
import { createHash } from 'node:crypto';
import type { Client } from 'graphql-ws';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { runningJobId, startSim, startTestRuntime, subscribeUtilization, waitFor, wsUrl } from '../live/helpers.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** One operation's outcome: its data, or the codes of the errors it ended with. */
function run(c: Client, payload: Record<string, unknown>): Promise<{ data?: unknown; codes: string[] }> {
  return new Promise((resolve) => {
    let data: unknown;
    const codes: string[] = [];
    c.subscribe(payload as never, {
      next: (r) => {
        if (r.data) data = r.data;
        for (const e of r.errors ?? []) codes.push(String(e.extensions?.code));
      },
      error: (e) => {
        for (const x of Array.isArray(e) ? e : [e]) codes.push(String((x as { extensions?: { code?: string } }).extensions?.code ?? (x as Error).message));
        resolve({ data, codes });
      },
      complete: () => resolve({ data, codes }),
    });
  });
}

describe('graphql-ws refusals end only their operation', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  beforeAll(async () => {
    sim = await startSim();
    db = await createTestDatabase();
    rt = await startTestRuntime(sim, 1, { databaseUrl: db.databaseUrl, dataDir: db.dataDir });
  });
  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('keeps the socket and its live subscription through limit refusals and persisted queries', async () => {
    let closed: number | null = null;
    const c = createClient({
      url: wsUrl(rt.url),
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: true,
      on: { closed: (e) => void (closed = (e as { code: number }).code) },
    });
    const live = subscribeUtilization(c, runningJobId(sim));
    await waitFor(() => live.samples.length > 0, 30_000, 'a first live sample');

    const aliases = `{ ${Array.from({ length: 40 }, (_, i) => `a${i}: providers { id }`).join(' ')} }`;
    let deep = 'id';
    for (let i = 0; i < 14; i++) deep = `node(id: "x") { ... on Job { project { jobs(first: 1) { edges { node { ${deep} } } } } } }`;
    const directives = `{ providers { ${Array.from({ length: 30 }, () => 'id @skip(if: false)').join(' ')} } }`;
    expect((await run(c, { query: aliases })).codes).toEqual(['TOO_MANY_ALIASES']);
    expect((await run(c, { query: `{ ${deep} }` })).codes).toHaveLength(1);
    expect((await run(c, { query: directives })).codes).toHaveLength(1);

    // Persisted queries: a hash nobody registered ends that operation alone; one registered over
    // HTTP (Apollo's protocol: the text with its hash) is answered by hash alone.
    // (graphql-ws' client sends no subscribe without a query string: an empty one, as some APQ clients send.)
    const unknown = await run(c, { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ nothing }') } } });
    expect(unknown.codes).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
    const query = '{ providers { id } }';
    const registered = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } }),
    });
    expect(registered.status).toBe(200);
    const byHash = await run(c, { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } });
    expect(byHash).toEqual({ data: { providers: [{ id: 'bt' }] }, codes: [] });

    // The first subscription is still live on the same socket.
    const seen = live.samples.length;
    await waitFor(() => live.samples.length > seen, 30_000, 'a live sample after the refusals');
    expect(closed).toBeNull();
    expect(live.completed).toBe(false);
    live.stop();
    await c.dispose();
  }, 120_000);

  it('answers a subscribe message without any query with an error for its id, and the socket serves on', async () => {
    const socket = new WebSocket(wsUrl(rt.url), 'graphql-transport-ws');
    const messages: { id?: string; type: string; payload?: any }[] = [];
    let closed: number | null = null;
    socket.on('message', (m) => messages.push(JSON.parse(String(m))));
    socket.on('close', (code) => (closed = code));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await waitFor(() => messages.some((m) => m.type === 'connection_ack'), 10_000, 'the ack');
    socket.send(
      JSON.stringify({ id: 'apq', type: 'subscribe', payload: { extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ unknown }') } } } }),
    );
    socket.send(JSON.stringify({ id: 'bare', type: 'subscribe', payload: {} }));
    socket.send(JSON.stringify({ id: 'ok', type: 'subscribe', payload: { query: '{ providers { id } }' } }));
    await waitFor(() => messages.some((m) => m.id === 'ok' && m.type === 'complete'), 10_000, 'the valid operation to complete');
    expect(messages.find((m) => m.id === 'apq')).toMatchObject({ type: 'error', payload: [{ extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] });
    expect(messages.find((m) => m.id === 'bare')).toMatchObject({ type: 'error', payload: [{ extensions: { code: 'BAD_REQUEST' } }] });
    // Every answer reports its cost (docs/configuration.md, MAX_QUERY_COST); the data is exactly the one provider.
    const ok = messages.find((m) => m.id === 'ok' && m.type === 'next')?.payload;
    expect(ok).toEqual({ data: { providers: [{ id: 'bt' }] }, extensions: { cost: expect.objectContaining({ actual: expect.any(Number) }) } });
    expect(closed).toBeNull();
    socket.close();
  });
});
