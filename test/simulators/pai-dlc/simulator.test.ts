// Black-box tests of the PAI-DLC simulator over real HTTP, with requests signed by the fact sheet's
// recipe (docs/platforms/pai-dlc.md): it must behave as the real ROA API does, since it is what
// keeps the PAI-DLC adapter honest. Success, paging, auth failure, 429 with its retry hint, 5xx,
// a malformed body and a held (timed-out) request, each in Alibaba's shapes.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { heldUntilAbandoned, simAnswer } from '../../support/sim-http.js';
import { startPaiDlcSimulator, type PaiDlcSimulator } from '../../../src/simulators/pai-dlc/index.js';
import { rawSigned } from '../../providers/pai-dlc/helpers.js';

const ANCHOR = Date.UTC(2026, 2, 1);
const nowMs = ANCHOR + 12 * 3600_000;
let sim: PaiDlcSimulator;

beforeAll(async () => {
  sim = await startPaiDlcSimulator({ seed: 7, anchorMs: ANCHOR, now: () => nowMs });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.clearFaults();
  sim.resetStats();
});

/** A V3-signed GET dated by the simulator's clock, so the 15-minute skew check passes. */
async function call(action: string, path: string, query: Record<string, string> = {}, opts: { secret?: string; signal?: AbortSignal } = {}) {
  const { url, headers } = rawSigned(sim, { action, path, query, date: new Date(nowMs), secret: opts.secret });
  const res = await fetch(url, { headers, signal: opts.signal });
  return simAnswer(res);
}
const listJobs = (query: Record<string, string> = {}) => call('ListJobs', '/api/v1/jobs', query);

describe('ListJobs', () => {
  it("pages the caller's own jobs of the last 7 days, newest first, with TotalCount", async () => {
    const first = await listJobs({ PageSize: '5' });
    expect(first.status).toBe(200);
    expect(typeof first.body.RequestId).toBe('string');
    const total = Number(first.body.TotalCount);
    expect(total).toBeGreaterThan(5);
    const seen: any[] = [];
    for (let page = 1; seen.length < total; page++) {
      const r = await listJobs({ PageSize: '5', PageNumber: String(page) });
      expect(r.body.Jobs.length).toBeGreaterThan(0);
      seen.push(...r.body.Jobs);
    }
    expect(new Set(seen.map((j) => j.JobId)).size).toBe(total);
    const created = seen.map((j) => Date.parse(j.GmtCreateTime));
    expect(created).toEqual([...created].sort((a, b) => b - a));
    // ShowOwn defaults to true: one user only. The silent 7-day window: nothing older.
    expect(new Set(seen.map((j) => j.UserId)).size).toBe(1);
    for (const c of created) expect(c).toBeGreaterThanOrEqual(nowMs - 7 * 86_400_000);
    // Past the last page: an empty page, not an error.
    const past = await listJobs({ PageSize: '5', PageNumber: String(Math.ceil(total / 5) + 1) });
    expect(past.body.Jobs).toEqual([]);
  });

  it('refuses a page size above 100 and a malformed time with InvalidParameter', async () => {
    const big = await listJobs({ PageSize: '101' });
    expect(big.status).toBe(400);
    expect(big.body.Code).toBe('InvalidParameter');
    const badTime = await listJobs({ StartTime: 'yesterday' });
    expect(badTime.status).toBe(400);
    expect(badTime.body.Code).toBe('InvalidParameter');
  });
});

describe('GetJob and GetJobMetrics', () => {
  it('serves a job with its pods; an unknown JobId is 404 InvalidJobId.NotFound', async () => {
    const { body } = await listJobs({ PageSize: '50', Status: 'Running' });
    const running = body.Jobs[0];
    expect(running).toBeDefined();
    const job = await call('GetJob', `/api/v1/jobs/${running.JobId}`);
    expect(job.status).toBe(200);
    expect(job.body.JobId).toBe(running.JobId);
    expect(job.body.Pods.length).toBeGreaterThan(0);
    const missing = await call('GetJob', '/api/v1/jobs/dlc-no-such-job');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ Code: 'InvalidJobId.NotFound' });
    expect(typeof missing.body.HostId).toBe('string');
  });

  it('answers one MetricType per call, per pod, percent in 0-100 on step-aligned times', async () => {
    const job = sim.fleet.jobs.find((j) => j.Status === 'Running' && j.metricsViaGetJobMetrics && j.Pods.some((p) => p.gpus > 0))!;
    const from = new Date(nowMs - 3600_000).toISOString();
    const to = new Date(nowMs).toISOString();
    const r = await call('GetJobMetrics', `/api/v1/jobs/${job.JobId}/metrics`, { MetricType: 'GpuCoreUsage', StartTime: from, EndTime: to, TimeStep: '5m' });
    expect(r.status).toBe(200);
    expect(r.body.PodMetrics.map((p: any) => p.PodId).sort()).toEqual(job.Pods.map((p) => p.PodId).sort());
    const points = r.body.PodMetrics.flatMap((p: any) => p.Metrics);
    expect(points.length).toBeGreaterThan(0);
    for (const p of points) {
      expect(p.Time % 300_000).toBe(0);
      expect(p.Value).toBeGreaterThanOrEqual(0);
      expect(p.Value).toBeLessThanOrEqual(100);
    }
    const noType = await call('GetJobMetrics', `/api/v1/jobs/${job.JobId}/metrics`, {});
    expect(noType.status).toBe(400);
    expect(noType.body.Code).toBe('MissingParameter');
  });

  it('answers an empty PodMetrics for a job whose monitoring moved to CloudMonitor', async () => {
    const job = sim.fleet.jobs.find((j) => j.Status === 'Running' && !j.metricsViaGetJobMetrics)!;
    expect(job).toBeDefined();
    const r = await call('GetJobMetrics', `/api/v1/jobs/${job.JobId}/metrics`, { MetricType: 'GpuCoreUsage' });
    expect(r.status).toBe(200);
    expect(r.body.PodMetrics).toEqual([]);
  });
});

describe('failures, in Alibaba shapes', () => {
  it('refuses a wrong secret and a request dated outside 15 minutes', async () => {
    const wrong = await call('ListJobs', '/api/v1/jobs', {}, { secret: 'not-the-secret' });
    expect(wrong.status).toBeGreaterThanOrEqual(400);
    expect(wrong.body.Code).toMatch(/Signature/);
    const { url, headers } = rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: {}, date: new Date(nowMs - 20 * 60_000) });
    const stale = await fetch(url, { headers });
    expect(stale.status).toBe(400);
    expect((await stale.json()).Code).toBe('InvalidTimeStamp.Expired');
  });

  it('throttles with 429 Throttling.User and x-acs-retry-after in milliseconds', async () => {
    sim.inject({ kind: 'rate_limit', route: 'listJobs', times: 1, retryAfterSeconds: 2 });
    const r = await listJobs();
    expect(r.status).toBe(429);
    expect(r.body.Code).toBe('Throttling.User');
    expect(r.headers.get('x-acs-retry-after')).toBe('2000');
    expect((await listJobs()).status).toBe(200);
  });

  it('fails with 503 ServiceUnavailable and 500 InternalError bodies', async () => {
    sim.inject({ kind: 'status', status: 503, route: 'getJob', times: 1 });
    sim.inject({ kind: 'status', status: 500, route: 'listJobs', times: 1 });
    const job = sim.fleet.jobs[0]!;
    const unavailable = await call('GetJob', `/api/v1/jobs/${job.JobId}`);
    expect(unavailable.status).toBe(503);
    expect(unavailable.body.Code).toBe('ServiceUnavailable');
    const internal = await listJobs();
    expect(internal.status).toBe(500);
    expect(internal.body.Code).toBe('InternalError');
  });

  it('can answer 200 with a truncated body', async () => {
    sim.inject({ kind: 'malformed', route: 'listJobs', times: 1 });
    const r = await listJobs();
    expect(r.status).toBe(200);
    expect(r.body.unparsed).toMatch(/^\{"RequestId"/);
  });

  it('holds a request until its client gives up, and counts it abandoned', async () => {
    const seen = await heldUntilAbandoned(sim, 'listJobs', (signal) => call('ListJobs', '/api/v1/jobs', {}, { signal }));
    expect(seen).toBeInstanceOf(Error);
    expect(sim.abandoned('listJobs')).toBe(1);
    // The fault hit once: the next request is answered.
    expect((await listJobs()).status).toBe(200);
  });
});
