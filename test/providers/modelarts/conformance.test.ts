// Conformance: real ModelArts shapes replayed through the adapter over HTTP, mapped numbers checked
// exactly. The fact sheet's job example, seed 001's metrics example (verbatim), an Ascend job in the
// documented flavor_info.npu shape (unit_num a string) with running_records, and a log preview in
// the formats ModelArts writes.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelArtsAdapter } from '../../../src/providers/modelarts/adapter.js';
import { onShapeMismatch, type ShapeMismatch } from '../../../src/providers/shape-watch.js';

const GIB = 1024 ** 3;

// The fact sheet's GetJob example, verbatim.
const FACT_SHEET_JOB = `{"kind": "job",
 "metadata": {"id": "6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11", "name": "bert-ft",
   "workspace_id": "0", "create_time": 1740822000000, "user_name": "alice"},
 "status": {"phase": "Running", "secondary_phase": "Running", "duration": 720000,
   "start_time": 1740822060000, "tasks": ["worker-0", "worker-1"],
   "node_count_metrics": [[1740822060000, 2]]},
 "spec": {"resource": {"flavor_id": "modelarts.vm.gpu.v100x8", "node_count": 2,
   "flavor_detail": {"flavor_type": "GPU", "flavor_info": {"cpu": {"arch": "x86", "core_num": 64},
     "gpu": {"unit_num": 8, "product_name": "NVIDIA-V100", "memory": "32GB"},
     "memory": {"size": 512, "unit": "GB"}}}}}}`;

// Seed 001's example response, verbatim.
const SEED_001 = `{
  "metrics" : [ {
    "metric" : "cpuUsage",
    "value" : [ -1, -1, 2.43, 4.524, 6.714, 12.422, 9.214, 5.36, 7.5, 10.088, 8.975, 11.423, 11.548, 14.563, 16.833 ]
  }, {
    "metric" : "memUsage",
    "value" : [ -1, -1, 0.04, 0.521, 1.652, 4.252, 6.433, 7.384, 7.982, 8.718, 9.365, 9.881, 10.192, 9.994, 9.005 ]
  }, {
    "metric" : "gpuUtil",
    "value" : [ -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 ]
  }, {
    "metric" : "gpuMemUsage",
    "value" : [ -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 ]
  }, {
    "metric" : "npuUtil",
    "value" : [ -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 ]
  }, {
    "metric" : "npuMemUsage",
    "value" : [ -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 ]
  } ]
}`;

// An Ascend job: the documented npu device shape (unit_num a string), two run records (epoch
// seconds; the second a restart), a terminal phase and a failing task.
const ASCEND_JOB = JSON.stringify({
  kind: 'job',
  metadata: { id: 'a5c3e1d0-0000-4000-a000-000000000001', name: 'pangu', workspace_id: '0', create_time: 1740822000000 },
  status: {
    phase: 'Failed',
    secondary_phase: 'Failed',
    duration: 7_200_000,
    start_time: 1740822060000,
    tasks: ['worker-0', 'worker-1'],
    task_statuses: [
      { task: 'worker-0', exit_code: 0, message: '' },
      { task: 'worker-1', exit_code: 137, message: 'OOMKilled' },
    ],
    running_records: [
      { start_at: 1740822060, end_at: 1740825660, start_type: 'init_or_rescheduled', end_reason: 'Failed', end_related_task: 'worker-1' },
      { start_at: 1740825720, end_at: 1740829290, start_type: 'restarted', end_reason: 'Failed', end_related_task: 'worker-1' },
    ],
  },
  spec: {
    resource: {
      flavor_id: 'modelarts.bm.npu.arm.8snt9b3.d',
      node_count: 2,
      flavor_detail: { flavor_type: 'Ascend', flavor_info: { npu: { unit_num: '8', product_name: 'Ascend-snt9b', memory: '64GB' } } },
    },
  },
});

const LOG_PREVIEW = JSON.stringify({
  content: [
    '[ModelArts Service Log]2025-03-01 09:41:00,123 - INFO - prepare environment',
    '2025-03-01 09:41:01,500 - root - WARNING - dataset cache miss',
    '[2025-03-01 09:41:02] ERROR something broke',
    '2025-03-01T17:41:03.250+08:00 INFO iso with an offset',
    'no timestamp at all',
    '',
  ].join('\n'),
  current_size: 0,
  full_size: 0,
});

// The server answered at 10:15:30 UTC (its Date header): the last value is the minute 10:14.
const ANSWERED = new Date(Date.UTC(2025, 2, 1, 10, 15, 30));
let server: http.Server;
let baseUrl = '';
const paths: string[] = [];
/** Per test: bodies to answer instead, by a part of the path. */
let override: Record<string, string> = {};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    paths.push(`${req.method} ${path}`);
    let body: string;
    const replaced = Object.entries(override).find(([part]) => path.includes(part));
    if (replaced) body = replaced[1];
    else if (path.endsWith('/logs/preview')) body = LOG_PREVIEW;
    else if (path.includes('/metrics/')) body = SEED_001;
    else if (path.includes('a5c3e1d0')) body = ASCEND_JOB;
    else body = FACT_SHEET_JOB;
    res.writeHead(200, { 'content-type': 'application/json', date: ANSWERED.toUTCString() });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const adapter = () =>
  createModelArtsAdapter(
    { id: 'ma-conf', kind: 'MODELARTS', baseUrl, projectId: 'p1', projectName: 'cn-north-4', accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK' },
    { AK: 'ak', SK: 'sk' },
    { now: () => ANSWERED.getTime() },
  );
const signal = new AbortController().signal;

describe('fact sheet job example + seed 001 metrics', () => {
  it('maps the job: 2 nodes x 8 V100 = 16 GPUs of 32 GiB, kind GPU, times in ms', async () => {
    const job = await adapter().getJob({ externalId: '6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11', projectExternalId: '0' }, signal);
    expect(job).toEqual({
      externalId: '6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11',
      projectExternalId: '0',
      projectName: 'default',
      name: 'bert-ft',
      status: 'RUNNING',
      rawStatus: 'Running',
      createdAt: new Date(1740822000000),
      startedAt: new Date(1740822060000),
      finishedAt: null,
      gpuType: 'NVIDIA-V100',
      gpuCount: 16,
      acceleratorKind: 'GPU',
      failureReason: null,
      consoleUrl: 'https://console.huaweicloud.com/modelarts/?region=cn-north-4#/trainingJobs/trainingJobDetail?id=6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11',
      restartCount: null,
      // The example has user_name and no algorithm or annotations.
      owner: 'alice',
      labels: [],
      config: null,
      image: null,
      command: null,
      nodes: ['worker-0', 'worker-1'].map((t) => ({
        externalId: t,
        name: t,
        gpus: Array.from({ length: 8 }, (_, index) => ({ index, model: 'NVIDIA-V100', memoryTotalBytes: 32 * GIB })),
      })),
    });
  });

  it('reads seed 001 for both tasks: percent -> ratio exactly, -1 dropped, minutes from the Date header, nodes in the same answer', async () => {
    paths.length = 0;
    const res = await adapter().fetchSystemMetrics(
      {
        externalId: '6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11',
        projectExternalId: '0',
        status: 'RUNNING',
        createdAt: null,
        startedAt: new Date(1740822060000),
        finishedAt: null,
      },
      { from: new Date(1740822060000), to: ANSWERED, metrics: ['CPU_UTILIZATION', 'GPU_UTILIZATION'], stepSeconds: 60 },
      signal,
    );
    expect(paths).toEqual([
      'GET /v2/p1/training-jobs/6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11',
      'GET /v2/p1/training-jobs/6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11/metrics/worker-0',
      'GET /v2/p1/training-jobs/6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11/metrics/worker-1',
    ]);
    expect(res.nodes!.map((n) => n.externalId)).toEqual(['worker-0', 'worker-1']);
    // gpuUtil is all -1 in the seed: no series for it, never a zero.
    expect(res.series.map((s) => [s.name, s.nodeExternalId])).toEqual([
      ['CPU_UTILIZATION', 'worker-0'],
      ['CPU_UTILIZATION', 'worker-1'],
    ]);
    const cpu = res.series[0]!;
    const lastMinute = Date.UTC(2025, 2, 1, 10, 14);
    expect(cpu.points.map((p) => [p.timestamp!.getTime(), p.value])).toEqual(
      [2.43, 4.524, 6.714, 12.422, 9.214, 5.36, 7.5, 10.088, 8.975, 11.423, 11.548, 14.563, 16.833].map((v, i) => [lastMinute - (12 - i) * 60_000, v / 100]),
    );
  });
});

describe('Ascend job in the documented npu shape', () => {
  it('counts and lists NPUs (2 x 8, unit_num a string), kind NPU; restarts, finish time and failure reason from the records', async () => {
    const job = (await adapter().getJob({ externalId: 'a5c3e1d0-0000-4000-a000-000000000001', projectExternalId: '0' }, signal))!;
    expect(job).toMatchObject({
      gpuCount: 16,
      gpuType: 'Ascend-snt9b',
      acceleratorKind: 'NPU',
      status: 'FAILED',
      restartCount: 1,
      // The last run record's end_at (epoch seconds), not start + duration.
      finishedAt: new Date(1740829290 * 1000),
      failureReason: 'worker-1 exited with code 137: OOMKilled',
    });
    expect(job.nodes!.map((n) => n.gpus.length)).toEqual([8, 8]);
    expect(job.nodes![1]!.gpus[7]).toEqual({ index: 7, model: 'Ascend-snt9b', memoryTotalBytes: 64 * GIB });
  });
});

describe('log timestamps in the formats ModelArts writes', () => {
  it('service log, Python logging, bracketed and ISO-with-offset lines get their instant and level; others none', async () => {
    const page = await adapter().fetchLogs!(
      { externalId: '6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11', projectExternalId: '0', status: 'RUNNING', createdAt: null, startedAt: null, finishedAt: null },
      { after: null, since: null, limit: 100 },
      signal,
    );
    const worker0 = page.lines.filter((l) => l.node === 'worker-0');
    expect(worker0.map((l) => [l.timestamp?.toISOString() ?? null, l.level])).toEqual([
      ['2025-03-01T09:41:00.123Z', 'INFO'],
      ['2025-03-01T09:41:01.500Z', 'WARNING'],
      ['2025-03-01T09:41:02.000Z', 'ERROR'],
      ['2025-03-01T09:41:03.250Z', 'INFO'],
      [null, null],
    ]);
  });
});

describe('the running code notices when a real answer contradicts an unconfirmed reading', () => {
  const JOB_ID = '6f1c2b9e-0d4a-4e8e-9a51-2f0b7c3d1e11';
  const ref = { externalId: JOB_ID, projectExternalId: '0', status: 'RUNNING' as const, createdAt: null, startedAt: new Date(1740822060000), finishedAt: null };
  async function reported(work: () => Promise<unknown>): Promise<ShapeMismatch[]> {
    const seen: ShapeMismatch[] = [];
    const stop = onShapeMismatch((m) => seen.push(m));
    try {
      await work();
    } finally {
      stop();
      override = {};
    }
    return seen;
  }
  const metrics = () =>
    adapter().fetchSystemMetrics(ref, { from: ref.startedAt, to: ANSWERED, metrics: ['CPU_UTILIZATION', 'GPU_UTILIZATION'], stepSeconds: 60 }, signal);

  it('the real examples raise nothing: seed 001, the fact sheet job, the log formats', async () => {
    const seen = await reported(async () => {
      await metrics();
      await adapter().getJob({ externalId: JOB_ID, projectExternalId: '0' }, signal);
      await adapter().getJob({ externalId: 'a5c3e1d0-0000-4000-a000-000000000001', projectExternalId: '0' }, signal);
      await adapter().fetchLogs!(ref, { after: null, since: null, limit: 100 }, signal);
    });
    expect(seen).toEqual([]);
  });

  it('metrics: samples from before the task began (not one per minute ending now), unequal arrays (not one window), values over 100 (not percent)', async () => {
    // 40 real samples for a task that started 14 minutes before the answer; one array shorter; a 250.
    override = {
      '/metrics/': JSON.stringify({
        metrics: [
          { metric: 'cpuUsage', value: Array.from({ length: 40 }, (_, i) => 10 + i) },
          { metric: 'gpuUtil', value: [...Array.from({ length: 38 }, () => 50), 250] },
        ],
      }),
    };
    const seen = await reported(metrics);
    expect([...new Set(seen.map((m) => m.assumption))].sort()).toEqual([
      'modelarts.metrics-minute-window',
      'modelarts.metrics-percent',
      'modelarts.metrics-shared-window',
    ]);
    expect(seen.every((m) => m.providerId === 'ma-conf' && m.detail.includes(JOB_ID))).toBe(true);
  });

  it('metrics: a running task busy for over an hour whose GPU utilization never exceeds 1.0 (a 0..1 scale read as percent)', async () => {
    override = {
      '/metrics/': JSON.stringify({
        metrics: [
          { metric: 'cpuUsage', value: Array.from({ length: 70 }, () => 35) },
          { metric: 'gpuUtil', value: Array.from({ length: 70 }, (_, i) => 0.5 + (i % 4) / 10) },
        ],
      }),
      // The same job, started two hours before the answer.
      [JOB_ID]: FACT_SHEET_JOB.replaceAll('1740822060000', String(ANSWERED.getTime() - 2 * 3600_000)),
    };
    const longRef = { ...ref, startedAt: new Date(ANSWERED.getTime() - 2 * 3600_000) };
    const seen = await reported(() =>
      adapter().fetchSystemMetrics(
        longRef,
        { from: longRef.startedAt, to: ANSWERED, metrics: ['CPU_UTILIZATION', 'GPU_UTILIZATION'], stepSeconds: 60 },
        signal,
      ),
    );
    expect([...new Set(seen.map((m) => m.assumption))]).toEqual(['modelarts.metrics-fraction-scale']);
  });

  it("logs: stamps without an offset that are hours after the server's now (written in UTC+8) are not UTC", async () => {
    override = {
      '/logs/preview': JSON.stringify({ content: '2025-03-01 18:14:00,000 - root - INFO - local time in Beijing\n', current_size: 0, full_size: 0 }),
    };
    const seen = await reported(() => adapter().fetchLogs!(ref, { after: null, since: null, limit: 100 }, signal));
    // Once per task read (both tasks answer the same preview here).
    expect(seen.map((m) => m.assumption)).toEqual(['modelarts.log-timestamps-utc', 'modelarts.log-timestamps-utc']);
    expect(seen.map((m) => m.detail.match(/task (\S+):/)?.[1])).toEqual(['worker-0', 'worker-1']);
  });

  it('a failed job with no reason in any field read', async () => {
    const job = JSON.parse(ASCEND_JOB);
    job.status.task_statuses = [];
    job.status.running_records = [];
    job.status.secondary_phase = 'Failed';
    override = { a5c3e1d0: JSON.stringify(job) };
    const seen = await reported(() => adapter().getJob({ externalId: 'a5c3e1d0-0000-4000-a000-000000000001', projectExternalId: '0' }, signal));
    expect(seen.map((m) => m.assumption)).toEqual(['modelarts.failure-reason']);
  });
});
