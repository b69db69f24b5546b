// No false alarms: the demo's healthy jobs, with their normal variance, raise no finding over 24
// simulated hours. The collector keeps the store current in hour-long steps of the clock (a sweep
// costs seconds of wall time whatever its length), and after each the evaluator judges the stored
// data at every 10 minutes of that hour, in order: 145 evaluations, as a server evaluating every
// 10 minutes would make. The platforms whose simulators run on the test's clock end to end: Baseten (the demo's
// fleet without its three anomalies), Primus-Lens and Runicorn (its running run written up to each
// instant before the clock gets there). ModelArts and PAI-DLC are not in it: their adapters sign
// requests with the wall clock, which their simulators refuse 15 minutes away from their own clock.
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { FindingsEngine } from '../../src/findings/index.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
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

describe('no false alarms over 24 simulated hours of healthy demo jobs', () => {
  const workDir = mkdtempSync(path.join(tmpdir(), 'tg-findings-quiet-'));
  let baseten: BasetenSimulator;
  let lens: DemoProvider;
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
    runicorn = writeDemoFleet({ storageDir: path.join(workDir, 'runicorn'), hostname: hostname(), livePid: process.pid, nowMs: START, anchorMs: START });
    const providers: ProviderConfig[] = [
      { id: 'baseten-demo', kind: 'BASETEN', baseUrl: baseten.url, apiKeyEnv: 'BT_KEY' },
      lens.config,
      { id: 'runicorn-demo', kind: 'RUNICORN', storageDir: runicorn.storageDir },
    ];
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, providers, {
      env: { BT_KEY: baseten.apiKey, ...lens.secrets },
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
    await db?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('raises nothing but FAILED for failed jobs, at 145 evaluations over 24 hours', async () => {
    await sweepsSettled(rt);
    await engine.evaluate(new Date(START));
    for (let hour = 0; hour < 24; hour++) {
      // The running run logs its steps up to the instant before the clock reaches it.
      runicorn.advance(timers.now() + HOUR);
      timers.advance(HOUR);
      await sweepsSettled(rt);
      for (let at = timers.now() - HOUR + EVALUATE_EVERY; at <= timers.now(); at += EVALUATE_EVERY) await engine.evaluate(new Date(at));
    }
    expect(engine.evaluations).toBe(145);
    const statuses = new Map<string, string>(
      (await gql(rt, '{ jobs(first: 500) { edges { node { id status } } } }')).data.jobs.edges.map((e: any) => [e.node.id, e.node.status]),
    );
    const running = [...statuses.values()].filter((s) => s === 'RUNNING').length;
    expect(running).toBeGreaterThanOrEqual(5);
    const unexpected = events.filter((e) => !(e.kind === 'FAILED' && statuses.get(e.jobId) === 'FAILED'));
    expect(unexpected.map((e) => `${e.event} ${e.kind} ${e.jobId} ${e.gpuId ?? ''} ${JSON.stringify(e.evidence)}`)).toEqual([]);
    // The quiet is not for want of data: every running job with accelerators has readings over the whole day.
    const judged = await gql(
      rt,
      `query($from: DateTime!, $to: DateTime!) { jobs(first: 500, filter: { statuses: [RUNNING] }) { edges { node { id gpus { id }
        metrics(names: [GPU_UTILIZATION], from: $from, to: $to) { summary { count firstAt lastAt } } } } } }`,
      { from: new Date(START).toISOString(), to: new Date(timers.now()).toISOString() },
    );
    expect(judged.errors).toBeUndefined();
    const withGpus = judged.data.jobs.edges.map((e: any) => e.node).filter((j: any) => (j.gpus?.length ?? 0) > 0);
    expect(withGpus.length).toBeGreaterThanOrEqual(3);
    for (const j of withGpus) {
      expect(j.metrics.length, j.id).toBeGreaterThan(0);
      for (const m of j.metrics) {
        expect(Date.parse(m.summary.firstAt) - START, j.id).toBeLessThanOrEqual(EVALUATE_EVERY);
        expect(timers.now() - Date.parse(m.summary.lastAt), j.id).toBeLessThanOrEqual(EVALUATE_EVERY);
      }
    }
  }, 1_200_000);
});
