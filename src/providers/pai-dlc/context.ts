// PAI-DLC adapter: what its parts share (the signed client, the configured region and workspace,
// the ECS spec cache), and the limits of the API it pages through.
import type { SecretSource } from '../../config/provider-kit.js';
import type { PaiDlcConfig } from './config.js';
import { createPaiDlcClient } from './client.js';
import type { UpstreamTimers } from '../http-client.js';
import type { WireEcsSpec } from './wire.js';

/**
 * ListJobs silently hides jobs created more than 7 days ago unless StartTime is given; we ask for a
 * year back (a choice: long enough for any job history a dashboard shows, bounded so the window is explicit).
 */
export const LIST_LOOKBACK_DAYS = 365;
export const PAGE_SIZE = 100; // the documented maximum
/** GetPodLogs' documented default of MaxLines, and the most we ask one call for. */
export const LOG_MAX_LINES = 2000;
/** Points per GetMetrics page (the SDK's documented default is 1000). */
export const CMS_PAGE_LENGTH = 1000;
/** Pages one CloudMonitor series may take before the answer counts as incomplete. */
export const CMS_MAX_PAGES = 50;

export const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** One configured PAI-DLC provider's shared state, handed to each part of the adapter. */
/**
 * `now`: the clock requests are signed with (the platform refuses a date 15 min off its own);
 * `timers`: what the calls' time-outs run on.
 */
export function paiDlcContext(config: PaiDlcConfig, secrets: SecretSource, now: () => number = Date.now, timers?: UpstreamTimers) {
  const client = createPaiDlcClient(config, secrets, now, timers);
  const providerId = client.providerId;
  const call = client.call;
  const ctx = { regionId: config.regionId };
  /** Instance type -> hardware; ECS specs do not change, so they are looked up once per process. */
  const ecsSpecCache = new Map<string, WireEcsSpec>();
  return { config, client, providerId, call, ctx, ecsSpecCache };
}
export type PaiDlcContext = ReturnType<typeof paiDlcContext>;
