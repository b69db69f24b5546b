// Runicorn as one module: everything the server needs of the platform outside this folder.
import type { PlatformModule } from '../platform.js';
import type { Listed } from '../platforms.js';
import { createRunicornAdapter } from './adapter.js';
import { runicornConfig } from './config.js';
import { STATUS } from './mapping.js';

export { createRunicornAdapter, HOST_NODE_ID, ROOT_PROJECT_ID, type RunicornAdapter } from './adapter.js';
export { runicornConfig, type RunicornConfig } from './config.js';

export const runicorn = {
  kind: 'RUNICORN',
  description: 'Runicorn local runs (step and time metrics, progress, logs)',
  configSchema: runicornConfig,
  createAdapter: createRunicornAdapter,
  // Runicorn is local (a viewer on loopback or a folder): cheap to poll often.
  defaultPollSeconds: 2,
  // A local viewer or folder: files are kept until deleted.
  collect: { callsPerMinute: 1200, retentionDays: null },
  statuses: { table: STATUS },
} as const satisfies PlatformModule<'RUNICORN', typeof runicornConfig>;

/** This platform's kind; fails to compile while the module is missing from src/providers/platforms.ts. */
export type Kind = Listed<typeof runicorn.kind>;
