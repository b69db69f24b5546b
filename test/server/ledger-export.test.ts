// The ledger as CSV (GET /export/ledger.csv) over the embedded demo, whose example price table
// fills the columns: one row per job (or group) and a total row, the figures the graph answers,
// formula-like text neutralised as in the series export, bad parameters refused with a code.
import { parse as parseCsv } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { LEDGER_FIGURE_COLUMNS } from '../../src/server/ledger-export.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { postGraphql, startRuntimeOn } from '../support/runtime.js';

const HOSTILE = '=HYPERLINK("http://evil.example","x")';
const H = 3600_000;

describe('the ledger export', () => {
  let rt: Runtime;
  let db: TestDatabase;
  const window = { from: new Date(Date.now() - 7 * 24 * H).toISOString(), to: new Date().toISOString() };

  beforeAll(async () => {
    db = await createTestDatabase();
    // Job lists are not read again during the test: the renamed job keeps its hostile name.
    rt = await startRuntimeOn(db, null, { cachePolicy: { listTtlMs: 3600_000 } });
    const listed = await postGraphql(rt.url, '{ jobs(first: 500, filter: { kinds: [PRIMUS_LENS], statuses: [RUNNING] }) { edges { node { id } } } }');
    const id = listed.data.jobs.edges[0].node.id as string;
    await rt.database.db.execute(sql`update jobs set name = ${HOSTILE} where id = ${id}`);
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  const get = (params: Record<string, string>) => fetch(`${rt.url}/export/ledger.csv?${new URLSearchParams(params)}`);

  it("writes a row per job with the demo's prices, and the total the graph answers", async () => {
    const res = await get({ ...window, providers: 'primus-lens-demo' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await res.text();
    const rows = parseCsv(text, { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0]!)).toEqual(['job_id', 'job_name', 'provider', 'project', 'owner', 'gpu_type', ...LEDGER_FIGURE_COLUMNS]);
    const total = rows.at(-1)!;
    expect(total.job_id).toBe('total');
    const jobs = rows.slice(0, -1);
    expect(jobs.length).toBeGreaterThan(0);
    // The demo's example table prices Lens' MI300X at 2.80 USD an accelerator-hour.
    for (const r of jobs.filter((j) => /mi300x/i.test(j.gpu_type!))) {
      expect(r.currency).toBe('USD');
      expect(Number(r.cost)).toBeCloseTo(Number(r.held_gpu_hours) * 2.8, 5);
    }
    const graph = await postGraphql(
      rt.url,
      `query($from: DateTime!, $to: DateTime!) { fleet(from: $from, to: $to, filter: { providerIds: ["primus-lens-demo"] }) {
        utilization { total { wasteGpuHours cost { amount currency } } } jobs(first: 500) { job { id } wasteGpuHours } } }`,
      window,
    );
    expect(graph.errors).toBeUndefined();
    expect(total.cost === '' ? null : Number(total.cost)).toBe(graph.data.fleet.utilization.total.cost.amount);
    // Waste per job: held minus used, the graph's figure, most waste first (Fleet.jobs' order); and in total.
    for (const r of jobs) expect(Number(r.waste_gpu_hours)).toBeCloseTo(Number(r.held_gpu_hours) - Number(r.used_gpu_hours), 9);
    const listed = graph.data.fleet.jobs as { job: { id: string }; wasteGpuHours: number }[];
    expect(jobs.map((r) => r.job_id)).toEqual(listed.map((j) => j.job.id));
    for (const [i, r] of jobs.entries()) expect(Number(r.waste_gpu_hours)).toBeCloseTo(listed[i]!.wasteGpuHours, 9);
    expect(Number(total.waste_gpu_hours)).toBeCloseTo(graph.data.fleet.utilization.total.wasteGpuHours, 9);
    // The hostile name is text to a spreadsheet: quoted, after a single quote.
    expect(text).toContain(`"'${HOSTILE.replace(/"/g, '""')}"`);
    expect(jobs.find((j) => j.job_name === `'${HOSTILE}`)).toBeDefined();
  }, 120_000);

  it('writes a row per group', async () => {
    const res = await get({ ...window, group: 'provider' });
    expect(res.status).toBe(200);
    const rows = parseCsv(await res.text(), { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0]!)[0]).toBe('provider');
    expect(rows.map((r) => r.provider)).toContain('primus-lens-demo');
    expect(rows.at(-1)!.provider).toBe('total');
  }, 120_000);

  it('refuses bad parameters with a code, naming the argument', async () => {
    for (const [params, argument] of [
      [{ ...window, group: 'galaxy' }, 'group'],
      [{ to: window.to }, 'from'],
      [{ ...window, sort: 'x' }, 'sort'],
      [{ ...window, from: 'yesterday' }, 'from'],
    ] as [Record<string, string>, string][]) {
      const res = await get(params);
      expect(res.status, JSON.stringify(params)).toBe(400);
      const body = (await res.json()) as { errors: { extensions: { code: string; argument?: string } }[] };
      expect(body.errors[0]!.extensions).toMatchObject({ code: 'BAD_INPUT', argument });
    }
  });
});
