// Work nobody waits for stops (issue 21): when the client of a cold query goes away (HTTP abort,
// graphql-ws complete or a closed socket), the upstream call it started is aborted, seen from the
// platform's side as a request whose client left before the answer. A cache fill another request
// still waits on goes on and answers that one.
import { once } from 'node:events';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { postGraphql, startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';

const METRICS = 'getMetrics';
const SERIES = `query($id: ID!) { job(id: $id) { id metrics(maxPoints: 50) { name points { value } } } }`;
const WINDOW = `query($id: ID!, $from: DateTime, $to: DateTime) { job(id: $id) { id metrics(from: $from, to: $to, maxPoints: 50) { name points { value } } } }`;

describe('abandoned requests stop their upstream calls', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  const cold: string[] = [];

  const gql = (query: string, variables?: Record<string, unknown>, signal?: AbortSignal) => postGraphql(rt.url, query, variables, signal);

  /** Resolves when the platform has received a metrics request (the fill is under way upstream). */
  const metricsRequested = () => waitForRoute('request');
  const metricsAbandoned = () => waitForRoute('abandoned');
  async function waitForRoute(event: 'request' | 'abandoned') {
    for (;;) {
      const [route] = (await once(sim.events, event)) as [string];
      if (route === METRICS) return;
    }
  }

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'abandon',
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 24, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2 },
    });
    db = await createTestDatabase();
    // Far beyond the test: only an abort ends a held call.
    rt = await startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 600 }], {
      config: { security: loadSecurityConfig({}) },
      env: { BT_KEY: sim.apiKey },
    });
    const list = await gql('{ jobs(first: 20, filter: { statuses: [RUNNING] }) { edges { node { id } } } }');
    cold.push(...list.data.jobs.edges.map((e: any) => e.node.id));
    expect(cold.length).toBeGreaterThanOrEqual(4);
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('HTTP: the client goes away, the held upstream call is aborted', async () => {
    sim.inject({ kind: 'timeout', route: METRICS });
    try {
      const client = new AbortController();
      const requested = metricsRequested();
      const asked = gql(SERIES, { id: cold[0] }, client.signal).catch((err: Error) => err.name);
      await requested;
      const abandoned = metricsAbandoned();
      client.abort();
      expect(await asked).toBe('AbortError');
      await abandoned;
      expect(sim.abandoned(METRICS)).toBeGreaterThanOrEqual(1);
    } finally {
      sim.clearFaults();
      sim.release();
    }
    // Nothing was cached by the cancelled fill: the next ask fetches and answers.
    const again = await gql(SERIES, { id: cold[0] });
    expect(again.errors).toBeUndefined();
    expect(again.data.job.metrics.length).toBeGreaterThan(0);
  });

  it('a fill another request still waits on goes on, and answers it', async () => {
    sim.resetStats();
    sim.inject({ kind: 'timeout', route: METRICS, times: 1 });
    const leaving = new AbortController();
    const requested = metricsRequested();
    // One window for both (a window ending "now" differs by the millisecond, and is another fill).
    const to = new Date();
    const window = { id: cold[1], from: new Date(to.getTime() - 3600_000).toISOString(), to: to.toISOString() };
    const first = gql(WINDOW, window, leaving.signal).catch((err: Error) => err.name);
    await requested;
    const second = gql(WINDOW, window);
    // Both wait on the one fill; then the first leaves while the platform still holds the call.
    await eventually(async () => rt.readThrough.fillWaiters() === 2, 30_000, 'both requests waiting on the fill');
    leaving.abort();
    expect(await first).toBe('AbortError');
    await eventually(async () => rt.readThrough.fillWaiters() === 1, 30_000, 'the first request gone from the fill');
    sim.release();
    const answer = await second;
    expect(answer.errors).toBeUndefined();
    expect(answer.data.job.metrics.length).toBeGreaterThan(0);
    expect(sim.count(METRICS)).toBe(1);
    expect(sim.abandoned(METRICS)).toBe(0);
  });

  it('graphql-ws: completing a query early, or closing the socket, aborts its upstream call', async () => {
    sim.inject({ kind: 'timeout', route: METRICS });
    try {
      for (const [how, id] of [
        ['complete', cold[2]],
        ['close', cold[3]],
      ] as const) {
        const ws = createClient({ url: `${rt.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
        const requested = metricsRequested();
        const stop = ws.subscribe({ query: SERIES, variables: { id } }, { next: () => {}, error: () => {}, complete: () => {} });
        await requested;
        const abandoned = metricsAbandoned();
        if (how === 'complete') stop();
        else await ws.dispose();
        await abandoned;
        if (how === 'complete') await ws.dispose();
      }
      expect(sim.abandoned(METRICS)).toBeGreaterThanOrEqual(2);
    } finally {
      sim.clearFaults();
      sim.release();
    }
  });
});
