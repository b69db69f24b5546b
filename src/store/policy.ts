// The read-through cache's freshness policy in one place: how long each dataset stays fresh, when
// a fetch record covers a window, the upstream step a window asks for, and what an answer says
// when a refresh failed (stale with the error, or the error when nothing is cached).
import { DomainError } from '../domain/errors.js';
import { TERMINAL_STATUSES, type JobStatus, type SystemMetric } from '../domain/types.js';
import { DEFAULT_LOOKUP_BUDGET, type LookupBudget } from './lookup-budget.js';
import type { FetchRow, JobRow, ProviderSyncRow } from './repo-types.js';

export interface CachePolicy {
  /** How long a provider's job list is fresh. */
  listTtlMs: number;
  /** How long a running job's detail (status, nodes) is fresh. */
  detailTtlMs: number;
  /** How long a running job's metrics, training metrics and progress are fresh. */
  metricsTtlMs: number;
  /** Upstream resolution bounds: a fetch asks for maxPoints per series, clamped to these. */
  minUpstreamPointsPerSeries: number;
  maxUpstreamPointsPerSeries: number;
  /** The finest step ever asked of upstream, in seconds. */
  minStepSeconds: number;
  /** Each API token's budget of upstream lookups of ids the cache has never seen (store/lookup-budget.ts). */
  unknownIdLookups: LookupBudget;
}

export const DEFAULT_CACHE_POLICY: CachePolicy = {
  listTtlMs: 30_000,
  detailTtlMs: 15_000,
  metricsTtlMs: 30_000,
  minUpstreamPointsPerSeries: 120,
  maxUpstreamPointsPerSeries: 2000,
  minStepSeconds: 15,
  unknownIdLookups: DEFAULT_LOOKUP_BUDGET,
};

export interface Freshness {
  /** When the data answered was fetched from upstream (null: never). */
  fetchedAt: Date | null;
  /** True when a refresh was due but failed, so an older copy is served. */
  stale: boolean;
  error: { code: string; message: string } | null;
}

export interface MetricsRequest {
  job: JobRow;
  from: Date;
  to: Date;
  metrics: readonly SystemMetric[];
  /** The points per series the asker will show; sets the upstream resolution. */
  maxPoints?: number;
}

/** The series a query will ask of a job, seen ahead while its nodes are resolved. */
export interface TopologyHint {
  window: Window;
  metrics: readonly SystemMetric[];
  maxPoints: number;
}

export interface Window {
  from: Date;
  to: Date;
}

export const FRESH_NOW = (at: Date): Freshness => ({ fetchedAt: at, stale: false, error: null });

export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status as JobStatus);
}

/** How the upstream step of a window is chosen (ReadThrough.stepRule). */
export interface StepRule {
  minStepSeconds: number;
  /** Points asked per series: the window is divided by this many. */
  points: number;
}

/** The job's life, the default window of every series question; [from, to] is clipped to it. */
export function jobWindow(job: JobRow, now: Date, from?: Date | null, to?: Date | null): Window {
  // A start learned from the job's own first point would shrink the window the first fetch asked
  // (from the creation) and, with it, the resolution a default question asks: refetched for nothing.
  const start = (job.startedAtSource === 'FIRST_METRIC' ? job.createdAt : null) ?? job.startedAt ?? job.createdAt ?? new Date(now.getTime() - 3600_000);
  const end = job.finishedAt ?? now;
  const f = from && from > start ? from : start;
  const t = to && to < end ? to : end;
  return { from: f, to: t < f ? f : t };
}

export function toErrorInfo(err: unknown): { code: string; message: string } {
  if (err instanceof DomainError) return { code: err.code, message: err.message };
  return { code: 'INTERNAL', message: 'unexpected failure while fetching from upstream' };
}

export function asError(err: unknown): Error {
  return err instanceof Error ? err : new DomainError('INTERNAL', String(err));
}

/** What a dataset whose refresh failed answers: the copy fetched at `fetchedAt`, stale with the error; with nothing cached, the error itself. */
export function staleOr(fetchedAt: Date | null, err: unknown): Freshness | Error {
  return fetchedAt ? { fetchedAt, stale: true, error: toErrorInfo(err) } : asError(err);
}

/** A provider's job list as its sync record says: fresh (within the list TTL, last sync without error) or due. */
export function listFresh(policy: CachePolicy, s: ProviderSyncRow | undefined, now: Date): s is ProviderSyncRow & { syncedAt: Date } {
  return Boolean(s?.syncedAt && now.getTime() - s.syncedAt.getTime() < policy.listTtlMs && !s.errorCode);
}

/**
 * A job cached as unfinished that no list sync has seen for a list TTL, and whose detail is older
 * than the detail TTL, may have finished since (ReadThrough.jobsByIds reads its detail again).
 */
export function detailMayBeStale(policy: CachePolicy, j: JobRow, nowMs: number): boolean {
  return (
    !isTerminal(j.status) &&
    !(j.status === 'UNKNOWN' && j.rawStatus?.startsWith('gone:')) &&
    nowMs - j.seenAt.getTime() >= policy.listTtlMs &&
    (!j.detailFetchedAt || nowMs - j.detailFetchedAt.getTime() >= policy.detailTtlMs)
  );
}

/** Whether a job's nodes and GPUs are fresh: recent while it runs, final once learned after it finished. */
export function topologyFresh(policy: CachePolicy, j: JobRow, now: Date): boolean {
  // A finished job's topology is final once learned after it finished (from its detail or its metrics).
  const learnedAfterEnd = (at: Date | null) => at !== null && (!j.finishedAt || at >= j.finishedAt);
  return Boolean(
    j.topologyFetchedAt &&
      ((isTerminal(j.status) && (learnedAfterEnd(j.detailFetchedAt) || learnedAfterEnd(j.topologyFetchedAt))) ||
        now.getTime() - j.topologyFetchedAt.getTime() < policy.detailTtlMs),
  );
}

/** A dataset fetched whole per job (training metrics, progress): final once the job is, else fresh for the metrics TTL. */
export function wholeJobFresh(policy: CachePolicy, latest: FetchRow | undefined, now: Date): latest is FetchRow {
  return Boolean(latest && (latest.final || now.getTime() - latest.fetchedAt.getTime() < policy.metricsTtlMs));
}

/** stepFor's rule for any window: step = max(minStepSeconds, ceil(window seconds / points)); for SQL that works it out per job. */
export function stepRule(policy: CachePolicy, maxPoints = policy.minUpstreamPointsPerSeries): StepRule {
  const points = Math.min(policy.maxUpstreamPointsPerSeries, Math.max(policy.minUpstreamPointsPerSeries, maxPoints));
  return { minStepSeconds: policy.minStepSeconds, points };
}

/** The upstream step for a window: fine enough for the points asked, never finer than the platform's floor. */
export function stepFor(policy: CachePolicy, window: Window, maxPoints = policy.minUpstreamPointsPerSeries): number {
  const seconds = (window.to.getTime() - window.from.getTime()) / 1000;
  const rule = stepRule(policy, maxPoints);
  return Math.max(rule.minStepSeconds, Math.ceil(seconds / rule.points));
}

/** Whether a metrics fetch record answers `window` at `step`: it reaches back far enough, at that step or finer, and is final or fresh. */
export function covers(policy: CachePolicy, row: FetchRow, window: Window, step: number, now: Date, maxAgeMs = policy.metricsTtlMs): boolean {
  if (row.rangeFrom > window.from || row.stepSeconds > step) return false;
  const fresh = row.final || now.getTime() - row.fetchedAt.getTime() < maxAgeMs;
  if (!fresh) return false;
  // A fetch that reached "now" at its time answers any later `to` while it is fresh.
  return row.rangeTo >= window.to || (!row.final && row.rangeTo.getTime() >= row.fetchedAt.getTime() - 1000);
}
