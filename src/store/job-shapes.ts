// What the store knows of each job's size: its nodes, GPUs, the most GPUs one of its nodes holds,
// and its system and training series. The query-cost estimate (server/plugins/query-cost.ts)
// bounds the lists no argument bounds by these: "the 50 largest jobs hold 267 GPUs" instead of
// "50 jobs x 10 nodes x 10 GPUs". Learnt from the tables at start and every REFRESH_MS (another
// replica may have learnt a topology), and at once from this process's own topology and series writes.
import { sql } from 'drizzle-orm';
import type { Db } from './db.js';
import { rowsOf } from './sql-util.js';

export type ShapeMeasure = 'nodes' | 'gpus' | 'gpusPerNode' | 'systemSeries' | 'trainingSeries';

export interface JobShape {
  nodes: number;
  gpus: number;
  gpusPerNode: number;
  systemSeries: number;
  trainingSeries: number;
}

/**
 * What a job the store knows nothing of yet (a cold store, a job whose topology was never fetched)
 * counts as: one node of 8 GPUs (the unit most training jobs are cut in), its series at three
 * scopes for six system metrics (job, node, 8 GPUs: 6 x 10), and 20 training series. A larger job
 * is then under-estimated: the actual count stops its query if it passes the limit (use-limits.ts).
 * Documented in docs/limits.md.
 */
export const UNKNOWN_JOB_SHAPE: Readonly<JobShape> = { nodes: 1, gpus: 8, gpusPerNode: 8, systemSeries: 60, trainingSeries: 20 };

const REFRESH_MS = 60_000;

export class JobShapes {
  private readonly jobs = new Map<string, JobShape>();
  /** Per measure, the jobs' values largest first and their running sums; rebuilt lazily after a change. */
  private sorted: Map<ShapeMeasure, Float64Array> | null = null;
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | null = null;
  /** Bumped on every change: costs computed from an older version are computed again. */
  version = 0;

  /** Jobs the store knows the shape of. */
  get size(): number {
    return this.jobs.size;
  }

  shapeOf(jobId: string): Readonly<JobShape> | undefined {
    return this.jobs.get(jobId);
  }

  /** The sum of `measure` over the `count` largest jobs; jobs beyond those known count as UNKNOWN_JOB_SHAPE. */
  largest(measure: ShapeMeasure, count: number): number {
    if (count <= 0) return 0;
    const sums = this.sums(measure);
    const known = Math.min(count, sums.length - 1);
    return sums[known]! + (count - known) * UNKNOWN_JOB_SHAPE[measure];
  }

  learnTopology(jobId: string, nodes: number, gpus: number, gpusPerNode: number): void {
    const shape = this.entry(jobId);
    if (shape.nodes === nodes && shape.gpus === gpus && shape.gpusPerNode === gpusPerNode) return;
    Object.assign(shape, { nodes, gpus, gpusPerNode });
    this.changed();
  }

  /** Series seen in one write of a job: a count that only grows until the next reload from the tables. */
  learnSeries(jobId: string, kind: 'systemSeries' | 'trainingSeries', count: number): void {
    const shape = this.entry(jobId);
    if (shape[kind] >= count) return;
    shape[kind] = count;
    this.changed();
  }

  /** Reloads from the tables when the last load is older than REFRESH_MS (in the background: the estimate never waits). */
  refreshIfOld(db: Db, now = Date.now()): void {
    if (this.loading || now - this.loadedAt < REFRESH_MS) return;
    this.loadedAt = now;
    this.loading = this.load(db)
      .catch(() => {
        // The database is down or busy: the shapes known so far stay, and the next estimate tries again.
        this.loadedAt = Number.NEGATIVE_INFINITY;
      })
      .finally(() => {
        this.loading = null;
      });
  }

  /** One statement over nodes, GPUs and series, grouped by job; a job no longer in the tables is forgotten. */
  async load(db: Db): Promise<void> {
    const rows = await rowsOf<{ job_id: string; nodes: number; gpus: number; per_node: number; system: number; training: number }>(
      db,
      sql`
      with n as (select job_id, count(*)::int as nodes from nodes group by job_id),
           g as (select job_id, sum(c)::int as gpus, max(c)::int as per_node
                 from (select job_id, node_id, count(*) as c from gpus group by job_id, node_id) x group by job_id),
           s as (select job_id, count(*) filter (where kind = 'system')::int as system,
                        count(*) filter (where kind <> 'system')::int as training
                 from series group by job_id)
      select coalesce(n.job_id, g.job_id, s.job_id) as job_id, coalesce(n.nodes, 0) as nodes, coalesce(g.gpus, 0) as gpus,
             coalesce(g.per_node, 0) as per_node, coalesce(s.system, 0) as system, coalesce(s.training, 0) as training
      from n full join g on g.job_id = n.job_id full join s on s.job_id = coalesce(n.job_id, g.job_id)`,
    );
    this.jobs.clear();
    for (const r of rows) {
      this.jobs.set(r.job_id, {
        nodes: Number(r.nodes),
        gpus: Number(r.gpus),
        gpusPerNode: Number(r.per_node),
        systemSeries: Number(r.system),
        trainingSeries: Number(r.training),
      });
    }
    this.changed();
  }

  private entry(jobId: string): JobShape {
    let shape = this.jobs.get(jobId);
    if (!shape) this.jobs.set(jobId, (shape = { nodes: 0, gpus: 0, gpusPerNode: 0, systemSeries: 0, trainingSeries: 0 }));
    return shape;
  }

  private changed(): void {
    this.version++;
    this.sorted = null;
  }

  /** sums[k] = the sum of the k largest values. */
  private sums(measure: ShapeMeasure): Float64Array {
    if (!this.sorted) this.sorted = new Map();
    let sums = this.sorted.get(measure);
    if (!sums) {
      const values = Float64Array.from(this.jobs.values(), (s) => s[measure])
        .sort()
        .reverse();
      sums = new Float64Array(values.length + 1);
      for (let i = 0; i < values.length; i++) sums[i + 1] = sums[i]! + values[i]!;
      this.sorted.set(measure, sums);
    }
    return sums;
  }
}
