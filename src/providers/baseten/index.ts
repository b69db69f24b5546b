// Baseten as one module: everything the server needs of the platform outside this folder.
import type { PlatformModule } from '../platform.js';
import type { Listed } from '../platforms.js';
import { createBasetenAdapter } from './adapter.js';
import { basetenConfig } from './config.js';
import { STATUS } from './mapping.js';

export { createBasetenAdapter, classifyBasetenError } from './adapter.js';
export { basetenConfig, type BasetenConfig } from './config.js';

export const baseten = {
  kind: 'BASETEN',
  description: 'Baseten training (projects, jobs, per-node and per-GPU-rank metrics, logs)',
  configSchema: basetenConfig,
  createAdapter: createBasetenAdapter,
  // Baseten serves metrics on a 15 s-or-coarser grid and rate-limits per key: polling faster buys nothing.
  defaultPollSeconds: 30,
  // Baseten documents 100 requests/s per key; metrics and log windows are at most 7 days wide, and
  // the fact sheet treats 7 days as the time it keeps them.
  collect: { callsPerMinute: 600, retentionDays: 7 },
  statuses: { table: STATUS },
} as const satisfies PlatformModule<'BASETEN', typeof basetenConfig>;

/** This platform's kind; fails to compile while the module is missing from src/providers/platforms.ts. */
export type Kind = Listed<typeof baseten.kind>;
