// What the parts of the read-through cache (job lists, jobs by id, topology, the metrics fill,
// whole-job datasets) share: the repository, the providers, the policy and clock, the fills under
// way, and the observers and listeners they tell.
import { projectGlobalId } from '../domain/ids.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { JobRef, JobStatus } from '../domain/types.js';
import type { JobDetailResult } from '../providers/provider.js';
import type { ProviderSet } from '../providers/provider-set.js';
import { InflightFills } from './inflight.js';
import type { CachePolicy } from './policy.js';
import type { JobRow } from './repo-types.js';
import type { Repository } from './repository.js';

/** Told how many of a batch's lookups the cache answered (hits) and how many went upstream (misses). */
export type CacheLookupObserver = (dataset: 'metrics' | 'training' | 'progress', hits: number, misses: number) => void;

/** A job whose status changed (previousStatus) or that appeared since the last list (previousStatus null). */
export type StatusListener = (change: { job: JobRow; previousStatus: string | null }) => void;

export class FillContext {
  readonly fills = new InflightFills();
  readonly lookupObservers: CacheLookupObserver[] = [];
  readonly statusListeners: StatusListener[] = [];
  readonly writeFailureObservers: ((err: unknown) => void)[] = [];
  /** Job ids upstream said do not exist, with when that stops being believed (ms). */
  readonly unknownJobs = new Map<string, number>();

  constructor(
    readonly repo: Repository,
    readonly providers: ProviderSet,
    readonly policy: CachePolicy,
    readonly clock: () => number,
  ) {}

  now(): Date {
    return new Date(this.clock());
  }

  lookedUp(dataset: 'metrics' | 'training' | 'progress', hits: number, misses: number) {
    for (const observe of this.lookupObservers) observe(dataset, hits, misses);
  }

  /** Tells the write-failure observers of a cache write that failed after its answer went out. */
  writeFailed(err: unknown) {
    for (const observe of this.writeFailureObservers) observe(err);
  }

  /** The job as the platform has it now (null: gone), one upstream call shared by every caller meanwhile. */
  jobDetail(job: JobRow, projects: ReadonlyMap<string, string>, scope: RequestScope | undefined): Promise<JobDetailResult | null> {
    return this.fills.once(`detail:${job.id}`, job.providerId, scope, (shared) =>
      this.providers.call(
        job.providerId,
        (a, signal) => a.getJob({ externalId: job.externalId, projectExternalId: projects.get(job.projectId) ?? '' }, signal),
        shared,
      ),
    );
  }

  async projectExternalIds(jobs: readonly JobRow[], scope?: RequestScope): Promise<Map<string, string>> {
    // A project's id is its provider's id and its external id (projectGlobalId, the only way one is
    // written): read from the id, not from the projects table, which every fill of every collected
    // group read again (three reads a group). An id of another shape is read.
    const out = new Map<string, string>();
    const unknown = new Set<string>();
    for (const j of jobs) {
      if (out.has(j.projectId)) continue;
      const prefix = projectGlobalId(j.providerId, '');
      if (j.projectId.startsWith(prefix) && j.projectId.length > prefix.length) out.set(j.projectId, j.projectId.slice(prefix.length));
      else unknown.add(j.projectId);
    }
    if (unknown.size > 0) for (const p of await this.repo.within(scope).projectsByIds([...unknown])) out.set(p.id, p.externalId);
    return out;
  }
}

export function jobRef(job: JobRow, projectExternalId: string): JobRef {
  return {
    externalId: job.externalId,
    projectExternalId,
    status: job.status as JobStatus,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
  };
}

export function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
