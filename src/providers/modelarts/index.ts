// ModelArts as one module: everything the server needs of the platform outside this folder.
import type { PlatformModule } from '../platform.js';
import type { Listed } from '../platforms.js';
import { createModelArtsAdapter } from './adapter.js';
import { modelartsConfig } from './config.js';
import { STATUS_BY_PHASE } from './mapping.js';

export { createModelArtsAdapter, parseLogLine, type ModelArtsAdapterOptions } from './adapter.js';
export { modelartsConfig, type ModelArtsConfig } from './config.js';

export const modelarts = {
  kind: 'MODELARTS',
  description: 'Huawei Cloud ModelArts training jobs (per-task 1-minute running metrics)',
  configSchema: modelartsConfig,
  createAdapter: createModelArtsAdapter,
  // ModelArts reports 1-minute averages.
  defaultPollSeconds: 60,
  // ModelArts publishes no rate limit: a tenth of what the other clouds allow. Seven days as the
  // fact sheet reads its metric window.
  collect: { callsPerMinute: 120, retentionDays: 7 },
  statuses: { table: STATUS_BY_PHASE },
} as const satisfies PlatformModule<'MODELARTS', typeof modelartsConfig>;

/** This platform's kind; fails to compile while the module is missing from src/providers/platforms.ts. */
export type Kind = Listed<typeof modelarts.kind>;
