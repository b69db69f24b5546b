// A running job's training metrics are collected from its newest stored point (less an overlap)
// where the platform answers a range (Primus-Lens, whose simulator applies start/end only when both
// are given, as Lens does): the first sweep fetches the run whole, a later one asks only for the
// recent stretch, and the store still holds the whole run, point for point. On the test's clock.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRAINING_OVERLAP_MS } from '../../src/collect/collector.js';
import type { Runtime } from '../../src/server/runtime.js';
import type { SimRequest } from '../../src/simulators/kit.js';
import { trainingPoints } from '../../src/simulators/primus-lens/fleet.js';
import { type PrimusLensSimulator, startPrimusLensSimulator } from '../../src/simulators/primus-lens/server.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { ANCHOR, startRuntimeOn } from '../support/runtime.js';
import { runFor, sweepsSettled } from './helpers.js';

const INTERVAL_MS = 60_000;
const CLUSTER = 'gpu-cluster-a';

describe('training metrics of running jobs, collected from what is stored', () => {
  let timers: ManualTimers;
  let sim: PrimusLensSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  /** The training data requests as they arrived: workload, the range asked (null = whole), the clock then. */
  const asked: { uid: string; start: number | null; end: number | null; at: number }[] = [];

  beforeAll(async () => {
    timers = new ManualTimers(ANCHOR);
    sim = await startPrimusLensSimulator({ anchorMs: ANCHOR, now: () => timers.now() });
    sim.events.on('request', (route: string, req: SimRequest) => {
      if (route !== 'metricsData') return;
      const start = req.query.get('start');
      const end = req.query.get('end');
      asked.push({ uid: req.params.uid!, start: start ? Number(start) : null, end: end ? Number(end) : null, at: timers.now() });
    });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'pl', kind: 'PRIMUS_LENS', baseUrl: sim.baseUrl, cluster: CLUSTER, pollIntervalSeconds: INTERVAL_MS / 1000 }], {
      config: { collect: { enabled: true } },
      clock: () => timers.now(),
      liveTimers: timers,
    });
  }, 60_000);

  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  const running = () => sim.fleet.workloads.filter((w) => w.status === 'Running' && w.cluster === CLUSTER && w.sources.length > 0);

  it('fetches a run whole first, then from its newest stored point less the overlap', async () => {
    await sweepsSettled(rt);
    const workloads = running();
    expect(workloads.length).toBeGreaterThan(0);
    // The first sweep: nothing stored, so each run is asked whole.
    for (const w of workloads) expect(asked.filter((a) => a.uid === w.uid)).toEqual([expect.objectContaining({ start: null, end: null })]);
    const first = asked.length;

    await runFor(rt, timers, 5 * INTERVAL_MS, INTERVAL_MS);
    const later = asked.slice(first);
    for (const w of workloads) {
      const mine = later.filter((a) => a.uid === w.uid);
      expect(mine.length).toBeGreaterThanOrEqual(5);
      for (const a of mine) {
        // Both ends (Lens ignores one alone); the start is the overlap before the newest point the
        // last sweep stored (at most a sweep and a logging interval ago), hours after the run
        // began; the end is at or after the clock.
        expect(a.start).not.toBeNull();
        expect(a.end).toBeGreaterThanOrEqual(a.at);
        const logEveryMs = (w.logEvery / w.iterationsPerSecond) * 1000 + 2_000;
        expect(a.start!).toBeGreaterThanOrEqual(a.at - INTERVAL_MS - logEveryMs - TRAINING_OVERLAP_MS);
        expect(a.start!).toBeLessThanOrEqual(a.at - TRAINING_OVERLAP_MS);
        expect(a.start! - w.startMs).toBeGreaterThan(60 * 60_000);
      }
    }
  }, 120_000);

  it('still stores every point of each run, as a whole fetch has them', async () => {
    await sweepsSettled(rt);
    // Some points were logged after the first sweep: only the incremental sweeps can have stored them.
    const since = running()
      .flatMap((w) => w.sources.flatMap((s) => trainingPoints(w, s, timers.now())))
      .filter((p) => p.timestampMs > ANCHOR);
    expect(since.length).toBeGreaterThan(0);
    for (const w of running()) {
      const truth = w.sources
        .flatMap((s) => trainingPoints(w, s, timers.now()))
        .filter((p) => !Number.isNaN(p.value))
        .map((p) => `${p.metric}/${p.source}/${p.iteration}=${p.value}`)
        .sort();
      const stored = await rowsOf<{ name: string; source: string; step: number | string; value: number | string }>(
        rt.database.db,
        sql`select s.name, s.source, p.step, p.value from series s join jobs j on j.id = s.job_id join points p on p.series_id = s.id
          where j.external_id = ${w.uid} and s.kind = 'training'`,
      );
      expect(truth.length).toBeGreaterThan(0);
      expect(stored.map((r) => `${r.name}/${r.source}/${Number(r.step)}=${Number(r.value)}`).sort()).toEqual(truth);
    }
  }, 60_000);
});
