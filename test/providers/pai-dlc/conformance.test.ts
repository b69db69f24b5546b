// Conformance: real shapes replayed through the adapter, mapped numbers checked exactly. Seed 002
// (GetJobMetrics' sample response), the fact sheet's GetJob example, the official SDK models'
// examples (EcsSpec, GetMetricsResponseBody) and CloudMonitor's documented point shape, served
// verbatim by a loopback server that also records what the adapter asked for.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaiDlcAdapter } from '../../../src/providers/pai-dlc/adapter.js';
import { onShapeMismatch, type ShapeMismatch } from '../../../src/providers/shape-watch.js';

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

// The fact sheet's GetJob example (docs/platforms/pai-dlc.md).
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

// The job seed 002's metrics belong to, composed in the fact sheet's GetJob shape around the seed's
// own ids (a pay-as-you-go ECS job, so GetJobMetrics is its route).
const SEED_002_JOB = JSON.stringify({
  RequestId: '473469C7-AA6F-4DC5-B3DB-A3DC0DE3C83F',
  JobId: 'dlc-20210126170216-*******',
  DisplayName: 'seed-002',
  Status: 'Succeeded',
  WorkspaceId: '12345',
  ResourceType: 'ECS',
  ResourceId: '',
  GmtCreateTime: '2021-03-29T02:00:00Z',
  GmtRunningTime: '2021-03-29T02:01:28Z',
  GmtFinishTime: '2021-03-29T04:00:00Z',
  RestartTimes: '0/3',
  JobSpecs: [{ Type: 'Worker', PodCount: 1, EcsSpec: 'ecs.gn6e-c12g1.3xlarge' }],
  Pods: [
    {
      PodId: 'dlc-20210329110128-******-worker-0',
      PodUid: '5d2a0b8f-3c1e-4f7b-9c6e-1a2b3c4d5e6f',
      Type: 'Worker',
      Status: 'Succeeded',
      GmtStartTime: '2021-03-29T02:01:28Z',
      HistoryPods: [],
    },
  ],
});

// The official SDK model EcsSpec's @example values (pai-dlc-20201203/src/models/EcsSpec.ts).
const SDK_ECS_SPECS = JSON.stringify({
  EcsSpecs: [
    {
      AcceleratorType: 'GPU',
      Cpu: 12,
      DefaultGPUDriver: '470.199.02',
      Gpu: 1,
      GpuMemory: 80,
      GpuType: 'NVIDIA v100',
      InstanceType: 'ecs.gn6e-c12g1.3xlarge',
      IsAvailable: true,
      Memory: 92,
      ResourceType: 'ECS',
    },
  ],
  TotalCount: 1,
  RequestId: '473469C7-AA6F-4DC5-B3DB-A3DC0DE3C83E',
});

// A Lingjun quota job in the fact sheet's GetJob shape: its monitoring lives in CloudMonitor.
const LINGJUN_JOB = JSON.stringify({
  JobId: 'dlcl1ngjun00001',
  DisplayName: 'llm',
  Status: 'Running',
  WorkspaceId: '67890',
  ResourceType: 'Lingjun',
  ResourceId: 'quota12345',
  UserId: '1458867964644701',
  GmtCreateTime: '2025-03-01T09:58:00Z',
  GmtRunningTime: '2025-03-01T10:00:05Z',
  RestartTimes: '1/10',
  JobSpecs: [{ Type: 'Worker', PodCount: 1, ResourceConfig: { CPU: '96', GPU: '8', GPUType: 'NVIDIA-A100-SXM4-80GB', Memory: '768Gi' } }],
  Pods: [
    {
      PodId: 'dlcl1ngjun00001-worker-0',
      PodUid: 'u-2',
      Type: 'Worker',
      Status: 'Running',
      GmtStartTime: '2025-03-01T10:05:00Z',
      HistoryPods: [
        { PodId: 'dlcl1ngjun00001-worker-0', PodUid: 'u-1', Status: 'Failed', GmtStartTime: '2025-03-01T10:00:05Z', GmtFinishTime: '2025-03-01T10:04:00Z' },
      ],
    },
  ],
});

// GetMetrics answers: the SDK model's own DataPoints example (GetMetricsResponseBody.ts), whose
// points carry neither a timestamp nor a value, and CloudMonitor's documented point shape
// (DescribeMetricList: timestamp in ms, Average/Maximum/Minimum, the dimensions).
const SDK_GET_METRICS = JSON.stringify({
  Code: '200',
  DataPoints: '[{"Content": "", "OperationName": "purchase", "Success": 1, "Id": "217", "LogDatetime": 1687679582923}]',
  Message: 'Success.',
  NextToken: null,
  Period: '60',
  RequestId: '473469C7-AA6F-4DC5-B3DB-A3DC0DE3C83E',
  Success: true,
});
// A CARD_ answer: the dimensions echoed (jobId, regionId, userId, workspaceId, pod) and the card
// (`gpuId`, our reading of its key), two cards of the pod, over two pages.
const dims = { jobId: 'dlcl1ngjun00001', regionId: 'cn-hangzhou', userId: '1458867964644701', workspaceId: '67890' };
const CMS_POINTS_PAGE_1 = JSON.stringify({
  Code: '200',
  Success: true,
  Period: '60',
  NextToken: 'page-2',
  RequestId: 'r1',
  DataPoints: JSON.stringify([
    { timestamp: 1740823200000, ...dims, pod: 'dlcl1ngjun00001-worker-0', gpuId: '0', Average: 71.5, Maximum: 80, Minimum: 60 },
    { timestamp: 1740823260000, ...dims, pod: 'dlcl1ngjun00001-worker-0', gpuId: '0', Average: 74.25, Maximum: 81, Minimum: 66 },
  ]),
});
const CMS_POINTS_PAGE_2 = JSON.stringify({
  Code: '200',
  Success: true,
  Period: '60',
  NextToken: '',
  RequestId: 'r2',
  DataPoints: JSON.stringify([{ timestamp: 1740823320000, ...dims, pod: 'dlcl1ngjun00001-worker-0', gpuId: '3', Average: 0 }]),
});
// A JOB_ answer: no pod, no card.
const CMS_JOB_POINTS = JSON.stringify({
  Code: '200',
  Success: true,
  Period: '60',
  RequestId: 'r3',
  DataPoints: JSON.stringify([
    { timestamp: 1740823200000, ...dims, Value: 55.5 },
    { timestamp: 1740823260000, ...dims, Value: 60 },
  ]),
});
/** The same points whatever MetricName was asked: what an API ignoring MetricName would send. */
const CMS_SAME_FOR_ANY_NAME = JSON.stringify({
  Code: '200',
  Success: true,
  Period: '60',
  RequestId: 'r4',
  DataPoints: JSON.stringify(
    [0, 1, 2, 3].map((i) => ({ timestamp: 1740823200000 + i * 60_000, ...dims, pod: 'dlcl1ngjun00001-worker-0', gpuId: '0', Value: 40 + i })),
  ),
});
// GetJobMetrics *Rate answers: 23.45 read as MB/s, and a value only bytes/s could be.
const RATE_BODY = (value: number) =>
  JSON.stringify({ JobId: 'dlc1a2b3c4d5e6f', PodMetrics: [{ PodId: 'dlc1a2b3c4d5e6f-worker-0', Metrics: [{ Time: 1740823200000, Value: value }] }] });
/** A running job's hour on a 0..1 scale where percent was expected. */
const CMS_FRACTIONS = JSON.stringify({
  Code: '200',
  Success: true,
  Period: '60',
  RequestId: 'r5',
  DataPoints: JSON.stringify(
    Array.from({ length: 61 }, (_, i) => ({
      timestamp: 1740823200000 + i * 60_000,
      ...dims,
      pod: 'dlcl1ngjun00001-worker-0',
      gpuId: '0',
      Value: 0.5 + (i % 5) / 20,
    })),
  ),
});
let cmsMode: 'sdk' | 'cms' | 'same' | 'fraction' = 'cms';
let rateValue: number | null = null;

const requests: { url: string; action: string }[] = [];
let server: http.Server;
let baseUrl = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests.push({ url: req.url!, action: String(req.headers['x-acs-action']) });
    const url = new URL(req.url!, 'http://x');
    let body: string;
    if (url.pathname === '/api/v1/cms/metrics') {
      if (cmsMode === 'sdk') body = SDK_GET_METRICS;
      else if (cmsMode === 'same') body = CMS_SAME_FOR_ANY_NAME;
      else if (cmsMode === 'fraction') body = CMS_FRACTIONS;
      else if (url.searchParams.get('MetricName')!.startsWith('JOB_')) body = CMS_JOB_POINTS;
      else body = url.searchParams.get('NextToken') === 'page-2' ? CMS_POINTS_PAGE_2 : CMS_POINTS_PAGE_1;
    } else if (url.pathname === '/api/v1/ecsspecs') body = SDK_ECS_SPECS;
    else if (url.pathname.endsWith('/metrics')) body = rateValue === null ? SEED_002_BODY : RATE_BODY(rateValue);
    else if (url.pathname.includes('dlcl1ngjun00001')) body = LINGJUN_JOB;
    else if (url.pathname.includes('dlc-20210126170216')) body = SEED_002_JOB;
    else body = FACT_SHEET_GET_JOB;
    res.writeHead(200, { 'content-type': 'application/json;charset=utf-8' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const adapter = (accountId?: string) =>
  createPaiDlcAdapter(
    { id: 'pai-seed', kind: 'PAI_DLC', baseUrl, regionId: 'cn-hangzhou', accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK', ...(accountId ? { accountId } : {}) },
    { AK: 'LTAI5tSeed', SK: 'seed-secret' },
  );

function watch() {
  const seen: ShapeMismatch[] = [];
  const stop = onShapeMismatch((m) => seen.push(m));
  return { seen, stop };
}

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
    // The job first (its resource type picks the route), its ECS spec, then one GetJobMetrics call.
    expect(requests.map((r) => r.action)).toEqual(['GetJob', 'ListEcsSpecs', 'GetJobMetrics']);
    const sent = new URL(requests[2]!.url, baseUrl);
    expect(sent.pathname).toBe('/api/v1/jobs/dlc-20210126170216-%2A%2A%2A%2A%2A%2A%2A/metrics');
    expect(Object.fromEntries(sent.searchParams)).toEqual({
      MetricType: 'GpuMemoryUsage',
      StartTime: '2021-03-29T02:00:00Z',
      EndTime: '2021-03-29T04:00:00Z',
      TimeStep: '5m',
    });
    expect(res.nodes!.map((n) => n.externalId)).toEqual(['dlc-20210329110128-******-worker-0']);
    // EcsSpec.GpuMemory 80 (GiB per card) from the SDK model's example.
    expect(res.nodes![0]!.gpus).toEqual([{ index: 0, model: 'NVIDIA v100', memoryTotalBytes: 80 * 1024 ** 3 }]);
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

describe('GetJobMetrics *Rate values', () => {
  const ref = { externalId: 'dlc1a2b3c4d5e6f', projectExternalId: '12345', status: 'RUNNING' as const, createdAt: null, startedAt: null, finishedAt: null };
  const request = {
    from: new Date('2025-03-01T10:00:00Z'),
    to: new Date('2025-03-01T11:00:00Z'),
    metrics: ['NETWORK_RECEIVE_RATE' as const],
    stepSeconds: 300,
  };

  it('are read as MB/s (what PAI-Studio documents for the same MetricType names): 23.45 -> 23,450,000 bytes/s, said in meta', async () => {
    rateValue = 23.45;
    try {
      const res = await adapter().fetchSystemMetrics(ref, request, new AbortController().signal);
      expect(res.series[0]!).toMatchObject({ rawName: 'NetworkInputRate', unit: 'BYTES_PER_SECOND', meta: { convertedFrom: 'MB/s' } });
      expect(String(res.series[0]!.meta.unitNote)).toContain('PAI-Studio');
      expect(res.series[0]!.points[0]!.value).toBeCloseTo(23_450_000, 3);
    } finally {
      rateValue = null;
    }
  });

  it('a value no pod could move in MB/s (bytes/s after all) is reported', async () => {
    const { seen, stop } = watch();
    rateValue = 125_000_000; // 1 Gbit/s in bytes/s
    try {
      await adapter().fetchSystemMetrics(ref, request, new AbortController().signal);
      expect(seen.map((m) => m.assumption)).toContain('pai-dlc.getjobmetrics.rate-unit');
    } finally {
      stop();
      rateValue = null;
    }
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
      acceleratorKind: 'GPU',
      failureReason: null,
      consoleUrl: 'https://pai.console.aliyun.com/?regionId=cn-hangzhou&workspaceId=12345#/job/detail?jobId=dlc1a2b3c4d5e6f&page=jobs',
      restartCount: 0,
      // The example has no Username, Image, UserCommand or Envs; PAI-DLC jobs have no labels.
      owner: null,
      labels: [],
      config: null,
      image: null,
      command: null,
      nodes: [{ externalId: 'dlc1a2b3c4d5e6f-worker-0', name: 'dlc1a2b3c4d5e6f-worker-0', gpus: [{ index: 0, model: 'NVIDIA-A10', memoryTotalBytes: null }] }],
    });
  });
});

describe('CloudMonitor GetMetrics shapes', () => {
  const lingjunRef = {
    externalId: 'dlcl1ngjun00001',
    projectExternalId: '67890',
    status: 'RUNNING' as const,
    createdAt: null,
    startedAt: null,
    finishedAt: null,
  };
  const window = { from: new Date('2025-03-01T10:00:00Z'), to: new Date('2025-03-01T11:00:00Z'), stepSeconds: 60 };
  const request = { ...window, metrics: ['GPU_DRAM_ACTIVE' as const] };

  it('a CARD_ metric: sends Namespace, MetricName, Dimensions {jobId, regionId, userId, workspaceId, pod} as a JSON string, Period and Length; follows NextToken; one GPU-scope series per pod and card', async () => {
    requests.length = 0;
    cmsMode = 'cms';
    const res = await adapter().fetchSystemMetrics(lingjunRef, request, new AbortController().signal);
    expect(requests.map((r) => r.action)).toEqual(['GetJob', 'GetMetrics', 'GetMetrics']);
    const first = Object.fromEntries(new URL(requests[1]!.url, baseUrl).searchParams);
    expect(first).toEqual({
      Namespace: 'acs_pai_dlc',
      MetricName: 'CARD_GPU_DRAM_ACTIVE_UTIL',
      Dimensions: '[{"jobId":"dlcl1ngjun00001","regionId":"cn-hangzhou","userId":"1458867964644701","workspaceId":"67890","pod":"dlcl1ngjun00001-worker-0"}]',
      JobId: 'dlcl1ngjun00001',
      StartTime: '2025-03-01T10:00:00Z',
      EndTime: '2025-03-01T11:00:00Z',
      Period: '60',
      Length: '1000',
    });
    expect(new URL(requests[2]!.url, baseUrl).searchParams.get('NextToken')).toBe('page-2');
    expect(res.covered).toEqual(['GPU_DRAM_ACTIVE']);
    const byCard = new Map(res.series.map((s) => [s.gpuIndex, s]));
    expect([...byCard.keys()]).toEqual([0, 3]);
    for (const s of res.series) {
      expect(s).toMatchObject({
        name: 'GPU_DRAM_ACTIVE',
        rawName: 'CARD_GPU_DRAM_ACTIVE_UTIL',
        unit: 'RATIO',
        scope: 'GPU',
        nodeExternalId: 'dlcl1ngjun00001-worker-0',
      });
      expect(s.meta).toMatchObject({ route: 'CloudMonitor GetMetrics', convertedFrom: 'percent', userIdFrom: expect.stringContaining("job's UserId") });
    }
    expect(byCard.get(0)!.points.map((p) => [p.timestamp!.toISOString(), p.value])).toEqual([
      ['2025-03-01T10:00:00.000Z', 0.715],
      ['2025-03-01T10:01:00.000Z', 0.7425],
    ]);
    expect(byCard.get(3)!.points.map((p) => [p.timestamp!.toISOString(), p.value])).toEqual([['2025-03-01T10:02:00.000Z', 0]]);
    expect(res.nodes!.map((n) => n.externalId)).toEqual(['dlcl1ngjun00001-worker-0']);
  });

  it('GPU_UTILIZATION: JOB_GPU_ACCELERATOR_DUTTY_UTIL as a JOB-scope series (dimensions without pod) beside CARD_GPU_DUTY_CYCLE per card; the configured accountId is the userId', async () => {
    requests.length = 0;
    cmsMode = 'cms';
    const res = await adapter('1000000000000001').fetchSystemMetrics(lingjunRef, { ...window, metrics: ['GPU_UTILIZATION'] }, new AbortController().signal);
    const asked = requests.filter((r) => r.action === 'GetMetrics').map((r) => Object.fromEntries(new URL(r.url, baseUrl).searchParams));
    const job = asked.find((q) => q.MetricName === 'JOB_GPU_ACCELERATOR_DUTTY_UTIL')!;
    expect(job.Dimensions).toBe('[{"jobId":"dlcl1ngjun00001","regionId":"cn-hangzhou","userId":"1000000000000001","workspaceId":"67890"}]');
    expect(asked.some((q) => q.MetricName === 'CARD_GPU_DUTY_CYCLE')).toBe(true);
    const jobSeries = res.series.find((s) => s.scope === 'JOB')!;
    expect(jobSeries).toMatchObject({ name: 'GPU_UTILIZATION', rawName: 'JOB_GPU_ACCELERATOR_DUTTY_UTIL', nodeExternalId: null, gpuIndex: null });
    expect(jobSeries.meta.userIdFrom).toBe('config accountId');
    expect(jobSeries.points.map((p) => p.value)).toEqual([0.555, 0.6]);
    expect(res.series.filter((s) => s.scope === 'GPU').map((s) => s.rawName)).toEqual(['CARD_GPU_DUTY_CYCLE', 'CARD_GPU_DUTY_CYCLE']);
    expect(res.covered).toEqual(['GPU_UTILIZATION']);
  });

  it('two MetricNames answering identical points (an API ignoring MetricName) are reported and neither is recorded', async () => {
    const { seen, stop } = watch();
    cmsMode = 'same';
    try {
      const res = await adapter().fetchSystemMetrics(lingjunRef, { ...window, metrics: ['GPU_SM_ACTIVE', 'GPU_DRAM_ACTIVE'] }, new AbortController().signal);
      expect(seen.map((m) => m.assumption)).toContain('pai-dlc.cms.metricname-ignored');
      expect(res.series).toEqual([]);
      expect(res.covered).toEqual([]);
    } finally {
      stop();
      cmsMode = 'cms';
    }
  });

  it('a busy hour never above 1.0 where percent is read (a 0..1 scale) is reported', async () => {
    const { seen, stop } = watch();
    cmsMode = 'fraction';
    try {
      await adapter().fetchSystemMetrics(lingjunRef, { ...window, metrics: ['GPU_DRAM_ACTIVE'] }, new AbortController().signal);
      expect(seen.map((m) => m.assumption)).toContain('pai-dlc.cms.percent-scale');
    } finally {
      stop();
      cmsMode = 'cms';
    }
  });

  it('CPU, memory, network and disk have no known GetMetrics name: nothing is asked, and the answer says so (covered, no series)', async () => {
    requests.length = 0;
    const res = await adapter().fetchSystemMetrics(
      lingjunRef,
      { ...window, metrics: ['CPU_UTILIZATION', 'NETWORK_RECEIVE_RATE'] },
      new AbortController().signal,
    );
    expect(requests.map((r) => r.action)).toEqual(['GetJob']);
    expect(res.series).toEqual([]);
    expect(res.covered).toEqual(['CPU_UTILIZATION', 'NETWORK_RECEIVE_RATE']);
  });

  it("the SDK model's own DataPoints example has no timestamp or value: nothing is read as a number, nothing is recorded complete, a mismatch is reported", async () => {
    const seen: ShapeMismatch[] = [];
    const stop = onShapeMismatch((m) => seen.push(m));
    cmsMode = 'sdk';
    try {
      const res = await adapter().fetchSystemMetrics(lingjunRef, request, new AbortController().signal);
      expect(res.series).toEqual([]);
      expect(res.covered).toEqual([]);
      expect(seen.map((m) => m.assumption)).toEqual(expect.arrayContaining(['pai-dlc.cms.datapoint-shape']));
    } finally {
      stop();
      cmsMode = 'cms';
    }
  });

  it('the Lingjun job: restarts from RestartTimes, 8 GPUs with no guessed memory', async () => {
    const job = await adapter().getJob({ externalId: 'dlcl1ngjun00001', projectExternalId: '' }, new AbortController().signal);
    expect(job).toMatchObject({ gpuCount: 8, acceleratorKind: 'GPU', restartCount: 1, failureReason: null });
    expect(job!.nodes![0]!.gpus.map((g) => g.memoryTotalBytes)).toEqual(Array(8).fill(null));
  });
});
