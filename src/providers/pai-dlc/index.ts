// PAI-DLC as one module: everything the server needs of the platform outside this folder.
import type { PlatformModule } from '../platform.js';
import type { Listed } from '../platforms.js';
import { createPaiDlcAdapter } from './adapter.js';
import { paiDlcConfig } from './config.js';
import { STATUS_MAP } from './mapping.js';

export { createPaiDlcAdapter, LIST_LOOKBACK_DAYS, LOG_MAX_LINES, PAI_DLC_VERSION } from './adapter.js';
export { paiDlcConfig, type PaiDlcConfig } from './config.js';

export const paiDlc = {
  kind: 'PAI_DLC',
  description: 'Alibaba Cloud PAI-DLC jobs (per-pod monitoring series)',
  configSchema: paiDlcConfig,
  createAdapter: createPaiDlcAdapter,
  // PAI-DLC monitoring series are typically 15-60 s apart and each metric is its own call.
  defaultPollSeconds: 30,
  // Quotas are per API ("N calls / 60 s", unconfirmed); ListJobs' silent default window is 7 days:
  // older jobs vanish from lists.
  collect: { callsPerMinute: 120, retentionDays: 7 },
  statuses: { table: STATUS_MAP },
} as const satisfies PlatformModule<'PAI_DLC', typeof paiDlcConfig>;

/** This platform's kind; fails to compile while the module is missing from src/providers/platforms.ts. */
export type Kind = Listed<typeof paiDlc.kind>;
