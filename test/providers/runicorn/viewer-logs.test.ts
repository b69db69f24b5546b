// Viewer-mode logs against the viewer simulator: one shared replay per run, pages answered from
// it, the 10,000-line replay cap reported as a gap, partial reads never passed off as complete,
// and every socket closed with a close frame (nothing left open on the viewer).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamError } from '../../../src/domain/errors.js';
import type { JobRef, LogPage } from '../../../src/domain/types.js';
import { createRunicornAdapter, type RunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { createRun, type RunicornRunWriter } from '../../../src/simulators/runicorn/storage-writer.js';
import { eventually } from '../../support/wait.js';
import { signal } from './helpers.js';

const CREATED = Date.UTC(2026, 10, 22, 8, 0, 0) / 1000;
let dir: string;
let viewer: RunicornViewerHandle;
let capped: RunicornRunWriter;
let long: RunicornRunWriter;
let running: RunicornRunWriter;

/** Line `i` (1-based) of a log that writes one line a second from an hour after CREATED (UTC clock). */
const lineText = (label: string, i: number) => `${new Date((CREATED + 3600 + i - 1) * 1000).toISOString().slice(11, 19)} | ${label} ${i}`;

function writeLines(run: RunicornRunWriter, n: number, label: string): void {
  const out: string[] = [];
  for (let i = 1; i <= n; i++) out.push(lineText(label, i));
  writeFileSync(join(run.dir, 'logs.txt'), `${out.join('\n')}\n`);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runicorn-logs-'));
  const spec = { hostname: 'trainer', pid: 99_999_999, utcOffsetMinutes: 0 };
  capped = createRun(dir, { ...spec, path: 'logs/capped', createdAt: CREATED });
  writeLines(capped, 10_050, 'line');
  capped.finish(CREATED + 3600 + 10_050);
  long = createRun(dir, { ...spec, path: 'logs/long', createdAt: CREATED + 1 });
  writeLines(long, 60_000, 'long');
  long.finish(CREATED + 3600 + 60_000);
  running = createRun(dir, { ...spec, path: 'logs/running', createdAt: CREATED + 2, pid: process.pid, hostname: 'elsewhere' });
  writeLines(running, 20, 'live');
  viewer = await startRunicornViewer({ storageDir: dir });
});
afterAll(async () => {
  await viewer.close();
  rmSync(dir, { recursive: true, force: true });
});

const job = (run: RunicornRunWriter, status: JobRef['status'] = 'SUCCEEDED', createdAt = CREATED): JobRef => ({
  externalId: run.id,
  projectExternalId: run.path,
  status,
  createdAt: new Date(createdAt * 1000),
  startedAt: null,
  finishedAt: null,
});
const fresh = (timeoutSeconds = 30): RunicornAdapter => createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds }, {});

describe('viewer-mode logs', () => {
  it("reports the line the viewer's 10,000-line replay cap dropped, keeps numbering, and closes the socket with a close frame", async () => {
    const adapter = fresh();
    viewer.resetStats();
    const closesBefore = viewer.logSocketCloses();
    const page = await adapter.fetchLogs!(job(capped), { after: '9998', since: null, limit: 5 }, signal());
    expect(page.lines.map((l) => [l.cursor, l.message])).toEqual([
      ['9999', lineText('line', 9999)],
      ['10000', lineText('line', 10_000)],
      ['10002', lineText('line', 10_002)],
      ['10003', lineText('line', 10_003)],
    ]);
    expect(page.gaps).toEqual([{ after: '10000', lines: 1, reason: expect.stringMatching(/10,000/) }]);
    expect(page.nextCursor).toBe('10003');
    expect(page.lines[0]!.timestamp).toEqual(new Date((CREATED + 3600 + 9998) * 1000));
    // The whole log came in one replay; every other page is answered from it.
    const last = await adapter.fetchLogs!(job(capped), { after: '10045', since: null, limit: 100 }, signal());
    expect(last.lines.map((l) => l.message)).toEqual([46, 47, 48, 49, 50].map((i) => lineText('line', 10_000 + i)));
    expect(last.gaps).toBeUndefined();
    const end = await adapter.fetchLogs!(job(capped), { after: last.nextCursor, since: null, limit: 100 }, signal());
    expect(end).toEqual({ lines: [], nextCursor: '10050' });
    expect(viewer.count('logs_ws')).toBe(1);
    // A finished run's replay is closed by us, with a close frame, once it went quiet.
    await eventually(() => viewer.openLogSockets() === 0, 10_000, 'the finished run socket to close');
    expect(viewer.logSocketCloses().withCloseFrame - closesBefore.withCloseFrame).toBe(1);
    expect(viewer.logSocketCloses().withoutCloseFrame).toBe(closesBefore.withoutCloseFrame);
    expect(adapter.openLogSockets()).toBe(0);
  });

  it('shares one replay between concurrent readers', async () => {
    const adapter = fresh();
    viewer.resetStats();
    const pages = await Promise.all(
      [0, 20_000, 40_000, 59_900].map((after) =>
        adapter.fetchLogs!(job(long, 'SUCCEEDED', CREATED + 1), { after: String(after), since: null, limit: 100 }, signal()),
      ),
    );
    expect(pages.map((p) => p.lines[0]!.message.split(' | ')[1])).toEqual(['long 1', 'long 20001', 'long 40001', 'long 59901']);
    expect(pages.map((p) => p.lines.length)).toEqual([100, 100, 100, 100]);
    expect(viewer.count('logs_ws')).toBe(1);
    await adapter.close!();
    await eventually(() => viewer.openLogSockets() === 0, 10_000, 'the viewer to see the sockets closed');
  });

  it('never answers a read the replay has not reached as complete: a coded time-out, and the replay goes on', async () => {
    const adapter = fresh(0.02);
    const read = () => adapter.fetchLogs!(job(long, 'SUCCEEDED', CREATED + 1), { after: '59000', since: null, limit: 500 }, signal());
    let page: LogPage | null = null;
    let timeouts = 0;
    // Each try either fails with UPSTREAM_TIMEOUT or returns lines past the cursor, never an empty page.
    page = await eventually(
      async () => {
        try {
          return await read();
        } catch (err) {
          expect(err).toBeInstanceOf(UpstreamError);
          expect(err).toMatchObject({ code: 'UPSTREAM_TIMEOUT', retryable: true });
          timeouts++;
          return false;
        }
      },
      30_000,
      'the replay to reach line 59,500',
    );
    expect(page.lines.length).toBeGreaterThan(0);
    expect(page.lines[0]!.cursor).toBe('59001');
    expect(Number(page.nextCursor)).toBeGreaterThan(59_000);
    expect(timeouts).toBeGreaterThan(0);
    await adapter.close!();
  }, 60_000);

  it("keeps a running run's socket open to tail it, and closes it with a close frame when the adapter closes", async () => {
    const adapter = fresh();
    viewer.resetStats();
    const closesBefore = viewer.logSocketCloses();
    const ref = job(running, 'RUNNING', CREATED + 2);
    const first = await adapter.fetchLogs!(ref, { after: null, since: null, limit: 100 }, signal());
    expect(first.lines).toHaveLength(20);
    running.logText('live 21', CREATED + 3600 + 20);
    const next = await eventually(
      async () => {
        const p = await adapter.fetchLogs!(ref, { after: first.nextCursor, since: null, limit: 100 }, signal());
        return p.lines.length > 0 && p;
      },
      10_000,
      'the appended line',
    );
    expect(next.lines.map((l) => [l.cursor, l.message])).toEqual([['21', lineText('live', 21)]]);
    expect(viewer.count('logs_ws')).toBe(1);
    expect(viewer.openLogSockets()).toBe(1);
    await adapter.close!();
    expect(adapter.openLogSockets()).toBe(0);
    await eventually(() => viewer.openLogSockets() === 0, 10_000, 'the viewer to see the socket closed');
    expect(viewer.logSocketCloses().withCloseFrame - closesBefore.withCloseFrame).toBe(1);
    expect(viewer.logSocketCloses().withoutCloseFrame).toBe(closesBefore.withoutCloseFrame);
  });

  it('a running run that writes several lines a second: a page reaching the end of its log is answered, not held until the time-out', async () => {
    const busy = createRun(dir, { hostname: 'elsewhere', pid: process.pid, utcOffsetMinutes: 0, path: 'logs/busy', createdAt: CREATED + 3 });
    writeLines(busy, 30, 'busy');
    let n = 30;
    // The writer appends a line every 100 ms for the whole test: the replay never meets a second of silence.
    const writer = setInterval(() => {
      n += 1;
      busy.logText(`busy ${n}`, CREATED + 3600 + n);
    }, 100);
    const adapter = fresh(5);
    try {
      const ref = job(busy, 'RUNNING', CREATED + 3);
      const first = await adapter.fetchLogs!(ref, { after: null, since: null, limit: 1000 }, signal());
      expect(first.lines.length).toBeGreaterThanOrEqual(30);
      expect(first.lines.slice(0, 30).map((l) => l.message)).toEqual(Array.from({ length: 30 }, (_, i) => lineText('busy', i + 1)));
      // The next page, at the end of the log, gets the lines written since, as the tail brings them.
      const next = await adapter.fetchLogs!(ref, { after: first.nextCursor, since: null, limit: 1000 }, signal());
      expect(Number(next.nextCursor ?? first.nextCursor)).toBeGreaterThanOrEqual(Number(first.nextCursor));
    } finally {
      clearInterval(writer);
      await adapter.close!();
    }
  }, 30_000);

  it("a deleted run's log is no longer served from memory: not found", async () => {
    const doomed = createRun(dir, { hostname: 'trainer', pid: 99_999_999, utcOffsetMinutes: 0, path: 'logs/doomed', createdAt: CREATED + 4 });
    writeLines(doomed, 10, 'doomed');
    doomed.finish(CREATED + 3600 + 10);
    const adapter = fresh();
    try {
      const ref = job(doomed, 'SUCCEEDED', CREATED + 4);
      const page = await adapter.fetchLogs!(ref, { after: null, since: null, limit: 100 }, signal());
      expect(page.lines).toHaveLength(10);
      await eventually(() => adapter.openLogSockets() === 0, 10_000, 'the finished replay to close');
      doomed.markDeleted(CREATED + 7200);
      await expect(adapter.fetchLogs!(ref, { after: null, since: null, limit: 100 }, signal())).rejects.toMatchObject({ code: 'UPSTREAM_NOT_FOUND' });
    } finally {
      await adapter.close!();
    }
  });
});
