// The store's SQL, behind one facade: Repository's methods delegate to its dataset modules, each
// with the statements of one dataset (repo-job-pages, repo-jobs, repo-topology, repo-point-writes,
// repo-point-reads, repo-metric-reads, repo-fetches), through the view they share (repo-context).
// Bulk upserts go through jsonb_to_recordset (one statement per table per batch, whatever the
// fan-out) and reads are set-based, keyed by id lists.
import type { RequestScope } from '../domain/request-scope.js';
import type { JobRecord, NodeRecord, ProjectRecord, SeriesData, Aggregation } from '../domain/types.js';
import type { Database, Db } from './db.js';
import type { JobFilter } from './job-filter.js';
import type { JobShapes } from './job-shapes.js';
import { HandleState, RepoContext } from './repo-context.js';
import * as fetches from './repo-fetches.js';
import * as jobPages from './repo-job-pages.js';
import * as jobData from './repo-jobs.js';
import * as metricReads from './repo-metric-reads.js';
import * as pointReads from './repo-point-reads.js';
import * as pointChunks from './point-chunks.js';
import * as rollupChunks from './rollup-chunks.js';
import * as hourRollups from './hour-rollups.js';
import * as pointWrites from './repo-point-writes.js';
import * as rollupRetention from './rollup-retention.js';
import * as topology from './repo-topology.js';
import type {
  AccelSeriesQuery,
  ComparisonQuery,
  FetchErrorRow,
  FetchRow,
  JobPageColumns,
  JobPageQuery,
  JobPageRow,
  JobRow,
  JobSummaryRow,
  LatestReadingsQuery,
  PointWriteRow,
  ProgressRow,
  ProviderSyncRow,
  SeriesIdentity,
  SeriesWindow,
  SummaryRow,
  PointRow,
  WrittenRange,
  AccelSeriesRow,
  ComparisonRow,
  GpuRow,
  NodeRow,
  ProjectRow,
  SeriesRow,
} from './repo-types.js';
import type { PointBatch } from './sql-util.js';

export type * from './repo-types.js';
export { JOB_LIST_FIELDS } from './repo-types.js';
export { columnsOf, pointBatch, pointBatchByKey, seriesIdentity, seriesKey, withSeriesIds } from './point-batch.js';
export { HOURLY_FROM_MS, ROLLUP_ABOVE_POINTS } from './repo-point-reads.js';
export { ANALYZE_AFTER_POINTS, bucketOf, HOUR_MS, MINUTE_MS, POINTS_PER_STATEMENT, SERIES_PER_STATEMENT } from './repo-point-writes.js';
export { labelObject } from './repo-jobs.js';

export class Repository {
  /** Repository.of opens the door; views (within) and transactions are made from a repository. */
  private constructor(private readonly ctx: RepoContext) {}

  /** The repository of an opened database, its job pages read through its short-read client. */
  static of(database: Pick<Database, 'db' | 'shortReads'>): Repository {
    return new Repository(new RepoContext(database.db, false, new HandleState(), undefined, database.shortReads));
  }

  get db(): Db {
    return this.ctx.db;
  }

  /** What the store knows of each job's size, reloaded from the tables when old (in the background). */
  shapes(): JobShapes {
    this.ctx.state.shapes.refreshIfOld(this.ctx.db);
    return this.ctx.state.shapes;
  }

  /** Reloads the jobs' sizes from the tables now (after the tables were emptied, say). */
  reloadShapes(): Promise<void> {
    return this.ctx.state.shapes.load(this.ctx.db);
  }

  /**
   * The same repository reading for one operation: a statement it issues is cancelled when the
   * operation is abandoned (time-out, client gone). Undefined: the shared handle (background work).
   */
  within(scope: RequestScope | undefined): Repository {
    const ctx = this.ctx.within(scope);
    return ctx === this.ctx ? this : new Repository(ctx);
  }

  /** Writes that belong together, in one transaction (RepoContext.transaction says why and how). */
  transaction<T>(work: (repo: Repository) => Promise<T>): Promise<T> {
    return this.ctx.transaction((ctx) => work(new Repository(ctx)));
  }

  // ---- job lists and providers -------------------------------------------------------------------

  upsertProviders(rows: { id: string; kind: string; name: string; simulated: boolean }[]) {
    return jobPages.upsertProviders(this.ctx, rows);
  }

  providerSyncs(providerIds: readonly string[], dataset: string): Promise<ProviderSyncRow[]> {
    return jobPages.providerSyncs(this.ctx, providerIds, dataset);
  }

  expireJobLists(providerIds: readonly string[]) {
    return jobPages.expireJobLists(this.ctx, providerIds);
  }

  recordProviderSync(row: ProviderSyncRow) {
    return jobPages.recordProviderSync(this.ctx, row);
  }

  /** jobsPage with the job-list records of `providerIds` in the same statement, for a plain filter (null for others). */
  jobsPageWithListSyncs<C extends JobPageColumns = 'all'>(
    providerIds: readonly string[],
    q: JobPageQuery<C>,
  ): Promise<{ rows: JobPageRow<C>[]; syncs: ProviderSyncRow[] | null } | null> {
    return jobPages.jobsPageWithListSyncs(this.ctx, providerIds, q);
  }

  jobsPage<C extends JobPageColumns = 'all'>(q: JobPageQuery<C>): Promise<JobPageRow<C>[]> {
    return jobPages.jobsPage(this.ctx, q);
  }

  jobsCount(filter: JobFilter): Promise<number> {
    return jobPages.jobsCount(this.ctx, filter);
  }

  // ---- projects and jobs -------------------------------------------------------------------------

  upsertCatalog(providerId: string, projects: ProjectRecord[], jobs: JobRecord[], seenAt: Date, listed = false): Promise<Set<string>> {
    return jobData.upsertCatalog(this.ctx, providerId, projects, jobs, seenAt, listed);
  }

  touchListedCatalog(
    providerId: string,
    projects: ProjectRecord[],
    jobs: JobRecord[],
    seenAt: Date,
    unlistedLimit: number,
  ): Promise<{ unlisted: string[] } | null> {
    return jobData.touchListedCatalog(this.ctx, providerId, projects, jobs, seenAt, unlistedLimit);
  }

  upsertJobs(providerId: string, jobs: readonly JobRecord[], seenAt: Date, detailFetched = false): Promise<Set<string>> {
    return jobData.upsertJobs(this.ctx, providerId, jobs, seenAt, detailFetched);
  }

  lockJobSummaries(jobIds: readonly string[]) {
    return jobData.lockJobSummaries(this.ctx, jobIds);
  }

  refreshSummaries(jobIds: readonly string[], written?: readonly WrittenRange[]) {
    return jobData.refreshSummaries(this.ctx, jobIds, written);
  }

  summariesOfJobs(jobIds: readonly string[]): Promise<JobSummaryRow[]> {
    return jobData.summariesOfJobs(this.ctx, jobIds);
  }

  claimStatusChanges(claims: readonly { id: string; status: string }[]): Promise<Map<string, string>> {
    return jobData.claimStatusChanges(this.ctx, claims);
  }

  unfinishedJobsOf(providerId: string): Promise<JobRow[]> {
    return jobData.unfinishedJobsOf(this.ctx, providerId);
  }

  markGone(jobs: readonly { id: string; status: string }[], at: Date): Promise<Map<string, string>> {
    return jobData.markGone(this.ctx, jobs, at);
  }

  unlistedUnfinishedJobsOf(providerId: string, listed: readonly string[], limit: number): Promise<JobRow[]> {
    return jobData.unlistedUnfinishedJobsOf(this.ctx, providerId, listed, limit);
  }

  knownJobIds(ids: readonly string[]): Promise<Set<string>> {
    return jobData.knownJobIds(this.ctx, ids);
  }

  jobsByIds(ids: readonly string[]): Promise<JobRow[]> {
    return jobData.jobsByIds(this.ctx, ids);
  }

  projectsByIds(ids: readonly string[]): Promise<ProjectRow[]> {
    return jobData.projectsByIds(this.ctx, ids);
  }

  projectsOf(providerIds: readonly string[]): Promise<ProjectRow[]> {
    return jobData.projectsOf(this.ctx, providerIds);
  }

  // ---- reads across jobs' metrics ----------------------------------------------------------------

  comparePoints(q: ComparisonQuery): Promise<ComparisonRow[]> {
    return metricReads.comparePoints(this.ctx, q);
  }

  latestReadings(q: LatestReadingsQuery) {
    return metricReads.latestReadings(this.ctx, q);
  }

  accelSeriesInWindow(q: AccelSeriesQuery): Promise<AccelSeriesRow[]> {
    return metricReads.accelSeriesInWindow(this.ctx, q);
  }

  rawPointsInWindow(seriesIds: readonly number[], from: Date, to: Date): Promise<{ seriesId: number; ts: number[]; values: number[] }[]> {
    return metricReads.rawPointsInWindow(this.ctx, seriesIds, from, to);
  }

  promPointsInWindow(
    seriesIds: readonly number[],
    from: number,
    to: number,
    maxPoints: number,
  ): Promise<{ series: { seriesId: number; ts: Float64Array; values: Float64Array }[]; total: number }> {
    return metricReads.promPointsInWindow(this.ctx, seriesIds, from, to, maxPoints);
  }

  // ---- topology ----------------------------------------------------------------------------------

  writeTopology(providerId: string, entries: { job: JobRow; nodes: NodeRecord[] }[], at: Date) {
    return topology.writeTopology(this.ctx, providerId, entries, at);
  }

  nodesOfJobs(jobIds: readonly string[]): Promise<NodeRow[]> {
    return topology.nodesOfJobs(this.ctx, jobIds);
  }

  nodesByIds(ids: readonly string[]): Promise<NodeRow[]> {
    return topology.nodesByIds(this.ctx, ids);
  }

  gpusOfJobs(jobIds: readonly string[]): Promise<GpuRow[]> {
    return topology.gpusOfJobs(this.ctx, jobIds);
  }

  gpusByIds(ids: readonly string[]): Promise<GpuRow[]> {
    return topology.gpusByIds(this.ctx, ids);
  }

  // ---- series and points writes ------------------------------------------------------------------

  writeSeries(providerId: string, entries: { job: JobRow; series: SeriesData[] }[]) {
    return pointWrites.writeSeries(this.ctx, providerId, entries);
  }

  writeSeriesRows(
    providerId: string,
    entries: { job: JobRow; series: SeriesData[]; identities?: readonly SeriesIdentity[]; stored?: boolean }[],
  ): Promise<Map<string, number>> {
    return pointWrites.writeSeriesRows(this.ctx, providerId, entries);
  }

  startFromFirstPoints(jobIds: readonly string[]): Promise<void> {
    return pointWrites.startFromFirstPoints(this.ctx, jobIds);
  }

  writePoints(points: PointBatch | readonly PointWriteRow[], opts: { expectNew?: boolean } = {}): Promise<void> {
    return pointWrites.writePoints(this.ctx, points, opts);
  }

  writePointBatches(batches: readonly PointBatch[], opts: { expectNew?: boolean } = {}): Promise<void> {
    return pointWrites.writePointBatches(this.ctx, batches, opts);
  }

  dropRawPointsBatch(
    providerId: string,
    before: number,
    after: number,
    batch: number,
    keepFinishedSince: number | null = null,
  ): Promise<{ last: number | null; deleted: number }> {
    return pointWrites.dropRawPointsBatch(this.ctx, providerId, before, after, batch, keepFinishedSince);
  }

  dropMinuteRollupsBatch(providerId: string, before: number, after: number, batch: number): Promise<{ last: number | null; deleted: number }> {
    return rollupRetention.dropMinuteRollupsBatch(this.ctx, providerId, before, after, batch);
  }

  dropHourRollupsBatch(providerId: string, before: number, after: number, batch: number): Promise<{ last: number | null; deleted: number }> {
    return rollupRetention.dropHourRollupsBatch(this.ctx, providerId, before, after, batch);
  }

  compactRawPointsBatch(
    providerId: string,
    before: number,
    after: number,
    batch: number,
  ): Promise<{ last: number | null; chunks: number; points: number; done: boolean }> {
    return pointChunks.compactRawPointsBatch(this.ctx, providerId, before, after, batch);
  }

  analyzeChunks(): Promise<void> {
    return pointChunks.analyzeChunks(this.ctx);
  }

  dropRawChunks(providerId: string, before: number, keepFinishedSince: number | null = null): Promise<{ dropped: number; hidden: number }> {
    return pointChunks.dropRawChunks(this.ctx, providerId, before, keepFinishedSince);
  }

  chunkPartitions(): Promise<{ name: string; start: number; end: number }[]> {
    return pointChunks.chunkPartitions(this.ctx);
  }

  compactRollupsBatch(
    providerId: string,
    before: number,
    after: number,
    batch: number,
  ): Promise<{ last: number | null; chunks: number; rows: number; done: boolean }> {
    return rollupChunks.compactRollupsBatch(this.ctx, providerId, before, after, batch);
  }

  analyzeRollupChunks(): Promise<void> {
    return rollupChunks.analyzeRollupChunks(this.ctx);
  }

  /** 1-minute retention of compacted rollups (rollup-chunks.ts): the days hidden by the series' cut, month partitions dropped once all hidden. */
  dropRollupChunks(providerId: string, before: number): Promise<{ dropped: number; hidden: number }> {
    return rollupChunks.dropRollupChunks(this.ctx, providerId, before);
  }

  rollupChunkPartitions(): Promise<{ name: string; start: number; end: number }[]> {
    return rollupChunks.rollupChunkPartitions(this.ctx);
  }

  compactHourRollupsBatch(
    providerId: string,
    before: number,
    after: number,
    batch: number,
  ): Promise<{ last: number | null; chunks: number; rows: number; done: boolean }> {
    return hourRollups.compactHourRollupsBatch(this.ctx, providerId, before, after, batch);
  }

  analyzeHourRollupChunks(): Promise<void> {
    return hourRollups.analyzeHourRollupChunks(this.ctx);
  }

  /** 1-hour retention of compacted rollups (hour-rollups.ts): whole year partitions dropped where only the provider's series are in them, else its months' chunk rows. */
  dropHourRollupChunks(providerId: string, before: number): Promise<{ dropped: number; deleted: number }> {
    return hourRollups.dropHourRollupChunks(this.ctx, providerId, before);
  }

  hourRollupChunkPartitions(): Promise<{ name: string; start: number; end: number }[]> {
    return hourRollups.hourRollupChunkPartitions(this.ctx);
  }

  /** PGlite: vacuums each of `tables` whose dead rows pass autovacuum's rule; PostgreSQL: nothing (repo-point-writes.ts). */
  vacuumDeadRows(tables: readonly pointWrites.VacuumedTable[]): Promise<pointWrites.VacuumedTable[]> {
    return pointWrites.vacuumDeadRows(this.ctx, tables);
  }

  maintainStatistics(pointsWritten: number): Promise<boolean> {
    return pointWrites.maintainStatistics(this.ctx, pointsWritten);
  }

  // ---- point reads -------------------------------------------------------------------------------

  seriesOfJobs(jobIds: readonly string[], kind: 'system' | 'training'): Promise<SeriesRow[]> {
    return pointReads.seriesOfJobs(this.ctx, jobIds, kind);
  }

  lastTrainingPointTimes(jobIds: readonly string[]): Promise<Map<string, Date>> {
    return pointReads.lastTrainingPointTimes(this.ctx, jobIds);
  }

  pointsOf(windows: readonly SeriesWindow[], maxPoints: number, aggregation: Aggregation): Promise<PointRow[]> {
    return pointReads.pointsOf(this.ctx, windows, maxPoints, aggregation);
  }

  pointsAt(windows: readonly SeriesWindow[], maxPoints: number, aggregation: Aggregation): Promise<{ points: PointRow[]; resolutions: Map<number, number> }> {
    return pointReads.pointsAt(this.ctx, windows, maxPoints, aggregation);
  }

  summariesOf(windows: readonly SeriesWindow[]): Promise<SummaryRow[]> {
    return pointReads.summariesOf(this.ctx, windows);
  }

  // ---- fetch records, collection, progress -------------------------------------------------------

  fetchesOf(jobIds: readonly string[], datasets: readonly string[]): Promise<FetchRow[]> {
    return fetches.fetchesOf(this.ctx, jobIds, datasets);
  }

  recordFetches(rows: Omit<FetchRow, 'id'>[]) {
    return fetches.recordFetches(this.ctx, rows);
  }

  /** recordFetches, clearFetchErrors of the same keys and startFromFirstPoints of `startJobIds`, in one statement. */
  recordFetched(rows: Omit<FetchRow, 'id'>[], startJobIds: readonly string[]) {
    return fetches.recordFetched(this.ctx, rows, startJobIds);
  }

  fetchErrorsOf(jobIds: readonly string[], datasets: readonly string[]): Promise<FetchErrorRow[]> {
    return fetches.fetchErrorsOf(this.ctx, jobIds, datasets);
  }

  recordFetchErrors(rows: FetchErrorRow[]) {
    return fetches.recordFetchErrors(this.ctx, rows);
  }

  clearFetchErrors(keys: { jobId: string; dataset: string }[]) {
    return fetches.clearFetchErrors(this.ctx, keys);
  }

  collectionTargets(providerId: string, keptSince: Date | null): Promise<{ unfinished: JobRow[]; finished: JobRow[]; expired: number }> {
    return fetches.collectionTargets(this.ctx, providerId, keptSince);
  }

  markCollected(jobIds: readonly string[], at: Date) {
    return fetches.markCollected(this.ctx, jobIds, at);
  }

  collectedOf(jobIds: readonly string[]): Promise<Set<string>> {
    return fetches.collectedOf(this.ctx, jobIds);
  }

  tryLease(name: string, holder: string, now: Date, expiresAt: Date): Promise<boolean> {
    return fetches.tryLease(this.ctx, name, holder, now, expiresAt);
  }

  releaseLease(name: string, holder: string) {
    return fetches.releaseLease(this.ctx, name, holder);
  }

  progressOf(jobIds: readonly string[]): Promise<ProgressRow[]> {
    return fetches.progressOf(this.ctx, jobIds);
  }

  writeProgress(rows: ProgressRow[]) {
    return fetches.writeProgress(this.ctx, rows);
  }
}
