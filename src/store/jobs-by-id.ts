// Jobs by id in the read-through cache: fetched from upstream when not cached yet (within each
// token's budget of lookups of never-seen ids), read again when an unfinished job's detail may be
// stale, and refreshed on demand.
import { DomainError } from '../domain/errors.js';
import { jobGlobalId, parseGlobalId, type ParsedId } from '../domain/ids.js';
import type { RequestScope } from '../domain/request-scope.js';
import { groupBy, type FillContext } from './fill-context.js';
import type { JobLists } from './job-lists.js';
import { LookupBuckets } from './lookup-budget.js';
import { detailMayBeStale } from './policy.js';
import type { JobRow } from './repo-types.js';

/** How long an id the platform called unknown is answered null without asking again. */
export const NEGATIVE_LOOKUP_TTL_MS = 60_000;
/** Unknown ids remembered at most (oldest forgotten first): 2,000 made-up ids must not grow memory without bound. */
const NEGATIVE_LOOKUP_MAX = 10_000;

export class JobsById {
  /** Per API token, the upstream lookups of never-seen ids it may still make. */
  private readonly lookupBudget: LookupBuckets;

  constructor(
    private readonly c: FillContext,
    private readonly lists: JobLists,
  ) {
    this.lookupBudget = new LookupBuckets(c.policy.unknownIdLookups);
  }

  /**
   * The job as the platform has it now (status, nodes), written to the store whatever the TTL says;
   * throws NOT_FOUND when it is gone. Shares its upstream call with a topology refresh under way.
   */
  async refreshJob(jobId: string, scope?: RequestScope): Promise<JobRow> {
    const [cached] = await this.jobsByIds([parseGlobalId(jobId, 'job')], { scope });
    if (cached instanceof Error) throw cached;
    if (!cached) throw new DomainError('NOT_FOUND', `no job with id "${jobId}"`);
    const projects = await this.c.projectExternalIds([cached], scope);
    const detail = await this.c.jobDetail(cached, projects, scope);
    if (!detail) {
      await this.lists.announceGone([cached], this.c.now());
      throw new DomainError('NOT_FOUND', `job ${jobId} no longer exists upstream`);
    }
    const at = this.c.now();
    await this.lists.writeJobsAnnouncing(cached.providerId, [detail], false, () => this.c.repo.upsertJobs(cached.providerId, [detail], at, true));
    if (detail.nodes) await this.c.repo.writeTopology(cached.providerId, [{ job: cached, nodes: detail.nodes }], at);
    const [row] = await this.c.repo.jobsByIds([jobId]);
    return row ?? cached;
  }

  /**
   * Jobs by id, fetched from upstream when not cached yet (a job created since the last list
   * sync). Unknown ids come back as null; upstream failures for uncached jobs are thrown per id.
   */
  async jobsByIds(ids: readonly ParsedId[], opts: { upstream?: boolean; scope?: RequestScope } = {}): Promise<(JobRow | null | Error)[]> {
    const fullIds = ids.map((p) => jobGlobalId(p.providerId, p.key));
    const cached = new Map((await this.c.repo.within(opts.scope).jobsByIds(fullIds)).map((j) => [j.id, j]));
    if (opts.upstream === false) return fullIds.map((id) => cached.get(id) ?? null);
    const nowMs = this.c.clock();
    const unseen = ids.filter((p, i) => !cached.has(fullIds[i]!) && this.c.providers.find(p.providerId) && !this.knownUnknown(fullIds[i]!, nowMs));
    const errors = new Map<string, Error>();
    // Each lookup of an id never seen draws from the token's budget, unless it joins one under way
    // (the same id asked by another request): made-up ids cannot drive the platform's calls.
    const missing: ParsedId[] = [];
    const refused = new Map<string, { p: ParsedId; retryAfterSeconds: number }>();
    for (const p of new Map(unseen.map((u) => [jobGlobalId(u.providerId, u.key), u])).values()) {
      if (this.c.fills.has(`job:${p.providerId}:${p.key}`)) {
        missing.push(p);
        continue;
      }
      const taken = this.lookupBudget.take(opts.scope?.tenant ?? null, nowMs);
      if (taken.ok) missing.push(p);
      else refused.set(jobGlobalId(p.providerId, p.key), { p, retryAfterSeconds: taken.retryAfterSeconds });
    }
    if (refused.size > 0) {
      // An id is not forged merely because this store never listed its provider (a new database, a
      // server asked by id before its first sync): before refusing, a provider never listed is
      // listed once, and only the ids its list does not hold either are the made-up ones the
      // budget is for. Once a list exists, an id outside it is charged as before.
      const pids = [...new Set([...refused.values()].map((r) => r.p.providerId))];
      const listed = new Set((await this.c.repo.within(opts.scope).providerSyncs(pids, 'jobs')).filter((x) => x.syncedAt).map((x) => x.providerId));
      const neverListed = pids.filter((pid) => !listed.has(pid));
      if (neverListed.length > 0) await this.lists.syncJobLists(neverListed, opts.scope);
      for (const j of await this.c.repo.within(opts.scope).jobsByIds([...refused.keys()])) {
        cached.set(j.id, j);
        refused.delete(j.id);
      }
      for (const [id, r] of refused)
        errors.set(
          id,
          new DomainError('RATE_LIMITED', `too many lookups of unknown ids for this token; try again in ${r.retryAfterSeconds} s`, {
            retryAfterSeconds: r.retryAfterSeconds,
          }),
        );
    }
    if (missing.length > 0) {
      const at = this.c.now();
      const found = await Promise.all(
        missing.map(async (p) => {
          try {
            const detail = await this.c.fills.once(`job:${p.providerId}:${p.key}`, p.providerId, opts.scope, (shared) =>
              this.c.providers.call(p.providerId, (a, signal) => a.getJob({ externalId: p.key, projectExternalId: '' }, signal), shared),
            );
            return { p, detail };
          } catch (err) {
            errors.set(jobGlobalId(p.providerId, p.key), err as Error);
            return { p, detail: null };
          }
        }),
      );
      for (const f of found) {
        const id = jobGlobalId(f.p.providerId, f.p.key);
        if (f.detail === null && !errors.has(id)) this.rememberUnknown(id, nowMs);
      }
      const byProvider = new Map<string, typeof found>();
      for (const f of found) if (f.detail) byProvider.set(f.p.providerId, [...(byProvider.get(f.p.providerId) ?? []), f]);
      // A job first seen here (not by a list sync) is news as much as one a sync finds: it is
      // announced here, once, or the status poller would find it already known and never tell.
      const synced = new Set((await this.c.repo.providerSyncs([...byProvider.keys()], 'jobs')).filter((s) => s.syncedAt).map((s) => s.providerId));
      for (const [pid, list] of byProvider) {
        const records = list.map((f) => f.detail!);
        await this.lists.writeJobsAnnouncing(pid, records, synced.has(pid), () => this.c.repo.upsertCatalog(pid, [], records, at));
      }
      if (byProvider.size > 0) {
        for (const j of await this.c.repo.jobsByIds([...byProvider.values()].flat().map((f) => jobGlobalId(f.p.providerId, f.p.key)))) {
          cached.set(j.id, j);
        }
      }
    }
    await this.refreshStaleUnfinished(cached, opts.scope);
    return fullIds.map((id) => cached.get(id) ?? errors.get(id) ?? null);
  }

  /**
   * A job cached as unfinished that no list sync has seen for a list TTL, and whose detail is older
   * than the detail TTL, may have finished since: its detail is read before it is answered, so a
   * job asked by id does not keep saying RUNNING until some list query runs. A failed read keeps
   * the cached row (the field is not failed for it).
   */
  private async refreshStaleUnfinished(cached: Map<string, JobRow>, scope: RequestScope | undefined): Promise<void> {
    const nowMs = this.c.clock();
    const stale = [...cached.values()].filter((j) => detailMayBeStale(this.c.policy, j, nowMs) && this.c.providers.find(j.providerId));
    if (stale.length === 0) return;
    const projects = await this.c.projectExternalIds(stale, scope);
    const at = this.c.now();
    const fresh = await Promise.all(
      stale.map(async (job) => {
        try {
          return { job, detail: await this.c.jobDetail(job, projects, scope) };
        } catch {
          return { job, detail: undefined };
        }
      }),
    );
    const gone = fresh.filter((f) => f.detail === null).map((f) => f.job);
    if (gone.length > 0) await this.lists.announceGone(gone, at);
    for (const [pid, group] of groupBy(
      fresh.filter((f) => f.detail),
      (f) => f.job.providerId,
    )) {
      const records = group.map((f) => f.detail!);
      await this.lists.writeJobsAnnouncing(pid, records, false, () => this.c.repo.upsertJobs(pid, records, at, true));
    }
    for (const j of await this.c.repo.jobsByIds(stale.map((j) => j.id))) cached.set(j.id, j);
  }

  private knownUnknown(id: string, nowMs: number): boolean {
    const until = this.c.unknownJobs.get(id);
    if (until === undefined) return false;
    if (until > nowMs) return true;
    this.c.unknownJobs.delete(id);
    return false;
  }

  private rememberUnknown(id: string, nowMs: number) {
    this.c.unknownJobs.delete(id);
    this.c.unknownJobs.set(id, nowMs + NEGATIVE_LOOKUP_TTL_MS);
    if (this.c.unknownJobs.size > NEGATIVE_LOOKUP_MAX) this.c.unknownJobs.delete(this.c.unknownJobs.keys().next().value!);
  }
}
