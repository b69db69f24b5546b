// No false alarms: the demo's healthy jobs, with their normal variance, raise no finding over 24
// simulated hours. The collector keeps the store current, hourly (a sweep costs seconds of wall
// time whatever its length) and ModelArts every 10 minutes (its API keeps 15), and after each hour
// the evaluator judges the stored data at every 10 minutes of that hour, in order: 145
// evaluations, as a server evaluating every 10 minutes would make. Every platform's simulator runs on the test's clock end to end: Baseten
// (the demo's fleet without its three anomalies), ModelArts and PAI-DLC (their adapters sign with
// the runtime's clock, AdapterOptions.now, so their simulators on the same clock accept them),
// Primus-Lens and Runicorn (its running run written up to each instant before the clock gets there).
// What is found is only what is true: FAILED for failed jobs, RESTARTED for the demo's jobs whose
// platform counts restarts, each with the count the graph answers.
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { FindingsEngine } from '../../src/findings/index.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { startModelArtsDemo } from '../../src/simulators/modelarts/demo.js';
import { startPaiDlcDemo } from '../../src/simulators/pai-dlc/demo.js';
import { startPrimusLensDemo } from '../../src/simulators/primus-lens/demo.js';
import { writeDemoFleet, type RunicornFleet } from '../../src/simulators/runicorn/fleet.js';
import type { DemoProvider } from '../../src/simulators/demo-starter.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { gql, sweepsSettled } from '../collect/helpers.js';
import { recordFindingEvents, type SeenEvent } from './helpers.js';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const EVALUATE_EVERY = 10 * MINUTE;
/** ModelArts' collector interval: inside the 15 minutes its metrics API looks back. */
const MODELARTS_SWEEP = 10 * MINUTE;

describe('no false alarms over 24 simulated hours of healthy demo jobs', () => {
  const workDir = mkdtempSync(path.join(tmpdir(), 'tg-findings-quiet-'));
  let baseten: BasetenSimulator;
  let lens: DemoProvider;
  let modelarts: DemoProvider;
  let paiDlc: DemoProvider;
  let runicorn: RunicornFleet;
  let db: TestDatabase;
  let rt: Runtime;
  let timers: ManualTimers;
  let events: SeenEvent[];
  let engine: FindingsEngine;

  beforeAll(async () => {
    timers = new ManualTimers(START);
    const now = () => timers.now();
    baseten = await startBasetenSimulator({ now, anchorMs: START });
    lens = await startPrimusLensDemo({ now, anchorMs: START });
    modelarts = await startModelArtsDemo({ now, anchorMs: START });
    paiDlc = await startPaiDlcDemo({ now, anchorMs: START });
    runicorn = writeDemoFleet({ storageDir: path.join(workDir, 'runicorn'), hostname: hostname(), livePid: process.pid, nowMs: START, anchorMs: START });
    // Hourly sweeps (a sweep costs seconds of wall time whatever its length), ModelArts every 10 minutes.
    const hourly = { collect: { intervalSeconds: HOUR / 1000 } };
    const providers: ProviderConfig[] = [
      { id: 'baseten-demo', kind: 'BASETEN', baseUrl: baseten.url, apiKeyEnv: 'BT_KEY', ...hourly },
      { ...lens.config, ...hourly },
      { ...modelarts.config, collect: { intervalSeconds: MODELARTS_SWEEP / 1000 } },
      { ...paiDlc.config, ...hourly },
      { id: 'runicorn-demo', kind: 'RUNICORN', storageDir: runicorn.storageDir, ...hourly },
    ];
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, providers, {
      env: { BT_KEY: baseten.apiKey, ...lens.secrets, ...modelarts.secrets, ...paiDlc.secrets },
      clock: now,
      liveTimers: timers,
      config: { collect: { enabled: true }, findings: { enabled: false } },
    });
    events = recordFindingEvents(rt);
    // The server's own evaluator is off: this one judges past instants of stored data, in order.
    engine = new FindingsEngine({ store: rt.store, logger: rt.logger, timers, bus: rt.live.hub.bus });
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    await baseten?.close();
    await lens?.close();
    await modelarts?.close();
    await paiDlc?.close();
    await db?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('raises nothing but FAILED for failed jobs and RESTARTED for restarted ones, at 145 evaluations over 24 hours', async () => {
    await sweepsSettled(rt);
    await engine.evaluate(new Date(START));
    for (let hour = 0; hour < 24; hour++) {
      // The clock moves in 10-minute steps: ModelArts' metrics API answers only its last 15 one-minute
      // values, so its collector sweeps every 10 minutes; the others sweep hourly.
      for (let step = 0; step < HOUR / MODELARTS_SWEEP; step++) {
        // The running run logs its steps up to the instant before the clock reaches it.
        runicorn.advance(timers.now() + MODELARTS_SWEEP);
        timers.advance(MODELARTS_SWEEP);
        await sweepsSettled(rt);
      }
      for (let at = timers.now() - HOUR + EVALUATE_EVERY; at <= timers.now(); at += EVALUATE_EVERY) await engine.evaluate(new Date(at));
    }
    expect(engine.evaluations).toBe(145);
    const listed: { id: string; status: string; restartCount: number | null; provider: { kind: string } }[] = (
      await gql(rt, '{ jobs(first: 500) { edges { node { id status restartCount provider { kind } } } } }')
    ).data.jobs.edges.map((e: any) => e.node);
    const statuses = new Map(listed.map((j) => [j.id, j.status]));
    const restarts = new Map(listed.map((j) => [j.id, j.restartCount]));
    const running = listed.filter((j) => j.status === 'RUNNING');
    expect(running.length).toBeGreaterThanOrEqual(5);
    // Every platform has running jobs in the day judged.
    expect(new Set(running.map((j) => j.provider.kind))).toEqual(new Set(['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS', 'RUNICORN']));
    // A restart the platform counts is found once per count (the count the graph answers at the end, or an earlier one).
    const trueFinding = (e: SeenEvent) =>
      (e.kind === 'FAILED' && statuses.get(e.jobId) === 'FAILED') ||
      (e.kind === 'RESTARTED' && (restarts.get(e.jobId) ?? 0) >= e.evidence.restartCount && e.evidence.restartCount > 0);
    const unexpected = events.filter((e) => !trueFinding(e));
    expect(unexpected.map((e) => `${e.event} ${e.kind} ${e.jobId} ${e.gpuId ?? ''} ${JSON.stringify(e.evidence)}`)).toEqual([]);
    // The quiet is not for want of data: every running job with accelerators, on each platform that
    // reports them, has readings from its first 10 minutes in the day to the last 10.
    const judged = await gql(
      rt,
      `query($from: DateTime!, $to: DateTime!) { jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id startedAt gpuCount gpus { id }
        provider { kind } metrics(names: [GPU_UTILIZATION, NPU_UTILIZATION], from: $from, to: $to) { summary { count firstAt lastAt } } } } } }`,
      { from: new Date(START).toISOString(), to: new Date(timers.now()).toISOString() },
    );
    expect(judged.errors).toBeUndefined();
    const withAccelerators = judged.data.jobs.edges.map((e: any) => e.node).filter((j: any) => (j.gpus?.length ?? 0) > 0 || (j.gpuCount ?? 0) > 0);
    expect(new Set(withAccelerators.map((j: any) => j.provider.kind))).toEqual(new Set(['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS']));
    for (const j of withAccelerators) {
      // A series may have no reading in the day (a pod the job no longer runs, such as a restarted job's earlier one): the job's others do.
      const read = j.metrics.filter((m: any) => m.summary.count > 0);
      expect(read.length, j.id).toBeGreaterThan(0);
      const inDay = Math.max(START, j.startedAt ? Date.parse(j.startedAt) : START);
      expect(Math.min(...read.map((m: any) => Date.parse(m.summary.firstAt))) - inDay, j.id).toBeLessThanOrEqual(EVALUATE_EVERY);
      expect(timers.now() - Math.max(...read.map((m: any) => Date.parse(m.summary.lastAt))), j.id).toBeLessThanOrEqual(EVALUATE_EVERY);
    }
  }, 1_200_000);
});
