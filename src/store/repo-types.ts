// The rows and questions of the repository's datasets (its SQL is in the repo-*.ts modules).
import type { ScrapeLabelSource } from '../domain/scrape-families.js';
import type { Aggregation } from '../domain/types.js';
import type { JobCursor, JobFilter, JobOrder } from './job-filter.js';
import type * as t from './tables.js';

export type JobRow = typeof t.jobs.$inferSelect;
export type ProjectRow = typeof t.projects.$inferSelect;
export type NodeRow = typeof t.nodes.$inferSelect;
export type GpuRow = typeof t.gpus.$inferSelect;
export type SeriesRow = typeof t.series.$inferSelect;
export type FetchRow = typeof t.fetches.$inferSelect;
export type ProviderRow = typeof t.providers.$inferSelect;
export type ProviderSyncRow = typeof t.providerSyncs.$inferSelect;
export type FetchErrorRow = typeof t.fetchErrors.$inferSelect;
export type ProgressRow = typeof t.progress.$inferSelect;
export type JobSummaryRow = typeof t.jobSummaries.$inferSelect;

export interface PointRow {
  seriesId: number;
  /** Named as MetricPoint's field, which is then a plain property read (see src/schema/index.ts). */
  timestamp: Date | null;
  step: number | null;
  value: number | null;
}

/** The keys a write's points of one series spanned, first to last (the points between are not all new). */
export interface WrittenRange {
  seriesId: number;
  lo: number;
  hi: number;
}

export interface SeriesWindow {
  seriesId: number;
  from: Date | null;
  to: Date | null;
  /** 'time' (the key is epoch ms): the window is applied to the indexed key instead of ts. */
  keyedBy?: 'time' | 'step';
}

export interface SummaryRow {
  seriesId: number;
  /** Position of its window in the request. */
  index: number;
  count: number;
  min: number | null;
  max: number | null;
  avg: number | null;
  last: number | null;
  firstAt: Date | null;
  lastAt: Date | null;
}

/** What latestReadings reads: metric names, providers and projects (null = all), the freshness bound, the cap. */
export interface LatestReadingsQuery {
  names: readonly string[];
  providerIds: readonly string[];
  projectIds: readonly string[] | null;
  since: Date;
  limit: number;
}

/** What comparePoints reads: jobs, metric names by kind, the axis, the grid size, an optional time window. */
export interface ComparisonQuery {
  jobIds: readonly string[];
  training: readonly string[];
  system: readonly string[];
  axis: 'STEP' | 'TIME' | 'RELATIVE_TIME';
  buckets: number;
  aggregation: Aggregation;
  from: Date | null;
  to: Date | null;
}

/** One (job, metric, bucket) of a comparison: the bucket's x on the shared grid and the aggregated value. */
export interface ComparisonRow {
  jobId: string;
  kind: 'training' | 'system';
  name: string;
  unit: string;
  bucket: number;
  x: number;
  value: number | null;
  points: number;
}

/** The latest reading of one accelerator series of a running job, with its labels. */
export interface LatestReadingRow extends ScrapeLabelSource {
  ts: Date;
  value: number;
}

/** What accelSeriesInWindow reads: metric names, providers and projects (null = all), the window, the cap. */
export interface AccelSeriesQuery {
  names: readonly string[];
  providerIds: readonly string[];
  projectIds: readonly string[] | null;
  from: Date;
  to: Date;
  limit: number;
  /** false: `points` is only 1 (it has points there), read with an index probe instead of a count (label and series listings). */
  countPoints?: boolean;
}

/** An accelerator series with points in a window: its id, its point count there, and what its labels are made of. */
export interface AccelSeriesRow extends ScrapeLabelSource {
  seriesId: number;
  points: number;
}

/** A job as an ordered page lists it: with its key in that order (what its cursor holds). */
export type OrderedJobRow = JobRow & { orderKey: number | string | null };

/**
 * The columns a job list reads when its selection needs no more of each job (see
 * `listColumnsSuffice` in src/schema/job-connection.ts): its identity, name and status. sortAt is
 * the default order's key (its cursor). Everything else a job page asks for reads whole rows.
 */
export const JOB_LIST_FIELDS = ['id', 'providerId', 'externalId', 'name', 'status', 'rawStatus', 'sortAt'] as const;
/** A job as a list page reads it with JOB_LIST_FIELDS only. */
export type OrderedJobListRow = Pick<JobRow, (typeof JOB_LIST_FIELDS)[number]> & { orderKey: number | string | null };
/** Which columns a job page reads: whole rows, or JOB_LIST_FIELDS. */
export type JobPageColumns = 'all' | 'list';
/**
 * A job page asked for: up to `limit + 1` jobs of `filter` in `order` (DEFAULT_JOB_ORDER; ties by
 * id) strictly after `cursor`, or, going backward, the `limit + 1` strictly before it (nearest
 * first), reading `columns` ('all'). Keyset-paged in one statement, so deep pages cost the same
 * as the first, for any number of jobs.
 */
export interface JobPageQuery<C extends JobPageColumns = 'all'> {
  filter: JobFilter;
  limit: number;
  cursor: JobCursor | null;
  direction?: 'forward' | 'backward';
  order?: JobOrder;
  columns?: C;
}
/** A job page's row for the columns it read. */
export type JobPageRow<C extends JobPageColumns> = C extends 'list' ? OrderedJobListRow : OrderedJobRow;

/** A series' identity in the cache: its key (series_key) and the global ids of its node and GPU. */
export interface SeriesIdentity {
  key: string;
  nodeId: string | null;
  gpuId: string | null;
}

/** A point as it is written: `ts` in epoch milliseconds. */
export type PointWriteRow = [seriesId: number, key: number, ts: number | null, step: number | null, value: number | null];
