// Which jobs a list, a count, a fleet question or a status stream selects: one definition, written
// as SQL for the cache (pages, counts, fleet windows) and as a predicate for jobs that arrive on a
// live stream. The two forms sit side by side so they cannot drift apart (test/store/job-filter.test.ts
// checks they agree).
import { inArray, sql, type SQL } from 'drizzle-orm';
import * as t from './tables.js';

export interface JobFilter {
  providerIds?: readonly string[] | null;
  statuses?: readonly string[] | null;
  projectId?: string | null;
  /** Case-insensitive substring of the job name. */
  nameContains?: string | null;
  /** Confines the jobs to these projects (an API token's scope); null = no such confinement. */
  projectIds?: readonly string[] | null;
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
  return cond;
}

/** The same filter as a predicate, for a job that was not read through SQL (a live status event). */
export function jobMatches(filter: JobFilter, job: { providerId: string; status: string; projectId: string; name: string }): boolean {
  if (filter.providerIds && !filter.providerIds.includes(job.providerId)) return false;
  if (filter.statuses && !filter.statuses.includes(job.status)) return false;
  if (filter.projectId && job.projectId !== filter.projectId) return false;
  if (filter.projectIds && !filter.projectIds.includes(job.projectId)) return false;
  if (filter.nameContains && !job.name.toLowerCase().includes(filter.nameContains.toLowerCase())) return false;
  return true;
}
