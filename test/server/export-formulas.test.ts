// CSV formula injection (issue 44, item 8): a metric named like a formula is written so a
// spreadsheet shows it as text (OWASP: a leading single quote, the cell quoted), while negative
// numbers in the value and step columns stay numbers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import { createRun } from '../../src/simulators/runicorn/storage-writer.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startRuntimeOn } from '../support/runtime.js';
import { readSeriesCsv } from './series-csv.js';

const HOSTILE = ['=1+2', "+cmd|' /C calc'!A0", '@SUM(1,1)', '-2+3', '\tTAB'];

describe('CSV exports neutralise formulas', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let jobId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The job list is read again on every request, so the run written below is listed.
    rt = await startRuntimeOn(db, null, { cachePolicy: { listTtlMs: 0 } });
    const storageDir = (rt.demo.find((d) => d.config.kind === 'RUNICORN')!.config as { storageDir: string }).storageDir;
    const createdAt = Date.now() / 1000 - 3600;
    const run = createRun(storageDir, { path: 'hostile/names', alias: 'formulas', hostname: 'sim', pid: 4999, createdAt });
    for (let step = 1; step <= 3; step++)
      run.logMetrics(Object.fromEntries(HOSTILE.map((name, i) => [name, -1.5 * step - i])), { ts: createdAt + step, step: -step });
    run.finish(createdAt + 10);
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ jobs(first: 500, filter: { nameContains: "formulas" }) { edges { node { id name } } } }' }),
    });
    jobId = ((await res.json()) as any).data.jobs.edges[0].node.id;
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await db?.drop();
  });

  it('prefixes formula-like text with a quote and quotes the cell; numbers stay numbers', async () => {
    const res = await fetch(`${rt.url}/export/jobs/${encodeURIComponent(jobId)}/training-metrics.csv`);
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const name of HOSTILE) expect(text).toContain(`"'${name.replace(/"/g, '""')}"`);
    // No cell of any line (series table after its "# " included) starts with a formula character outside quotes.
    for (const line of text.trim().split('\n').slice(1))
      expect(
        line
          .replace(/^# /, '')
          .split(',')
          .filter((cell) => /^[=+@\t\r]/.test(cell)),
      ).toEqual([]);
    // The metric names live in the series table (comment lines, CSV after "# "); the points name their series.
    const { table, rows } = readSeriesCsv(text);
    expect(new Set(table.map((t) => t.metric))).toEqual(new Set(HOSTILE.map((n) => `'${n}`)));
    expect(new Set(rows.map((r) => r.series))).toEqual(new Set(table.map((t) => t.series)));
    for (const r of rows) {
      expect(Number(r.value)).toBeLessThan(0);
      expect(r.value).toMatch(/^-\d/);
    }
    expect(rows.some((r) => r.step?.startsWith('-'))).toBe(true);
  });
});
