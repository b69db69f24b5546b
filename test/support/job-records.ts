// A platform's job as an adapter hands it to the store, for tests that write jobs without a simulator.
import type { JobRecord } from '../../src/domain/types.js';

/** A running H100 job of project p1 named after its id, created and started at `at`; `over` changes any field. */
export function runningJob(externalId: string, at: Date, over: Partial<JobRecord> = {}): JobRecord {
  return {
    externalId,
    projectExternalId: 'p1',
    name: `job ${externalId}`,
    status: 'RUNNING',
    rawStatus: 'running',
    createdAt: at,
    startedAt: at,
    finishedAt: null,
    gpuType: 'H100',
    gpuCount: null,
    labels: undefined,
    ...over,
  };
}
