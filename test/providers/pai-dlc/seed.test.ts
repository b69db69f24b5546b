// The documented examples parsed into canonical records: seed 002 (GetJobMetrics' sample response)
// and the fact sheet's GetJob example, served verbatim by a loopback server that also records what
// the adapter asked for.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaiDlcAdapter } from '../../../src/providers/pai-dlc/adapter.js';

// Seed 002, "Sample success responses", byte for byte.
const SEED_002_BODY = `{
  "JobId": "dlc-20210126170216-*******",
  "PodMetrics": [
    {
      "PodId": "dlc-20210329110128-******-worker-0",
      "Metrics": [
        {
          "Time": 1616987726587,
          "Value": 23.45
        }
      ]
    }
  ],
  "RequestId": "473469C7-AA6F-4DC5-B3DB-A3DC0DE3C83E"
}`;

// The fact sheet's GetJob example (shared/providers/pai-dlc.md).
const FACT_SHEET_GET_JOB = `{"RequestId": "5E0F7C2A-1B3D-4C5E-9F60-7A8B9C0D1E2F", "JobId": "dlc1a2b3c4d5e6f",
 "DisplayName": "resnet-ddp", "JobType": "PyTorchJob", "Status": "Running",
 "WorkspaceId": "12345", "WorkspaceName": "vision", "ResourceType": "ECS",
 "GmtCreateTime": "2025-03-01T09:58:00Z", "GmtRunningTime": "2025-03-01T10:00:05Z",
 "Duration": 600, "RestartTimes": "0/3", "ReasonCode": "", "ReasonMessage": "",
 "JobSpecs": [{"Type": "Worker", "PodCount": 2, "EcsSpec": "ecs.gn7i-c32g1.8xlarge",
   "ResourceConfig": {"CPU": "32", "GPU": "1", "GPUType": "NVIDIA-A10", "Memory": "188Gi"}}],
 "Pods": [{"PodId": "dlc1a2b3c4d5e6f-worker-0", "PodUid": "0b8f3c1e-5d2a-4f7b-9c6e-1a2b3c4d5e6f",
   "Type": "Worker", "Status": "Running", "SubStatus": "Normal", "Ip": "10.0.3.17",
   "GmtCreateTime": "2025-03-01T09:59:00Z", "GmtStartTime": "2025-03-01T10:00:05Z",
   "HistoryPods": []}]}`;

const requests: { url: string; action: string }[] = [];
let server: http.Server;
let baseUrl = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests.push({ url: req.url!, action: String(req.headers['x-acs-action']) });
    const body = req.url!.includes('/metrics?') ? SEED_002_BODY : FACT_SHEET_GET_JOB;
    res.writeHead(200, { 'content-type': 'application/json;charset=utf-8' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const adapter = () =>
  createPaiDlcAdapter(
    { id: 'pai-seed', kind: 'PAI_DLC', baseUrl, regionId: 'cn-hangzhou', accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK' },
    { AK: 'LTAI5tSeed', SK: 'seed-secret' },
  );

describe('seed 002: GetJobMetrics sample response', () => {
  it('becomes one NODE-scope GPU_MEMORY_UTILIZATION series with the point 23.45 % -> 0.2345 at 2021-03-29T03:15:26.587Z', async () => {
    requests.length = 0;
    const jobId = 'dlc-20210126170216-*******';
    const from = new Date('2021-03-29T02:00:00Z');
    const to = new Date('2021-03-29T04:00:00Z');
    const res = await adapter().fetchSystemMetrics(
      { externalId: jobId, projectExternalId: '', status: 'SUCCEEDED', createdAt: null, startedAt: null, finishedAt: null },
      { from, to, metrics: ['GPU_MEMORY_UTILIZATION'], stepSeconds: 300 },
      new AbortController().signal,
    );
    expect(requests).toHaveLength(1);
    const sent = new URL(requests[0]!.url, baseUrl);
    expect(sent.pathname).toBe('/api/v1/jobs/dlc-20210126170216-%2A%2A%2A%2A%2A%2A%2A/metrics');
    expect(Object.fromEntries(sent.searchParams)).toEqual({
      MetricType: 'GpuMemoryUsage',
      StartTime: '2021-03-29T02:00:00Z',
      EndTime: '2021-03-29T04:00:00Z',
      TimeStep: '5m',
    });
    expect(requests[0]!.action).toBe('GetJobMetrics');
    expect(res.covered).toEqual(['GPU_MEMORY_UTILIZATION']);
    expect(res.series).toHaveLength(1);
    const [series] = res.series;
    expect(series).toMatchObject({
      kind: 'system',
      name: 'GPU_MEMORY_UTILIZATION',
      rawName: 'GpuMemoryUsage',
      unit: 'RATIO',
      scope: 'NODE',
      nodeExternalId: 'dlc-20210329110128-******-worker-0',
      gpuIndex: null,
      keyedBy: 'time',
    });
    expect(series!.points).toHaveLength(1);
    expect(series!.points[0]!.timestamp!.toISOString()).toBe('2021-03-29T03:15:26.587Z');
    expect(series!.points[0]!.value).toBeCloseTo(0.2345, 10);
  });
});

describe('fact sheet GetJob example', () => {
  it('parses strings as numbers, the pod as a node, GPUs from ResourceConfig', async () => {
    requests.length = 0;
    const job = await adapter().getJob({ externalId: 'dlc1a2b3c4d5e6f', projectExternalId: '12345' }, new AbortController().signal);
    // ResourceConfig.GPU says how many cards, so no ListEcsSpecs lookup is needed.
    expect(requests.map((r) => r.action)).toEqual(['GetJob']);
    expect(new URL(requests[0]!.url, baseUrl).search).toBe('?NeedDetail=true');
    expect(job).toEqual({
      externalId: 'dlc1a2b3c4d5e6f',
      projectExternalId: '12345',
      projectName: 'vision',
      name: 'resnet-ddp',
      status: 'RUNNING',
      rawStatus: 'Running',
      createdAt: new Date('2025-03-01T09:58:00Z'),
      startedAt: new Date('2025-03-01T10:00:05Z'),
      finishedAt: null,
      gpuType: 'NVIDIA-A10',
      gpuCount: 2,
      nodes: [{ externalId: 'dlc1a2b3c4d5e6f-worker-0', name: 'dlc1a2b3c4d5e6f-worker-0', gpus: [{ index: 0, model: 'NVIDIA-A10', memoryTotalBytes: null }] }],
    });
  });
});
