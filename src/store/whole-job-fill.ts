// Datasets fetched whole per job (training metrics, progress) in the read-through cache, and logs,
// which come straight from the platform.
import { DomainError } from '../domain/errors.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { JobRef, LogPage, LogRequest, SeriesData } from '../domain/types.js';
import type { ProviderAdapter } from '../providers/provider.js';
import { groupBy, jobRef, type FillContext } from './fill-context.js';
import { FRESH_NOW, isTerminal, jobWindow, staleOr, wholeJobFresh, type Freshness } from './policy.js';
import type { JobRow } from './repo-types.js';
import type { Repository } from './repository.js';

/** A dataset fetched whole per job: which, whether a platform has it, how it is fetched and written. */
interface WholeJobDataset<T> {
  dataset: 'training' | 'progress';
  supported: (adapter: ProviderAdapter) => boolean;
  fetch: (ref: JobRef, signal: AbortSignal, adapter: ProviderAdapter) => Promise<T>;
  write: (entries: { job: JobRow; data: T }[], repo: Repository) => Promise<void>;
}

export class WholeJobFill {
  constructor(private readonly c: FillContext) {}

  /**
   * Training metrics are fetched whole per job (platforms page them by step, not by the small
   * windows dashboards ask for), final once the job is, fresh for the metrics TTL while it runs.
   */
  async ensureTraining(jobs: readonly JobRow[], scope?: RequestScope): Promise<Map<string, Freshness | Error>> {
    return this.ensureWholeJobDataset(scope, jobs, {
      dataset: 'training',
      supported: (a) => a.capabilities.trainingMetrics,
      fetch: async (ref, signal, adapter): Promise<SeriesData[]> =>
        (await adapter.fetchTrainingMetrics?.(ref, { from: null, to: null, names: null }, signal)) ?? [],
      write: async (entries, repo) => {
        for (const [pid, group] of groupBy(entries, (e) => e.job.providerId)) {
          await repo.writeSeries(
            pid,
            group.map((e) => ({ job: e.job, series: e.data })),
          );
        }
        // In the same transaction: a search on summary values never sees points without their summary.
        await repo.refreshSummaries(entries.map((e) => e.job.id));
      },
    });
  }

  async ensureProgress(jobs: readonly JobRow[], scope?: RequestScope): Promise<Map<string, Freshness | Error>> {
    return this.ensureWholeJobDataset(scope, jobs, {
      dataset: 'progress',
      supported: (a) => a.capabilities.progress,
      fetch: async (ref, signal, adapter) => (await adapter.fetchProgress?.(ref, signal)) ?? null,
      write: async (entries, repo) => {
        const fetchedAt = this.c.now();
        await repo.writeProgress(
          entries.map(({ job, data: p }) => ({
            jobId: job.id,
            iteration: p?.iteration ?? null,
            targetIteration: p?.targetIteration ?? null,
            rate: p?.rate ?? null,
            updatedAt: p?.updatedAt ?? null,
            fetchedAt,
          })),
        );
      },
    });
  }

  /** A dataset fetched whole per job; every job of the batch is fetched in parallel and written at once. */
  private async ensureWholeJobDataset<T>(
    scope: RequestScope | undefined,
    jobs: readonly JobRow[],
    { dataset, supported, fetch, write }: WholeJobDataset<T>,
  ): Promise<Map<string, Freshness | Error>> {
    const now = this.c.now();
    const out = new Map<string, Freshness | Error>();
    const relevant = jobs.filter((j) => {
      const adapter = this.c.providers.find(j.providerId)?.adapter;
      if (adapter && supported(adapter)) return true;
      out.set(j.id, { fetchedAt: null, stale: false, error: null });
      return false;
    });
    const rows = groupBy(
      await this.c.repo.within(scope).fetchesOf(
        relevant.map((j) => j.id),
        [dataset],
      ),
      (r) => r.jobId,
    );
    const due = relevant.filter((j) => {
      const latest = rows.get(j.id)?.[0];
      if (wholeJobFresh(this.c.policy, latest, now)) {
        out.set(j.id, FRESH_NOW(latest.fetchedAt));
        return false;
      }
      return true;
    });
    this.c.lookedUp(dataset, relevant.length - due.length, due.length);
    if (due.length === 0) return out;
    const projects = await this.c.projectExternalIds(due, scope);
    const fetched: { job: JobRow; data: T }[] = [];
    await Promise.all(
      due.map(async (job) => {
        try {
          const data = await this.c.fills.once(`${dataset}:${job.id}`, job.providerId, scope, (shared) =>
            this.c.providers.call(job.providerId, (adapter, signal) => fetch(jobRef(job, projects.get(job.projectId) ?? ''), signal, adapter), shared),
          );
          fetched.push({ job, data });
          out.set(job.id, FRESH_NOW(now));
        } catch (err) {
          const latest = rows.get(job.id)?.[0];
          out.set(job.id, staleOr(latest?.fetchedAt ?? null, err));
        }
      }),
    );
    if (fetched.length > 0) {
      await this.c.repo.transaction(async (repo) => {
        await write(fetched, repo);
        await repo.recordFetches(
          fetched.map(({ job }) => {
            const w = jobWindow(job, now);
            return { jobId: job.id, dataset, rangeFrom: w.from, rangeTo: w.to, fetchedAt: now, stepSeconds: 0, final: isTerminal(job.status) };
          }),
        );
      });
    }
    return out;
  }

  /** Log pages come straight from the platform: each page is a moving cursor, not a cacheable range. */
  async logs(job: JobRow, request: LogRequest, scope?: RequestScope): Promise<LogPage> {
    const provider = this.c.providers.find(job.providerId);
    if (!provider?.adapter.fetchLogs) {
      throw new DomainError('UNSUPPORTED', `${provider?.kind ?? 'this platform'} has no log API`);
    }
    const [project] = await this.c.repo.within(scope).projectsByIds([job.projectId]);
    return this.c.providers.call(job.providerId, (a, sig) => a.fetchLogs!(jobRef(job, project?.externalId ?? ''), request, sig), scope);
  }
}
