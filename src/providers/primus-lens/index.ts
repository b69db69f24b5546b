// Primus-Lens as one module: everything the server needs of the platform outside this folder.
import type { PlatformModule } from '../platform.js';
import type { Listed } from '../platforms.js';
import { createPrimusLensAdapter } from './adapter.js';
import { primusLensConfig } from './config.js';
import { STATUS } from './mapping.js';

export { createPrimusLensAdapter } from './adapter.js';
export { primusLensConfig, type PrimusLensConfig } from './config.js';

export const primusLens = {
  kind: 'PRIMUS_LENS',
  description: 'AMD Primus-Lens workloads (training metrics, iteration times, per-GPU metrics)',
  configSchema: primusLensConfig,
  createAdapter: createPrimusLensAdapter,
  defaultPollSeconds: 15,
  // A self-hosted service with no published limit; the fact sheet reads a 7-day window.
  collect: { callsPerMinute: 300, retentionDays: 7 },
  statuses: {
    table: STATUS,
    notes: [
      'Deleted says the Kubernetes object is gone, not how the run ended: the status is read from the pods\' last phases (all Succeeded = SUCCEEDED, any Failed = FAILED, still Running or Pending = STOPPED); rawStatus stays "Deleted"',
    ],
  },
} as const satisfies PlatformModule<'PRIMUS_LENS', typeof primusLensConfig>;

/** This platform's kind; fails to compile while the module is missing from src/providers/platforms.ts. */
export type Kind = Listed<typeof primusLens.kind>;
