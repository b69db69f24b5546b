// Viewer-mode log paging on a long log: a run whose logs.txt has LINES lines (default 150,000),
// served by the viewer simulator, read through the adapter in pages of PAGE lines: the first page,
// the next page, a page in the middle, the last page, and PARALLEL concurrent readers of one page.
// The viewer runs in its own process (as a real viewer does), so its replay does not share the
// event loop with the adapter. Prints one JSON line. Run: npx tsx bench/runicorn-logs.ts [lines] [page]
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { JobRef } from '../src/domain/types.js';
import { createRunicornAdapter } from '../src/providers/runicorn/adapter.js';
import { startRunicornViewer } from '../src/simulators/runicorn/viewer.js';
import { createRun } from '../src/simulators/runicorn/storage-writer.js';

if (process.argv[2] === '--viewer') {
  const sim = await startRunicornViewer({ storageDir: process.argv[3]! });
  process.on('message', (msg: string) => {
    if (msg === 'stats') process.send!({ sockets: sim.count('logs_ws'), open: sim.openLogSockets(), closes: sim.logSocketCloses() });
    else void sim.close().then(() => process.exit(0));
  });
  process.send!({ url: sim.url });
} else {
  await main();
}

async function main() {
  const LINES = Number(process.argv[2] ?? 150_000);
  const PAGE = Number(process.argv[3] ?? 500);
  const PARALLEL = 4;

  const dir = mkdtempSync(join(tmpdir(), 'runicorn-bench-'));
  const created = Date.UTC(2026, 10, 22, 8, 0, 0) / 1000;
  const run = createRun(dir, { path: 'bench/logs', alias: 'long-log', hostname: 'trainer-1', pid: 99_999_999, createdAt: created, utcOffsetMinutes: 60 });
  run.logMetrics({ loss: 1 }, { ts: created + 1 });
  // One line a second, "HH:MM:SS | text" in the writer's local clock, written in one go.
  const pad = (n: number) => String(n).padStart(2, '0');
  const lines: string[] = [];
  for (let i = 0; i < LINES; i++) {
    const d = new Date((created + 60 * 60 + i) * 1000);
    lines.push(`${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} | line ${i + 1} of the long log`);
  }
  writeFileSync(join(run.dir, 'logs.txt'), `${lines.join('\n')}\n`);
  run.finish(created + LINES + 2);

  const child = fork(fileURLToPath(import.meta.url), ['--viewer', dir], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const ask = <T>(msg?: string) =>
    new Promise<T>((resolve) => {
      child.once('message', (m) => resolve(m as T));
      if (msg) child.send(msg);
    });
  const { url } = await ask<{ url: string }>();
  const adapter = createRunicornAdapter({ id: 'bench', kind: 'RUNICORN', baseUrl: url, timeoutSeconds: 120 }, {});
  const job: JobRef = {
    externalId: run.id,
    projectExternalId: 'bench/logs',
    status: 'SUCCEEDED',
    createdAt: new Date(created * 1000),
    startedAt: null,
    finishedAt: new Date((created + LINES + 2) * 1000),
  };
  const signal = new AbortController().signal;

  async function page(after: string | null) {
    const t = performance.now();
    const res = await adapter.fetchLogs!(job, { after, since: null, limit: PAGE }, signal);
    return { ms: Math.round(performance.now() - t), lines: res.lines.length, next: res.nextCursor };
  }

  const out: Record<string, unknown> = { lines: LINES, page: PAGE };
  try {
    const first = await page(null);
    out.firstPageMs = first.ms;
    const second = await page(first.next);
    out.secondPageMs = second.ms;
    out.middlePageMs = (await page(String(Math.floor(LINES / 2)))).ms;
    const last = await page(String(LINES - PAGE));
    out.lastPageMs = last.ms;
    out.lastPageLines = last.lines;
    const t = performance.now();
    await Promise.all(Array.from({ length: PARALLEL }, () => page(String(Math.floor(LINES / 3)))));
    out[`parallel${PARALLEL}Ms`] = Math.round(performance.now() - t);
  } catch (err) {
    out.error = `${(err as { code?: string }).code ?? ''} ${(err as Error).message}`;
  } finally {
    await adapter.close?.();
    // The viewer sees a socket end once its TCP connection is gone, a moment after our close resolves.
    await new Promise((r) => setTimeout(r, 500));
    out.viewer = await ask('stats');
    child.send('close');
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}
