// What the collector does per provider, and its defaults. Budgets are conservative where a
// platform publishes no quota (docs/platforms/*.md): a collector must never be the reason a
// team's API key gets throttled for its own scripts.
import type { ProviderKind } from '../domain/types.js';
import { byKind } from '../providers/platforms.js';

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
  /**
   * Days this store keeps the provider's raw metric points; older ones are dropped by the lease
   * holder (hourly), the 1-minute and 1-hour rollups staying (docs/history.md). Default 30; null = kept for ever.
   */
  rawRetentionDays: number | null;
  /**
   * Days the raw points of a finished job are kept after its end, however old they are, where raw
   * retention would drop them sooner (measured from the job's end). null = as rawRetentionDays.
   */
  finishedJobRawRetentionDays: number | null;
  /**
   * Days this store keeps the provider's 1-minute rollup rows; older ones are dropped by the lease
   * holder (hourly), a window reaching before them is answered from the 1-hour rollup. Default 365; null = kept for ever.
   */
  minuteRollupRetentionDays: number | null;
  /** Days this store keeps the provider's 1-hour rollup (rows and month chunks, dropped hourly by the lease holder). Default null = kept for ever. */
  hourRollupRetentionDays: number | null;
  /**
   * Days after which the lease holder (hourly) compacts the provider's raw points of whole UTC
   * days into point_chunks, and its 1-minute rollup's into rollup_chunks_1m, a row per series and
   * day each, then the settled days of its 1-hour rollup into rollup_chunks_1h, a row per series
   * and month (docs/history.md). null = never.
   */
  compactAfterDays: number | null;
  /**
   * Compaction batches (each up to 20 series and 7 days, one transaction) the lease holder runs
   * after one sweep; days left go on after the next sweep instead of an hour later, so an upgraded
   * database's history is compacted in slices between sweeps, none of which holds a sweep long.
   */
  compactBatchesPerSweep: number;
  /** How far back (seconds) the first collection of a running job reaches. */
  firstLookbackSeconds: number;
  /** Training metrics and progress too, where the platform has them. */
  training: boolean;
  /** Each running job's logs brought up to now every sweep (off by default: log pages are many calls). */
  logs: boolean;
}

/** Calls per minute by platform: each module's collect.callsPerMinute (src/providers/<name>/index.ts says why). */
export const DEFAULT_CALLS_PER_MINUTE: Record<ProviderKind, number> = byKind((p) => p.collect.callsPerMinute);

/** Days each platform keeps what a finished job reported: each module's collect.retentionDays (null = until deleted). */
export const DEFAULT_RETENTION_DAYS: Record<ProviderKind, number | null> = byKind((p) => p.collect.retentionDays);

export const DEFAULT_MAX_CONCURRENT = 4;
/**
 * Retention per resolution, issue 41's defaults: raw points 30 days, the 1-minute rollup a year,
 * the 1-hour rollup for ever. A window past a cut is answered from the next coarser resolution
 * (MetricSeries.coarsestAvailable says which); 0 in a setting keeps that resolution for ever.
 */
export const DEFAULT_RAW_RETENTION_DAYS = 30;
export const DEFAULT_MINUTE_ROLLUP_RETENTION_DAYS = 365;
/** Raw points settle (late points and re-fetches mostly arrive) within this many days, then are compacted. */
export const DEFAULT_COMPACT_AFTER_DAYS = 2;
/** About 2-20 s of compaction a sweep at the measured 13-21 thousand points/s (docs/history.md). */
export const DEFAULT_COMPACT_BATCHES_PER_SWEEP = 10;
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
    rawRetentionDays: DEFAULT_RAW_RETENTION_DAYS,
    finishedJobRawRetentionDays: null,
    minuteRollupRetentionDays: DEFAULT_MINUTE_ROLLUP_RETENTION_DAYS,
    hourRollupRetentionDays: null,
    compactAfterDays: DEFAULT_COMPACT_AFTER_DAYS,
    compactBatchesPerSweep: DEFAULT_COMPACT_BATCHES_PER_SWEEP,
    firstLookbackSeconds: DEFAULT_FIRST_LOOKBACK_SECONDS,
    training: true,
    logs: false,
  };
}
