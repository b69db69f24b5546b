// Which jobs a list, a count, a fleet question or a status stream selects, and in what order a list
// presents them: one definition, written as SQL for the cache (pages, counts, fleet windows) and as
// a predicate for jobs that arrive on a live stream. The two forms sit side by side so they cannot drift apart (test/store/job-filter.test.ts
// checks they agree).
import { inArray, sql, type SQL } from 'drizzle-orm';
import type { PriceEntry } from '../domain/ledger.js';
import { costOrderSql, type WasteStep, wasteOrderSql } from './ledger-order.js';
import { textArray } from './sql-util.js';
import * as t from './tables.js';
import { TERMINAL_STATUSES } from '../domain/types.js';

/** A time window over one of a job's instants; either end may be open. A job without that instant never matches. */
export interface TimeWindow {
  from?: Date | null;
  to?: Date | null;
}

/** A label condition: the key is present (value undefined) or has exactly this value (null = a bare tag). */
export interface LabelCondition {
  key: string;
  value?: string | null;
}

/** A condition on a job's summary value of one training metric (job_summaries); all comparisons given must hold. */
export interface SummaryCondition {
  metric: string;
  value: 'LATEST' | 'BEST';
  gt?: number | null;
  gte?: number | null;
  lt?: number | null;
  lte?: number | null;
}

export interface JobFilter {
  providerIds?: readonly string[] | null;
  statuses?: readonly string[] | null;
  projectId?: string | null;
  /** Case-insensitive substring of the job name. */
  nameContains?: string | null;
  /** Confines the jobs to these projects (an API token's scope); null = no such confinement. */
  projectIds?: readonly string[] | null;
  /** Every condition must hold. */
  labels?: readonly LabelCondition[] | null;
  /** The job's owner is one of these, as people type it (ownerTerms: a name or an address, any case). */
  owners?: readonly string[] | null;
  created?: TimeWindow | null;
  started?: TimeWindow | null;
  finished?: TimeWindow | null;
  /** The job has cached training series of each of these names. Cache only: not for a live stream. */
  hasTrainingMetrics?: readonly string[] | null;
  /** Conditions on cached summary values. Cache only: not for a live stream. */
  summary?: readonly SummaryCondition[] | null;
}

/** The conditions a live stream cannot test on a job alone (they read other tables). */
export function cacheOnlyConditions(filter: JobFilter): string[] {
  return [...(filter.hasTrainingMetrics?.length ? ['hasTrainingMetrics'] : []), ...(filter.summary?.length ? ['summary'] : [])];
}

function windowConditions(column: SQL | typeof t.jobs.createdAt, w: TimeWindow | null | undefined): SQL[] {
  if (!w) return [];
  const out: SQL[] = [];
  if (w.from) out.push(sql`${column} >= ${w.from.toISOString()}::timestamptz`);
  if (w.to) out.push(sql`${column} <= ${w.to.toISOString()}::timestamptz`);
  return out;
}

const COMPARATORS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * Owners as people type them: case does not matter, and a name matches an address whose local
 * part it is (`alice` finds Baseten's `alice@example.com`, `alice@example.com` finds Runicorn's
 * `alice`). Two addresses match only whole. Lower-cased: names (and addresses' local parts, which
 * match owners that are names), and addresses.
 */
export function ownerTerms(owners: readonly string[]): { names: string[]; addresses: string[]; addressLocals: string[] } {
  const names: string[] = [];
  const addresses: string[] = [];
  const addressLocals: string[] = [];
  for (const raw of owners) {
    const o = raw.trim().toLowerCase();
    const at = o.indexOf('@');
    if (at < 0) names.push(o);
    else {
      addresses.push(o);
      addressLocals.push(o.slice(0, at));
    }
  }
  return { names, addresses, addressLocals };
}

/** The SQL test of ownerTerms, each list a text[] (literal or placeholder). */
function ownerCondition(names: SQL, addresses: SQL, addressLocals: SQL): SQL {
  const owner = t.jobs.owner;
  return sql`(split_part(lower(${owner}), '@', 1) = any(${names})
    or lower(${owner}) = any(${addresses})
    or (strpos(${owner}, '@') = 0 and lower(${owner}) = any(${addressLocals})))`;
}

function ownerMatches(owner: string | null | undefined, owners: readonly string[]): boolean {
  if (owner == null) return false;
  const { names, addresses, addressLocals } = ownerTerms(owners);
  const o = owner.toLowerCase();
  return names.includes(o.split('@')[0]!) || addresses.includes(o) || (!o.includes('@') && addressLocals.includes(o));
}

/** The summary column a condition or an ordering reads. */
export function summaryColumn(value: 'LATEST' | 'BEST'): SQL {
  return sql.raw(value === 'BEST' ? 'js.best_value' : 'js.latest_value');
}

/** The filter as SQL conditions on the jobs table (all must hold). */
export function jobFilterConditions(filter: JobFilter): SQL[] {
  const cond: SQL[] = [];
  if (filter.providerIds) cond.push(inArray(t.jobs.providerId, [...filter.providerIds]));
  if (filter.statuses) cond.push(inArray(t.jobs.status, [...filter.statuses]));
  if (filter.projectId) cond.push(sql`${t.jobs.projectId} = ${filter.projectId}`);
  if (filter.projectIds) cond.push(inArray(t.jobs.projectId, [...filter.projectIds]));
  if (filter.nameContains) {
    const pattern = `%${filter.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    cond.push(sql`${t.jobs.name} ilike ${pattern}`);
  }
  for (const l of filter.labels ?? []) {
    // Both forms are answered by the GIN index on labels (jsonb_ops: @> and ?).
    if (l.value === undefined) cond.push(sql`${t.jobs.labels} ? ${l.key}`);
    else cond.push(sql`${t.jobs.labels} @> ${JSON.stringify({ [l.key]: l.value })}::jsonb`);
  }
  if (filter.owners) {
    const terms = ownerTerms(filter.owners);
    cond.push(ownerCondition(textArray(terms.names), textArray(terms.addresses), textArray(terms.addressLocals)));
  }
  cond.push(...windowConditions(t.jobs.createdAt, filter.created));
  cond.push(...windowConditions(t.jobs.startedAt, filter.started));
  cond.push(...windowConditions(t.jobs.finishedAt, filter.finished));
  for (const name of filter.hasTrainingMetrics ?? []) {
    cond.push(sql`exists (select 1 from series s where s.job_id = ${t.jobs.id} and s.kind = 'training' and s.name = ${name})`);
  }
  for (const c of filter.summary ?? []) {
    const tests = (Object.keys(COMPARATORS) as (keyof typeof COMPARATORS)[])
      .filter((k) => c[k] !== undefined && c[k] !== null)
      .map((k) => sql`${summaryColumn(c.value)} ${sql.raw(COMPARATORS[k])} ${c[k]}::float8`);
    cond.push(sql`exists (select 1 from job_summaries js where js.job_id = ${t.jobs.id} and js.name = ${c.metric}
      and ${sql.join(tests, sql` and `)})`);
  }
  return cond;
}

/**
 * The plain conditions (id lists, a project, owners) a prepared statement answers: a key naming
 * which of them the filter has, or null when it has any other condition (a name, labels, time
 * windows, training metrics, summaries), whose statement jobFilterConditions builds each time.
 */
export function preparedFilterShape(filter: JobFilter): string | null {
  if (filter.nameContains || filter.labels?.length || filter.created || filter.started || filter.finished) return null;
  if (filter.hasTrainingMetrics?.length || filter.summary?.length) return null;
  return `${filter.providerIds ? 'P' : ''}${filter.statuses ? 'S' : ''}${filter.projectId ? 'J' : ''}${filter.projectIds ? 'Q' : ''}${filter.owners ? 'O' : ''}`;
}

/**
 * jobFilterConditions for a filter preparedFilterShape accepts, with its values as placeholders
 * (preparedFilterValues binds them): each list is one text[] parameter, whatever its length.
 */
export function preparedFilterConditions(filter: JobFilter): SQL[] {
  const list = (name: string) => sql`${sql.placeholder(name)}::text[]`;
  const cond: SQL[] = [];
  if (filter.providerIds) cond.push(sql`${t.jobs.providerId} = any(${list('providerIds')})`);
  if (filter.statuses) cond.push(sql`${t.jobs.status} = any(${list('statuses')})`);
  if (filter.projectId) cond.push(sql`${t.jobs.projectId} = ${sql.placeholder('projectId')}::text`);
  if (filter.projectIds) cond.push(sql`${t.jobs.projectId} = any(${list('projectIds')})`);
  if (filter.owners) cond.push(ownerCondition(list('ownerNames'), list('ownerAddresses'), list('ownerAddressLocals')));
  return cond;
}

/** The values preparedFilterConditions' placeholders take. */
export function preparedFilterValues(filter: JobFilter): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  if (filter.providerIds) values.providerIds = [...filter.providerIds];
  if (filter.statuses) values.statuses = [...filter.statuses];
  if (filter.projectId) values.projectId = filter.projectId;
  if (filter.projectIds) values.projectIds = [...filter.projectIds];
  if (filter.owners) {
    const terms = ownerTerms(filter.owners);
    values.ownerNames = terms.names;
    values.ownerAddresses = terms.addresses;
    values.ownerAddressLocals = terms.addressLocals;
  }
  return values;
}

interface MatchableJob {
  providerId: string;
  status: string;
  projectId: string;
  name: string;
  owner?: string | null;
  labels?: Record<string, string | null> | null;
  createdAt?: Date | null;
  startedAt?: Date | null;
  finishedAt?: Date | null;
}

function inWindow(at: Date | null | undefined, w: TimeWindow | null | undefined): boolean {
  if (!w) return true;
  if (!at) return false;
  return (!w.from || at >= w.from) && (!w.to || at <= w.to);
}

/** The same filter as a predicate, for a job that was not read through SQL (a live status event). */
export function jobMatches(filter: JobFilter, job: MatchableJob): boolean {
  if (filter.providerIds && !filter.providerIds.includes(job.providerId)) return false;
  if (filter.statuses && !filter.statuses.includes(job.status)) return false;
  if (filter.projectId && job.projectId !== filter.projectId) return false;
  if (filter.projectIds && !filter.projectIds.includes(job.projectId)) return false;
  if (filter.nameContains && !job.name.toLowerCase().includes(filter.nameContains.toLowerCase())) return false;
  for (const l of filter.labels ?? []) {
    const labels = job.labels ?? {};
    if (!Object.hasOwn(labels, l.key)) return false;
    if (l.value !== undefined && labels[l.key] !== l.value) return false;
  }
  if (filter.owners && !ownerMatches(job.owner, filter.owners)) return false;
  if (!inWindow(job.createdAt, filter.created) || !inWindow(job.startedAt, filter.started) || !inWindow(job.finishedAt, filter.finished)) return false;
  if (cacheOnlyConditions(filter).length > 0) throw new Error('hasTrainingMetrics and summary conditions are answered in SQL only');
  return true;
}

export type JobOrderKey = 'CREATED' | 'STARTED' | 'DURATION' | 'NAME' | 'ACCELERATOR_COUNT' | 'SUMMARY' | 'COST' | 'WASTE';

/** How a job list is ordered; ties are broken by job id in the same direction, so cursors are stable. */
export interface JobOrder {
  by: JobOrderKey;
  direction: 'ASC' | 'DESC';
  /** For SUMMARY: which metric's summary value. */
  summary?: { metric: string; value: 'LATEST' | 'BEST' } | null;
  /** For DURATION, COST and WASTE: the instant a running job's duration is measured to (a cursor keeps the first page's). */
  now?: Date | null;
  /** For COST: the price table (the ledger's; src/store/ledger-order.ts). */
  prices?: readonly PriceEntry[];
  /** For WASTE: how a job's life is stepped (the step a series with too few readings to tell its own holds for). */
  wasteStep?: WasteStep;
}

/** Newest first: creation time (else start, else first seen), the list's order when none is asked. */
export const DEFAULT_JOB_ORDER: JobOrder = { by: 'CREATED', direction: 'DESC' };

/** A position in an ordered list: the order key of the last row seen (null = the row had none) and its id. */
export interface JobCursor {
  key: number | string | null;
  id: string;
}

/**
 * The order's key as SQL. Numeric keys are float8 with a missing value (a job not started, a
 * summary not known) mapped past every real one, so such jobs come last in either direction and
 * keyset comparisons never meet a null.
 */
export function orderKeySql(order: JobOrder): SQL {
  const missing = sql.raw(order.direction === 'ASC' ? `'Infinity'::float8` : `'-Infinity'::float8`);
  switch (order.by) {
    case 'CREATED':
      return sql`${t.jobs.sortAt}`;
    case 'NAME':
      return sql`(${t.jobs.name} collate "C")`;
    case 'STARTED':
      return sql`coalesce(extract(epoch from ${t.jobs.startedAt})::float8 * 1000, ${missing})`;
    case 'ACCELERATOR_COUNT':
      return sql`coalesce(${t.jobs.gpuCount}::float8, ${missing})`;
    case 'DURATION': {
      // An ended job whose platform gave no finish time has no known duration (ranFor is null), so
      // it sorts with the jobs that lack the key rather than as if it still ran until now.
      const now = (order.now ?? new Date()).toISOString();
      const ended = sql.raw(`(${[...TERMINAL_STATUSES].map((s) => `'${s}'`).join(', ')})`);
      const end = sql`case when ${t.jobs.finishedAt} is not null then ${t.jobs.finishedAt}
        when ${t.jobs.status} in ${ended} then null else ${now}::timestamptz end`;
      return sql`coalesce(extract(epoch from (${end} - ${t.jobs.startedAt}))::float8, ${missing})`;
    }
    case 'COST':
      return sql`coalesce(${costOrderSql(order.prices ?? [], order.now ?? new Date())}, ${missing})`;
    case 'WASTE':
      return sql`coalesce(${wasteOrderSql(order.now ?? new Date(), order.wasteStep ?? { minStepSeconds: 15, points: 120 })}, ${missing})`;
    case 'SUMMARY': {
      const s = order.summary!;
      return sql`coalesce((select ${summaryColumn(s.value)} from job_summaries js where js.job_id = ${t.jobs.id}
        and js.name = ${s.metric}), ${missing})`;
    }
  }
}

/** The cursor's key as an SQL value comparable with orderKeySql. */
export function cursorKeySql(order: JobOrder, key: number | string | null): SQL {
  if (order.by === 'CREATED') return sql`${new Date(Number(key)).toISOString()}::timestamptz`;
  if (order.by === 'NAME') return sql`(${String(key)} collate "C")`;
  if (key === null) return sql.raw(order.direction === 'ASC' ? `'Infinity'::float8` : `'-Infinity'::float8`);
  return sql`${Number(key)}::float8`;
}

/** cursorKeySql with the key as the placeholder `cursorKey` (preparedCursorKey binds it); not for a missing numeric key. */
export function preparedCursorKeySql(order: JobOrder): SQL {
  const key = sql.placeholder('cursorKey');
  if (order.by === 'CREATED') return sql`${key}::timestamptz`;
  if (order.by === 'NAME') return sql`(${key}::text collate "C")`;
  return sql`${key}::float8`;
}

/** The value preparedCursorKeySql binds; null when a numeric key is missing (cursorKeySql's constant then). */
export function preparedCursorKey(order: JobOrder, key: number | string | null): number | string | null {
  if (order.by === 'CREATED') return new Date(Number(key)).toISOString();
  if (order.by === 'NAME') return String(key);
  return key === null ? null : Number(key);
}

/** A row's order key as a cursor holds it: a time as epoch ms, a missing value as null. */
export function cursorKeyOf(order: JobOrder, raw: unknown): number | string | null {
  if (order.by === 'CREATED') return raw instanceof Date ? raw.getTime() : new Date(String(raw)).getTime();
  if (order.by === 'NAME') return String(raw);
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}
