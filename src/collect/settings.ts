// What the collector does per provider, and its defaults. Budgets are conservative where a
// platform publishes no quota (docs/platforms/*.md): a collector must never be the reason a
// team's API key gets throttled for its own scripts.
import type { ProviderKind } from '../domain/types.js';

export interface CollectSettings {
  enabled: boolean;
  /** Seconds between sweeps; null = the provider's live poll interval (src/live/intervals.ts). */
  intervalSeconds: number | null;
  /** Seconds between job list syncs; null = the sweep interval. */
  listIntervalSeconds: number | null;
  /** Upstream calls to the platform in any minute, at most (every caller's calls count). */
  callsPerMinute: number;
  /** Jobs collected at once, at most. */
  maxConcurrent: number;
  /** How long the platform keeps a finished job's metrics, in days; null = for ever (nothing expires). */
  retentionDays: number | null;
  /** How far back (seconds) the first collection of a running job reaches. */
  firstLookbackSeconds: number;
  /** Training metrics and progress too, where the platform has them. */
  training: boolean;
  /** Each running job's logs brought up to now every sweep (off by default: log pages are many calls). */
  logs: boolean;
}

/**
 * Calls per minute by platform. Baseten documents 100 requests/s per key; ModelArts and PAI-DLC
 * publish no numbers (PAI-DLC quotas are per API, "N calls / 60 s", unconfirmed); Primus-Lens is
 * a self-hosted service; Runicorn is a local viewer. A tenth or less of any known limit.
 */
export const DEFAULT_CALLS_PER_MINUTE: Record<ProviderKind, number> = {
  BASETEN: 600,
  MODELARTS: 120,
  PAI_DLC: 120,
  PRIMUS_LENS: 300,
  RUNICORN: 1200,
};

/** Days each platform keeps what a finished job reported (the fact sheets' windows; Runicorn keeps files until deleted). */
export const DEFAULT_RETENTION_DAYS: Record<ProviderKind, number | null> = {
  // Metrics and log windows are at most 7 days wide; the fact sheet treats 7 days as current.
  BASETEN: 7,
  MODELARTS: 7,
  // ListJobs' silent default window: jobs older than 7 days vanish from lists.
  PAI_DLC: 7,
  PRIMUS_LENS: 7,
  RUNICORN: null,
};

export const DEFAULT_MAX_CONCURRENT = 4;
/** A running job is first collected from its start (at most the 7 days a platform keeps). */
export const DEFAULT_FIRST_LOOKBACK_SECONDS = 7 * 86_400;

export function defaultSettings(kind: ProviderKind, enabled = true): CollectSettings {
  return {
    enabled,
    intervalSeconds: null,
    listIntervalSeconds: null,
    callsPerMinute: DEFAULT_CALLS_PER_MINUTE[kind],
    maxConcurrent: DEFAULT_MAX_CONCURRENT,
    retentionDays: DEFAULT_RETENTION_DAYS[kind],
    firstLookbackSeconds: DEFAULT_FIRST_LOOKBACK_SECONDS,
    training: true,
    logs: false,
  };
}
