// The Postgres cache. Rows are keyed by the graph's global ids, so the same upstream object
// lands on the same row across restarts and replicas.
import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const providers = pgTable('providers', {
  id: text('id').primaryKey(),
  kind: text('kind').notNull(),
  name: text('name').notNull(),
  simulated: boolean('simulated').notNull().default(false),
  updatedAt: tstz('updated_at').notNull().defaultNow(),
});

/** When each provider-wide list was last refreshed, and how that went. */
export const providerSyncs = pgTable(
  'provider_syncs',
  {
    providerId: text('provider_id').notNull(),
    dataset: text('dataset').notNull(),
    syncedAt: tstz('synced_at'),
    attemptedAt: tstz('attempted_at').notNull(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
  },
  (t) => [primaryKey({ columns: [t.providerId, t.dataset] })],
);

export const projects = pgTable(
  'projects',
  {
    id: text('id').primaryKey(),
    providerId: text('provider_id').notNull(),
    externalId: text('external_id').notNull(),
    name: text('name').notNull(),
    createdAt: tstz('created_at'),
    seenAt: tstz('seen_at').notNull(),
  },
  (t) => [index('projects_provider_idx').on(t.providerId, t.name)],
);

export const jobs = pgTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    providerId: text('provider_id').notNull(),
    projectId: text('project_id').notNull(),
    externalId: text('external_id').notNull(),
    name: text('name').notNull(),
    status: text('status').notNull(),
    rawStatus: text('raw_status'),
    createdAt: tstz('created_at'),
    startedAt: tstz('started_at'),
    /** PLATFORM, CREATION or FIRST_METRIC (domain START_SOURCES); null while started_at is. */
    startedAtSource: text('started_at_source'),
    finishedAt: tstz('finished_at'),
    gpuType: text('gpu_type'),
    gpuCount: integer('gpu_count'),
    /** GPU, NPU or NONE: what gpu_count counts (null = the platform did not say). */
    acceleratorKind: text('accelerator_kind'),
    failureReason: text('failure_reason'),
    consoleUrl: text('console_url'),
    restartCount: integer('restart_count'),
    owner: text('owner'),
    /** { key: value | null }: a JSON object so label filters are containment (`@>`) and key (`?`) tests a GIN index answers. */
    labels: jsonb('labels').$type<Record<string, string | null>>(),
    config: jsonb('config').$type<Record<string, unknown>>(),
    image: text('image'),
    command: text('command'),
    /** Orders the jobs connection: newest first, ties by id (a stable cursor). */
    sortAt: tstz('sort_at').notNull(),
    seenAt: tstz('seen_at').notNull(),
    detailFetchedAt: tstz('detail_fetched_at'),
    /** When nodes and GPUs were last learned (from the job detail or from metrics). */
    topologyFetchedAt: tstz('topology_fetched_at'),
  },
  (t) => [
    index('jobs_sort_idx').on(t.sortAt.desc(), t.id.desc()),
    index('jobs_provider_sort_idx').on(t.providerId, t.sortAt.desc(), t.id.desc()),
    index('jobs_project_sort_idx').on(t.projectId, t.sortAt.desc(), t.id.desc()),
    index('jobs_owner_idx').on(t.owner),
    index('jobs_labels_idx').using('gin', t.labels),
  ],
);

/**
 * The latest and best value of each training metric of a job: what searches and
 * orderings on summary values read, one row per job and metric instead of a scan of the points.
 * Rebuilt from the stored training points whenever a job's training metrics are written; `best`
 * may also come from the platform (Runicorn's best metric), which names its direction (`mode`).
 */
export const jobSummaries = pgTable(
  'job_summaries',
  {
    jobId: text('job_id').notNull(),
    name: text('name').notNull(),
    /** The stage of the latest point (Runicorn: train/eval/...); a metric is summarized across its stages, as W&B keys a summary by name. */
    stage: text('stage'),
    latestValue: doublePrecision('latest_value'),
    latestStep: bigint('latest_step', { mode: 'number' }),
    latestAt: tstz('latest_at'),
    bestValue: doublePrecision('best_value'),
    bestStep: bigint('best_step', { mode: 'number' }),
    /** MAX or MIN; null when neither the platform nor the metric's name says which way is better. */
    mode: text('mode'),
    /** 'platform' when best came from the platform, 'series' when computed from the points. */
    bestSource: text('best_source'),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.name] }), index('job_summaries_metric_idx').on(t.name, t.latestValue)],
);

export const nodes = pgTable(
  'nodes',
  {
    id: text('id').primaryKey(),
    jobId: text('job_id').notNull(),
    externalId: text('external_id').notNull(),
    name: text('name').notNull(),
    ord: integer('ord').notNull(),
  },
  (t) => [index('nodes_job_idx').on(t.jobId, t.ord)],
);

export const gpus = pgTable(
  'gpus',
  {
    id: text('id').primaryKey(),
    jobId: text('job_id').notNull(),
    nodeId: text('node_id').notNull(),
    idx: integer('idx').notNull(),
    model: text('model'),
    memoryTotalBytes: doublePrecision('memory_total_bytes'),
  },
  (t) => [index('gpus_node_idx').on(t.nodeId, t.idx), index('gpus_job_idx').on(t.jobId)],
);

export const series = pgTable(
  'series',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** job | kind | name | source | stage | node | gpu: the identity of a series. */
    seriesKey: text('series_key').notNull(),
    jobId: text('job_id').notNull(),
    nodeId: text('node_id'),
    gpuId: text('gpu_id'),
    kind: text('kind').notNull(),
    name: text('name').notNull(),
    rawName: text('raw_name'),
    unit: text('unit').notNull(),
    scope: text('scope').notNull(),
    source: text('source').notNull(),
    stage: text('stage'),
    keyedBy: text('keyed_by').notNull(),
    meta: jsonb('meta').notNull().default(sql`'{}'::jsonb`),
    /** Epoch ms: raw points before it were dropped by retention (the rollups keep them); null = none dropped. */
    rawBefore: bigint('raw_before', { mode: 'number' }),
    /** Epoch ms (a UTC hour): 1-minute rollup rows before it were dropped by retention (the 1-hour rows keep them); null = none dropped. */
    minuteBefore: bigint('minute_before', { mode: 'number' }),
    /** Epoch ms (a UTC hour): 1-hour rollup rows before it were dropped by retention; null = none dropped. */
    hourBefore: bigint('hour_before', { mode: 'number' }),
  },
  (t) => [uniqueIndex('series_key_idx').on(t.seriesKey), index('series_job_idx').on(t.jobId, t.kind, t.name)],
);

/** One row per point: `key` is epoch ms for time-keyed series and the step for step-keyed ones. */
export const points = pgTable(
  'points',
  {
    seriesId: bigint('series_id', { mode: 'number' }).notNull(),
    key: bigint('key', { mode: 'number' }).notNull(),
    ts: tstz('ts'),
    step: integer('step'),
    value: doublePrecision('value'),
  },
  (t) => [primaryKey({ columns: [t.seriesId, t.key] })],
);

/**
 * Rollups of time-keyed series (`bucket` the epoch ms its minute or hour starts, UTC): non-null
 * values counted, their min, max, sum (in key order, so sum / n is the raw points' avg to the last
 * digit) and the last one. Kept by every points write (store/repo-point-writes.ts, rollUp): an
 * hour the write is the first to touch gets the rows worked out from the batch, one that already
 * had a row is recomputed from `points`, so a re-write of the same points leaves them as they
 * were; they outlive the raw points' retention.
 */
const rollupColumns = {
  seriesId: bigint('series_id', { mode: 'number' }).notNull(),
  bucket: bigint('bucket', { mode: 'number' }).notNull(),
  n: integer('n').notNull(),
  min: doublePrecision('min'),
  max: doublePrecision('max'),
  sum: doublePrecision('sum'),
  last: doublePrecision('last'),
};
export const points1m = pgTable('points_1m', rollupColumns, (t) => [primaryKey({ columns: [t.seriesId, t.bucket] })]);
export const points1h = pgTable('points_1h', rollupColumns, (t) => [primaryKey({ columns: [t.seriesId, t.bucket] })]);

/** What was fetched from upstream, for which range and when: the read-through cache's memory. */
export const fetches = pgTable(
  'fetches',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    jobId: text('job_id').notNull(),
    dataset: text('dataset').notNull(),
    rangeFrom: tstz('range_from').notNull(),
    rangeTo: tstz('range_to').notNull(),
    fetchedAt: tstz('fetched_at').notNull(),
    /** The resolution asked of upstream; a coarser fetch never answers a finer question. */
    stepSeconds: integer('step_seconds').notNull(),
    /** The job was finished when this was fetched: its data in the range can never change. */
    final: boolean('final').notNull(),
  },
  (t) => [index('fetches_job_idx').on(t.jobId, t.dataset, t.fetchedAt.desc())],
);

/** The last failed refresh of a job's dataset, so stale answers can say why. */
export const fetchErrors = pgTable(
  'fetch_errors',
  {
    jobId: text('job_id').notNull(),
    dataset: text('dataset').notNull(),
    failedAt: tstz('failed_at').notNull(),
    code: text('code').notNull(),
    message: text('message').notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.dataset] })],
);

export const progress = pgTable('progress', {
  jobId: text('job_id').primaryKey(),
  iteration: doublePrecision('iteration'),
  targetIteration: doublePrecision('target_iteration'),
  rate: doublePrecision('rate'),
  updatedAt: tstz('updated_at'),
  fetchedAt: tstz('fetched_at').notNull(),
});

/**
 * Jobs the collector fetched whole after they finished (src/collect/): never collected again, so a
 * restart does not redo them. A row, not a jobs column: what a job is and whether it was kept whole
 * are written by different parties.
 */
export const collectedJobs = pgTable('collected_jobs', {
  jobId: text('job_id').primaryKey(),
  completedAt: tstz('completed_at').notNull(),
});

/** One collector per provider across replicas: who holds each lease, until when (renewed each interval). */
export const collectLeases = pgTable('collect_leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: tstz('expires_at').notNull(),
});

/**
 * Findings (src/findings/): a condition the evaluator saw in the stored series, progress or status
 * of a job. One open row (ended_at null) per fingerprint at most; a row is never reopened, so its
 * firing and its resolution each happen once.
 */
export const findings = pgTable(
  'findings',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** kind | job | node | gpu | what else tells one occurrence from another (a restart count). */
    fingerprint: text('fingerprint').notNull(),
    kind: text('kind').notNull(),
    severity: text('severity').notNull(),
    providerId: text('provider_id').notNull(),
    projectId: text('project_id').notNull(),
    jobId: text('job_id').notNull(),
    nodeId: text('node_id'),
    gpuId: text('gpu_id'),
    summary: text('summary').notNull(),
    startedAt: tstz('started_at').notNull(),
    endedAt: tstz('ended_at'),
    /** The last evaluation that saw the condition. */
    lastSeenAt: tstz('last_seen_at').notNull(),
    /** FAILED and RESTARTED: resolved at this instant even though the condition stands. */
    holdUntil: tstz('hold_until'),
    evidence: jsonb('evidence').notNull().$type<Record<string, unknown>>(),
  },
  (t) => [
    uniqueIndex('findings_open_idx').on(t.fingerprint).where(sql`ended_at is null`),
    index('findings_fingerprint_idx').on(t.fingerprint),
    index('findings_job_idx').on(t.jobId, t.startedAt.desc()),
    index('findings_started_idx').on(t.startedAt.desc(), t.id.desc()),
  ],
);

/** Each finding's firing and resolution, once each (the unique key): what subscribers and delivery read. */
export const findingEvents = pgTable(
  'finding_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    findingId: bigint('finding_id', { mode: 'number' }).notNull(),
    /** FIRING or RESOLVED. */
    event: text('event').notNull(),
    at: tstz('at').notNull(),
  },
  (t) => [uniqueIndex('finding_events_once_idx').on(t.findingId, t.event)],
);

/**
 * Alert delivery's outbox (src/alerts/): each finding transition, written by the same statement
 * that records it (finding_events), so a transition is never lost between the two. The delivering
 * replica routes each row to its receivers (alert_notifications) and deletes it, in one transaction.
 */
export const alertOutbox = pgTable(
  'alert_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    findingId: bigint('finding_id', { mode: 'number' }).notNull(),
    /** FIRING or RESOLVED. */
    event: text('event').notNull(),
    at: tstz('at').notNull(),
  },
  (t) => [uniqueIndex('alert_outbox_once_idx').on(t.findingId, t.event)],
);

/** One notification of one transition to one receiver: its delivery state and attempts. */
export const alertNotifications = pgTable(
  'alert_notifications',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    findingId: bigint('finding_id', { mode: 'number' }).notNull(),
    event: text('event').notNull(),
    receiver: text('receiver').notNull(),
    /** Sent as the Idempotency-Key header and in the body: the same for every attempt. */
    idempotencyKey: text('idempotency_key').notNull(),
    /** PENDING, DELIVERED, SILENCED, SUPPRESSED or FAILED (src/alerts/deliverer.ts). */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    createdAt: tstz('created_at').notNull(),
    nextAttemptAt: tstz('next_attempt_at').notNull(),
    /** The first attempt: giving up is counted from it (not from routing: a silence may hold a notification for days). */
    firstAttemptAt: tstz('first_attempt_at'),
    lastAttemptAt: tstz('last_attempt_at'),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    deliveredAt: tstz('delivered_at'),
  },
  (t) => [
    uniqueIndex('alert_notifications_key_idx').on(t.idempotencyKey),
    index('alert_notifications_due_idx').on(t.nextAttemptAt).where(sql`state in ('PENDING', 'SILENCED')`),
    index('alert_notifications_finding_idx').on(t.findingId),
  ],
);

/** Silences (Mutation.silenceFindings): findings they match are not delivered while they last. */
export const alertSilences = pgTable('alert_silences', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  /** { kinds, severities, providerIds, projectIds, jobIds, owners, labels }: every one given must hold. */
  matchers: jsonb('matchers').notNull().$type<Record<string, unknown>>(),
  /** The creator's token scope ({ providers, projects }, null = all): a silence never reaches past what its creator sees. */
  scope: jsonb('scope').$type<{ providers: string[] | null; projects: string[] | null }>(),
  startsAt: tstz('starts_at').notNull(),
  endsAt: tstz('ends_at').notNull(),
  comment: text('comment').notNull(),
  createdBy: text('created_by').notNull(),
  createdAt: tstz('created_at').notNull(),
  expiredBy: text('expired_by'),
});

/** Acknowledgements (Mutation.acknowledgeFinding): who took a finding on, when, why; one per finding. */
export const findingAcks = pgTable('finding_acks', {
  findingId: bigint('finding_id', { mode: 'number' }).primaryKey(),
  by: text('by').notNull(),
  at: tstz('at').notNull(),
  comment: text('comment').notNull(),
});
