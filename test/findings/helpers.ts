// Driving the collector and the findings evaluator on a clock the test moves: each step waits for
// the sweeps and the evaluation it made due, so "once per interval" holds whatever the machine's speed.
import type { Runtime } from '../../src/server/runtime.js';
import type { ManualTimers } from '../support/manual-timers.js';
import { HANG_MS } from '../support/wait.js';
import { sweepsSettled } from '../collect/helpers.js';

/** Waits until no evaluation is under way or due at once. */
export async function evaluationsSettled(rt: Runtime): Promise<void> {
  const engine = rt.findings!;
  while (engine.busy()) {
    await new Promise<void>((resolve, reject) => {
      const hang = setTimeout(() => reject(new Error('timed out waiting for a findings evaluation to finish')), HANG_MS);
      engine.events.once('evaluated', () => {
        clearTimeout(hang);
        resolve();
      });
    });
  }
}

/** Moves the clock `totalMs` forward in `stepMs` steps, letting each step's sweeps and evaluation finish. */
export async function runFindingsFor(rt: Runtime, timers: ManualTimers, totalMs: number, stepMs: number): Promise<void> {
  await sweepsSettled(rt);
  await evaluationsSettled(rt);
  for (let t = 0; t < totalMs; t += stepMs) {
    timers.advance(Math.min(stepMs, totalMs - t));
    await sweepsSettled(rt);
    await evaluationsSettled(rt);
  }
}

export interface SeenEvent {
  event: 'FIRING' | 'RESOLVED';
  kind: string;
  jobId: string;
  gpuId: string | null;
  nodeId: string | null;
  id: number;
  evidence: Record<string, any>;
}

/** Every finding event the runtime's bus carries, in order. */
export function recordFindingEvents(rt: Runtime): SeenEvent[] {
  const seen: SeenEvent[] = [];
  rt.live.hub.bus.on('findings', (p: any) =>
    seen.push({
      event: p.event,
      kind: p.finding.kind,
      jobId: p.finding.jobId,
      gpuId: p.finding.gpuId,
      nodeId: p.finding.nodeId,
      id: p.finding.id,
      evidence: p.finding.evidence,
    }),
  );
  return seen;
}
