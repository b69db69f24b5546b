// /metrics moves with the traffic: operations per name and type, upstream calls and errors per
// provider, cache hits and misses, live subscribers and pollers; every request has an id that is
// echoed and logged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Client } from 'graphql-ws';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client, runningJobId, startSim, startTestRuntime, subscribeUtilization, waitFor } from '../live/helpers.js';

type Series = Map<string, number>;

async function scrape(rt: Runtime): Promise<Series> {
  const res = await fetch(`${rt.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const out: Series = new Map();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

const value = (s: Series, key: string) => s.get(key) ?? 0;

const FLEET = `query Fleet { jobs(first: 5) { edges { node { id name metrics(names: [GPU_UTILIZATION], maxPoints: 10) { name } } } } }`;

describe('/metrics and request ids', () => {
  let sim: BasetenSimulator;
  let rt: Runtime;
  let ws: Client;
  const logs: Record<string, unknown>[] = [];

  beforeAll(async () => {
    sim = await startSim();
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    // Job lists are never fresh here, so each query calls upstream and a fault shows as an error.
    rt = await startTestRuntime(sim, 1, {}, { logger, cachePolicy: { listTtlMs: 0 } });
    ws = client(rt.url);
  });
  afterAll(async () => {
    await ws.dispose();
    await rt.close();
    await sim.close();
  });

  const post = (query: string, headers: Record<string, string> = {}) =>
    fetch(`${rt.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });

  it('counts operations, upstream calls and errors, cache hits and misses', async () => {
    const before = await scrape(rt);
    for (let i = 0; i < 2; i++) {
      const res = await post(FLEET);
      expect((await res.json()).errors).toBeUndefined();
    }
    sim.inject({ kind: 'status', status: 503, times: 1 });
    await post(FLEET);
    const after = await scrape(rt);

    expect(
      value(after, 'training_graph_graphql_operations_total{operation="Fleet",type="query",outcome="ok"}') -
        value(before, 'training_graph_graphql_operations_total{operation="Fleet",type="query",outcome="ok"}'),
    ).toBe(3);
    expect(value(after, 'training_graph_graphql_operation_duration_seconds_count{operation="Fleet",type="query"}')).toBe(3);
    expect(value(after, 'training_graph_graphql_operation_duration_seconds_sum{operation="Fleet",type="query"}')).toBeGreaterThan(0);
    expect(value(after, 'training_graph_http_requests_total{route="/graphql",status="200"}')).toBeGreaterThanOrEqual(3);

    const okCalls = 'training_graph_upstream_calls_total{provider="bt",kind="BASETEN",outcome="ok"}';
    expect(value(after, okCalls)).toBeGreaterThan(value(before, okCalls));
    expect(value(after, 'training_graph_upstream_call_duration_seconds_count{provider="bt",kind="BASETEN"}')).toBeGreaterThan(0);
    expect(value(after, 'training_graph_upstream_calls_total{provider="bt",kind="BASETEN",outcome="error"}')).toBe(1);
    expect(value(after, 'training_graph_upstream_errors_total{provider="bt",kind="BASETEN",code="UPSTREAM_UNAVAILABLE"}')).toBe(1);

    // The first query missed (fetched upstream); the repeats were answered from the cache.
    const misses = value(after, 'training_graph_cache_lookups_total{dataset="metrics",result="miss"}');
    const hits = value(after, 'training_graph_cache_lookups_total{dataset="metrics",result="hit"}');
    expect(misses).toBeGreaterThan(0);
    expect(hits).toBeGreaterThan(0);
    expect(value(after, 'training_graph_cache_hit_ratio{dataset="metrics"}')).toBeCloseTo(hits / (hits + misses), 6);

    expect(after.has('training_graph_process_cpu_user_seconds_total')).toBe(true);
  });

  it('shows live subscribers and pollers while a subscription runs, and none after it', async () => {
    const sub = subscribeUtilization(ws, runningJobId(sim));
    await waitFor(() => sub.samples.length > 0, 10_000, 'a live sample');
    const during = await scrape(rt);
    expect(value(during, 'training_graph_live_subscribers')).toBe(1);
    expect(value(during, 'training_graph_live_pollers')).toBe(1);
    expect(value(during, 'training_graph_live_pollers_leading')).toBe(1);
    expect(value(during, 'training_graph_graphql_operations_total{operation="U",type="subscription",outcome="ok"}')).toBe(1);
    sub.stop();
    await waitFor(() => rt.live.hub.stats().feeds === 0, 5000, 'the poller to stop');
    const afterwards = await scrape(rt);
    expect(value(afterwards, 'training_graph_live_subscribers')).toBe(0);
    expect(value(afterwards, 'training_graph_live_pollers')).toBe(0);
  });

  it('echoes a sane x-request-id, replaces an unsafe one, and logs one JSON line per request with it', async () => {
    const echoed = await post('{ providers { id } }', { 'x-request-id': 'client-req-42' });
    expect(echoed.headers.get('x-request-id')).toBe('client-req-42');
    const replaced = await post('{ providers { id } }', { 'x-request-id': 'no spaces\tor tabs allowed' });
    const generated = replaced.headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    await waitFor(() => logs.some((l) => l.reqId === generated), 2000, 'the log line');
    const line = logs.find((l) => l.reqId === 'client-req-42' && l.msg === 'request')!;
    expect(line).toMatchObject({ method: 'POST', path: '/graphql', status: 200, level: 30 });
    expect(typeof line.ms).toBe('number');
    // The operation's own debug line carries the same id.
    expect(logs.some((l) => l.reqId === 'client-req-42' && l.msg === 'graphql operation')).toBe(true);
  });
});
