// Storage mode on folders written the SDK's way: incremental events reading with a torn last
// line, soft-deleted runs, crashed-run status, the legacy layout, progress.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobRef } from '../../../src/domain/types.js';
import { createRunicornAdapter, type RunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { type MetricTable, StepTableBuilder } from '../../../src/providers/runicorn/events.js';
import { DEAD_PID } from '../../../src/simulators/runicorn/fleet.js';
import { createLegacyRun, createRun } from '../../../src/simulators/runicorn/storage-writer.js';
import { signal } from './helpers.js';

let root: string;
let adapter: RunicornAdapter;
const T0 = 1_795_000_000; // epoch seconds

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'runicorn-storage-'));
  adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', storageDir: root }, {});
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const ref = (externalId: string): JobRef => ({ externalId, projectExternalId: 'p', status: 'RUNNING', createdAt: null, startedAt: null, finishedAt: null });
const all = { from: null, to: null, names: null };
const spec = (over: Partial<Parameters<typeof createRun>[1]> = {}) => ({
  path: 'exp/a',
  hostname: 'elsewhere',
  pid: 1234,
  createdAt: T0,
  utcOffsetMinutes: 0,
  ...over,
});

describe('a run still being written', () => {
  it('reads a torn last line without error, then only the appended bytes', async () => {
    const run = createRun(root, spec());
    for (let i = 1; i <= 3; i++) run.logMetrics({ loss: 1 / i }, { ts: T0 + i, stage: 'train' });
    const events = join(run.dir, 'events.jsonl');
    const line4 = `{"ts": ${T0 + 4}, "type": "metrics", "data": {"loss": 0.25, "global_step": 4, "time": ${T0 + 4}, "stage": "train"}}\n`;
    appendFileSync(events, line4.slice(0, 40)); // the writer is mid-line
    const sizeBefore = statSync(events).size;

    const first = await adapter.fetchTrainingMetrics!(ref(run.id), all, signal());
    expect(first[0]!.points.map((p) => p.step)).toEqual([1, 2, 3]);
    expect(adapter.eventBytesRead()).toBe(sizeBefore);

    appendFileSync(events, line4.slice(40));
    run.logMetrics({ loss: 0.2 }, { ts: T0 + 5, step: 5, stage: 'train' });
    const appended = statSync(events).size - sizeBefore;

    const second = await adapter.fetchTrainingMetrics!(ref(run.id), all, signal());
    expect(second[0]!.points.map((p) => [p.step, p.value])).toEqual([
      [1, 1],
      [2, 0.5],
      [3, 1 / 3],
      [4, 0.25],
      [5, 0.2],
    ]);
    // Only the new bytes were read: the offset advanced instead of starting over.
    expect(adapter.eventBytesRead()).toBe(sizeBefore + appended);

    const third = await adapter.fetchTrainingMetrics!(ref(run.id), all, signal());
    expect(third).toEqual(second);
    expect(adapter.eventBytesRead()).toBe(sizeBefore + appended);
  });

  it('keeps each value in the stage of its own event at a shared step; NaN/Inf become gaps; strings and objects are not metrics', async () => {
    const run = createRun(root, spec());
    run.logMetrics({ loss: 0.5, note: 'text', nested: { a: 1 } }, { ts: T0 + 1, stage: 'train' });
    run.logMetrics({ acc: 0.9 }, { ts: T0 + 1.5, step: 1, stage: 'eval' });
    run.logMetrics({ loss: Number.NaN, acc: Number.POSITIVE_INFINITY }, { ts: T0 + 2, stage: 'train' });
    expect(readFileSync(join(run.dir, 'events.jsonl'), 'utf8')).toContain('"loss": NaN, "acc": Infinity');
    const series = await adapter.fetchTrainingMetrics!(ref(run.id), all, signal());
    expect(series.map((s) => [s.name, s.stage, s.points.map((p) => [p.step, p.value, p.timestamp?.getTime()])])).toEqual([
      ['acc', 'eval', [[1, 0.9, (T0 + 1.5) * 1000]]],
      ['loss', 'train', [[1, 0.5, (T0 + 1) * 1000]]],
    ]);
  });

  it("asked from a time onwards (a collector's sweep since its newest stored point), gives the points logged since and any without a time", async () => {
    expect(adapter.capabilities.trainingSince).toBe(true);
    const run = createRun(root, spec());
    for (let i = 1; i <= 6; i++) run.logMetrics({ loss: 1 / i }, { ts: T0 + 60 * i, stage: 'train' });
    // An event with neither a `time` nor a `ts`: it cannot be placed in time.
    appendFileSync(join(run.dir, 'events.jsonl'), '{"type": "metrics", "data": {"loss": 0.1, "global_step": 7, "stage": "train"}}\n');
    const steps = async (request: { from: Date | null; to: Date | null; names: null }) =>
      (await adapter.fetchTrainingMetrics!(ref(run.id), request, signal())).flatMap((s) => s.points.map((p) => p.step));
    const from = new Date((T0 + 240) * 1000);
    expect(await steps(all)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await steps({ from, to: null, names: null })).toEqual([4, 5, 6, 7]);
    // A closed window has no place for it.
    expect(await steps({ from, to: new Date((T0 + 300) * 1000), names: null })).toEqual([4, 5]);
  });

  it('followed sweep by sweep, answers as the whole file read at once: a step written again, a metric that appears later, a step out of order', async () => {
    // The table of a running run is kept between reads and only the steps written since are made
    // again (src/providers/runicorn/events.ts): each change that could leave a kept row stale.
    const run = createRun(root, spec());
    run.summary({ total_steps: 100 });
    const batches: (() => void)[] = [
      () => {
        for (let i = 1; i <= 20; i++) run.logMetrics({ loss: 1 / i }, { ts: T0 + i * 2, stage: 'train' });
      },
      // Step 20 again (later values win), then new steps.
      () => {
        run.logMetrics({ loss: 0.5 }, { ts: T0 + 41, step: 20, stage: 'train' });
        for (let i = 21; i <= 30; i++) run.logMetrics({ loss: 1 / i }, { ts: T0 + i * 2, stage: 'train' });
      },
      // A metric no row had: every row gains its column.
      () => {
        for (let i = 31; i <= 40; i++) run.logMetrics({ loss: 1 / i, val_acc: i / 100 }, { ts: T0 + i * 2, stage: 'eval' });
      },
      // A step before the last one, not seen before.
      () => {
        run.logMetrics({ loss: 0.9 }, { ts: T0 + 90, step: 0, stage: 'train' });
        run.logMetrics({ loss: 0.1 }, { ts: T0 + 92, step: 41, stage: 'train' });
      },
    ];
    const followed: unknown[] = [];
    for (const write of batches) {
      write();
      followed.push(await adapter.fetchTrainingMetrics!(ref(run.id), all, signal()), await adapter.fetchProgress!(ref(run.id), signal()));
    }
    const atOnce = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', storageDir: root }, {});
    expect(followed.slice(-2)).toEqual([await atOnce.fetchTrainingMetrics!(ref(run.id), all, signal()), await atOnce.fetchProgress!(ref(run.id), signal())]);
    expect((followed.at(-1) as { iteration: number }).iteration).toBe(41);
    // The step table itself (the viewer's shape: every row has every column), batch by batch as
    // written above, against a table of the same lines read at once; a table given earlier stays as it was.
    const lines = readFileSync(join(run.dir, 'events.jsonl'), 'utf8').trim().split('\n');
    const kept = new StepTableBuilder();
    const given: { table: MetricTable; copy: string }[] = [];
    let at = 0;
    for (const cut of [20, 31, 41, lines.length]) {
      for (; at < cut; at++) kept.applyLine(lines[at]!);
      const table = kept.table();
      const atOnceTable = new StepTableBuilder();
      for (const line of lines.slice(0, cut)) atOnceTable.applyLine(line);
      expect([table.columns, table.rows], `after ${cut} lines`).toEqual([atOnceTable.table().columns, atOnceTable.table().rows]);
      given.push({ table, copy: JSON.stringify([table.columns, table.rows]) });
    }
    expect(given.at(-1)!.table.rows.map((r) => r.global_step)).toEqual([0, ...Array.from({ length: 41 }, (_, i) => i + 1)]);
    for (const { table, copy } of given) expect(JSON.stringify([table.columns, table.rows])).toBe(copy);
  });

  it('reports progress: last step, steps per second, target from the summary', async () => {
    const run = createRun(root, spec());
    run.summary({ total_steps: 1000 });
    for (let i = 1; i <= 30; i++) run.logMetrics({ loss: 1 / i }, { ts: T0 + i * 2 });
    expect(await adapter.fetchProgress!(ref(run.id), signal())).toEqual({
      iteration: 30,
      targetIteration: 1000,
      rate: 0.5,
      updatedAt: new Date((T0 + 60) * 1000),
    });
  });

  it('pages log lines by line number, leaves a half-written line, and filters by time', async () => {
    const run = createRun(root, spec());
    for (let i = 0; i < 5; i++) run.logText(`line ${i}`, T0 + i * 60);
    appendFileSync(join(run.dir, 'logs.txt'), '\n00:00:00 | partial');
    const job = { ...ref(run.id), createdAt: new Date(T0 * 1000) };
    const page = await adapter.fetchLogs!(job, { after: null, since: null, limit: 3 }, signal());
    expect(page.lines.map((l) => [l.cursor, l.message])).toEqual([
      ['1', `${clock(T0)} | line 0`],
      ['2', `${clock(T0 + 60)} | line 1`],
      ['3', `${clock(T0 + 120)} | line 2`],
    ]);
    expect(page.lines[1]!.timestamp).toEqual(new Date((T0 + 60) * 1000));
    const next = await adapter.fetchLogs!(job, { after: page.nextCursor, since: null, limit: 10 }, signal());
    expect(next.lines.map((l) => l.cursor)).toEqual(['4', '5']);
    const since = await adapter.fetchLogs!(job, { after: null, since: new Date((T0 + 180) * 1000), limit: 10 }, signal());
    expect(since.lines.map((l) => l.message)).toEqual([`${clock(T0 + 180)} | line 3`, `${clock(T0 + 240)} | line 4`]);
  });
});

const clock = (s: number) => new Date(s * 1000).toISOString().slice(11, 19);

describe('what the folder says about runs', () => {
  it('hides soft-deleted runs', async () => {
    const kept = createRun(root, spec({ createdAt: T0 }));
    const gone = createRun(root, spec({ createdAt: T0 + 10 }));
    gone.markDeleted(T0 + 20);
    expect((await adapter.listJobs(null, signal())).jobs.map((j) => j.externalId)).toEqual([kept.id]);
    expect(await adapter.getJob({ externalId: gone.id, projectExternalId: 'exp/a' }, signal())).toBeNull();
  });

  it('reads a running run of this host whose pid is gone as FAILED, without writing to the folder', async () => {
    const crashed = createRun(root, spec({ hostname: hostname(), pid: DEAD_PID, createdAt: T0 }));
    const remote = createRun(root, spec({ hostname: 'other-machine', pid: DEAD_PID, createdAt: T0 + 1 }));
    const alive = createRun(root, spec({ hostname: hostname(), pid: process.pid, createdAt: T0 + 2 }));
    const jobs = new Map((await adapter.listJobs(null, signal())).jobs.map((j) => [j.externalId, j]));
    expect(jobs.get(crashed.id)).toMatchObject({ status: 'FAILED', rawStatus: 'failed' });
    expect(jobs.get(remote.id)).toMatchObject({ status: 'RUNNING', rawStatus: 'running', finishedAt: null });
    expect(jobs.get(alive.id)).toMatchObject({ status: 'RUNNING' });
    expect(JSON.parse(readFileSync(join(crashed.dir, 'status.json'), 'utf8')).status).toBe('running');
  });

  it('maps finished, failed, interrupted and unknown statuses', async () => {
    const statuses = ['finished', 'failed', 'interrupted', 'paused'];
    const runs = statuses.map((s, i) => {
      const r = createRun(root, spec({ createdAt: T0 + i }));
      r.finish(T0 + 100, s);
      return r;
    });
    const jobs = new Map((await adapter.listJobs(null, signal())).jobs.map((j) => [j.externalId, j]));
    expect(runs.map((r) => [jobs.get(r.id)!.status, jobs.get(r.id)!.rawStatus])).toEqual([
      ['SUCCEEDED', 'finished'],
      ['FAILED', 'failed'],
      ['STOPPED', 'interrupted'],
      ['UNKNOWN', 'paused'],
    ]);
    expect(jobs.get(runs[0]!.id)!.finishedAt).toEqual(new Date((T0 + 100) * 1000));
  });

  it('reads legacy-layout runs (<project>/<name>/runs/<id>) with path project/name', async () => {
    const legacy = createLegacyRun(root, 'oldproj', 'exp1', { hostname: 'h', pid: 1, createdAt: T0, utcOffsetMinutes: 0, alias: 'legacy' });
    legacy.logMetrics({ loss: 1 }, { ts: T0 + 1 });
    legacy.finish(T0 + 2);
    const current = createRun(root, spec({ path: '', createdAt: T0 + 5 }));
    const jobs = (await adapter.listJobs(null, signal())).jobs;
    expect(jobs.find((j) => j.externalId === legacy.id)).toMatchObject({ projectExternalId: 'oldproj/exp1', name: 'legacy', status: 'SUCCEEDED' });
    // A run directly under runs/ has no path: the root project.
    expect(jobs.find((j) => j.externalId === current.id)).toMatchObject({ projectExternalId: '/' });
    const series = await adapter.fetchTrainingMetrics!(ref(legacy.id), all, signal());
    expect(series.map((s) => [s.name, s.stage, s.points.length])).toEqual([['loss', null, 1]]);
  });

  it('reports no system metrics, completely', async () => {
    expect(adapter.capabilities.systemMetrics).toEqual([]);
    const from = new Date(0);
    const to = new Date(1000);
    expect(await adapter.fetchSystemMetrics(ref('x'), { from, to, metrics: ['GPU_UTILIZATION'], stepSeconds: 60 }, signal())).toEqual({
      series: [],
      covered: ['GPU_UTILIZATION'],
      from,
      to,
    });
  });

  it('fails with UPSTREAM_UNAVAILABLE when the folder does not exist', async () => {
    const missing = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', storageDir: join(root, 'nope') }, {});
    await expect(missing.listJobs(null, signal())).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });
});

describe('logs asked with since', () => {
  it('a run of 600 lines asked for 200 lines of the last minute gets the last minute, not nothing: lines before `since` are skipped, not counted', async () => {
    const run = createRun(root, spec({ createdAt: T0 }));
    for (let i = 1; i <= 600; i++) run.logText(`line ${i}`, T0 + i);
    const since = new Date((T0 + 541) * 1000);
    const job = { ...ref(run.id), createdAt: new Date(T0 * 1000) };
    const page = await adapter.fetchLogs!(job, { after: null, since, limit: 200 }, signal());
    expect(page.lines.map((l) => l.message.split(' | ')[1])).toEqual(Array.from({ length: 60 }, (_, i) => `line ${541 + i}`));
    expect(page.lines[0]!.timestamp).toEqual(since);
    expect(page.nextCursor).toBe('600');
    const capped = await adapter.fetchLogs!(job, { after: null, since, limit: 10 }, signal());
    expect(capped.lines.map((l) => l.message.split(' | ')[1])).toEqual(Array.from({ length: 10 }, (_, i) => `line ${541 + i}`));
    expect(capped.nextCursor).toBe('550');
  });
});
