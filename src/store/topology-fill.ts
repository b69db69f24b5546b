// Jobs' nodes and GPUs in the read-through cache: known and, for running jobs, recent; learned
// from the job's detail, or from the metrics fetch the query needs anyway where only metrics
// reveal nodes.
import { DomainError } from '../domain/errors.js';
import { groupBy, type FillContext } from './fill-context.js';
import type { MetricsFill, TopologyOptions } from './metrics-fill.js';
import { FRESH_NOW, jobWindow, staleOr, topologyFresh, type Freshness, type MetricsRequest } from './policy.js';
import type { JobRow } from './repo-types.js';

export class TopologyFill {
  constructor(
    private readonly c: FillContext,
    private readonly metrics: MetricsFill,
  ) {}

  /**
   * Makes sure the jobs' nodes and GPUs are known and, for running jobs, recent. Where only
   * metrics reveal nodes, the metrics call that teaches them is the one the query will need
   * anyway (`hints`: its window, metrics and resolution), so one call gives both; and the job
   * detail is not asked again when the job list just brought it.
   */
  async ensureTopology(jobs: readonly JobRow[], opts: TopologyOptions = {}): Promise<Map<string, Freshness | Error>> {
    const { each, done } = await this.ensureTopologyEach(jobs, opts);
    const out = new Map<string, Freshness | Error>();
    for (const [id, freshness] of each) out.set(id, await freshness);
    await done;
    return out;
  }

  /**
   * ensureTopology, job by job: a job learned from a metrics fetch settles (with an Error, never a
   * rejection) once its fetch is described (ensureMetricsEach's waves), the others once the call
   * returns; `done` once the whole batch is.
   */
  async ensureTopologyEach(
    jobs: readonly JobRow[],
    opts: TopologyOptions = {},
  ): Promise<{ each: Map<string, Freshness | Error | Promise<Freshness | Error>>; done: Promise<void> }> {
    const now = this.c.now();
    const out = new Map<string, Freshness | Error | Promise<Freshness | Error>>();
    const dueAll = jobs.filter((j) => {
      const fresh = topologyFresh(this.c.policy, j, now);
      if (fresh) out.set(j.id, FRESH_NOW(j.topologyFetchedAt!));
      return !fresh;
    });
    if (dueAll.length === 0) return { each: out, done: Promise.resolve() };
    const metricsNeeded: MetricsRequest[] = [];
    const fromMetrics = (job: JobRow) => {
      const adapter = this.c.providers.find(job.providerId)!.adapter;
      const hint = opts.hints?.get(job.id);
      metricsNeeded.push(
        hint
          ? { job, from: hint.window.from, to: hint.window.to, metrics: hint.metrics, maxPoints: hint.maxPoints }
          : { job, ...jobWindow(job, now), metrics: adapter.capabilities.systemMetrics },
      );
    };
    // The detail would add nothing the list did not just say (status), and no nodes: skip it.
    const due = dueAll.filter((j) => {
      const caps = this.c.providers.find(j.providerId)?.adapter.capabilities;
      const listedRecently = now.getTime() - j.seenAt.getTime() < this.c.policy.detailTtlMs;
      if (caps?.nodesOnlyInMetrics && listedRecently) {
        fromMetrics(j);
        return false;
      }
      return true;
    });
    const projects = await this.c.projectExternalIds(due, opts.scope);
    const results = await Promise.all(
      due.map(async (job) => {
        try {
          return { job, detail: await this.c.jobDetail(job, projects, opts.scope), error: null };
        } catch (err) {
          return { job, detail: null, error: err };
        }
      }),
    );
    for (const [pid, group] of groupBy(results, (r) => r.job.providerId)) {
      const ok = group.filter((r) => r.detail);
      if (ok.length)
        await this.c.repo.upsertJobs(
          pid,
          ok.map((r) => r.detail!),
          now,
          true,
        );
      const withNodes = ok.filter((r) => r.detail!.nodes !== null);
      if (withNodes.length)
        await this.c.repo.writeTopology(
          pid,
          withNodes.map((r) => ({ job: r.job, nodes: r.detail!.nodes! })),
          now,
        );
      for (const r of withNodes) out.set(r.job.id, FRESH_NOW(now));
      // Platforms that reveal nodes only in metrics (Baseten) learn them from a metrics fetch.
      for (const r of ok.filter((x) => x.detail!.nodes === null)) {
        fromMetrics({ ...r.job, status: r.detail!.status, finishedAt: r.detail!.finishedAt, startedAt: r.detail!.startedAt ?? r.job.startedAt });
      }
      for (const r of group.filter((x) => !x.detail)) {
        if (r.error === null) out.set(r.job.id, new DomainError('NOT_FOUND', `job ${r.job.id} no longer exists upstream`));
        else out.set(r.job.id, staleOr(r.job.topologyFetchedAt, r.error));
      }
    }
    if (metricsNeeded.length === 0) return { each: out, done: Promise.resolve() };
    const fresh = this.metrics.ensureMetricsEach(metricsNeeded, {
      forceTopology: true,
      answerBeforeWrite: opts.answerBeforeWrite,
      collect: opts.collect,
      scope: opts.scope,
    });
    metricsNeeded.forEach((m, i) => {
      out.set(m.job.id, fresh.each[i]!);
    });
    return { each: out, done: fresh.done };
  }
}
