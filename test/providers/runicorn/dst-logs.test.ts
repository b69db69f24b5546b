// Log-line instants across daylight-saving changes: runs written in Europe/Berlin (a fall-back and
// a spring-forward) and America/Santiago (whose change crosses local midnight), read in storage
// mode and through the viewer simulator. Every line gets its true instant where the run's end
// bounds the readings, and null (uncertain) where the zone change cannot be told.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRef } from '../../../src/domain/types.js';
import { createRunicornAdapter, type RunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { createRun, type RunicornRunWriter } from '../../../src/simulators/runicorn/storage-writer.js';
import { signal } from './helpers.js';

let dir: string;
let viewer: RunicornViewerHandle;
let storageMode: RunicornAdapter;
let viewerMode: RunicornAdapter;

interface DstRun {
  run: RunicornRunWriter;
  created: number;
  /** The true instants of the lines, epoch seconds. */
  instants: number[];
  end: number;
}
const runs: Record<string, DstRun> = {};

/** A run that logs a line every `everySec` from `fromUtc` for `count` lines, in `timeZone`. */
function dstRun(name: string, timeZone: string, fromUtc: number, everySec: number, count: number): DstRun {
  const created = fromUtc / 1000 - 60;
  const run = createRun(dir, { path: `dst/${name}`, alias: name, hostname: 'trainer', pid: 99_999_999, createdAt: created, timeZone });
  const instants = Array.from({ length: count }, (_, i) => fromUtc / 1000 + i * everySec);
  run.logMetrics({ loss: 1 }, { ts: created + 1 });
  for (const [i, t] of instants.entries()) run.logText(`line ${i + 1}`, t);
  const end = instants.at(-1)! + 5;
  run.finish(end);
  return { run, created, instants, end };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runicorn-dst-'));
  // Berlin falls back at 01:00 UTC on 2026-10-25 (03:00 CEST -> 02:00 CET): the clock repeats 02:00-03:00.
  runs.fallBack = dstRun('fall-back', 'Europe/Berlin', Date.UTC(2026, 9, 24, 23, 30), 600, 18);
  // Berlin springs forward at 01:00 UTC on 2026-03-29 (02:00 CET -> 03:00 CEST): the clock skips an hour.
  runs.springForward = dstRun('spring-forward', 'Europe/Berlin', Date.UTC(2026, 2, 29, 0, 0), 600, 12);
  // Santiago springs forward at local midnight on 2026-09-06 (00:00 -> 01:00, 04:00 UTC): the clock
  // jumps from 23:5x to 01:0x, which a fixed offset reads as the same night an hour on.
  runs.midnight = dstRun('midnight', 'America/Santiago', Date.UTC(2026, 8, 6, 3, 0), 600, 12);
  viewer = await startRunicornViewer({ storageDir: dir });
  storageMode = createRunicornAdapter({ id: 'rc-s', kind: 'RUNICORN', storageDir: dir }, {});
  viewerMode = createRunicornAdapter({ id: 'rc-v', kind: 'RUNICORN', baseUrl: viewer.url, timeoutSeconds: 30 }, {});
});
afterAll(async () => {
  await viewerMode.close!();
  await viewer.close();
  rmSync(dir, { recursive: true, force: true });
});

const ref = (r: DstRun, finished: boolean): JobRef => ({
  externalId: r.run.id,
  projectExternalId: r.run.path,
  status: finished ? 'SUCCEEDED' : 'RUNNING',
  createdAt: new Date(r.created * 1000),
  startedAt: null,
  finishedAt: finished ? new Date(r.end * 1000) : null,
});
const all = { after: null, since: null, limit: 1000 };

describe.each([
  ['storage mode', () => storageMode],
  ['viewer mode', () => viewerMode],
])('log instants across a daylight-saving change (%s)', (_mode, adapter) => {
  it.each(['fallBack', 'springForward', 'midnight'])('%s: every line at its true instant when the run has ended', async (name) => {
    const r = runs[name]!;
    const page = await adapter().fetchLogs!(ref(r, true), all, signal());
    expect(page.lines.map((l) => l.message.split(' | ')[1])).toEqual(r.instants.map((_, i) => `line ${i + 1}`));
    expect(page.lines.map((l) => l.timestamp?.toISOString())).toEqual(r.instants.map((t) => new Date(t * 1000).toISOString()));
  });

  it('marks lines after a spring-forward uncertain (null) while nothing bounds the run yet', async () => {
    const r = runs.springForward!;
    const page = await adapter().fetchLogs!(ref(r, false), all, signal());
    const changeAt = Date.UTC(2026, 2, 29, 1, 0) / 1000;
    // Before the change every reading agrees; after it a fixed +01:00 writer and a Berlin writer
    // would have written the same clock an hour apart, and nothing here tells them apart.
    page.lines.forEach((line, i) => {
      if (r.instants[i]! < changeAt) expect(line.timestamp).toEqual(new Date(r.instants[i]! * 1000));
      else expect(line.timestamp).toBeNull();
    });
    expect(page.lines.filter((l) => l.timestamp === null).length).toBeGreaterThan(0);
  });
});
