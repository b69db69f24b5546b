// The Baseten simulator as the collector and findings tests use it: on the test's clock, with no
// rate limit of its own (the budgets under test are the server's), one project of running jobs.
import { type BasetenSimulator, type BasetenSimulatorOptions, startBasetenSimulator } from '../../src/simulators/baseten/index.js';
import type { ManualTimers } from './manual-timers.js';

type FleetShape = NonNullable<BasetenSimulatorOptions['fleet']>;

/** `fleet` overrides the default shape: one project, 1 running job of 1 node with 1 GPU. */
export function startClockedBaseten(
  seed: string,
  timers: ManualTimers,
  fleet: Partial<FleetShape>,
  more: Omit<BasetenSimulatorOptions, 'seed' | 'now' | 'fleet'> = {},
): Promise<BasetenSimulator> {
  return startBasetenSimulator({
    seed,
    anchorMs: timers.now(),
    now: () => timers.now(),
    rateLimit: false,
    fleet: { projects: 1, jobsPerProject: 1, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 1, statuses: ['TRAINING_JOB_RUNNING'], ...fleet } as FleetShape,
    ...more,
  });
}
