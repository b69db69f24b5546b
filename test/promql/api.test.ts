// The Prometheus query API on the demo server, over HTTP as Grafana and promtool call it: the
// scrape target's series and values, GET and POST (form) requests, the metadata endpoints,
// Prometheus' error shape for what the subset leaves out, the token scope of the graph, the
// query limits, and every query of the Grafana dashboard kept in docs/grafana.
import { readFileSync } from 'node:fs';
import path from 'node:path';
// @ts-expect-error the parser ships no types
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PromApi } from '../../src/promql/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { DEMO_TOKENS, graphqlData, manualClock, startScopedDemoOn } from '../support/runtime.js';

const { admin: ADMIN, lensOnly: LENS_ONLY } = DEMO_TOKENS;
const UTIL = 'training_graph_accelerator_utilization_ratio';

describe('the Prometheus query API', () => {
  let rt: Runtime;
  let db: TestDatabase;
  const clock = manualClock(Math.floor(Date.now() / 1000) * 1000);
  const nowS = () => String(clock.now() / 1000);

  const api = async (route: string, params: Record<string, string | string[]>, token: string | null = ADMIN, method: 'GET' | 'POST' = 'GET') => {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const x of Array.isArray(v) ? v : [v]) search.append(k, x);
    const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const res =
      method === 'GET'
        ? await fetch(`${rt.url}/api/v1/${route}?${search}`, { headers: auth })
        : await fetch(`${rt.url}/api/v1/${route}`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
            body: search.toString(),
          });
    return { status: res.status, body: (await res.json()) as any };
  };

  const asAdmin = graphqlData(() => rt.url, ADMIN);

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startScopedDemoOn(db, clock);
    // What the collector would have stored: every running job's accelerator series over the last minutes.
    await asAdmin(`{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id
          metrics(names: [GPU_UTILIZATION, GPU_MEMORY_USED, GPU_POWER, NPU_UTILIZATION, NPU_MEMORY_UTILIZATION, GPU_SM_ACTIVE, GPU_TENSOR_ACTIVE, GPU_TENSOR_FLOPS], from: "${new Date(clock.now() - 30 * 60_000).toISOString()}", maxPoints: 50) { name } } } } }`);
    await rt.readThrough.writesSettled();
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  it('answers an instant query with the series and latest values of the scrape target', async () => {
    const scrape = await fetch(`${rt.url}/metrics/jobs`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const family = (parsePrometheusTextFormat(await scrape.text()) as any[]).find((f) => f.name === UTIL);
    // Prometheus drops empty labels on ingestion; so does this API.
    const scraped = new Map<string, number>(
      family.metrics.map((m: any) => [
        JSON.stringify(
          Object.entries({ __name__: UTIL, ...m.labels })
            .filter(([, v]) => v !== '')
            .sort(),
        ),
        Number(m.value),
      ]),
    );
    const { status, body } = await api('query', { query: UTIL, time: nowS() });
    expect(status).toBe(200);
    expect(body.status).toBe('success');
    expect(body.data.resultType).toBe('vector');
    const ours = new Map<string, number>(body.data.result.map((s: any) => [JSON.stringify(Object.entries(s.metric).sort()), Number(s.value[1])]));
    expect(ours.size).toBeGreaterThan(10);
    expect(ours).toEqual(scraped);
    expect(body.data.result[0].value[0]).toBe(clock.now() / 1000);
  });

  it('answers query_range by GET and by POST form alike, at start + k * step', async () => {
    const params = { query: `sum by (provider) (${UTIL})`, start: String((clock.now() - 600_000) / 1000), end: nowS(), step: '60' };
    const get = await api('query_range', params);
    const post = await api('query_range', params, ADMIN, 'POST');
    expect(get.status).toBe(200);
    expect(post.body).toEqual(get.body);
    expect(get.body.data.resultType).toBe('matrix');
    const providers = get.body.data.result.map((s: any) => s.metric.provider);
    expect(providers).toContain('baseten-demo');
    for (const s of get.body.data.result) for (const [t] of s.values) expect(((t * 1000 - (clock.now() - 600_000)) / 60_000) % 1).toBe(0);
  });

  it('answers every endpoint by POST form as by GET', async () => {
    const window = { start: String((clock.now() - 600_000) / 1000), end: nowS() };
    const calls: [string, Record<string, string | string[]>][] = [
      ['query', { query: `avg by (provider) (${UTIL})`, time: nowS() }],
      ['query_range', { query: `topk(2, ${UTIL})`, ...window, step: '30' }],
      ['series', { 'match[]': [`${UTIL}{provider="baseten-demo"}`, 'training_graph_accelerator_memory_used_bytes'], ...window }],
      ['labels', { 'match[]': [UTIL] }],
      ['label/job/values', { 'match[]': [`${UTIL}{provider="pai-dlc-demo"}`] }],
      ['metadata', { metric: UTIL }],
      ['status/buildinfo', {}],
      // Errors too: the same status and error shape either way.
      ['query', { query: `rate(${UTIL}[5m])` }],
    ];
    for (const [route, params] of calls) {
      const get = await api(route, params);
      const post = await api(route, params, ADMIN, 'POST');
      expect(post.status, route).toBe(get.status);
      expect(post.body, route).toEqual(get.body);
      if (route !== 'query' || get.status === 200) expect(get.body.status, route).toBe('success');
    }
    expect((await api('series', { 'match[]': [UTIL] }, ADMIN, 'POST')).body.data.length).toBeGreaterThan(0);
  });

  it('lists series, label names, label values, metadata and build info', async () => {
    const series = await api('series', { 'match[]': [`${UTIL}{provider="baseten-demo"}`], start: String((clock.now() - 3_600_000) / 1000), end: nowS() });
    expect(series.status).toBe(200);
    expect(series.body.data.length).toBeGreaterThan(0);
    for (const s of series.body.data) expect(s).toMatchObject({ __name__: UTIL, provider: 'baseten-demo', kind: 'GPU' });
    expect((await api('series', {})).body).toMatchObject({ status: 'error', errorType: 'bad_data', error: 'no match[] parameter provided' });

    const labels = await api('labels', {});
    expect(labels.body.data).toEqual(expect.arrayContaining(['__name__', 'provider', 'job', 'job_id', 'node', 'gpu', 'kind', 'model', 'scope', 'project']));
    const names = await api('label/__name__/values', {});
    expect(names.body.data).toEqual(expect.arrayContaining([UTIL, 'training_graph_accelerator_memory_used_bytes']));
    const providers = await api('label/provider/values', { 'match[]': [UTIL] }, ADMIN, 'POST');
    expect(providers.body.data).toEqual(expect.arrayContaining(['baseten-demo', 'modelarts-demo', 'pai-dlc-demo', 'primus-lens-demo']));

    const metadata = await api('metadata', {});
    expect(metadata.body.data[UTIL]).toEqual([{ type: 'gauge', help: 'Accelerator (GPU or NPU) utilization, 0..1', unit: '' }]);
    expect((await api('status/buildinfo', {})).body.data.version).toMatch(/^2\./);
  });

  it('answers the profiling families the ledger reads (SM active, tensor active, tensor FLOP/s) as the scrape target names them', async () => {
    const names = await api('label/__name__/values', {});
    const families = [
      'training_graph_accelerator_sm_active_ratio',
      'training_graph_accelerator_tensor_active_ratio',
      'training_graph_accelerator_tensor_flops',
    ];
    expect(names.body.data).toEqual(expect.arrayContaining(families));
    for (const family of families) {
      const answer = await api('query', { query: `max by (provider) (${family})`, time: nowS() });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const providers = answer.body.data.result.map((r: any) => r.metric.provider);
      expect(providers).toContain('pai-dlc-demo');
      for (const r of answer.body.data.result) {
        expect(Number(r.value[1])).toBeGreaterThanOrEqual(0);
        if (family.endsWith('_ratio')) expect(Number(r.value[1])).toBeLessThanOrEqual(1);
      }
    }
    // The same number the scrape target shows for one card: the latest reading within the lookback.
    const scrape = await (await fetch(`${rt.url}/metrics/jobs`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    const line = scrape.split('\n').find((l) => l.startsWith('training_graph_accelerator_tensor_active_ratio{'))!;
    const [, labelText, value] = /^[a-z_]+\{(.*)\} (\S+)/.exec(line)!;
    const jobId = /job_id="([^"]+)"/.exec(labelText!)![1];
    const gpu = /gpu="([^"]*)"/.exec(labelText!)![1];
    const node = /node="([^"]*)"/.exec(labelText!)![1];
    const one = await api('query', { query: `training_graph_accelerator_tensor_active_ratio{job_id="${jobId}",node="${node}",gpu="${gpu}"}`, time: nowS() });
    expect(one.body.data.result).toHaveLength(1);
    expect(Number(one.body.data.result[0].value[1])).toBe(Number(value));
  });

  it('refuses what the subset leaves out with bad_data naming it', async () => {
    const cases: [string, RegExp][] = [
      [`rate(${UTIL}[5m])`, /function rate\(\)/],
      [`${UTIL} offset 5m`, /offset/],
      [`${UTIL} @ 100`, /@ modifier/],
      [`avg_over_time(${UTIL}[5m:1m])`, /subqueries/],
      [`quantile(0.9, ${UTIL})`, /aggregation quantile/],
      [`${UTIL} / training_graph_accelerator_memory_used_bytes`, /between two vectors/],
      [`${UTIL} and ${UTIL}`, /and operator/],
      [`sum(${UTIL}[5m])`, /expected type instant vector in aggregation expression, got range vector/],
      [`${UTIL}{provider=~"("}`, /invalid regular expression/],
      [`${UTIL}{`, /parse error/],
      ['{provider=~".*"}', /at least one non-empty matcher/],
      ['1 > 2', /comparisons between scalars must use BOOL modifier/],
    ];
    for (const [query, message] of cases) {
      const { status, body } = await api('query', { query, time: nowS() });
      expect(status, query).toBe(400);
      expect(body.status, query).toBe('error');
      expect(body.errorType, query).toBe('bad_data');
      expect(body.error, query).toMatch(message);
    }
    expect((await api('query', {})).body.error).toMatch(/no query/);
    expect((await api('query_range', { query: UTIL, start: nowS(), end: nowS() })).body.error).toMatch(/step/);
    expect((await api('nonsense', {})).status).toBe(404);
  });

  it('sees what the token sees in the graph', async () => {
    const none = await api('query', { query: UTIL }, null);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ status: 'error', errorType: 'unauthorized' });
    expect((await api('query', { query: UTIL }, 'not-a-token')).status).toBe(401);
    const lens = await api('query', { query: `count by (provider) (${UTIL})`, time: nowS() }, LENS_ONLY);
    expect(lens.body.data.result.map((s: any) => s.metric.provider)).toEqual(['primus-lens-demo']);
    const values = await api('label/provider/values', {}, LENS_ONLY);
    expect(values.body.data).toEqual(['primus-lens-demo']);
  });

  it('refuses queries over the resolution and sample limits', async () => {
    // Prometheus' own limit: 11,000 points per series.
    const tooFine = await api('query_range', { query: UTIL, start: '0', end: '11000', step: '1' });
    expect(tooFine.status).toBe(400);
    expect(tooFine.body).toMatchObject({ errorType: 'bad_data', error: expect.stringMatching(/11,000 points per timeseries/) });
    expect((await api('query_range', { query: UTIL, start: '0', end: '10999', step: '1' })).status).toBe(200);
    // The sample limit (series x evaluation times + stored points read), checked before any point is read.
    const small = new PromApi({ store: rt.store, maxSamples: 1000 });
    const access = { providerIds: rt.store.providers.ids(), projectIds: null };
    const params = new URLSearchParams({ query: UTIL, start: String((clock.now() - 3_600_000) / 1000), end: nowS(), step: '15' });
    const refused = await small.handle('query_range', params, access);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ status: 'error', errorType: 'execution', error: expect.stringMatching(/too many samples/) });
    // The same limit lets a small query through: one evaluation time, one minute of look-back.
    const fits = new URLSearchParams({ query: `count(${UTIL}{provider="pai-dlc-demo"})`, start: nowS(), end: nowS(), step: '15', lookback_delta: '1m' });
    const answered = await small.handle('query_range', fits, access);
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    // Series x evaluation times fit (one time), the stored points read do not: the read stops at the limit and the query is refused.
    const deep = new URLSearchParams({ query: `count(${UTIL})`, start: nowS(), end: nowS(), step: '15', lookback_delta: '1h' });
    const stopped = await small.handle('query_range', deep, access);
    expect(stopped.status).toBe(422);
    expect(stopped.body).toMatchObject({
      errorType: 'execution',
      error: expect.stringMatching(/x 1 evaluation times with at least \d+ stored points exceed the limit of 1000 samples/),
    });
    expect((await new PromApi({ store: rt.store }).handle('query_range', deep, access)).status).toBe(200);
    // The series limit: a query matching more series than it is refused before any point is read.
    const few = await new PromApi({ store: rt.store, maxSeries: 5 }).handle('query_range', params, access);
    expect(few.status).toBe(422);
    expect(few.body).toMatchObject({ errorType: 'execution', error: expect.stringMatching(/matches more than 5 series/) });
  });

  it('confines a project-scoped token to its projects', async () => {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ query: '{ jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { project { id name } } } } }' }),
    });
    const projectIds = new Map<string, string>(
      ((await res.json()) as any).data.jobs.edges.flatMap((e: any) => (e.node.project ? [[e.node.project.name, e.node.project.id]] : [])),
    );
    const query = new URLSearchParams({ query: `count by (project) (${UTIL})`, time: nowS() });
    const all = (await api('query', Object.fromEntries(query))).body.data.result.map((s: any) => s.metric.project as string);
    expect(all.length).toBeGreaterThan(1);
    const one = all.find((name: string) => projectIds.has(name))!;
    // What src/server/prom-api.ts passes for a token with `projects` (as the graph's job lists take it).
    const scoped = await new PromApi({ store: rt.store }).handle('query', query, { providerIds: rt.store.providers.ids(), projectIds: [projectIds.get(one)!] });
    expect(scoped.status).toBe(200);
    expect((scoped.body as any).data.result.map((s: any) => s.metric.project)).toEqual([one]);
  });

  it('gives up past the time limit with a timeout error', async () => {
    // The limit's clock moves a minute each time it is read: the query starts, then is past any limit below that.
    let t = 0;
    const slow = new PromApi({ store: rt.store, timeoutMs: 30_000, clock: () => (t += 60_000) });
    const access = { providerIds: rt.store.providers.ids(), projectIds: null };
    const params = new URLSearchParams({ query: UTIL, time: nowS() });
    const timedOut = await slow.handle('query', params, access);
    expect(timedOut.status).toBe(503);
    expect(timedOut.body).toMatchObject({ status: 'error', errorType: 'timeout', error: expect.stringMatching(/timed out/) });
    // A `timeout` parameter above the server's limit does not lift it; with room, the query answers.
    params.set('timeout', '10m');
    expect((await slow.handle('query', params, access)).status).toBe(503);
    const roomy = new PromApi({ store: rt.store, timeoutMs: 30_000, clock: () => (t += 1) });
    expect((await roomy.handle('query', params, access)).status).toBe(200);
    // A range query too (its time limit is read between evaluation steps as well).
    const range = new URLSearchParams({ query: `avg by (provider) (${UTIL})`, start: String((clock.now() - 600_000) / 1000), end: nowS(), step: '15' });
    expect((await slow.handle('query_range', range, access)).body).toMatchObject({ errorType: 'timeout' });
    expect((await roomy.handle('query_range', range, access)).status).toBe(200);
  });

  it('answers every query of the Grafana dashboard in docs/grafana', async () => {
    const dashboard = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../docs/grafana/fleet-dashboard.json'), 'utf8'));
    const jobs = await api('label/job_id/values', { 'match[]': [`${UTIL}{provider=~".*"}`] });
    const jobId = jobs.body.data.find((j: string) => j.startsWith('baseten-demo:'));
    expect(jobId).toBeDefined();
    const substitute = (expr: string) => expr.replaceAll('$provider', '.*').replaceAll('$job_id', jobId);
    const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
    expect(exprs.length).toBeGreaterThanOrEqual(9);
    for (const expr of exprs) {
      const { status, body } = await api(
        'query_range',
        { query: substitute(expr), start: String((clock.now() - 1_800_000) / 1000), end: nowS(), step: '60' },
        ADMIN,
        'POST',
      );
      expect(status, `${expr}: ${JSON.stringify(body)}`).toBe(200);
      if (!expr.includes('< 0.05') && !expr.includes('power')) expect(body.data.result.length, expr).toBeGreaterThan(0);
    }
    // Its variables, as Grafana reads them (label values with a match[]).
    for (const v of dashboard.templating.list) {
      const m = /^label_values\((.+), (\w+)\)$/.exec(v.definition)!;
      const { status, body } = await api(`label/${m[2]}/values`, { 'match[]': [substitute(m[1]!)] });
      expect(status).toBe(200);
      expect(body.data.length).toBeGreaterThan(0);
    }
  });
});
