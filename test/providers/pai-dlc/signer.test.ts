// Our V3 signer against the official @alicloud/openapi-client@0.4.15: the SDK signs a request to a
// loopback server that records it; our signer, fed the same method, path, query and headers
// (including the SDK's own date and nonce), must produce the identical Authorization header.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as OpenApiModule from '@alicloud/openapi-client';
import * as TeaUtilModule from '@alicloud/tea-util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acs3Authorization, canonicalQueryString, percentEncode, signedHeadersFor } from '../../../src/providers/pai-dlc/signer.js';
import { startPaiDlcSimulator, type PaiDlcSimulator } from '../../../src/simulators/pai-dlc/index.js';

// CommonJS packages: under ESM their classes sit on the namespace, the client on `default(.default)`.
type Ctor = new (...args: unknown[]) => object;
const sdk = OpenApiModule as unknown as Record<string, unknown> & { default: Record<string, unknown> };
const pick = (name: string) => (sdk[name] ?? sdk.default[name]) as Ctor;
const OpenApiClient = ((sdk.default as { default?: unknown }).default ?? sdk.default) as unknown as Ctor;
const Config = pick('Config');
const Params = pick('Params');
const OpenApiRequest = pick('OpenApiRequest');
const teaUtil = TeaUtilModule as unknown as Record<string, unknown> & { default: Record<string, unknown> };
const RuntimeOptions = (teaUtil.RuntimeOptions ?? teaUtil.default.RuntimeOptions) as Ctor;

interface Captured {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

let server: http.Server;
let port = 0;
const captured: Captured[] = [];
let sim: PaiDlcSimulator;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    captured.push({ method: req.method!, url: req.url!, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"RequestId":"CAPTURED"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
  sim = await startPaiDlcSimulator();
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await sim.close();
});

const AK = 'LTAI5tExampleAccessKey';
const SK = 'ExampleSecret/With+Chars=';

async function sdkCall(opts: {
  endpoint: string;
  action: string;
  pathname: string;
  query: Record<string, string>;
  securityToken?: string;
  secret?: string;
  accessKeyId?: string;
}) {
  const client = new OpenApiClient(
    new Config({
      accessKeyId: opts.accessKeyId ?? AK,
      accessKeySecret: opts.secret ?? SK,
      ...(opts.securityToken ? { securityToken: opts.securityToken } : {}),
      endpoint: opts.endpoint,
      protocol: 'http',
    }),
  );
  const params = new Params({
    action: opts.action,
    version: '2020-12-03',
    protocol: 'HTTPS',
    pathname: opts.pathname,
    method: 'GET',
    authType: 'AK',
    style: 'ROA',
    reqBodyType: 'json',
    bodyType: 'json',
  });
  return (client as unknown as { callApi: (...a: unknown[]) => Promise<{ statusCode: number; body: Record<string, unknown> }> }).callApi(
    params,
    new OpenApiRequest({ query: opts.query }),
    new RuntimeOptions({}),
  );
}

function ourAuthorization(c: Captured, creds: { accessKeyId: string; accessKeySecret: string }): string {
  const [path, qs = ''] = c.url.split('?');
  const query = Object.fromEntries(new URLSearchParams(qs));
  const headers = Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]));
  return acs3Authorization({ method: c.method, path: path!, query, headers, body: '' }, creds);
}

describe('V3 signer equals @alicloud/openapi-client@0.4.15', () => {
  it('ListJobs with paging, a window and characters that need RFC 3986 encoding', async () => {
    captured.length = 0;
    await sdkCall({
      endpoint: `127.0.0.1:${port}`,
      action: 'ListJobs',
      pathname: '/api/v1/jobs',
      query: { PageNumber: '2', PageSize: '100', StartTime: '2024-04-16T07:25:34Z', ShowOwn: 'false', DisplayName: "bert fine*tune~(v2)!'" },
    });
    const c = captured[0]!;
    expect(c.headers.authorization).toMatch(/^ACS3-HMAC-SHA256 Credential=LTAI5tExampleAccessKey,SignedHeaders=host;x-acs-action;/);
    expect(ourAuthorization(c, { accessKeyId: AK, accessKeySecret: SK })).toBe(c.headers.authorization);
  });

  it('GetJobMetrics with a job id that needs percent-encoding in the path', async () => {
    captured.length = 0;
    const jobId = 'dlc-20210126170216-*******';
    await sdkCall({
      endpoint: `127.0.0.1:${port}`,
      action: 'GetJobMetrics',
      // The PAI-DLC SDK encodes path parameters before calling callApi; percentEncode does the same.
      pathname: `/api/v1/jobs/${percentEncode(jobId)}/metrics`,
      query: { MetricType: 'GpuCoreUsage', StartTime: '2021-03-29T02:00:00Z', EndTime: '2021-03-29T03:00:00Z', TimeStep: '5m' },
    });
    const c = captured[0]!;
    expect(c.url.startsWith('/api/v1/jobs/dlc-20210126170216-%2A%2A%2A%2A%2A%2A%2A/metrics?')).toBe(true);
    expect(ourAuthorization(c, { accessKeyId: AK, accessKeySecret: SK })).toBe(c.headers.authorization);
  });

  it('STS credentials: x-acs-accesskey-id and x-acs-security-token are signed the same way', async () => {
    captured.length = 0;
    await sdkCall({
      endpoint: `127.0.0.1:${port}`,
      action: 'GetJob',
      pathname: '/api/v1/jobs/dlc1a2b3c4d5e6f',
      query: { NeedDetail: 'true' },
      securityToken: 'CAIS-sts-token==',
    });
    const c = captured[0]!;
    expect(c.headers['x-acs-security-token']).toBe('CAIS-sts-token==');
    expect(ourAuthorization(c, { accessKeyId: AK, accessKeySecret: SK })).toBe(c.headers.authorization);
  });

  it('signedHeadersFor builds the same headers the SDK sends (minus its user-agent and credentials-provider tag)', () => {
    const now = new Date('2025-04-16T07:25:34.512Z');
    const headers = signedHeadersFor(
      { method: 'GET', path: '/api/v1/jobs', query: { PageNumber: '1' }, body: '' },
      { accessKeyId: AK, accessKeySecret: SK },
      { action: 'ListJobs', version: '2020-12-03', host: 'pai-dlc.cn-hangzhou.aliyuncs.com', now, nonce: 'n-1' },
    );
    expect(headers).toMatchObject({
      host: 'pai-dlc.cn-hangzhou.aliyuncs.com',
      accept: 'application/json',
      'x-acs-action': 'ListJobs',
      'x-acs-version': '2020-12-03',
      'x-acs-date': '2025-04-16T07:25:34Z',
      'x-acs-signature-nonce': 'n-1',
      'x-acs-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    });
    expect(headers.authorization).toMatch(
      /^ACS3-HMAC-SHA256 Credential=LTAI5tExampleAccessKey,SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=[0-9a-f]{64}$/,
    );
    expect(canonicalQueryString({ b: 'a b', a: '*~' })).toBe('a=%2A~&b=a%20b');
  });

  it('the simulator accepts the official SDK and rejects it with a wrong secret', async () => {
    const endpoint = new URL(sim.url).host;
    const res = await sdkCall({
      endpoint,
      action: 'ListJobs',
      pathname: '/api/v1/jobs',
      query: { PageSize: '5', ShowOwn: 'false' },
      accessKeyId: sim.accessKeyId,
      secret: sim.accessKeySecret,
    });
    expect(res.statusCode).toBe(200);
    expect((res.body.Jobs as unknown[]).length).toBe(5);
    await expect(
      sdkCall({ endpoint, action: 'ListJobs', pathname: '/api/v1/jobs', query: {}, accessKeyId: sim.accessKeyId, secret: 'not-the-secret' }),
    ).rejects.toMatchObject({ code: 'SignatureDoesNotMatch', data: { statusCode: 400, HostId: 'pai-dlc.cn-hangzhou.aliyuncs.com' } });
  });
});
