// Our SDK-HMAC-SHA256 signer against the official @huaweicloud/huaweicloud-sdk-core signer, and
// the simulator's verification against both (a tampered request is refused).
import { BasicCredentials } from '@huaweicloud/huaweicloud-sdk-core';
import { ClientBuilder } from '@huaweicloud/huaweicloud-sdk-core/ClientBuilder.js';
import { AKSKSigner } from '@huaweicloud/huaweicloud-sdk-core/auth/AKSKSigner.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSdkDate, signRequest } from '../../../src/providers/modelarts/signer.js';
import { startModelArtsSimulator, type ModelArtsSimulator } from '../../../src/simulators/modelarts/index.js';

const credentials = { accessKeyId: 'HPUAEXAMPLEAK0123456', secretAccessKey: 'aB3dEf+gH/iJkLmN0pQrStUvWxYz1234567890ab' };
const sdkCredential = { getAk: () => credentials.accessKeyId, getSk: () => credentials.secretAccessKey };

interface Case {
  title: string;
  method: 'GET' | 'POST';
  endpoint: string;
  path: string;
  query?: Record<string, string | string[]>;
  data?: object;
  extraHeaders?: Record<string, string>;
}

const cases: Case[] = [
  {
    title: 'GET without body',
    method: 'GET',
    endpoint: 'http://127.0.0.1:8443',
    path: '/v2/0f3c5b2a9e8d47c1b6a2d4e5f7a8b9c0/training-jobs/6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11/metrics/worker-0',
  },
  {
    title: 'POST search with a JSON body',
    method: 'POST',
    endpoint: 'https://modelarts.cn-north-4.myhuaweicloud.com',
    path: '/v2/0f3c5b2a9e8d47c1b6a2d4e5f7a8b9c0/training-job-searches',
    data: { offset: 1, limit: 50, filters: [{ key: 'name', operator: 'like', value: ['bert ft/中文'] }] },
  },
  {
    title: 'query with spaces, arrays, reserved and multi-byte characters',
    method: 'GET',
    endpoint: 'http://127.0.0.1:8443',
    path: '/v2/p1/training-jobs/j1/events',
    query: { order: 'desc', pattern: 'loss = nan*', level: ['Warning', 'Error'], 'start~time': '1740822000', tag: 'é~ü' },
  },
  {
    title: 'temporary credentials with X-Security-Token',
    method: 'GET',
    endpoint: 'http://127.0.0.1:8443',
    path: '/v2/p1/training-jobs/j-1_2.3~4/tasks/worker-0/logs/preview',
    extraHeaders: { 'X-Security-Token': 'gQpjbi1ub3J0aC00KwU...token' },
  },
];

describe('SDK-HMAC-SHA256 signer', () => {
  const date = new Date(Date.UTC(2025, 2, 1, 10, 0, 0));

  it('formats X-Sdk-Date as YYYYMMDDTHHMMSSZ', () => {
    expect(formatSdkDate(date)).toBe('20250301T100000Z');
  });

  for (const c of cases) {
    it(`matches the official SDK core signer: ${c.title}`, () => {
      const headers = { 'Content-Type': 'application/json', 'X-Project-Id': 'p1', ...(c.extraHeaders ?? {}) };
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(c.query ?? {})) for (const one of [v].flat()) search.append(k, one);
      const url = `${c.endpoint}${c.path}${search.size ? `?${search}` : ''}`;
      const ours = signRequest({ method: c.method, url, headers, body: c.data ? JSON.stringify(c.data) : '' }, credentials, date);

      const official = AKSKSigner.sign(
        {
          endpoint: `${c.endpoint}${c.path}`,
          method: c.method,
          headers: { ...headers, 'X-Sdk-Date': formatSdkDate(date) },
          queryParams: c.query ?? {},
          data: c.data,
        },
        sdkCredential as never,
      ) as Record<string, string>;
      expect(ours.Authorization).toBe(official.Authorization);
      expect(ours['X-Sdk-Date']).toBe(official['X-Sdk-Date']);
      expect(ours.Authorization).toMatch(
        /^SDK-HMAC-SHA256 Access=HPUAEXAMPLEAK0123456, SignedHeaders=content-type;host;x-project-id;(x-sdk-date|x-sdk-date;x-security-token|x-sdk-date), Signature=[0-9a-f]{64}$/,
      );
    });
  }
});

describe('the simulator verifies signatures', () => {
  let sim: ModelArtsSimulator;
  beforeAll(async () => {
    sim = await startModelArtsSimulator({ accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey });
  });
  afterAll(() => sim.close());

  it('accepts a request signed and sent by the official SDK client (HcClient)', async () => {
    const credential = new BasicCredentials().withAk(credentials.accessKeyId).withSk(credentials.secretAccessKey).withProjectId(sim.projectId);
    const client = new ClientBuilder((c) => c).withCredential(credential).withEndpoint(sim.url).build();
    const answer = (await client.sendRequest({
      method: 'POST',
      url: '/v2/{project_id}/training-job-searches',
      pathParams: {},
      queryParams: {},
      headers: {},
      data: { offset: 0, limit: 5, filters: [{ key: 'phase', operator: 'in', value: ['Running'] }] },
      contentType: 'application/json',
    } as never)) as unknown as { httpStatusCode: number; items: { status: { phase: string } }[] };
    expect(answer.httpStatusCode).toBe(200);
    expect(answer.items.length).toBeGreaterThan(0);
    expect(answer.items.every((j) => j.status.phase === 'Running')).toBe(true);
  });

  it('accepts our signature and refuses the same signature on a tampered request', async () => {
    const url = `${sim.url}/v2/${sim.projectId}/training-job-searches`;
    const body = JSON.stringify({ offset: 0, limit: 1 });
    const headers = signRequest(
      { method: 'POST', url, headers: { 'Content-Type': 'application/json', 'X-Project-Id': sim.projectId }, body },
      credentials,
      new Date(),
    );
    expect((await fetch(url, { method: 'POST', headers, body })).status).toBe(200);

    const tamperedBody = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ offset: 0, limit: 50 }) });
    expect(tamperedBody.status).toBe(403);
    expect(await tamperedBody.json()).toMatchObject({ error_code: 'ModelArts.0206' });

    const tamperedPath = await fetch(`${url}?offset=3`, { method: 'POST', headers, body });
    expect(tamperedPath.status).toBe(403);

    const wrongSecret = signRequest(
      { method: 'POST', url, headers: { 'Content-Type': 'application/json' }, body },
      { ...credentials, secretAccessKey: 'wrong' },
      new Date(),
    );
    expect((await fetch(url, { method: 'POST', headers: wrongSecret, body })).status).toBe(403);

    const stale = signRequest({ method: 'POST', url, headers: { 'Content-Type': 'application/json' }, body }, credentials, new Date(Date.now() - 16 * 60_000));
    const staleAnswer = await fetch(url, { method: 'POST', headers: stale, body });
    expect(staleAnswer.status).toBe(403);
    expect(((await staleAnswer.json()) as { error_msg: string }).error_msg).toContain('15 minutes');

    const unsigned = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    expect([unsigned.status, ((await unsigned.json()) as { error_code: string }).error_code]).toEqual([401, 'ModelArts.0201']);
  });
});
