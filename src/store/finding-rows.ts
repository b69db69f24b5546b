// A finding as the store keeps it and as it travels: its kinds, severities and thresholds, the row
// read back, the cursor and filter of a page, and its JSON form on the live bus (dates as strings).
import { toDate } from './sql-util.js';

export const FINDING_KINDS = ['STALLED', 'STRAGGLER', 'IDLE_ALLOCATION', 'NO_DATA', 'FAILED', 'RESTARTED'] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];
export const FINDING_SEVERITIES = ['INFO', 'WARNING', 'CRITICAL'] as const;
export type FindingSeverity = (typeof FINDING_SEVERITIES)[number];

/** The thresholds one job is judged by (docs/findings.md lists the defaults and why). */
export interface FindingThresholds {
  /** STALLED: every accelerator below this utilization (ratio 0..1) ... */
  stallUtilization: number;
  /** ... for this many minutes. */
  stallMinutes: number;
  /** STALLED: no new step for max(this many minutes, stallStepFactor x the median step time). */
  stallStepMinutes: number;
  stallStepFactor: number;
  /** STRAGGLER: a series whose highest reading in the window is below this fraction of the job's median average ... */
  stragglerFraction: number;
  /** ... while that median is at least this (the others are busy) ... */
  stragglerBusyUtilization: number;
  /** ... over this many minutes. */
  stragglerMinutes: number;
  /** IDLE_ALLOCATION: accelerators below this utilization ... */
  idleUtilization: number;
  /** ... for this many minutes. */
  idleMinutes: number;
  /** NO_DATA: the newest stored point is older than this many minutes though the platform was asked within them. */
  noDataMinutes: number;
  /** FAILED stays firing this many hours after the failure, then resolves. */
  failedHoldHours: number;
  /** RESTARTED stays firing this many minutes after the restart was seen, then resolves. */
  restartHoldMinutes: number;
}

/** A threshold set for jobs of a provider, of a project, or (both null) every job. */
export interface ThresholdRule extends FindingThresholds {
  providerId: string | null;
  projectId: string | null;
}

/** One condition seen in one evaluation. */
export interface FindingCandidate {
  fingerprint: string;
  kind: FindingKind;
  severity: FindingSeverity;
  providerId: string;
  projectId: string;
  jobId: string;
  nodeId: string | null;
  gpuId: string | null;
  summary: string;
  startedAt: Date;
  holdUntil: Date | null;
  evidence: Record<string, unknown>;
}

export interface FindingRow extends FindingCandidate {
  id: number;
  endedAt: Date | null;
  lastSeenAt: Date;
}

export interface FindingEventRow {
  event: 'FIRING' | 'RESOLVED';
  at: Date;
  finding: FindingRow;
}

export interface FindingQuery {
  providerIds: readonly string[];
  projectId?: string | null;
  jobIds?: readonly string[] | null;
  kinds?: readonly FindingKind[] | null;
  severities?: readonly FindingSeverity[] | null;
  /** true: open only; false: resolved only; null: both. */
  firing?: boolean | null;
  /** Findings that were open at or after this instant. */
  since?: Date | null;
}

export interface FindingCursor {
  startedAt: Date;
  id: number;
}

/** The live bus topic of finding transitions (payload: FindingEventJson). */
export const FINDINGS_TOPIC = 'findings';
/** A finding as it travels on the bus: dates as ISO strings (the Redis bus carries JSON). */
export type FindingJson = Omit<FindingRow, 'startedAt' | 'endedAt' | 'lastSeenAt' | 'holdUntil'> & {
  startedAt: string;
  endedAt: string | null;
  lastSeenAt: string;
  holdUntil: string | null;
};

export interface FindingEventJson {
  type: 'finding';
  event: 'FIRING' | 'RESOLVED';
  finding: FindingJson;
}

export function findingToJson(f: FindingRow): FindingJson {
  return {
    ...f,
    startedAt: f.startedAt.toISOString(),
    endedAt: f.endedAt?.toISOString() ?? null,
    lastSeenAt: f.lastSeenAt.toISOString(),
    holdUntil: f.holdUntil?.toISOString() ?? null,
  };
}

export function findingFromJson(f: FindingJson): FindingRow {
  return {
    ...f,
    startedAt: new Date(f.startedAt),
    endedAt: f.endedAt ? new Date(f.endedAt) : null,
    lastSeenAt: new Date(f.lastSeenAt),
    holdUntil: f.holdUntil ? new Date(f.holdUntil) : null,
  };
}

/** A finding's kind, severity and place (provider, project, job, node, GPU) as a row of SQL gives them. */
export function placeOf(r: Record<string, unknown>): Pick<FindingRow, 'kind' | 'severity' | 'providerId' | 'projectId' | 'jobId' | 'nodeId' | 'gpuId'> {
  return {
    kind: r.kind as FindingKind,
    severity: r.severity as FindingSeverity,
    providerId: String(r.provider_id),
    projectId: String(r.project_id),
    jobId: String(r.job_id),
    nodeId: (r.node_id as string | null) ?? null,
    gpuId: (r.gpu_id as string | null) ?? null,
  };
}

export function findingOf(r: Record<string, unknown>): FindingRow {
  return {
    id: Number(r.id),
    fingerprint: String(r.fingerprint),
    ...placeOf(r),
    summary: String(r.summary),
    startedAt: toDate(r.started_at)!,
    endedAt: toDate(r.ended_at),
    lastSeenAt: toDate(r.last_seen_at)!,
    holdUntil: toDate(r.hold_until),
    evidence: (typeof r.evidence === 'string' ? JSON.parse(r.evidence) : r.evidence) as Record<string, unknown>,
  };
}
