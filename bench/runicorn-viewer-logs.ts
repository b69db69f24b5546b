// Viewer-mode log paging on a 150,000-line Runicorn log (issue 15's figure): the Runicorn viewer
// simulator serves a finished run's logs.txt over its WebSocket replay, and the adapter pages
// through it 500 lines at a time, as a client walking the whole log would. Prints the time per
// page (first page, median, p90, max), the pages, lines and reported gaps.
// `npx tsx bench/runicorn-viewer-logs.ts [lines]`
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunicornAdapter } from '../src/providers/runicorn/adapter.js';
import { createRun } from '../src/simulators/runicorn/storage-writer.js';
import { startRunicornViewer } from '../src/simulators/runicorn/viewer.js';

const LINES = Number(process.argv[2] ?? 150_000);
const PAGE = 500;
const CREATED = Date.UTC(2026, 10, 22, 8, 0, 0) / 1000;

const dir = mkdtempSync(join(tmpdir(), 'runicorn-bench-logs-'));
const run = createRun(dir, { path: 'bench/long', createdAt: CREATED, hostname: 'trainer', pid: 99_999_999, utcOffsetMinutes: 0 });
const text: string[] = [];
for (let i = 1; i <= LINES; i++)
  text.push(`${new Date((CREATED + 60 + i) * 1000).toISOString().slice(11, 19)} | step ${i} loss=${(2 / Math.sqrt(i)).toFixed(5)}`);
writeFileSync(join(run.dir, 'logs.txt'), `${text.join('\n')}\n`);
run.finish(CREATED + 60 + LINES);
const viewer = await startRunicornViewer({ storageDir: dir });
const adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 60 }, {});
const job = {
  externalId: run.id,
  projectExternalId: run.path,
  status: 'SUCCEEDED' as const,
  createdAt: new Date(CREATED * 1000),
  startedAt: null,
  finishedAt: null,
};

const times: number[] = [];
let after: string | null = null;
let lines = 0;
let gaps = 0;
let gapLines = 0;
for (;;) {
  const t0 = performance.now();
  const page = await adapter.fetchLogs!(job, { after, since: null, limit: PAGE }, new AbortController().signal);
  times.push(performance.now() - t0);
  lines += page.lines.length;
  for (const g of page.gaps ?? []) {
    gaps += 1;
    gapLines += g.lines;
  }
  if (page.lines.length === 0 || page.nextCursor === after) break;
  after = page.nextCursor;
}
await adapter.close?.();
await viewer.close();
rmSync(dir, { recursive: true, force: true });

const sorted = [...times].sort((a, b) => a - b);
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const ms = (v: number) => `${v.toFixed(1)} ms`;
console.log(
  `${LINES} lines, pages of ${PAGE}: ${times.length} pages, ${lines} lines read, ${gaps} gap(s) reported covering ${gapLines} lines; ` +
    `first page ${ms(times[0]!)}, median ${ms(at(0.5))}, p90 ${ms(at(0.9))}, max ${ms(sorted.at(-1)!)}; viewer log sockets opened: ${viewer.count('logs_ws')}`,
);
