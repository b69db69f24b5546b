// Provider-wide job lists in the read-through cache: a page answered with the lists' records
// when every list is fresh, list syncs (one upstream call per provider at a time), and the status
// changes and new jobs they find, told to the status listeners once per change.
import type { RequestScope } from '../domain/request-scope.js';
import { jobGlobalId } from '../domain/ids.js';
import type { JobRecord, ProjectRecord } from '../domain/types.js';
import type { ProviderSet } from '../providers/provider-set.js';
import type { FillContext } from './fill-context.js';
import { FRESH_NOW, listFresh, toErrorInfo, type Freshness } from './policy.js';
import type { JobRow, ProviderSyncRow } from './repo-types.js';

/** Lookups by id per list sync for unfinished jobs the list no longer holds. */
const MAX_UNLISTED_CHECKS = 20;

export class JobLists {
  constructor(private readonly c: FillContext) {}

  /**
   * A job page read in the same statement as the providers' list records, when every list is
   * fresh: what syncJobLists and a page read answer then, in one statement instead of two. null
   * when a list is due (or the page is empty, so the records did not come back): the caller then
   * syncs and reads the page as before.
   */
  async jobsPageIfListsFresh<T>(
    providerIds: readonly string[],
    read: () => Promise<{ rows: T[]; syncs: ProviderSyncRow[] | null } | null>,
  ): Promise<{ rows: T[]; freshness: Map<string, Freshness> } | null> {
    if (providerIds.length === 0) return null;
    const page = await read();
    if (!page?.syncs) return null;
    const now = this.c.now();
    const syncs = new Map(page.syncs.map((s) => [s.providerId, s]));
    const freshness = new Map<string, Freshness>();
    for (const pid of providerIds) {
      const s = syncs.get(pid);
      if (!listFresh(this.c.policy, s, now)) return null;
      freshness.set(pid, FRESH_NOW(s.syncedAt));
    }
    return { rows: page.rows, freshness };
  }

  /** Refreshes the job lists of the given providers where stale; failures leave the cache as is. */
  async syncJobLists(providerIds: readonly string[], scope?: RequestScope): Promise<Map<string, Freshness>> {
    const now = this.c.now();
    const syncs = new Map((await this.c.repo.within(scope).providerSyncs(providerIds, 'jobs')).map((s) => [s.providerId, s]));
    const out = new Map<string, Freshness>();
    await Promise.all(
      providerIds.map(async (pid) => {
        const s = syncs.get(pid);
        if (listFresh(this.c.policy, s, now)) {
          out.set(pid, FRESH_NOW(s.syncedAt));
          return;
        }
        try {
          out.set(pid, FRESH_NOW(await this.syncJobListNow(pid, scope)));
        } catch (err) {
          out.set(pid, { fetchedAt: s?.syncedAt ?? null, stale: true, error: toErrorInfo(err) });
        }
      }),
    );
    return out;
  }

  /**
   * Fetches a provider's whole job list now and writes it; returns when it was fetched, or throws
   * the upstream error (recorded for the next reader). Concurrent syncs of one provider (a query's
   * and the live status poller's) share one upstream call. Status changes of known jobs, and jobs
   * new since an earlier sync, are claimed atomically and told to the status listeners.
   */
  syncJobListNow(providerId: string, scope?: RequestScope): Promise<Date> {
    return this.c.fills.once(`jobs:${providerId}`, providerId, scope, async (shared) => {
      const at = this.c.now();
      try {
        const { projects, jobs } = await fetchCatalog(this.c.providers, providerId, shared);
        // The list this process last wrote, its rows untouched since: only the time it was seen is
        // new (no status changed, no job is new), written with the sync's record in one statement.
        const touched = await this.c.repo.touchListedCatalog(providerId, projects, jobs, at, MAX_UNLISTED_CHECKS);
        if (touched) {
          for (const j of jobs) this.c.unknownJobs.delete(jobGlobalId(providerId, j.externalId));
        } else {
          const [previous] = await this.c.repo.within(shared).providerSyncs([providerId], 'jobs');
          // Before the first list ever cached, every job would look new: that is a baseline, not news.
          await this.writeJobsAnnouncing(providerId, jobs, Boolean(previous?.syncedAt), async () => {
            const inserted = await this.c.repo.upsertCatalog(providerId, projects, jobs, at, true);
            // An id once unknown that the list now holds is a job: no longer answered null.
            for (const j of jobs) this.c.unknownJobs.delete(jobGlobalId(providerId, j.externalId));
            await this.c.repo.recordProviderSync({ providerId, dataset: 'jobs', syncedAt: at, attemptedAt: at, errorCode: null, errorMessage: null });
            return inserted;
          });
        }
        await this.settleUnlisted(providerId, new Set(jobs.map((j) => j.externalId)), at, shared, touched?.unlisted);
        return at;
      } catch (err) {
        const info = toErrorInfo(err);
        await this.c.repo.recordProviderSync({
          providerId,
          dataset: 'jobs',
          syncedAt: null,
          attemptedAt: at,
          errorCode: info.code,
          errorMessage: info.message,
        });
        throw err;
      }
    });
  }

  /**
   * Unfinished cached jobs a complete list no longer holds: each is looked up by id (a platform may
   * list only recent jobs), and the ones it does not find are gone (UNKNOWN, their last status in
   * rawStatus), so no job shows as running forever after it vanished (a deleted run folder, a
   * demo restarted with new runs). At most MAX_UNLISTED_CHECKS lookups per sync; the rest wait.
   */
  private async settleUnlisted(providerId: string, listed: ReadonlySet<string>, at: Date, scope: RequestScope, knownIds?: readonly string[]) {
    // Their ids already found by the sync's touch (most often none): no read of them again.
    const unlisted = knownIds
      ? (await this.c.repo.jobsByIds(knownIds)).filter((j) => !listed.has(j.externalId) && (j.status === 'PENDING' || j.status === 'RUNNING'))
      : await this.c.repo.unlistedUnfinishedJobsOf(providerId, [...listed], MAX_UNLISTED_CHECKS);
    if (unlisted.length === 0) return;
    const projects = await this.c.projectExternalIds(unlisted);
    const gone: JobRow[] = [];
    await Promise.all(
      unlisted.map(async (job) => {
        try {
          const detail = await this.c.providers.call(
            providerId,
            (a, sig) => a.getJob({ externalId: job.externalId, projectExternalId: projects.get(job.projectId) ?? '' }, sig),
            scope,
          );
          if (!detail) gone.push(job);
        } catch {
          // Not known either way: the next sync asks again.
        }
      }),
    );
    await this.announceGone(gone, at);
  }

  async announceGone(jobs: readonly JobRow[], at: Date) {
    const changed = await this.c.repo.markGone(jobs, at);
    await this.tell([...changed.keys()], changed);
  }

  /** Tells the status listeners of these jobs as now stored, with their previous status (none: new). */
  private async tell(jobIds: readonly string[], previous: ReadonlyMap<string, string>) {
    if (jobIds.length === 0 || this.c.statusListeners.length === 0) return;
    for (const row of await this.c.repo.jobsByIds(jobIds)) {
      for (const listener of this.c.statusListeners) listener({ job: row, previousStatus: previous.get(row.id) ?? null });
    }
  }

  /**
   * Writes job records (through `write`) and tells the status listeners which changed. The claim is
   * one UPDATE re-checked on the latest row version, so of two concurrent writers of the same change
   * (two pollers, two replicas) exactly one announces it.
   */
  async writeJobsAnnouncing(providerId: string, jobs: readonly JobRecord[], announceNew: boolean, write: () => Promise<Set<string>>) {
    const ids = jobs.map((j) => jobGlobalId(providerId, j.externalId));
    const known = await this.c.repo.knownJobIds(ids);
    const changed = await this.c.repo.claimStatusChanges(jobs.map((j, i) => ({ id: ids[i]!, status: j.status })).filter((c) => known.has(c.id)));
    // New: inserted by this very write (a concurrent writer of the same new job updated it instead).
    const inserted = await write();
    const toAnnounce = [...changed.keys(), ...(announceNew ? ids.filter((id) => !known.has(id) && inserted.has(id)) : [])];
    await this.tell(toAnnounce, changed);
  }
}

/** Every project and job a provider lists, all pages, in one upstream operation. */
async function fetchCatalog(providers: ProviderSet, providerId: string, scope: RequestScope): Promise<{ projects: ProjectRecord[]; jobs: JobRecord[] }> {
  return providers.call(
    providerId,
    async (adapter, sig) => {
      const projects = await adapter.listProjects(sig);
      const jobs: JobRecord[] = [];
      let cursor: string | null = null;
      // Bounded: a platform that never stops paging must not hang a request.
      for (let page = 0; page < 1000; page++) {
        const res = await adapter.listJobs(cursor, sig);
        jobs.push(...res.jobs);
        if (!res.nextCursor || res.nextCursor === cursor) break;
        cursor = res.nextCursor;
      }
      return { projects, jobs };
    },
    scope,
  );
}
