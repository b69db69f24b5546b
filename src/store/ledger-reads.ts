// The ledger as one request reads it: Job.cost, Job.energy and Job.efficiency of every job in the
// answer are measured together (one DataLoader per window asked), and a fleet's ledger once.
import DataLoader from 'dataloader';
import type { JobUsage } from '../domain/ledger.js';
import type { RequestScope } from '../domain/request-scope.js';
import type { GpuHoursRow, PreparedFleet } from './fleet.js';
import { type LedgerWindow, measureFleet, measureJobs, type UsageRow } from './ledger.js';

const MS_PER_HOUR = 3_600_000;
import type { ReadThrough } from './read-through.js';
import type { JobRow } from './repository.js';

/** Jobs measured in one batch at most: the batch's two statements carry their ids. */
const MAX_LEDGER_BATCH = 1000;

export class LedgerReads {
  private readonly byWindow = new Map<string, DataLoader<JobRow, JobUsage, string>>();

  constructor(
    private readonly rt: ReadThrough,
    private readonly scope: () => RequestScope | undefined,
  ) {}

  /** One job's measurements over the window (its life where an end is absent), batched with the request's other jobs. */
  job(job: JobRow, window: LedgerWindow, maxPoints: number): Promise<JobUsage> {
    const key = `${window.from?.getTime() ?? ''}|${window.to?.getTime() ?? ''}|${maxPoints}`;
    let loader = this.byWindow.get(key);
    if (!loader) {
      loader = new DataLoader<JobRow, JobUsage, string>((jobs) => measureJobs(this.rt, jobs, window, maxPoints, this.scope()), {
        cacheKeyFn: (j) => j.id,
        maxBatchSize: MAX_LEDGER_BATCH,
      });
      this.byWindow.set(key, loader);
    }
    return loader.load(job);
  }

  /**
   * Every job of a prepared fleet over its window, from the fleet's own per-job GPU-hours rows (all
   * of them: gpuHours asked for every job; the jobs its groups count, CPU-only ones billed per
   * node-hour among them); `integrals` adds power, tensor/SM active and TFLOP/s.
   */
  fleet(prepared: PreparedFleet, jobRows: readonly GpuHoursRow[], integrals: boolean, maxPoints: number): Promise<JobUsage[]> {
    const windows = new Map(prepared.windows.map((w) => [w.jobId, w]));
    const usage: UsageRow[] = jobRows
      .filter((r) => r.kind === 'job' && windows.has(r.key!))
      .map((r) => {
        const w = windows.get(r.key!)!;
        return {
          jobId: r.key!,
          windowMs: w.to.getTime() - w.from.getTime(),
          allocMs: r.allocatedGpuHours * MS_PER_HOUR,
          coveredMs: r.coveredGpuHours * MS_PER_HOUR,
          usedMs: r.usedGpuHours * MS_PER_HOUR,
          nodeCount: r.nodes ?? 0,
        };
      });
    return measureFleet(this.rt, prepared.jobs, prepared.windows, usage, integrals, maxPoints, this.scope());
  }
}
