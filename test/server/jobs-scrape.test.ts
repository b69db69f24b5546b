// GET /metrics/jobs read as Prometheus reads it (a real text-format parser): every running job's
// accelerators on the five demo platforms, the same values the graph answers, stale readings left
// out (with a controllable clock), scoped by the API token, and cut at the series cap.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error the parser ships no types
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveJobsScrape } from '../../src/server/jobs-scrape.js';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { DEMO_TOKENS, graphqlData, manualClock, startScopedDemoOn } from '../support/runtime.js';

interface Family {
  name: string;
  type: string;
  metrics: { value: string; labels: Record<string, string>; timestamp_ms?: string }[];
}

const { admin: ADMIN, lensOnly: LENS_ONLY } = DEMO_TOKENS;

describe('GET /metrics/jobs', () => {
  let rt: Runtime;
  let db: TestDatabase;
  const clock = manualClock(Date.now());
  const scrape = async (token: string | null, accept?: string) =>
    fetch(`${rt.url}/metrics/jobs`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(accept ? { accept } : {}) } });
  const parse = async (res: Response): Promise<Map<string, Family>> =>
    new Map((parsePrometheusTextFormat(await res.text()) as Family[]).map((f) => [f.name, f]));
  const gql = graphqlData(() => rt.url, ADMIN);

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startScopedDemoOn(db, clock);
    // What the live pollers would keep fresh: every running job's accelerator series over the last
    // minutes, read once. (Over the whole job life, 20 points are minutes apart, and whether the
    // newest falls within the scrape's 300 s depended on the hour the test ran.)
    const recent = new Date(clock.now() - 10 * 60_000).toISOString();
    await gql(`{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id
      metrics(names: [GPU_UTILIZATION, GPU_MEMORY_USED, GPU_POWER, NPU_UTILIZATION, NPU_MEMORY_UTILIZATION, GPU_SM_ACTIVE, GPU_TENSOR_ACTIVE, GPU_TENSOR_FLOPS], from: "${recent}", maxPoints: 20) { name } } } } }`);
    await rt.readThrough.writesSettled();
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  it('exposes every running accelerator with its labels, in base units, equal to the graph', async () => {
    const res = await scrape(ADMIN);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const families = await parse(res);
    const util = families.get('training_graph_accelerator_utilization_ratio')!;
    expect(util.type).toBe('GAUGE');
    const providers = new Set(util.metrics.map((m) => m.labels.provider));
    for (const p of ['baseten-demo', 'modelarts-demo', 'pai-dlc-demo', 'primus-lens-demo']) expect(providers).toContain(p);
    for (const m of util.metrics) {
      expect(Object.keys(m.labels).sort()).toEqual(['gpu', 'job', 'job_id', 'kind', 'model', 'node', 'project', 'provider', 'scope']);
      expect(Number(m.value)).toBeGreaterThanOrEqual(0);
      expect(Number(m.value)).toBeLessThanOrEqual(1);
      expect(['GPU', 'NPU']).toContain(m.labels.kind);
    }
    expect(util.metrics.some((m) => m.labels.kind === 'NPU')).toBe(true);
    expect(util.metrics.some((m) => m.labels.scope === 'GPU' && m.labels.gpu !== '')).toBe(true);
    expect(families.get('training_graph_accelerator_memory_used_bytes')!.metrics.every((m) => Number(m.value) >= 0)).toBe(true);
    expect(families.get('training_graph_scrape_truncated')!.metrics[0]!.value).toBe('0');

    // A Baseten GPU's value is the latest point the cache holds for that GPU's utilization series.
    const sample = util.metrics.find((m) => m.labels.provider === 'baseten-demo' && m.labels.scope === 'GPU')!;
    const [job] = await rt.readThrough.repo.jobsByIds([sample.labels.job_id!]);
    const stored = await rt.store.storedSample(job!, ['GPU_UTILIZATION'], new Date(0), new Date(clock.now()));
    const node = stored.nodes.find((n) => n.name === sample.labels.node)!;
    const gpu = stored.gpus.find((g) => g.nodeId === node.id && String(g.idx) === sample.labels.gpu)!;
    const series = stored.series.find((x) => x.gpuId === gpu.id)!;
    const latest = stored.points
      .filter((p) => p.seriesId === series.id && p.value !== null)
      .sort((a, b) => a.timestamp!.getTime() - b.timestamp!.getTime())
      .at(-1)!;
    expect(Number(sample.value)).toBe(latest.value);
    expect(Number(sample.timestamp_ms)).toBe(latest.timestamp!.getTime());
  });

  it('exposes the profiling counters the ledger reads (SM active, tensor active, tensor FLOP/s), equal to the graph', async () => {
    const families = await parse(await scrape(ADMIN));
    for (const [family, name] of [
      ['training_graph_accelerator_sm_active_ratio', 'GPU_SM_ACTIVE'],
      ['training_graph_accelerator_tensor_active_ratio', 'GPU_TENSOR_ACTIVE'],
      ['training_graph_accelerator_tensor_flops', 'GPU_TENSOR_FLOPS'],
    ] as const) {
      const f = families.get(family);
      expect(f, family).toBeDefined();
      expect(f!.type).toBe('GAUGE');
      expect(new Set(f!.metrics.map((m) => m.labels.provider))).toContain('pai-dlc-demo');
      for (const m of f!.metrics) {
        expect(Number(m.value)).toBeGreaterThanOrEqual(0);
        if (family.endsWith('_ratio')) expect(Number(m.value)).toBeLessThanOrEqual(1);
      }
      // One card's value is the latest point the graph answers for that card's series.
      const sample = f!.metrics.find((m) => m.labels.scope === 'GPU')!;
      const data = await gql(
        `{ job(id: "${sample.labels.job_id}") { metrics(names: [${name}], scope: GPU, maxPoints: 10000) { node { name } gpu { index } points { timestamp value } } } }`,
      );
      const series = data.job.metrics.find((x: any) => x.node?.name === sample.labels.node && String(x.gpu?.index) === sample.labels.gpu);
      const points = series.points.filter((p: any) => p.value !== null);
      const latest = points.at(-1);
      expect(Number(sample.value)).toBe(latest.value);
      expect(Number(sample.timestamp_ms)).toBe(Date.parse(latest.timestamp));
    }
  });

  it("says what each node holds: sum of training_graph_node_accelerators by job is the graph's gpuCount, for every job shown", async () => {
    const families = await parse(await scrape(ADMIN));
    const held = families.get('training_graph_node_accelerators')!;
    expect(held.type).toBe('GAUGE');
    const sums = new Map<string, number>();
    for (const m of held.metrics) {
      expect(Object.keys(m.labels).sort()).toEqual(['job', 'job_id', 'kind', 'model', 'node', 'project', 'provider']);
      sums.set(m.labels.job_id!, (sums.get(m.labels.job_id!) ?? 0) + Number(m.value));
    }
    // Every job with a series in the scrape, on every platform, ModelArts' and PAI-DLC's per-node series among them.
    const shown = new Set(families.get('training_graph_accelerator_utilization_ratio')!.metrics.map((m) => m.labels.job_id!));
    expect(new Set(sums.keys())).toEqual(shown);
    const providers = new Set(held.metrics.map((m) => m.labels.provider));
    for (const p of ['modelarts-demo', 'pai-dlc-demo', 'baseten-demo']) expect(providers).toContain(p);
    const { jobs } = await gql('{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id gpuCount } } } }');
    const gpuCount = new Map<string, number | null>(jobs.edges.map((e: any) => [e.node.id, e.node.gpuCount]));
    for (const [jobId, sum] of sums) expect(sum, jobId).toBe(gpuCount.get(jobId));
  });

  it('speaks OpenMetrics when asked', async () => {
    const res = await scrape(ADMIN, 'application/openmetrics-text; version=1.0.0');
    expect(res.headers.get('content-type')).toContain('application/openmetrics-text');
    const text = await res.text();
    expect(text.trimEnd().endsWith('# EOF')).toBe(true);
    expect(text).toMatch(/^training_graph_accelerator_utilization_ratio\{.*\} [\d.e-]+ \d+\.\d{3}$/m);
  });

  it('is scoped by the API token like the graph', async () => {
    expect((await scrape(null)).status).toBe(401);
    expect((await scrape('not-a-token')).headers.get('www-authenticate')).toBe('Bearer');
    const lens = (await parse(await scrape(LENS_ONLY))).get('training_graph_accelerator_utilization_ratio')!;
    expect(lens.metrics.length).toBeGreaterThan(0);
    expect(new Set(lens.metrics.map((m) => m.labels.provider))).toEqual(new Set(['primus-lens-demo']));
  });

  it('cuts at the series cap in a stable order and says so', async () => {
    const server = http.createServer((req, res) => void serveJobsScrape(req, res, { store: rt.store, tokens: rt.tokens, maxSeries: 5 }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics/jobs`;
      const read = async () => parse(await fetch(url, { headers: { authorization: `Bearer ${ADMIN}` } }));
      const first = await read();
      const series = [...first.values()].filter((f) => f.name.startsWith('training_graph_accelerator_')).flatMap((f) => f.metrics);
      expect(series).toHaveLength(5);
      expect(first.get('training_graph_scrape_truncated')!.metrics[0]!.value).toBe('1');
      const again = [...(await read()).values()].filter((f) => f.name.startsWith('training_graph_accelerator_')).flatMap((f) => f.metrics);
      expect(again.map((m) => m.labels)).toEqual(series.map((m) => m.labels));
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('leaves out readings older than five minutes and counts them', async () => {
    clock.advance(6 * 60_000);
    const families = await parse(await scrape(ADMIN));
    expect(families.get('training_graph_accelerator_utilization_ratio')).toBeUndefined();
    expect(Number(families.get('training_graph_scrape_stale_series')!.metrics[0]!.value)).toBeGreaterThan(0);
  });
});
