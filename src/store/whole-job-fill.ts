// Datasets fetched whole per job (training metrics, progress) in the read-through cache, and logs,
// which come straight from the platform.
import { DomainError } from '../domain/errors.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { JobRef, LogPage, LogRequest, SeriesData } from '../domain/types.js';
import type { ProviderAdapter } from '../providers/provider.js';
import { groupBy, jobRef, type FillContext } from './fill-context.js';
import { FRESH_NOW, isTerminal, jobWindow, staleOr, wholeJobFresh, type Freshness } from './policy.js';
import type { FetchRow, JobRow, WrittenRange } from './repo-types.js';
import type { Repository } from './repository.js';

/** A dataset fetched whole per job: which, whether a platform has it, how it is fetched and written. */
interface WholeJobDataset<T> {
  dataset: 'training' | 'progress';
  supported: (adapter: ProviderAdapter) => boolean;
  /** Before the due jobs are fetched: what their fetches need of the cache (read once for the batch). */
  prepare?: (due: readonly JobRow[]) => Promise<void>;
  fetch: (ref: JobRef, signal: AbortSignal, adapter: ProviderAdapter, job: JobRow) => Promise<T>;
  write: (entries: { job: JobRow; data: T }[], repo: Repository) => Promise<void>;
}

export interface WholeJobOptions {
  /**
   * The jobs' fetch records of the dataset as the caller already read them (newest first, as
   * Repository.fetchesOf orders them; the collector reads a group's once for all its fills):
   * not read again. Without them, read.
   */
  fetches?: readonly FetchRow[];
}

export class WholeJobFill {
  constructor(private readonly c: FillContext) {}

  /**
   * Training metrics are fetched whole per job (platforms page them by step, not by the small
   * windows dashboards ask for), final once the job is, fresh for the metrics TTL while it runs.
   * With `sinceStored` (the collector's sweeps), a running job of a platform that answers a range
   * (trainingSince) is fetched from its newest stored point less `overlapMs` instead: what a
   * sweep adds is the last interval's points, not the whole run again. Points are keyed by step, so
   * the overlap's points are written again unchanged, and a point logged late (by up to
   * `overlapMs`) is still found. A job with nothing stored yet, or finished, is fetched whole.
   */
  async ensureTraining(
    jobs: readonly JobRow[],
    scope?: RequestScope,
    opts: WholeJobOptions & { sinceStored?: { overlapMs: number } } = {},
  ): Promise<Map<string, Freshness | Error>> {
    let since = new Map<string, Date>();
    const sinceStored = opts.sinceStored;
    return this.ensureWholeJobDataset(scope, jobs, opts.fetches, {
      dataset: 'training',
      supported: (a) => a.capabilities.trainingMetrics,
      prepare: sinceStored
        ? async (due) => {
            const ranged = due.filter((j) => !isTerminal(j.status) && this.c.providers.find(j.providerId)?.adapter.capabilities.trainingSince);
            since = await this.c.repo.within(scope).lastTrainingPointTimes(ranged.map((j) => j.id));
          }
        : undefined,
      fetch: async (ref, signal, adapter, job): Promise<SeriesData[]> => {
        const last = since.get(job.id);
        const from = last && sinceStored ? new Date(last.getTime() - sinceStored.overlapMs) : null;
        return (await adapter.fetchTrainingMetrics?.(ref, { from, to: null, names: null }, signal)) ?? [];
      },
      write: async (entries, repo) => {
        // Another replica writing one of these jobs' training data commits first (lockJobSummaries).
        await repo.lockJobSummaries(entries.map((e) => e.job.id));
        const written: WrittenRange[] = [];
        for (const [pid, group] of groupBy(entries, (e) => e.job.providerId)) {
          written.push(
            ...(await repo.writeSeries(
              pid,
              group.map((e) => ({ job: e.job, series: e.data })),
            )),
          );
        }
        // In the same transaction: a search on summary values never sees points without their summary.
        await repo.refreshSummaries(
          entries.map((e) => e.job.id),
          written,
        );
      },
    });
  }

  async ensureProgress(jobs: readonly JobRow[], scope?: RequestScope, opts: WholeJobOptions = {}): Promise<Map<string, Freshness | Error>> {
    return this.ensureWholeJobDataset(scope, jobs, opts.fetches, {
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
    fetches: readonly FetchRow[] | undefined,
    { dataset, supported, prepare, fetch, write }: WholeJobDataset<T>,
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
      fetches?.filter((r) => r.dataset === dataset) ??
        (await this.c.repo.within(scope).fetchesOf(
          relevant.map((j) => j.id),
          [dataset],
        )),
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
    await prepare?.(due);
    const fetched: { job: JobRow; data: T }[] = [];
    await Promise.all(
      due.map(async (job) => {
        try {
          // Shared with a fetch of the job under way (a query's whole one, or a sweep's from its newest
          // stored point): either way the store then holds the whole run, which is what callers read.
          const data = await this.c.fills.once(`${dataset}:${job.id}`, job.providerId, scope, (shared) =>
            this.c.providers.call(job.providerId, (adapter, signal) => fetch(jobRef(job, projects.get(job.projectId) ?? ''), signal, adapter, job), shared),
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
