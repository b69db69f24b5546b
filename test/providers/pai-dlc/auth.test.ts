// The simulator really verifies V3 signatures, and the adapter's own requests pass that check while
// wrong secrets, stale dates, replayed nonces and tampered queries are refused with Alibaba's body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamError } from '../../../src/domain/errors.js';
import { startPaiDlcSimulator, type PaiDlcSimulator } from '../../../src/simulators/pai-dlc/index.js';
import { adapterFor, rawSigned, signal } from './helpers.js';

let sim: PaiDlcSimulator;
beforeAll(async () => {
  sim = await startPaiDlcSimulator();
});
afterAll(() => sim.close());

async function send(req: { url: string; headers: Record<string, string> }) {
  const res = await fetch(req.url, { headers: req.headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('PAI-DLC simulator signature checks', () => {
  it('accepts a correctly signed request', async () => {
    const res = await send(rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: { PageSize: '3' } }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ RequestId: expect.any(String), TotalCount: expect.any(Number) });
  });

  it('rejects a wrong secret with SignatureDoesNotMatch in Alibaba error shape', async () => {
    const res = await send(rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: {}, secret: 'wrong' }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      RequestId: expect.stringMatching(/^[0-9A-F-]{36}$/),
      HostId: 'pai-dlc.cn-hangzhou.aliyuncs.com',
      Code: 'SignatureDoesNotMatch',
      Message: 'Specified signature is not matched with our calculation.',
    });
  });

  it('rejects a stale x-acs-date (more than 15 minutes off)', async () => {
    const res = await send(rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: {}, date: new Date(Date.now() - 16 * 60_000) }));
    expect(res.status).toBe(400);
    expect(res.body.Code).toBe('InvalidTimeStamp.Expired');
  });

  it('rejects a replayed nonce', async () => {
    const req = rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: {}, nonce: 'nonce-once-only' });
    expect((await send(req)).status).toBe(200);
    const replay = await send(req);
    expect(replay.status).toBe(400);
    expect(replay.body.Code).toBe('SignatureNonceUsed');
  });

  it('rejects a query tampered with after signing', async () => {
    const req = rawSigned(sim, { action: 'ListJobs', path: '/api/v1/jobs', query: { PageSize: '10', ShowOwn: 'true' } });
    const res = await send({ ...req, url: req.url.replace('ShowOwn=true', 'ShowOwn=false') });
    expect(res.status).toBe(400);
    expect(res.body.Code).toBe('SignatureDoesNotMatch');
  });

  it('rejects an action header that does not match the route', async () => {
    const res = await send(rawSigned(sim, { action: 'StopJob', path: '/api/v1/jobs', query: {} }));
    expect(res.status).toBe(404);
    expect(res.body.Code).toBe('InvalidAction.NotFound');
  });
});

describe('PAI-DLC adapter signing', () => {
  it('its signed requests are accepted', async () => {
    const page = await adapterFor(sim).listJobs(null, signal());
    expect(page.jobs.length).toBeGreaterThan(0);
  });

  it('a wrong secret is UPSTREAM_AUTH carrying the upstream code, never the secret', async () => {
    const err = await adapterFor(sim, {}, 'wrong-secret-value')
      .listJobs(null, signal())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ code: 'UPSTREAM_AUTH', status: 400, details: { upstreamCode: 'SignatureDoesNotMatch' } });
    expect(String((err as Error).message)).not.toContain('wrong-secret-value');
  });

  it('an unknown AccessKeyId (404 InvalidAccessKeyId.NotFound) is UPSTREAM_AUTH, not a missing job', async () => {
    sim.inject({ kind: 'auth', route: 'getJob', times: 1 });
    const job = sim.fleet.jobs[0]!;
    await expect(adapterFor(sim).getJob({ externalId: job.JobId, projectExternalId: '' }, signal())).rejects.toMatchObject({
      code: 'UPSTREAM_AUTH',
      status: 404,
    });
  });
});
