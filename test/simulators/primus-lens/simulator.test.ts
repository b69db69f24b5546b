// Black-box tests of the Primus-Lens simulator over real HTTP: it must behave as the fact sheet
// (docs/platforms/primus-lens.md) describes Lens, since it is what keeps the Lens adapter honest.
// The {meta, data} envelope with handler errors as HTTP 200 + meta.code, paging, the unified
// training-metrics route, the auth setups, and the failures a deployment produces (a gateway's
// 429 with Retry-After, an Envoy 503, a truncated body, a held request).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { heldUntilAbandoned, simAnswer } from '../../support/sim-http.js';
import { startPrimusLensSimulator, type PrimusLensSimulator } from '../../../src/simulators/primus-lens/server.js';

const ANCHOR = Date.UTC(2026, 2, 1);
const nowMs = ANCHOR + 12 * 3600_000;
let sim: PrimusLensSimulator;

beforeAll(async () => {
  sim = await startPrimusLensSimulator({ seed: 5, anchorMs: ANCHOR, now: () => nowMs, replicas: 3 });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.clearFaults();
  sim.resetStats();
});

async function get(path: string, init: RequestInit = {}, s: PrimusLensSimulator = sim) {
  const res = await fetch(`${s.url}${s.prefix}${path}`, init);
  return simAnswer(res);
}

describe('workloads', () => {
  it('pages the default cluster newest first in the {meta, data} envelope, total on every page', async () => {
    const first = await get('/workloads?page_num=1&page_size=4');
    expect(first.status).toBe(200);
    expect(first.body.meta).toEqual({ code: 2000, message: 'OK' });
    const total = first.body.data.total as number;
    expect(total).toBeGreaterThan(8);
    const seen: any[] = [];
    for (let page = 1; seen.length < total; page++) {
      const r = await get(`/workloads?page_num=${page}&page_size=4`);
      expect(r.body.data.total).toBe(total);
      expect(r.body.data.data.length).toBeGreaterThan(0);
      seen.push(...r.body.data.data);
    }
    expect(new Set(seen.map((w) => w.uid)).size).toBe(total);
    const starts = seen.map((w) => w.start_at);
    expect(starts).toEqual([...starts].sort((a, b) => b - a));
    const past = await get(`/workloads?page_num=${Math.ceil(total / 4) + 1}&page_size=4`);
    expect(past.body.data.data).toEqual([]);
  });

  it('answers a handler error as HTTP 200 with meta.code (an unknown cluster is 4001)', async () => {
    const r = await get('/workloads?cluster=no-such-cluster');
    expect(r.status).toBe(200);
    expect(r.body.meta.code).toBe(4001);
    expect(r.body.data).toBeNull();
  });
});

describe('unified training metrics', () => {
  it('serves per-device GPU utilization in percent for the workload, labelled by gpu_id and node', async () => {
    const w = sim.fleet.workloads.find((x) => x.status === 'Running' && x.pods.some((p) => p.gpuAllocated > 0))!;
    const end = Math.floor(nowMs / 1000);
    const r = await get(`/training-metrics/data?workload_uid=${w.uid}&metrics=gpu_utilization_by_device&start=${end - 1800}&end=${end}&step=60`);
    expect(r.body.meta.code).toBe(2000);
    const [result] = r.body.data.results;
    expect(result).toMatchObject({ name: 'gpu_utilization_by_device', unit: '%', agg_level: 'device' });
    expect(result.series.length).toBeGreaterThan(0);
    for (const s of result.series) {
      expect(s.labels.workload_uid).toBe(w.uid);
      expect(s.labels.gpu_id).toMatch(/^\d+$/);
      for (const v of s.values) {
        expect(v.value).toBeGreaterThanOrEqual(0);
        expect(v.value).toBeLessThanOrEqual(100);
      }
    }
  });

  it('refuses an unknown metric or a missing range with 4001', async () => {
    const unknown = await get('/training-metrics/data?workload_uid=x&metrics=nope&start=0&end=60');
    expect(unknown.body.meta.code).toBe(4001);
    expect(unknown.body.meta.message).toMatch(/unknown metric: nope/);
    const noRange = await get('/training-metrics/data?workload_uid=x&metrics=pod_cpu_usage');
    expect(noRange.body.meta.code).toBe(4001);
  });
});

describe('auth setups', () => {
  it('behind the SaFE proxy: Bearer required (Primus.00009), cluster required (Primus.00002)', async () => {
    const safe = await startPrimusLensSimulator({ seed: 5, anchorMs: ANCHOR, now: () => nowMs, prefix: '/lens/v1', auth: { mode: 'bearer', token: 'k-1' } });
    try {
      const cluster = safe.fleet.workloads[0]!.cluster;
      const none = await get(`/workloads?cluster=${cluster}`, {}, safe);
      expect(none.status).toBe(401);
      expect(JSON.stringify(none.body)).toMatch(/Primus\.00009/);
      const wrong = await get(`/workloads?cluster=${cluster}`, { headers: { authorization: 'Bearer k-2' } }, safe);
      expect(wrong.status).toBe(401);
      const noCluster = await get('/workloads', { headers: { authorization: 'Bearer k-1' } }, safe);
      expect(noCluster.status).toBe(400);
      expect(JSON.stringify(noCluster.body)).toMatch(/Primus\.00002/);
      const ok = await get(`/workloads?cluster=${cluster}`, { headers: { authorization: 'Bearer k-1' } }, safe);
      expect(ok.status).toBe(200);
      expect(ok.body.meta.code).toBe(2000);
    } finally {
      await safe.close();
    }
  });

  it("with Lens' cookie middleware: 401 without the Token cookie or with a wrong one", async () => {
    const cookie = await startPrimusLensSimulator({ seed: 5, anchorMs: ANCHOR, now: () => nowMs, auth: { mode: 'cookie', token: 't-1' } });
    try {
      expect((await get('/workloads', {}, cookie)).status).toBe(401);
      expect((await get('/workloads', { headers: { cookie: 'Token=t-2' } }, cookie)).status).toBe(401);
      expect((await get('/workloads', { headers: { cookie: 'Token=t-1' } }, cookie)).status).toBe(200);
    } finally {
      await cookie.close();
    }
  });
});

describe('failures a deployment produces', () => {
  it("a gateway's 429: nginx's HTML page with Retry-After in seconds", async () => {
    sim.inject({ kind: 'rate_limit', route: 'workloads', times: 1, retryAfterSeconds: 3 });
    const r = await get('/workloads');
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('3');
    expect(r.body.unparsed).toMatch(/429 Too Many Requests/);
    expect((await get('/workloads')).status).toBe(200);
  });

  it("Envoy's plain-text 503, and a typed 5xxx handler error as HTTP 200", async () => {
    sim.inject({ kind: 'status', status: 503, route: 'workloads', times: 1 });
    const envoy = await get('/workloads');
    expect(envoy.status).toBe(503);
    expect(envoy.body.unparsed).toMatch(/upstream connect error/);
    sim.inject({ kind: 'status', status: 5000, route: 'workloads', times: 1 });
    const handler = await get('/workloads');
    expect(handler.status).toBe(200);
    expect(handler.body.meta.code).toBe(5000);
  });

  it('a truncated body with 200', async () => {
    sim.inject({ kind: 'malformed', route: 'workloads', times: 1 });
    const r = await get('/workloads');
    expect(r.status).toBe(200);
    expect(r.body.unparsed).toMatch(/^\{"meta"/);
  });

  it('holds a request until its client gives up, and counts it abandoned', async () => {
    const seen = await heldUntilAbandoned(sim, 'workloads', (signal) => get('/workloads', { signal }));
    expect(seen).toBeInstanceOf(Error);
    expect(sim.abandoned('workloads')).toBe(1);
    // The fault hit once: the next request is answered.
    expect((await get('/workloads')).status).toBe(200);
  });
});
