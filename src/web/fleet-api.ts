// The fleet view's reads: every running job's row (its accelerators' latest utilization), the
// fleet's waste and cost over the last hour, the filters' catalog, and whether the background
// collector keeps up. Through the page's one GraphQL client (api.ts).
import { ApiError, durationSeconds, errorsAt, gpuLabel, query, request, SCOPE_RANK, withEta } from './api.js';

// ---- the fleet view

export interface FleetCell {
  /** "node #index" for a GPU, the node name for a node aggregate, "job" for a job aggregate. */
  label: string;
  scope: 'GPU' | 'NODE' | 'JOB';
  gpuId: string | null;
  nodeId: string | null;
  /** Latest utilization in the recent window, 0..1; null when none was reported. */
  utilization: number | null;
  at: string | null;
}

export interface FleetJob {
  id: string;
  name: string;
  status: string;
  gpuCount: number | null;
  gpuType: string | null;
  startedAt: string | null;
  provider: { id: string; kind: string; name: string; simulated: boolean; systemMetrics: string[] };
  project: { id: string; name: string };
  progress: { fraction: number | null; etaSeconds: number | null } | null;
  /** Null when the job's metrics could not be read (see metricsError). */
  cells: FleetCell[] | null;
  metricsError: string | null;
}

export interface IdleMark {
  jobId: string;
  scope: string;
  gpuId: string | null;
  nodeId: string | null;
  gpuCount: number;
  idleSeconds: number;
}

/** A job's (or the window's) cost as the ledger answers it (Cost in the graph); amounts are null with a reason. */
export interface LedgerCost {
  amount: number | null;
  idleAmount: number | null;
  currency: string | null;
  unpricedJobCount: number;
  reason: string | null;
}

export interface JobWaste {
  jobId: string;
  /** The job's cost in the window; null when the server answered without it. */
  cost: LedgerCost | null;
  allocatedGpuHours: number;
  usedGpuHours: number;
  wasteGpuHours: number;
  utilization: number | null;
  efficiency: number | null;
  coverage: number | null;
}

export interface FleetOptions {
  providerId: string | null;
  projectId: string | null;
  /** The window for waste and idle stretches, seconds back from now. */
  windowSeconds: number;
  /** The latest utilization is read from this many seconds back. */
  recentSeconds: number;
  idleThreshold: number;
  idleForAtLeast: string;
}

const FLEET_JOBS = `query LiveViewFleetJobs($filter: JobFilter, $recent: DateTime!) {
  jobs(first: 100, filter: $filter) {
    totalCount
    sourceErrors { provider { id } message }
    nodes {
      id name status gpuCount gpuType startedAt
      provider { id kind name simulated systemMetrics } project { id name }
      progress { fraction remaining }
      metrics(names: [GPU_UTILIZATION, NPU_UTILIZATION], from: $recent, maxPoints: 1, aggregation: LAST) {
        scope node { id name } gpu { id index node { id name } } summary { last lastAt }
      }
    }
  }
}`;

const FLEET_WASTE = `query LiveViewFleetWaste($filter: JobFilter, $from: DateTime!, $to: DateTime!, $threshold: Float!, $forAtLeast: Duration!) {
  fleet(filter: $filter, from: $from, to: $to) {
    idleGpus(threshold: $threshold, forAtLeast: $forAtLeast) { job { id } scope gpuCount node { id } gpu { id } idleDuration }
    jobs { job { id } allocatedGpuHours usedGpuHours wasteGpuHours utilization efficiency coverage cost { amount idleAmount currency unpricedJobCount reason } }
    utilization { total { jobCount allocatedGpuHours usedGpuHours wasteGpuHours cost { amount idleAmount currency unpricedJobCount reason } } }
    problems { job { id name } stale message }
  }
}`;

interface FleetJobsWire {
  jobs: {
    totalCount: number;
    sourceErrors: { provider: { id: string } | null; message: string }[];
    nodes: (
      | (Omit<FleetJob, 'cells' | 'metricsError' | 'progress'> & {
          progress: { fraction: number | null; remaining: string | null } | null;
          metrics:
            | {
                scope: 'GPU' | 'NODE' | 'JOB';
                node: { id: string; name: string } | null;
                gpu: { id: string; index: number; node: { id: string; name: string } | null } | null;
                summary: { last: number | null; lastAt: string | null };
              }[]
            | null;
        })
      | null
    )[];
  };
}

interface FleetWasteWire {
  fleet: {
    idleGpus: { job: { id: string }; scope: string; gpuCount: number; node: { id: string } | null; gpu: { id: string } | null; idleDuration: string }[];
    jobs: ({ job: { id: string } } & Omit<JobWaste, 'jobId'>)[];
    utilization: { total: FleetTotal & { cost: LedgerCost } } | null;
    problems: { job: { id: string; name: string }; stale: boolean; message: string }[];
  } | null;
}

const fleetFilter = (opts: FleetOptions) => ({ statuses: ['RUNNING'], providerIds: opts.providerId ? [opts.providerId] : null, projectId: opts.projectId });

export interface FleetJobs {
  jobs: FleetJob[];
  totalCount: number;
  problems: string[];
  /** When the answer was asked for. */
  at: string;
}

/** Every running job (of one platform or project, when given) with its accelerators' latest utilization. */
export async function fleetJobs(opts: FleetOptions, now = Date.now()): Promise<FleetJobs> {
  const answer = await request<FleetJobsWire>(FLEET_JOBS, { filter: fleetFilter(opts), recent: new Date(now - opts.recentSeconds * 1000).toISOString() });
  if (!answer.data?.jobs) throw new ApiError(answer.errors.map((e) => e.message).join('; ') || 'no answer');
  const problems: string[] = answer.data.jobs.sourceErrors.map((e) => `${e.provider?.id ?? 'a platform'}: ${e.message} (jobs shown from the cache)`);
  const jobs: FleetJob[] = [];
  answer.data.jobs.nodes.forEach((j, i) => {
    if (!j) return;
    const metricsError = errorsAt(answer.errors, 'jobs', 'nodes', i, 'metrics');
    let cells: FleetCell[] | null = null;
    if (j.metrics) {
      const best = Math.min(...j.metrics.map((m) => SCOPE_RANK[m.scope]!));
      cells = j.metrics
        .filter((m) => SCOPE_RANK[m.scope] === best)
        .map((m) => ({
          label: m.gpu ? gpuLabel(m.gpu.node?.name ?? m.node?.name, m.gpu.index) : (m.node?.name ?? 'job'),
          scope: m.scope,
          gpuId: m.gpu?.id ?? null,
          nodeId: m.node?.id ?? m.gpu?.node?.id ?? null,
          utilization: m.summary.last,
          at: m.summary.lastAt,
        }))
        .sort((a, b) => a.label.localeCompare(b.label, undefined, { numeric: true }));
    }
    const { metrics: _m, progress, ...rest } = j;
    jobs.push({ ...rest, progress: withEta(progress), cells, metricsError });
  });
  return { jobs, totalCount: answer.data.jobs.totalCount, problems, at: new Date(now).toISOString() };
}

/** The window's GPU-hours of every running job together (Fleet.utilization.total). */
export interface FleetTotal {
  jobCount: number;
  allocatedGpuHours: number;
  usedGpuHours: number;
  wasteGpuHours: number;
}

export interface FleetWaste {
  idle: IdleMark[];
  waste: Map<string, JobWaste>;
  /** Every running job's GPU-hours in the window together; null when the server answered without it. */
  total: FleetTotal | null;
  /** Every running job's cost in the window together (the fleet's total); null when the server answered without it. */
  cost: LedgerCost | null;
  problems: string[];
  from: string;
  to: string;
}

/** Waste and idle accelerators of the running jobs over the window (the fleet query; slower: it reads every job's window). */
export async function fleetWaste(opts: FleetOptions, now = Date.now()): Promise<FleetWaste> {
  const from = new Date(now - opts.windowSeconds * 1000).toISOString();
  const to = new Date(now).toISOString();
  const answer = await request<FleetWasteWire>(FLEET_WASTE, {
    filter: fleetFilter(opts),
    from,
    to,
    threshold: opts.idleThreshold,
    forAtLeast: opts.idleForAtLeast,
  });
  const f = answer.data?.fleet;
  if (!f) throw new ApiError(answer.errors.map((e) => e.message).join('; ') || 'no answer');
  return {
    idle: f.idleGpus.map((g) => ({
      jobId: g.job.id,
      scope: g.scope,
      gpuId: g.gpu?.id ?? null,
      nodeId: g.node?.id ?? null,
      gpuCount: g.gpuCount,
      idleSeconds: durationSeconds(g.idleDuration),
    })),
    waste: new Map(
      f.jobs.map((w) => [
        w.job.id,
        {
          jobId: w.job.id,
          allocatedGpuHours: w.allocatedGpuHours,
          usedGpuHours: w.usedGpuHours,
          wasteGpuHours: w.wasteGpuHours,
          utilization: w.utilization,
          efficiency: w.efficiency,
          coverage: w.coverage,
          cost: w.cost ?? null,
        },
      ]),
    ),
    total: f.utilization
      ? {
          jobCount: f.utilization.total.jobCount,
          allocatedGpuHours: f.utilization.total.allocatedGpuHours,
          usedGpuHours: f.utilization.total.usedGpuHours,
          wasteGpuHours: f.utilization.total.wasteGpuHours,
        }
      : null,
    cost: f.utilization?.total.cost ?? null,
    problems: f.problems.map((p) => `${p.job.name}: ${p.message}${p.stale ? ' (counted from older cached data)' : ' (no data)'}`),
    from,
    to,
  };
}

export interface Catalog {
  providers: { id: string; kind: string; name: string; simulated: boolean }[];
  projects: { id: string; name: string; provider: { id: string } }[];
}

/** The platforms and projects the filters offer. */
export function catalog(): Promise<Catalog> {
  return query<Catalog>(`query LiveViewCatalog { providers { id kind name simulated } projects { id name provider { id } } }`);
}

// ---- collection: is the background collector keeping up?

export interface CollectionLag {
  providerId: string;
  /** What the page says, e.g. "Collection behind on ModelArts: 300 s late, 180 jobs waiting". */
  message: string;
}

interface CollectionWire {
  providers: {
    id: string;
    name: string;
    collection: { enabled: boolean; lag: number; intervalSeconds: number; backlog: number; lastError: { code: string; message: string } | null } | null;
  }[];
}

/**
 * A line per provider whose collection is behind: lag beyond two intervals, jobs it could not
 * collect, or a failure. None when all is well or no collector runs (COLLECT=off).
 */
export async function collectionLags(): Promise<CollectionLag[]> {
  const data = await query<CollectionWire>(
    `query LiveViewCollection { providers { id name collection { enabled lag intervalSeconds backlog lastError { code message } } } }`,
  );
  const out: CollectionLag[] = [];
  for (const p of data.providers) {
    const c = p.collection;
    if (!c?.enabled) continue;
    const parts: string[] = [];
    if (c.lag > 2 * c.intervalSeconds) parts.push(`${Math.round(c.lag)} s late`);
    if (c.backlog > 0) parts.push(`${c.backlog} ${c.backlog === 1 ? 'job' : 'jobs'} waiting`);
    if (c.lastError) parts.push(`last error: ${c.lastError.message} (${c.lastError.code})`);
    if (parts.length) out.push({ providerId: p.id, message: `Collection behind on ${p.name}: ${parts.join(', ')}` });
  }
  return out;
}
