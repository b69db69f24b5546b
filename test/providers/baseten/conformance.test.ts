// Conformance: real Baseten shapes replayed through the adapter over HTTP, mapped numbers checked
// exactly. The fact sheet's metrics example (the TrainingJobV1 and InstanceTypeV1 shapes of the
// official OpenAPI spec), a two-node answer with local and with global rank keys, and the spec's
// GetTrainingJobQueueContextResponseV1 for a job still pending and one stopped while pending.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBasetenAdapter } from '../../../src/providers/baseten/adapter.js';

const INSTANCE = {
  id: 'H100x8',
  name: '8x H100',
  memory_limit_mib: 1966080,
  millicpu_limit: 192000,
  gpu_count: 8,
  gpu_type: 'H100',
  gpu_memory_limit_mib: 81920,
};
const job = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: 'ft-run',
  created_at: '2025-03-01T09:40:00Z',
  updated_at: '2025-03-01T09:52:00Z',
  current_status: status,
  error_message: null,
  training_project_id: 'n4q95w5',
  training_project: { id: 'n4q95w5', name: 'llama-ft' },
  instance_type: INSTANCE,
  priority: 0,
  availability_model: 'dedicated',
  checkpoint_sync_status: null,
  user: null,
  ...extra,
});
const point = (v: number) => [{ timestamp: '2025-03-01T10:00:00Z', value: v }];
const ranks = (keys: number[], v: number) => Object.fromEntries(keys.map((k) => [String(k), point(v)]));
const nodeMetrics = (keys: number[]) => ({
  gpu_utilization: ranks(keys, 0.87),
  gpu_memory_usage_bytes: ranks(keys, 61203283968),
  cpu_usage: point(5.5),
  cpu_memory_usage_bytes: point(34359738368),
  ephemeral_storage: { usage_bytes: [], utilization: [] },
});
const metricsBody = (perNode: [string, number[]][]) => ({
  ...nodeMetrics(perNode[0]?.[1] ?? []),
  cache: null,
  training_job: job('p7qr9qv', 'TRAINING_JOB_RUNNING'),
  per_node_metrics: perNode.map(([node_id, keys]) => ({ node_id, metrics: nodeMetrics(keys) })),
});
const local8 = [0, 1, 2, 3, 4, 5, 6, 7];
const global8 = [8, 9, 10, 11, 12, 13, 14, 15];

let metricsAnswer: unknown = metricsBody([['node-0', [0]]]);
let server: http.Server;
let baseUrl = '';
beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    let body: unknown;
    if (path.endsWith('/metrics')) body = metricsAnswer;
    else if (path.startsWith('/v1/training/jobs/pend001/queue_context')) {
      body = {
        target_job_id: 'pend001',
        target_job_name: 'queued',
        gpu_type: 'H100',
        requested_gpus: 16,
        submitted_at: '2025-03-01T09:40:00Z',
        released_at: null,
        pending_seconds: null,
        org_capacity: null,
        team_capacity: null,
        active_at_submit: [],
        pending_ahead_at_submit: [],
        events: [{ training_job_id: 'pend001', status: 'TRAINING_JOB_PENDING', created: '2025-03-01T09:40:00Z' }],
        events_window_end: '2025-03-01T10:00:00Z',
      };
    } else if (path.startsWith('/v1/training/jobs/stop001/queue_context')) {
      body = {
        target_job_id: 'stop001',
        gpu_type: 'H100',
        requested_gpus: 8,
        submitted_at: '2025-03-01T09:40:00Z',
        released_at: null,
        active_at_submit: [],
        pending_ahead_at_submit: [],
        events: [
          { training_job_id: 'stop001', status: 'TRAINING_JOB_PENDING', created: '2025-03-01T09:40:00Z' },
          { training_job_id: 'other', status: 'TRAINING_JOB_RUNNING', created: '2025-03-01T09:41:00Z' },
          { training_job_id: 'stop001', status: 'TRAINING_JOB_STOPPED', created: '2025-03-01T09:45:30Z', event_message: 'stopped by user' },
        ],
        events_window_end: '2025-03-01T10:00:00Z',
      };
    } else if (path.includes('/queue_context')) {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end('{"message":"org admins only"}');
      return;
    } else if (path.includes('/jobs/pend001'))
      body = { training_project: { id: 'n4q95w5', name: 'llama-ft' }, training_job: job('pend001', 'TRAINING_JOB_PENDING') };
    else if (path.includes('/jobs/stop001'))
      body = {
        training_project: { id: 'n4q95w5', name: 'llama-ft' },
        training_job: job('stop001', 'TRAINING_JOB_STOPPED', { error_message: 'Stopped by user' }),
      };
    else body = { training_project: { id: 'n4q95w5', name: 'llama-ft' }, training_job: job('p7qr9qv', 'TRAINING_JOB_RUNNING') };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const adapter = () => createBasetenAdapter({ id: 'bt-conf', kind: 'BASETEN', baseUrl, apiKeyEnv: 'K' }, { K: 'key' });
const signal = new AbortController().signal;
const ref = { externalId: 'p7qr9qv', projectExternalId: 'n4q95w5', status: 'RUNNING' as const, createdAt: null, startedAt: null, finishedAt: null };
const request = {
  from: new Date('2025-03-01T09:50:00Z'),
  to: new Date('2025-03-01T10:10:00Z'),
  metrics: ['GPU_UTILIZATION' as const, 'GPU_MEMORY_USED' as const],
  stepSeconds: 60,
};

describe('metrics answers', () => {
  it('the fact sheet example: one node, rank "0" -> one GPU of 80 GiB, 0.87 and 61203283968 bytes exactly', async () => {
    metricsAnswer = metricsBody([['node-0', [0]]]);
    const res = await adapter().fetchSystemMetrics(ref, request, signal);
    expect(res.nodes).toEqual([{ externalId: 'node-0', name: 'node-0', gpus: [{ index: 0, model: 'H100', memoryTotalBytes: 81920 * 2 ** 20 }] }]);
    const util = res.series.find((s) => s.name === 'GPU_UTILIZATION')!;
    expect([util.scope, util.nodeExternalId, util.gpuIndex, util.points[0]!.value]).toEqual(['GPU', 'node-0', 0, 0.87]);
    expect(res.series.find((s) => s.name === 'GPU_MEMORY_USED')!.points[0]!.value).toBe(61203283968);
  });

  it('2 nodes x 8 GPUs are 16 GPUs with local rank keys (0..7 on each) and with global ones (0..7, 8..15), never 24', async () => {
    for (const second of [local8, global8]) {
      metricsAnswer = metricsBody([
        ['node-0', local8],
        ['node-1', second],
      ]);
      const res = await adapter().fetchSystemMetrics(ref, request, signal);
      expect(res.nodes!.map((n) => n.gpus.length)).toEqual([8, 8]);
      expect(res.nodes!.flatMap((n) => n.gpus).length).toBe(16);
      expect(res.nodes![1]!.gpus.map((g) => g.index)).toEqual(second);
      expect(res.series.filter((s) => s.name === 'GPU_UTILIZATION')).toHaveLength(16);
    }
  });

  it('a node that has reported no rank yet has no GPUs listed (none invented from the instance type)', async () => {
    metricsAnswer = metricsBody([
      ['node-0', local8],
      ['node-1', []],
    ]);
    const res = await adapter().fetchSystemMetrics(ref, request, signal);
    expect(res.nodes!.map((n) => n.gpus.length)).toEqual([8, 0]);
  });
});

describe('job facts', () => {
  it('a PENDING job has not started, and its GPU total comes from the queue context before any node reports', async () => {
    const j = (await adapter().getJob({ externalId: 'pend001', projectExternalId: 'n4q95w5' }, signal))!;
    expect(j).toMatchObject({ status: 'PENDING', startedAt: null, finishedAt: null, gpuCount: 16, acceleratorKind: 'GPU', gpuType: 'H100' });
  });

  it('a job stopped while pending finishes at its status event; error_message is the failure reason', async () => {
    const j = (await adapter().getJob({ externalId: 'stop001', projectExternalId: 'n4q95w5' }, signal))!;
    expect(j).toMatchObject({ status: 'STOPPED', finishedAt: new Date('2025-03-01T09:45:30Z'), failureReason: 'Stopped by user', gpuCount: 8 });
    expect(j.consoleUrl).toBe('https://app.baseten.co/training/n4q95w5/logs/stop001');
  });

  it('without the queue context (403 for non-admins) the total and the finish stay unknown, and nothing fails', async () => {
    const j = (await adapter().getJob({ externalId: 'p7qr9qv', projectExternalId: 'n4q95w5' }, signal))!;
    expect(j).toMatchObject({ status: 'RUNNING', gpuCount: null, finishedAt: null, startedAt: new Date('2025-03-01T09:40:00Z') });
  });
});
