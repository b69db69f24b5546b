// With an OTLP endpoint configured, a GraphQL operation produces a SERVER span and each upstream
// call it causes a CLIENT span under it, exported over OTLP/HTTP to a loopback receiver.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { startSim, startTestRuntime } from '../live/helpers.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
  status?: { code?: number };
}

/** A minimal OTLP/HTTP JSON trace receiver: keeps every span posted to /v1/traces. */
async function startReceiver() {
  const spans: OtlpSpan[] = [];
  const resources: unknown[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        for (const rs of JSON.parse(body).resourceSpans ?? []) {
          resources.push(rs.resource);
          for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans);
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, resources, close: () => new Promise((r) => server.close(r)) };
}

const attr = (s: OtlpSpan, key: string) => s.attributes.find((a) => a.key === key)?.value.stringValue;

describe('OpenTelemetry tracing', () => {
  let sim: BasetenSimulator;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    sim = await startSim();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await sim.close();
    await receiver.close();
  });

  it('is off by default and on with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    expect(loadConfig({}).tracing).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({
      endpoint: 'http://collector:4318',
      serviceName: 'training-graph',
    });
  });

  it('exports a span per operation with its upstream calls as children', async () => {
    const rt: Runtime = await startTestRuntime(sim, 1, { tracing: { endpoint: receiver.url, serviceName: 'tg-test' } });
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'trace-me' },
      body: JSON.stringify({ query: 'query Fleet { jobs(first: 3) { edges { node { name metrics(names: [GPU_UTILIZATION], maxPoints: 5) { name } } } } }' }),
    });
    expect((await res.json()).errors).toBeUndefined();
    await rt.close(); // flushes the batch

    const op = receiver.spans.find((s) => s.name === 'query Fleet');
    expect(op).toBeDefined();
    expect(op!.kind).toBe(2); // SERVER
    expect(attr(op!, 'graphql.operation.name')).toBe('Fleet');
    expect(attr(op!, 'http.request.id')).toBe('trace-me');
    const upstream = receiver.spans.filter((s) => s.name === 'upstream BASETEN');
    expect(upstream.length).toBeGreaterThanOrEqual(2); // the job list, then the metrics
    for (const s of upstream) {
      expect(s.kind).toBe(3); // CLIENT
      expect(s.traceId).toBe(op!.traceId);
      expect(s.parentSpanId).toBe(op!.spanId);
      expect(attr(s, 'provider.id')).toBe('bt');
    }
    expect(JSON.stringify(receiver.resources)).toContain('tg-test');
  });

  it('continues an incoming W3C traceparent instead of starting a new trace', async () => {
    const rt: Runtime = await startTestRuntime(sim, 1, { tracing: { endpoint: receiver.url, serviceName: 'tg-test' } });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpanId = '00f067aa0ba902b7';
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ query: 'query Continued { jobs(first: 2) { edges { node { name } } } }' }),
    });
    expect((await res.json()).errors).toBeUndefined();
    // A malformed header starts a trace of its own rather than failing the request.
    const bad = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: 'not-a-traceparent' },
      body: JSON.stringify({ query: 'query Fresh { providers { id } }' }),
    });
    expect((await bad.json()).errors).toBeUndefined();
    await rt.close(); // flushes the batch

    const op = receiver.spans.find((s) => s.name === 'query Continued');
    expect(op).toBeDefined();
    expect(op!.traceId).toBe(traceId);
    expect(op!.parentSpanId).toBe(callerSpanId);
    const upstream = receiver.spans.filter((s) => s.parentSpanId === op!.spanId);
    expect(upstream.length).toBeGreaterThan(0);
    for (const u of upstream) expect(u.traceId).toBe(traceId);
    const fresh = receiver.spans.find((s) => s.name === 'query Fresh');
    expect(fresh).toBeDefined();
    expect(fresh!.traceId).not.toBe(traceId);
    expect(fresh!.parentSpanId ?? '').toBe('');
  });
});
