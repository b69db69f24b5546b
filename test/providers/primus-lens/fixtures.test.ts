// The composed Lens fixtures and seed 003's examples, served as they are by a tiny loopback
// server, parsed by the adapter into the expected canonical points; error bodies become typed errors.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { primusLensConfig } from '../../../src/providers/primus-lens/index.js';
import type { JobRef } from '../../../src/domain/types.js';
import { createPrimusLensAdapter } from '../../../src/providers/primus-lens/adapter.js';
import type { ProviderAdapter } from '../../../src/providers/provider.js';

// Copies kept in the repository (test/fixtures/README.md says where each came from).
const TEST_FIXTURES = new URL('../../fixtures/', import.meta.url);
const FIXTURES = new URL('primus-lens/', TEST_FIXTURES);
const SEED_003 = fileURLToPath(new URL('seeds/003_d55a38abf205b767.txt', TEST_FIXTURES));
const fixture = (file: string) => readFileSync(fileURLToPath(new URL(file, FIXTURES)), 'utf8');
const index = JSON.parse(fixture('_index.json')) as { file: string; http_status: number }[];
const statusOf = (file: string) => index.find((e) => e.file === file)!.http_status;

const UID = '3f6c2a9e-8b1d-4c52-9e77-0a1b2c3d4e5f';
const signal = new AbortController().signal;

/** Route (a name) -> the body and status to answer with; tests swap entries. */
type Answer = { status: number; body: string };
const ROUTES: [string, RegExp][] = [
  ['sources', /^\/v1\/workloads\/[^/]+\/metrics\/sources$/],
  ['available', /^\/v1\/workloads\/[^/]+\/metrics\/available$/],
  ['data', /^\/v1\/workloads\/[^/]+\/metrics\/data$/],
  ['iterationTimes', /^\/v1\/workloads\/[^/]+\/metrics\/iteration-times$/],
  ['metrics', /^\/v1\/workloads\/[^/]+\/metrics$/],
  ['metadata', /^\/v1\/workloadMetadata$/],
  ['list', /^\/v1\/workloads$/],
  ['detail', /^\/v1\/workloads\/[^/]+$/],
  ['gpuMetrics', /^\/v1\/nodes\/gpu-node-01\/gpuMetrics$/],
  ['otherNodeGpuMetrics', /^\/v1\/nodes\/[^/]+\/gpuMetrics$/],
  ['diagPods', /^\/v1\/workload-diag\/[^/]+\/pods$/],
];
const ok = (file: string): Answer => ({ status: statusOf(file), body: fixture(file) });
const emptyNodeGraph: Answer = {
  status: 200,
  body: JSON.stringify({
    meta: { code: 2000, message: 'OK' },
    data: { gpu_utilization: { serial: 0, series: [], config: { y_axis_unit: '%' } } },
    tracing: null,
  }),
};
function defaults(): Record<string, Answer> {
  return {
    sources: ok('v1/workload_metrics_sources.json'),
    available: ok('v1/workload_metrics_available.json'),
    data: ok('v1/workload_metrics_data.json'),
    iterationTimes: ok('v1/workload_iteration_times.json'),
    metrics: ok('v1/workload_metrics.json'),
    metadata: ok('v1/workload_metadata.json'),
    list: ok('v1/workloads_list.json'),
    detail: ok('v1/workload_detail.json'),
    gpuMetrics: ok('v1/node_gpu_metrics.json'),
    otherNodeGpuMetrics: emptyNodeGraph,
    diagPods: ok('v1/workload_diag_pods.json'),
  };
}

let answers = defaults();
const requests: URL[] = [];
let server: http.Server;
let baseUrl = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fixtures.local');
    requests.push(url);
    const route = ROUTES.find(([, re]) => re.test(url.pathname))?.[0];
    const answer = route ? answers[route] : undefined;
    res.writeHead(answer?.status ?? 404, { 'content-type': 'application/json' });
    res.end(answer?.body ?? JSON.stringify({ error: `endpoint not found: GET ${url.pathname}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  answers = defaults();
  requests.length = 0;
});

function adapter(): ProviderAdapter {
  return createPrimusLensAdapter(primusLensConfig.parse({ id: 'lens-fixtures', kind: 'PRIMUS_LENS', baseUrl, cluster: 'gpu-cluster-a' }), {});
}
const job: JobRef = {
  externalId: UID,
  projectExternalId: 'team-llm',
  status: 'RUNNING',
  createdAt: new Date(1764547200_000),
  startedAt: new Date(1764547200_000),
  finishedAt: null,
};
/** Points as [step, ms, value], values compared to 12 digits (percent / 100 is not exact in binary). */
function expectRatioPoints(s: { points: { timestamp: Date | null; step: number | null; value: number | null }[] }, expected: [number, number][]) {
  expect(s.points.map((p) => p.timestamp?.getTime())).toEqual(expected.map(([ms]) => ms));
  s.points.forEach((p, i) => {
    expect(p.value).toBeCloseTo(expected[i]![1], 12);
  });
}
const lastRequest = (path: string) => requests.filter((u) => u.pathname.endsWith(path)).at(-1)!;
const pointsOf = (s: { points: { timestamp: Date | null; step: number | null; value: number | null }[] }) =>
  s.points.map((p) => [p.step, p.timestamp?.getTime() ?? null, p.value]);

describe('composed v1 fixtures', () => {
  it('workloads list and metadata -> jobs and projects', async () => {
    const a = adapter();
    expect(await a.listProjects(signal)).toEqual([
      { externalId: 'team-llm', name: 'team-llm', createdAt: null },
      { externalId: 'team-vision', name: 'team-vision', createdAt: null },
    ]);
    const page = await a.listJobs(null, signal);
    expect(page.nextCursor).toBeNull();
    expect(page.jobs).toEqual([
      {
        externalId: UID,
        projectExternalId: 'team-llm',
        projectName: 'team-llm',
        name: 'llama3-8b-pretrain',
        status: 'RUNNING',
        rawStatus: 'Running',
        createdAt: new Date(1764547200_000),
        startedAt: new Date(1764547200_000),
        finishedAt: null,
        gpuType: 'AMD_Instinct_MI300X_OAM',
        gpuCount: 16,
      },
      expect.objectContaining({ externalId: '77d0e1f2-1111-4a2b-8c3d-9e8f7a6b5c4d', status: 'SUCCEEDED', gpuCount: 8, finishedAt: null }),
    ]);
    const listQuery = lastRequest('/v1/workloads').searchParams;
    expect(Object.fromEntries(listQuery)).toEqual({ page_num: '1', page_size: '100', order_by: 'start_at', cluster: 'gpu-cluster-a' });
  });

  it('workload detail (camelCase, filled tracing) -> job with nodes', async () => {
    const detail = await adapter().getJob({ externalId: UID, projectExternalId: 'team-llm' }, signal);
    expect(detail).toMatchObject({
      externalId: UID,
      name: 'llama3-8b-pretrain',
      status: 'RUNNING',
      startedAt: new Date(1764547200_000),
      finishedAt: null,
      gpuCount: 16,
    });
    expect(detail!.nodes!.map((n) => [n.externalId, n.gpus.length, n.gpus[0]!.model])).toEqual([
      ['gpu-node-01', 8, 'AMD_Instinct_MI300X_OAM'],
      ['gpu-node-02', 8, 'AMD_Instinct_MI300X_OAM'],
    ]);
    expect(Object.fromEntries(lastRequest('/v1/workloads').searchParams)).toMatchObject({ namespace: 'team-llm', name: 'llama3-8b-pretrain' });
  });

  it('workload metrics (seconds, %) and node gpuMetrics (per gpu_id) -> ratio series', async () => {
    const result = await adapter().fetchSystemMetrics(
      job,
      { from: new Date(1764550800_000), to: new Date(1764550920_000), metrics: ['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION'], stepSeconds: 60 },
      signal,
    );
    expect(Object.fromEntries(lastRequest(`/workloads/${UID}/metrics`).searchParams)).toEqual({
      start: '1764550800',
      end: '1764550920',
      step: '60',
      cluster: 'gpu-cluster-a',
    });
    expect(result.covered).toEqual(['GPU_UTILIZATION', 'GPU_MEMORY_UTILIZATION']);
    const find = (name: string, scope: string, node: string, gpu: number | null = null) =>
      result.series.find((s) => s.name === name && s.scope === scope && s.nodeExternalId === node && s.gpuIndex === gpu)!;
    const t = [1764550800_000, 1764550860_000, 1764550920_000] as const;
    expectRatioPoints(find('GPU_UTILIZATION', 'NODE', 'gpu-node-01'), [
      [t[0], 0.951],
      [t[1], 0.964],
      [t[2], 0.948],
    ]);
    expectRatioPoints(find('GPU_UTILIZATION', 'NODE', 'gpu-node-02'), [
      [t[0], 0.937],
      [t[1], 0.959],
      [t[2], 0.962],
    ]);
    expectRatioPoints(find('GPU_MEMORY_UTILIZATION', 'NODE', 'gpu-node-01'), [
      [t[0], 0.712],
      [t[1], 0.714],
      [t[2], 0.714],
    ]);
    expectRatioPoints(find('GPU_UTILIZATION', 'GPU', 'gpu-node-01', 0), [
      [t[0], 0.97],
      [t[1], 0.96],
      [t[2], 0.98],
    ]);
    expectRatioPoints(find('GPU_UTILIZATION', 'GPU', 'gpu-node-01', 1), [
      [t[0], 0.94],
      [t[1], 0.95],
      [t[2], 0.93],
    ]);
    // Not asked for: no power series, and TrainingPerformance never becomes a node series.
    expect(result.series.every((s) => s.rawName !== 'GPU Power' && s.nodeExternalId !== 'tflops')).toBe(true);
    expect(result.series).toHaveLength(5);
  });

  it('workload metrics TrainingPerformance "tflops" -> MODEL_FLOPS_PER_GPU in FLOP/s, job scope; "iteration" left out', async () => {
    const result = await adapter().fetchSystemMetrics(
      job,
      { from: new Date(1764550800_000), to: new Date(1764550920_000), metrics: ['MODEL_FLOPS_PER_GPU'], stepSeconds: 60 },
      signal,
    );
    expect(result.covered).toEqual(['MODEL_FLOPS_PER_GPU']);
    expect(result.series).toHaveLength(1);
    const flops = result.series[0]!;
    expect(flops).toMatchObject({
      name: 'MODEL_FLOPS_PER_GPU',
      unit: 'FLOPS',
      scope: 'JOB',
      nodeExternalId: null,
      gpuIndex: null,
      rawName: 'TrainingPerformance/tflops',
    });
    expect(flops.points.map((p) => [p.timestamp!.getTime(), p.value])).toEqual([
      [1764550800_000, 412.7e12],
      [1764550860_000, 415.2e12],
    ]);
  });

  it('metrics/data (no data_source, unstable order) -> series by iteration', async () => {
    const from = new Date(1764547200_000);
    const to = new Date(1764550800_000);
    const series = await adapter().fetchTrainingMetrics!(job, { from, to, names: ['loss', 'tflops'] }, signal);
    expect(Object.fromEntries(lastRequest('/metrics/data').searchParams)).toEqual({
      metrics: 'loss,tflops',
      start: '1764547200000',
      end: '1764550800000',
      cluster: 'gpu-cluster-a',
    });
    const byKey = Object.fromEntries(series.map((s) => [`${s.name}/${s.source}`, s]));
    expect(Object.keys(byKey).sort()).toEqual(['loss/log', 'tflops/log']);
    expect(byKey['loss/log']).toMatchObject({ kind: 'training', keyedBy: 'step', scope: 'JOB', rawName: 'loss' });
    expect(pointsOf(byKey['loss/log']!)).toEqual([
      [100, 1764547200000, 2.1432],
      [200, 1764547260000, 1.9871],
    ]);
    expect(pointsOf(byKey['tflops/log']!)).toEqual([
      [100, 1764547200000, 412.7],
      [200, 1764547260000, 415.2],
    ]);
  });

  it('metrics/data filtered to wandb -> the wandb loss series', async () => {
    answers.data = ok('v1/workload_metrics_data_filtered.json');
    const series = await adapter().fetchTrainingMetrics!(job, { from: new Date(1764547200000), to: new Date(1764550800000), names: ['loss'] }, signal);
    expect(series.map((s) => `${s.name}/${s.source}`)).toEqual(['loss/wandb']);
    expect(pointsOf(series[0]!)).toEqual([
      [100, 1764547200000, 0.5432],
      [200, 1764547260000, 0.4321],
    ]);
  });

  it('iteration-times -> progress with iteration, target and rate', async () => {
    const progress = await adapter().fetchProgress!({ ...job, finishedAt: new Date(1764547260_000) }, signal);
    expect(progress).toEqual({ iteration: 200, targetIteration: 10000, rate: 100 / 60, updatedAt: new Date(1764547260000) });
  });

  it('mixed GPU models -> per-node model from workload-diag pods', async () => {
    const detail = JSON.parse(fixture('v1/workload_detail.json'));
    detail.data.gpu_allocation = { AMD_Instinct_MI300X_OAM: 100, AMD_Instinct_MI325X_OAM: 42.37 };
    answers.detail = { status: 200, body: JSON.stringify(detail) };
    const got = await adapter().getJob({ externalId: UID, projectExternalId: 'team-llm' }, signal);
    // The diag fixture names gpu-node-01's model only; gpu-node-02 stays unknown.
    expect(got!.nodes!.map((n) => n.gpus[0]!.model)).toEqual(['AMD_Instinct_MI300X_OAM', null]);
    expect(got!.gpuType).toBe('AMD_Instinct_MI300X_OAM');
  });
});

describe('seed 003 examples (legacy bare bodies)', () => {
  // The four "Example Response" blocks of the seed, in document order.
  const examples = [...readFileSync(SEED_003, 'utf8').matchAll(/### Example Response\s+```json\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it('parse into the expected points and progress', async () => {
    expect(examples).toHaveLength(4);
    answers.sources = { status: 200, body: examples[0]! };
    answers.available = { status: 200, body: examples[1]! };
    answers.data = { status: 200, body: examples[2]! };
    answers.iterationTimes = { status: 200, body: examples[3]! };
    const a = adapter();
    const series = await a.fetchTrainingMetrics!(job, { from: null, to: null, names: null }, signal);
    expect(lastRequest('/metrics/data').searchParams.get('metrics')).toBe('loss,accuracy,learning_rate');
    const byKey = Object.fromEntries(series.map((s) => [`${s.name}/${s.source}`, s]));
    expect(Object.keys(byKey).sort()).toEqual(['accuracy/wandb', 'loss/wandb']);
    expect(pointsOf(byKey['loss/wandb']!)).toEqual([
      [100, 1701734400000, 0.5432],
      [200, 1701734460000, 0.4321],
    ]);
    expect(pointsOf(byKey['accuracy/wandb']!)).toEqual([[100, 1701734400000, 0.8765]]);

    const progress = await a.fetchProgress!(job, signal);
    expect(progress).toEqual({ iteration: 200, targetIteration: 10000, rate: 100 / 60, updatedAt: new Date(1701734460000) });
  });

  it('the legacy sources fixture reads like the current one', async () => {
    answers.sources = ok('legacy/legacy_metrics_sources.json');
    const series = await adapter().fetchTrainingMetrics!(job, { from: null, to: null, names: ['loss'] }, signal);
    expect(pointsOf(series[0]!)).toEqual([
      [100, 1764547200000, 2.1432],
      [200, 1764547260000, 1.9871],
    ]);
  });
});

describe('error fixtures become typed errors, never data', () => {
  const cases: [file: string, route: string, code: string][] = [
    ['errors/error_workload_not_found.json', 'data', 'UPSTREAM_NOT_FOUND'],
    ['errors/error_invalid_time.json', 'data', 'UPSTREAM_BAD_RESPONSE'],
    ['errors/error_unknown.json', 'data', 'UPSTREAM_BAD_RESPONSE'],
    ['errors/error_lens_auth_required.json', 'data', 'UPSTREAM_AUTH'],
    ['errors/error_lens_unified_route_missing.json', 'sources', 'UPSTREAM_NOT_FOUND'],
    ['errors/error_safe_robust_not_installed.json', 'data', 'UPSTREAM_UNAVAILABLE'],
    ['errors/error_safe_cluster_required.json', 'sources', 'UPSTREAM_BAD_RESPONSE'],
    ['errors/error_safe_unauthorized.json', 'available', 'UPSTREAM_AUTH'],
    ['legacy/legacy_error_400.json', 'data', 'UPSTREAM_BAD_RESPONSE'],
    ['legacy/legacy_error_invalid_time.json', 'data', 'UPSTREAM_BAD_RESPONSE'],
  ];
  for (const [file, route, code] of cases) {
    it(`${file} -> ${code}`, async () => {
      answers[route] = ok(file);
      await expect(adapter().fetchTrainingMetrics!(job, { from: null, to: null, names: null }, signal)).rejects.toMatchObject({
        name: 'UpstreamError',
        code,
        status: statusOf(file),
      });
    });
  }

  it('a 4004 envelope on the detail is a missing job; a missing route is not', async () => {
    answers.detail = ok('errors/error_workload_not_found.json');
    expect(await adapter().getJob({ externalId: UID, projectExternalId: 'team-llm' }, signal)).toBeNull();
    answers.detail = { status: 404, body: fixture('errors/error_lens_unified_route_missing.json') };
    await expect(adapter().getJob({ externalId: UID, projectExternalId: 'team-llm' }, signal)).rejects.toMatchObject({ code: 'UPSTREAM_NOT_FOUND' });
    answers.list = ok('errors/error_unknown.json');
    // 5000 "Unknown error" is Lens' untyped failure (bad parameters among them): not retried.
    await expect(adapter().listJobs(null, signal)).rejects.toMatchObject({
      code: 'UPSTREAM_BAD_RESPONSE',
      retryable: false,
      details: { upstreamCode: '5000' },
    });
  });
});
