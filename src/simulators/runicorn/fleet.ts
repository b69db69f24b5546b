// A deterministic demo storage folder: finished, failed, crashed, interrupted, legacy-layout and
// soft-deleted runs, plus one running run that `advance(now)` keeps writing as time passes.
import { startOfUtcDay, hashSeed, seededRandom } from '../kit.js';
import { createLegacyRun, createRun, type RunicornRunWriter } from './storage-writer.js';

/** Above Linux's pid_max (2^22) and macOS's 99999, so no live process ever has it. */
export const DEAD_PID = 99_999_999;

export interface FleetRun {
  id: string;
  path: string;
  alias: string;
  /** What the viewer reports once it has looked at the run. */
  expectedStatus: 'running' | 'finished' | 'failed' | 'interrupted';
  deleted: boolean;
  legacy: boolean;
  /** Steps written so far (the running run grows). */
  steps: number;
}

export interface RunicornFleet {
  storageDir: string;
  runs: FleetRun[];
  /** Appends the running run's steps (and log lines) up to `nowMs`; returns how many were added. */
  advance(nowMs: number): number;
}

export interface FleetOptions {
  storageDir: string;
  /** The viewer host's name; the running and crashed runs are written "on" it. */
  hostname: string;
  /** The pid the running run claims; alive for as long as the demo runs. */
  livePid: number;
  nowMs: number;
  anchorMs?: number;
  utcOffsetMinutes?: number;
}

export const LIVE_TARGET_STEPS = 100_000;
export const LIVE_STEP_SECONDS = 2;

function lossAt(seed: number, step: number): number {
  const noise = seededRandom(seed ^ step)() * 0.04 - 0.02;
  return Math.round((2.3 * Math.exp(-step / 300) + 0.15 + noise) * 1e5) / 1e5;
}

/** Writes `steps` training steps at a fixed cadence; eval rows share every 50th step, like the fixture. */
function writeSteps(run: RunicornRunWriter, seed: number, startSec: number, fromStep: number, toStep: number, cadenceSec: number): void {
  for (let step = fromStep; step <= toStep; step++) {
    const ts = startSec + step * cadenceSec;
    const stage = step <= 20 ? 'warmup' : 'train';
    run.logMetrics({ loss: lossAt(seed, step), lr: stage === 'warmup' ? 0.0001 * step : 0.002 }, { ts, stage });
    if (step % 50 === 0) {
      run.logMetrics({ val_acc: Math.round(Math.min(0.99, 0.5 + step / 4000) * 1e4) / 1e4 }, { ts: ts + 0.0004, step, stage: 'eval' });
    }
    if (step % 10 === 0 || step === fromStep) run.logText(`step ${step} loss=${lossAt(seed, step).toFixed(4)}`, ts);
  }
}

export function writeDemoFleet(opts: FleetOptions): RunicornFleet {
  const root = opts.storageDir;
  const anchorSec = (opts.anchorMs ?? startOfUtcDay(opts.nowMs)) / 1000;
  const common = { hostname: opts.hostname, utcOffsetMinutes: opts.utcOffsetMinutes ?? 0, storageDirLabel: root };
  const runs: FleetRun[] = [];
  const add = (w: RunicornRunWriter, alias: string, expectedStatus: FleetRun['expectedStatus'], steps: number, extra: Partial<FleetRun> = {}) =>
    runs.push({ id: w.id, path: w.path, alias, expectedStatus, deleted: false, legacy: false, steps, ...extra });

  const finished = createRun(root, { ...common, path: 'demo/mnist', alias: 'baseline', pid: 4101, createdAt: anchorSec - 6 * 3600, tags: ['baseline'] });
  writeSteps(finished, hashSeed('baseline'), anchorSec - 6 * 3600, 1, 400, 2);
  finished.summary({ best_metric_value: 0.6, best_metric_name: 'val_acc', best_metric_step: 400, best_metric_mode: 'max' });
  finished.finish(anchorSec - 6 * 3600 + 801);
  add(finished, 'baseline', 'finished', 400);

  const failed = createRun(root, { ...common, path: 'demo/mnist', alias: 'lr-too-high', pid: 4102, createdAt: anchorSec - 5 * 3600 });
  writeSteps(failed, hashSeed('lr-too-high'), anchorSec - 5 * 3600, 1, 80, 2);
  failed.logText('RuntimeError: loss is NaN', anchorSec - 5 * 3600 + 161);
  failed.logMetrics({ loss: Number.NaN }, { ts: anchorSec - 5 * 3600 + 162, stage: 'train' });
  failed.finish(anchorSec - 5 * 3600 + 163, 'failed');
  add(failed, 'lr-too-high', 'failed', 81);

  // Written as running by a process that is gone: the viewer marks it failed / process_not_found.
  const crashed = createRun(root, { ...common, path: 'demo/mnist', alias: 'oom-crash', pid: DEAD_PID, createdAt: anchorSec - 4 * 3600 });
  writeSteps(crashed, hashSeed('oom-crash'), anchorSec - 4 * 3600, 1, 30, 2);
  add(crashed, 'oom-crash', 'failed', 30);

  const interrupted = createRun(root, { ...common, path: 'demo/resnet', alias: 'stopped-early', pid: 4104, createdAt: anchorSec - 3 * 3600 });
  writeSteps(interrupted, hashSeed('stopped-early'), anchorSec - 3 * 3600, 1, 120, 2);
  interrupted.finish(anchorSec - 3 * 3600 + 241, 'interrupted');
  add(interrupted, 'stopped-early', 'interrupted', 120);

  const legacy = createLegacyRun(root, 'legacy', 'cifar', { ...common, alias: 'old-layout', pid: 4105, createdAt: anchorSec - 8 * 3600 });
  writeSteps(legacy, hashSeed('old-layout'), anchorSec - 8 * 3600, 1, 60, 2);
  legacy.finish(anchorSec - 8 * 3600 + 121);
  add(legacy, 'old-layout', 'finished', 60, { legacy: true });

  const deleted = createRun(root, { ...common, path: 'demo/mnist', alias: 'deleted-run', pid: 4106, createdAt: anchorSec - 7 * 3600 });
  writeSteps(deleted, hashSeed('deleted-run'), anchorSec - 7 * 3600, 1, 10, 2);
  deleted.finish(anchorSec - 7 * 3600 + 21);
  deleted.markDeleted(anchorSec - 7 * 3600 + 60);
  add(deleted, 'deleted-run', 'finished', 10, { deleted: true });

  // The live run started ten minutes before `nowMs` and logs one step every LIVE_STEP_SECONDS.
  const liveStart = opts.nowMs / 1000 - 600;
  const live = createRun(root, { ...common, path: 'demo/live', alias: 'live-run', pid: opts.livePid, createdAt: liveStart, tags: ['sweep'] });
  live.summary({ total_steps: LIVE_TARGET_STEPS });
  live.logText('starting training', liveStart);
  const liveSeed = hashSeed('live-run');
  add(live, 'live-run', 'running', 0);
  const liveEntry = runs[runs.length - 1]!;

  const advance = (nowMs: number): number => {
    if (liveEntry.steps >= LIVE_TARGET_STEPS) return 0;
    const due = Math.min(LIVE_TARGET_STEPS, Math.floor((nowMs / 1000 - liveStart) / LIVE_STEP_SECONDS));
    if (due <= liveEntry.steps) return 0;
    writeSteps(live, liveSeed, liveStart, liveEntry.steps + 1, due, LIVE_STEP_SECONDS);
    const added = due - liveEntry.steps;
    liveEntry.steps = due;
    if (due >= LIVE_TARGET_STEPS) {
      live.finish(liveStart + due * LIVE_STEP_SECONDS);
      liveEntry.expectedStatus = 'finished';
    }
    return added;
  };
  advance(opts.nowMs);

  return { storageDir: root, runs, advance };
}
