// The Prometheus query API against the real Prometheus (Debian's package, /usr/bin/prometheus):
// a demo server's /metrics/jobs is scraped by a real Prometheus every second, and the same PromQL
// queries, one per feature of the subset, run on both over the same window must give the same
// series and values (within float tolerance), as instant queries and as range queries; promtool's
// `query instant` and `query range` read this API.
//
// How both sides hold the same samples: the scrape exposes each series' latest point with its own
// timestamp (honor_timestamps), so Prometheus stores exactly the points it saw, at the store's
// timestamps; it misses any point that came and went between two scrapes. So after the demo's
// first read (which creates the jobs' series and their history, before Prometheus starts), the
// test itself adds ONE point per series at a time through the store's write path, on the
// controllable clock, and waits (an event: Prometheus answers that sample's timestamp) until
// Prometheus has scraped it before adding the next. Every point after T0 is then in both. The
// queries look at most 300 s (lookback) + 180 s (longest range) before the first evaluation
// time, which lies after T0, so what came before T0 (in the store, mostly not in Prometheus) is
// never read. A seventh of the series stops getting points half-way, so the lookback boundary
// (a sample exactly 5 minutes old counts, an older one does not, as in Prometheus 2.x) falls on
// an evaluation time. Labels: honor_labels keeps our `job` label, `instance` is dropped by
// metric relabelling, so both sides' label sets are the scrape target's.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/net.js';
import { manualClock, startRuntimeOn } from '../support/runtime.js';
import { eventually, HANG_MS } from '../support/wait.js';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const HAVE = existsSync(PROMETHEUS);
const STEP_MS = 30_000;
const STEPS = 18;
const STOP_AT = 6;

/** One query per feature of the subset; `rangeOnly`/`instantOnly` where one kind of query cannot take it. */
const QUERIES: { q: string; instantOnly?: boolean }[] = [
  { q: 'training_graph_accelerator_utilization_ratio' },
  { q: 'training_graph_accelerator_utilization_ratio{provider="baseten-demo"}' },
  { q: 'training_graph_accelerator_utilization_ratio{provider!="baseten-demo"}' },
  { q: 'training_graph_accelerator_utilization_ratio{provider=~"pai.*|primus-lens-demo"}' },
  { q: 'training_graph_accelerator_memory_used_bytes{kind!~"N.U", provider!~"base"}' },
  { q: '{__name__=~"training_graph_accelerator_memory.*"}' },
  { q: 'training_graph_accelerator_utilization_ratio[2m]', instantOnly: true },
  { q: 'sum by (provider) (training_graph_accelerator_utilization_ratio)' },
  { q: 'avg without (gpu, node) (training_graph_accelerator_utilization_ratio)' },
  { q: 'min by (job) (training_graph_accelerator_memory_used_bytes)' },
  { q: 'max(training_graph_accelerator_utilization_ratio)' },
  { q: 'count by (kind, provider) (training_graph_accelerator_utilization_ratio)' },
  { q: 'avg_over_time(training_graph_accelerator_utilization_ratio[2m])' },
  { q: 'min_over_time(training_graph_accelerator_utilization_ratio[90s])' },
  { q: 'max_over_time(training_graph_accelerator_memory_used_bytes[1m])' },
  { q: 'last_over_time(training_graph_accelerator_utilization_ratio[1m])' },
  { q: 'count_over_time(training_graph_accelerator_utilization_ratio[3m])' },
  { q: 'training_graph_accelerator_utilization_ratio * 100 - 5' },
  { q: '-training_graph_accelerator_memory_used_bytes / 2^30' },
  { q: 'training_graph_accelerator_utilization_ratio > 0.5' },
  { q: 'training_graph_accelerator_utilization_ratio < bool 0.5' },
  { q: '0.3 >= training_graph_accelerator_utilization_ratio' },
  { q: 'topk(3, training_graph_accelerator_utilization_ratio)' },
  { q: 'bottomk by (provider) (2, training_graph_accelerator_utilization_ratio)' },
  { q: '(1 + 2) * 3 % 4' },
  // Values as Go writes them: no exponent, shortest digits.
  { q: '2 ^ 70 + training_graph_accelerator_utilization_ratio{provider="baseten-demo"} * 1e-7' },
  { q: '1e-7 * 3' },
  { q: '2 ^ 70' },
];

interface PromSeries {
  metric: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

/** A result as a map from label set to its [t, v] points, for comparing regardless of order. */
function normalise(data: { resultType: string; result: unknown }): Map<string, [number, number, string][]> {
  const out = new Map<string, [number, number, string][]>();
  if (data.resultType === 'scalar') {
    const [t, v] = data.result as [number, string];
    out.set('{}', [[t, Number(v), v]]);
    return out;
  }
  for (const s of data.result as PromSeries[]) {
    const { instance: _i, ...labels } = s.metric;
    const key = JSON.stringify(Object.entries(labels).sort());
    const points = s.values ?? [s.value!];
    out.set(
      key,
      points.map(([t, v]) => [t, Number(v), v]),
    );
  }
  return out;
}

function expectSame(ours: Map<string, [number, number, string][]>, theirs: Map<string, [number, number, string][]>, what: string) {
  expect([...ours.keys()].sort(), `${what}: series`).toEqual([...theirs.keys()].sort());
  for (const [key, points] of theirs) {
    const mine = ours.get(key)!;
    expect(
      mine.map(([t]) => t),
      `${what}: timestamps of ${key}`,
    ).toEqual(points.map(([t]) => t));
    points.forEach(([, v, text], i) => {
      const [, m, mineText] = mine[i]!;
      expect(Math.abs(m - v) <= 1e-9 * Math.max(1, Math.abs(v)), `${what}: ${key} at ${points[i]![0]}: ours ${m}, Prometheus ${v}`).toBe(true);
      // The same float is written the same way (Go's shortest decimal, no exponent).
      if (m === v) expect(mineText, `${what}: ${key} at ${points[i]![0]}`).toBe(text);
    });
  }
}

describe.skipIf(!HAVE)(`the query API conforms to Prometheus [needs ${PROMETHEUS}: apt-get install prometheus]`, () => {
  let db: TestDatabase;
  let rt: Runtime;
  let prometheus: ChildProcess | undefined;
  let promUrl = '';
  let dir = '';
  let end = 0;
  const clock = manualClock(Math.floor(Date.now() / 1000) * 1000);

  const get = async (base: string, api: string, params: Record<string, string>) => {
    const res = await fetch(`${base}/api/v1/${api}?${new URLSearchParams(params)}`);
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, null, { clock: clock.now });
    // The demo's running jobs and their accelerator series, read once as a client would.
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: `{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id
          metrics(names: [GPU_UTILIZATION, GPU_MEMORY_USED, NPU_UTILIZATION], from: "${new Date(clock.now() - 10 * 60_000).toISOString()}", maxPoints: 20) { name } } } } }`,
      }),
    });
    const running = new Set(((await res.json()) as any).data.jobs.edges.map((e: any) => e.node.id as string));
    await rt.readThrough.writesSettled();
    const series = (
      await rt.store.accelSeriesInWindow({
        names: ['GPU_UTILIZATION', 'GPU_MEMORY_USED', 'NPU_UTILIZATION'],
        providerIds: rt.store.providers.ids(),
        projectIds: null,
        from: new Date(clock.now() - 10 * 60_000),
        to: new Date(clock.now()),
        limit: 10_000,
      })
    ).filter((s) => running.has(s.jobId));
    expect(series.length).toBeGreaterThan(10);

    dir = mkdtempSync(path.join(tmpdir(), 'tg-promql-conformance-'));
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    writeFileSync(
      path.join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, scrape_timeout: 1s }',
        'scrape_configs:',
        '  - job_name: training-graph',
        '    honor_labels: true',
        '    metrics_path: /metrics/jobs',
        `    static_configs: [{ targets: ["${new URL(rt.url).host}"] }]`,
        '    metric_relabel_configs: [{ action: labeldrop, regex: instance }]',
        '',
      ].join('\n'),
    );
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=error',
      ],
      { stdio: 'ignore' },
    );
    // If the worker ends before afterAll runs (a hook time-out), Prometheus must not outlive it.
    const child = prometheus;
    process.once('exit', () => child.kill('SIGKILL'));
    await eventually(async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok, HANG_MS, 'Prometheus ready');
    await eventually(
      async () => (await get(promUrl, 'targets', {})).body.data.activeTargets[0]?.health === 'up',
      HANG_MS,
      'Prometheus scrapes the demo server',
    );

    // Pseudo-random but fixed values: no ties for topk, some above and below the comparisons' thresholds.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let k = 1; k <= STEPS; k++) {
      clock.advance(STEP_MS);
      const ts = clock.now();
      const rows = series
        .filter((_s, i) => k <= STOP_AT || i % 7 !== 0)
        .map((s) => [s.seriesId, ts, ts, null, s.name === 'GPU_MEMORY_USED' ? Math.round(next() * 8e10) : next()] as [number, number, number, null, number]);
      await rt.readThrough.repo.writePoints(rows);
      await eventually(
        async () => {
          const r = await get(promUrl, 'query', { query: 'max(timestamp(training_graph_accelerator_utilization_ratio))', time: String(ts / 1000) });
          return Number(r.body.data?.result?.[0]?.value?.[1]) === ts / 1000;
        },
        HANG_MS,
        `Prometheus scraped the point of step ${k}`,
      );
    }
    end = clock.now();
  }, 600_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus!.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await rt?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers each query of the subset as Prometheus does, instant and range', async () => {
    const range = { start: String((end - 150_000) / 1000), end: String(end / 1000), step: '15' };
    let nonEmpty = 0;
    for (const { q, instantOnly } of QUERIES) {
      for (const [api, params] of [['query', { query: q, time: String(end / 1000) }], ...(instantOnly ? [] : [['query_range', { query: q, ...range }]])] as [
        string,
        Record<string, string>,
      ][]) {
        const theirs = await get(promUrl, api, params);
        const ours = await get(rt.url, api, params);
        expect(theirs.body.status, `Prometheus ${api} ${q}: ${JSON.stringify(theirs.body)}`).toBe('success');
        expect(ours.status, `${api} ${q}: ${JSON.stringify(ours.body)}`).toBe(200);
        expect(ours.body.data.resultType, `${api} ${q}`).toBe(theirs.body.data.resultType);
        const t = normalise(theirs.body.data);
        if (t.size > 0) nonEmpty += 1;
        expectSame(normalise(ours.body.data), t, `${api} ${q}`);
      }
    }
    // The comparison compared something: nearly every query had series on the Prometheus side.
    expect(nonEmpty).toBeGreaterThan(QUERIES.length * 1.5);
    // Staleness fell inside the window: a series that stopped is in the range answer's first step and not its last.
    const last = normalise((await get(rt.url, 'query', { query: 'count(training_graph_accelerator_utilization_ratio)', time: String(end / 1000) })).body.data);
    const first = normalise(
      (await get(rt.url, 'query', { query: 'count(training_graph_accelerator_utilization_ratio)', time: String((end - 150_000) / 1000) })).body.data,
    );
    expect([...first.values()][0]![0]![1]).toBeGreaterThan([...last.values()][0]![0]![1]);
  });

  it('serves promtool query instant and query range', async () => {
    // promtool exits non-zero (and execFile rejects) on any error answer.
    const run = promisify(execFile);
    const instant = await run(PROMTOOL, [
      'query',
      'instant',
      `--time=${end / 1000}`,
      rt.url,
      'sum by (provider) (training_graph_accelerator_utilization_ratio)',
    ]);
    expect(instant.stdout).toMatch(/\{provider="baseten-demo"\} => [\d.]+ @\[/);
    const range = await run(PROMTOOL, [
      'query',
      'range',
      `--start=${(end - 60_000) / 1000}`,
      `--end=${end / 1000}`,
      '--step=30s',
      rt.url,
      'max(training_graph_accelerator_utilization_ratio)',
    ]);
    expect(range.stdout.trim().split('\n')[0]).toBe('{} =>');
    expect(range.stdout.match(/ @\[/g)).toHaveLength(3);
  });
});
