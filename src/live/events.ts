// What travels on the bus: plain JSON, shaped once per poll (not once per subscriber), dates as
// ISO strings so the in-memory and Redis transports carry identical payloads.
import type { JobRow } from '../store/index.js';

export interface SamplePayload {
  type: 'sample';
  jobId: string;
  status: string;
  polledAt: string;
  from: string;
  to: string;
  intervalSeconds: number;
  granularity: 'GPU' | 'NODE' | 'JOB';
  /** The job had finished when this was polled: it is the last sample. */
  final: boolean;
  /**
   * The store keys (SeriesRow.seriesKey) of the series this poll wrote points to. A subscriber
   * answers them as MetricSeries read from the store, the same objects (and ids) Job.metrics
   * answers, so the payload stays small and identical for every subscriber.
   */
  series: string[];
  /** The newest point time seen so far: the next poll, on whichever replica, resumes after it. */
  cursor: string | null;
  /**
   * Only on a joining subscriber's first sample (LiveFeed.backfill): the store's moment when it was
   * made, where its series' window ends. A query between two polls may have stored points newer
   * than the poll; read to the poll, the joiner's series would lack them and go back in time in a
   * client cache that holds the query's. Absent on a poll's own sample: its series end at polledAt.
   */
  readTo?: string;
}

export interface LogLinePayload {
  timestamp: string | null;
  message: string;
  node: string | null;
  level: string | null;
  cursor: string;
}

export interface LogsPayload {
  type: 'logs';
  jobId: string;
  lines: LogLinePayload[];
  /**
   * The cursor the lines were read after (null: read from `since`): with each line's own cursor it
   * places every line after the one before it, as LogLine ids need. Absent from older replicas.
   */
  after?: string | null;
  /** The platform cursor after the last line: where the next poll (any replica) resumes. */
  cursor: string | null;
  /** Where a first poll began, so a replica taking over before any line arrived does not skip any. */
  since: string | null;
}

export type JobRowJson = { [K in keyof JobRow]: JobRow[K] extends Date | null ? string | null : JobRow[K] };

export interface StatusPayload {
  type: 'status';
  job: JobRowJson;
  previousStatus: string | null;
}

export interface ErrorPayload {
  type: 'error';
  code: string;
  message: string;
  /** When the next attempt is due. */
  retryInSeconds: number;
  /** Consecutive failures so far. */
  attempt: number;
}

export interface EndPayload {
  type: 'end';
  reason: string;
}

export type LivePayload = SamplePayload | LogsPayload | StatusPayload | ErrorPayload | EndPayload;

const JOB_DATE_FIELDS = ['createdAt', 'startedAt', 'finishedAt', 'sortAt', 'seenAt', 'detailFetchedAt', 'topologyFetchedAt'] as const;

export function jobRowToJson(row: JobRow): JobRowJson {
  const out: Record<string, unknown> = { ...row };
  for (const f of JOB_DATE_FIELDS) out[f] = row[f] ? row[f].toISOString() : null;
  return out as JobRowJson;
}

export function jobRowFromJson(json: JobRowJson): JobRow {
  const out: Record<string, unknown> = { ...json };
  for (const f of JOB_DATE_FIELDS) out[f] = json[f] ? new Date(json[f] as string) : null;
  return out as JobRow;
}
