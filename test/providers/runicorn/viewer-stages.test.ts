// Viewer mode and stages (issue 38): the viewer merges a step's events and keeps the last stage, so
// a metric seen in rows of several stages had no stage at all. Where the rows show no merge (no row
// of the metric holds a metric only another stage logs), each value keeps its row's stage; where a
// merge shows, the stage stays unknown and says so.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRef } from '../../../src/domain/types.js';
import { createRunicornAdapter } from '../../../src/providers/runicorn/adapter.js';
import { createRun, type RunicornRunWriter } from '../../../src/simulators/runicorn/storage-writer.js';
import { startRunicornViewer, type RunicornViewerHandle } from '../../../src/simulators/runicorn/viewer.js';
import { signal } from './helpers.js';

const T0 = 1_795_000_000;
let dir: string;
let viewer: RunicornViewerHandle;
let phases: RunicornRunWriter;
let merged: RunicornRunWriter;
const all = { from: null, to: null, names: null };
const ref = (run: RunicornRunWriter): JobRef => ({
  externalId: run.id,
  projectExternalId: run.path,
  status: 'SUCCEEDED',
  createdAt: null,
  startedAt: null,
  finishedAt: null,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runicorn-stages-'));
  const spec = { hostname: 'trainer', pid: 99_999_999, utcOffsetMinutes: 0 };
  // Warm-up for steps 1-3, then training for 4-8: one event per step.
  phases = createRun(dir, { ...spec, path: 'stages/phases', createdAt: T0 });
  for (let i = 1; i <= 8; i++) phases.logMetrics({ loss: 1 / i }, { ts: T0 + i, stage: i <= 3 ? 'warmup' : 'train' });
  phases.finish(T0 + 9);
  // Training every step, evaluation at step 4 on the same step: the viewer merges them.
  merged = createRun(dir, { ...spec, path: 'stages/merged', createdAt: T0 + 1 });
  for (let i = 1; i <= 4; i++) merged.logMetrics({ loss: 1 / i }, { ts: T0 + i, step: i, stage: 'train' });
  merged.logMetrics({ val_acc: 0.7 }, { ts: T0 + 5, step: 4, stage: 'eval' });
  merged.finish(T0 + 6);
  viewer = await startRunicornViewer({ storageDir: dir });
});
afterAll(async () => {
  await viewer.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('viewer-mode stages', () => {
  it('phases told apart by the rows: each value keeps its stage', async () => {
    const adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url }, {});
    const series = await adapter.fetchTrainingMetrics!(ref(phases), all, signal());
    expect(series.map((s) => `${s.name}/${s.stage}`)).toEqual(['loss/train', 'loss/warmup']);
    expect(series.find((s) => s.stage === 'warmup')!.points.map((p) => p.step)).toEqual([1, 2, 3]);
    expect(series.find((s) => s.stage === 'train')!.points.map((p) => p.step)).toEqual([4, 5, 6, 7, 8]);
    expect(series[0]!.meta).toMatchObject({ stageExact: false, stageFrom: 'rows' });
  });

  it('a merged row (loss beside val_acc, which only eval logs): the stage stays unknown, said so', async () => {
    const adapter = createRunicornAdapter({ id: 'rc', kind: 'RUNICORN', baseUrl: viewer.url }, {});
    const series = await adapter.fetchTrainingMetrics!(ref(merged), all, signal());
    expect(series.map((s) => `${s.name}/${s.stage}`)).toEqual(['loss/null', 'val_acc/eval']);
    expect(series[0]!.meta).toMatchObject({ stage: null, stagesSeen: ['eval', 'train'] });
  });
});
