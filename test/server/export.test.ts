// Series exports for notebooks, read back as pandas would: CSV through a real CSV parser and JSON
// Lines, equal to the GraphQL field with the same arguments; gzip; the field's checks and codes;
// the token's scope; a client that goes away mid-stream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { readSeriesCsv } from './series-csv.js';

const ADMIN = 'admin-token-0123456789abcdef';
const LENS_ONLY = 'lens-token-0123456789abcdef';
const auth = (token: string) => ({ authorization: `Bearer ${token}` });

describe('series exports', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let baseten: string;
  let runicorn: string;
  const get = (path: string, headers: Record<string, string> = auth(ADMIN), signal?: AbortSignal) => fetch(`${rt.url}${path}`, { headers, signal });
  const gql = async (query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth(ADMIN) },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data: any; errors?: unknown };
    expect(body.errors).toBeUndefined();
    return body.data;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, null, {
      config: {
        security: loadSecurityConfig({
          API_TOKENS: JSON.stringify([
            { name: 'admin', token: ADMIN },
            { name: 'lens', token: LENS_ONLY, providers: ['primus-lens-demo'] },
          ]),
        }),
      },
    });
    const jobs = (await gql(`{ jobs(first: 500) { edges { node { id name status provider { kind } } } } }`, {})).jobs.edges.map((e: any) => e.node);
    baseten = jobs.find((j: any) => j.provider.kind === 'BASETEN' && j.status === 'RUNNING').id;
    runicorn = jobs.find((j: any) => j.provider.kind === 'RUNICORN' && j.name === 'baseline').id;
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  const path = (jobId: string, file: string, query: string) => `/export/jobs/${encodeURIComponent(jobId)}/${file}?${query}`;

  it("gives a job's system series as CSV, row for row the points Job.metrics answers", async () => {
    const res = await get(path(baseten, 'metrics.csv', 'names=GPU_UTILIZATION,GPU_MEMORY_USED&scope=GPU&maxPoints=50'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/csv');
    const text = await res.text();
    // The series table (comment lines, CSV after "# "), then one short row per point naming its series.
    const { table, rows } = readSeriesCsv(text);
    expect(Object.keys(rows[0]!)).toEqual(['series', 'timestamp', 'step', 'value']);
    const graph = (
      await gql(
        `query($id: ID!) { job(id: $id) { metrics(names: [GPU_UTILIZATION, GPU_MEMORY_USED], scope: GPU, maxPoints: 50) { id name unit node { name } gpu { index } points { timestamp value } } } }`,
        {
          id: baseten,
        },
      )
    ).job.metrics;
    expect(table.length).toBe(graph.length);
    expect(rows.length).toBe(graph.reduce((n: number, s: any) => n + s.points.length, 0));
    expect(rows.length).toBeGreaterThan(0);
    for (const s of graph) {
      const entry = table.find((t) => t.series_id === s.id)!;
      expect(entry).toMatchObject({ job_id: baseten, metric: s.name, unit: s.unit, scope: 'GPU', node: s.node.name, gpu: String(s.gpu.index) });
      const mine = rows.filter((r) => r.series === entry.series);
      expect(mine.map((r) => [r.timestamp, r.value === '' ? null : Number(r.value)])).toEqual(s.points.map((p: any) => [p.timestamp, p.value]));
    }
    // A row holds a key, a time, a step and a value: no series id (about 230 characters) repeated on each.
    const pointLines = text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .slice(1);
    expect(Math.max(...pointLines.map((l) => l.length))).toBeLessThan(60);
  });

  it('gives training metrics as JSON Lines, gzip-compressed when asked', async () => {
    const res = await get(path(runicorn, 'training-metrics.jsonl', 'names=loss&maxPoints=500'), { ...auth(ADMIN), 'accept-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const graph = (
      await gql(`query($id: ID!) { job(id: $id) { trainingMetrics(names: ["loss"], maxPoints: 500) { id points { step value } } } }`, { id: runicorn })
    ).job.trainingMetrics;
    expect(lines.map((l) => [l.series_id, l.step, l.value])).toEqual(graph.flatMap((s: any) => s.points.map((p: any) => [s.id, p.step, p.value])));
    expect(lines[0]).toMatchObject({ job_id: runicorn, metric: 'loss', unit: 'NONE' });
  });

  it('refuses what the field refuses, with its code and status', async () => {
    const refusal = async (p: string, headers?: Record<string, string>) => {
      const res = await get(p, headers);
      const body = (await res.json()) as { errors: { extensions: { code: string; argument?: string } }[] };
      return [res.status, body.errors[0]!.extensions.code, body.errors[0]!.extensions.argument];
    };
    expect(await refusal(path(baseten, 'metrics.csv', 'maxPoints=0'))).toEqual([400, 'BAD_INPUT', 'maxPoints']);
    expect(await refusal(path(baseten, 'metrics.csv', 'color=blue'))).toEqual([400, 'BAD_INPUT', 'color']);
    // Above the field's cap: the field's own message, not the operation's cost estimate.
    expect(await refusal(path(baseten, 'metrics.csv', 'maxPoints=10001'))).toEqual([400, 'BAD_INPUT', 'maxPoints']);
    // Values the argument's type does not take, named as the argument (GraphQL reports them against a variable).
    expect(await refusal(path(baseten, 'metrics.csv', 'names=NOT_A_METRIC'))).toEqual([400, 'BAD_INPUT', 'names']);
    expect(await refusal(path(baseten, 'metrics.jsonl', 'scope=PLANET'))).toEqual([400, 'BAD_INPUT', 'scope']);
    expect(await refusal(path(runicorn, 'training-metrics.csv', 'aggregation=MEDIAN'))).toEqual([400, 'BAD_INPUT', 'aggregation']);
    expect(await refusal(path(baseten, 'metrics.csv', 'from=yesterday'))).toEqual([400, 'BAD_INPUT', 'from']);
    expect(await refusal(path(baseten, 'metrics.csv', 'from=2025-01-01T00:00:00Z&to=2026-11-20T00:00:00Z'))).toEqual([400, 'BAD_INPUT', 'to']);
    expect(await refusal(path(baseten, 'metrics.csv', 'from=2026-11-20T00:00:00Z&to=2026-11-19T00:00:00Z'))).toEqual([400, 'BAD_INPUT', 'from']);
    expect((await refusal(path('baseten-demo:job:no-such-job', 'metrics.csv', '')))[0]).toBe(404);
    // The token's scope: no token, and a job outside it (the same answer as an unknown job).
    const anonymous = await get(path(baseten, 'metrics.csv', ''), {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect((await refusal(path(baseten, 'metrics.csv', ''), auth(LENS_ONLY)))[0]).toBe(404);
  });

  it('stops when the client goes away mid-stream, and serves the next one', async () => {
    const abort = new AbortController();
    const res = await get(path(baseten, 'metrics.csv', 'names=GPU_UTILIZATION,GPU_MEMORY_USED&scope=GPU&maxPoints=1000'), auth(ADMIN), abort.signal);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.read().catch(() => {});
    const next = await get(path(baseten, 'metrics.jsonl', 'names=GPU_UTILIZATION&maxPoints=10'));
    expect(next.status).toBe(200);
    expect((await next.text()).trim().split('\n').length).toBeGreaterThan(0);
  });
});
