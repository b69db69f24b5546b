// Times the fleet question (idle GPUs, GPU-hours roll-ups, jobs by waste) over a running runtime:
// the first ask (whatever the cache holds: cold when it is empty) and then warm samples, each with
// its SQL statement count. bench/run.ts wires it into the benchmark table.
import { performance } from 'node:perf_hooks';
import type { Runtime } from '../src/server/runtime.js';

export interface FleetBenchOptions {
  from: string;
  to: string;
  filter?: Record<string, unknown> | null;
  threshold?: number;
  /** ISO-8601 duration. */
  forAtLeast?: string;
  /** Warm samples after the first ask; default 3. */
  samples?: number;
}

export interface FleetBenchResult {
  firstMs: number;
  firstSql: number;
  warmMs: number[];
  warmP50Ms: number;
  warmSql: number;
  jobs: number;
  idleGpus: number;
  allocatedGpuHours: number;
  usedGpuHours: number;
  coverage: number | null;
}

// Within the default static cost limit (graphql-armor, 5000).
const FLEET_BENCH_QUERY = `query FleetBench($filter: JobFilter, $from: DateTime!, $to: DateTime!, $threshold: Float!, $min: Duration!) {
  fleet(filter: $filter, from: $from, to: $to) {
    jobCount
    idleGpus(threshold: $threshold, forAtLeast: $min) { job { id } gpuCount idleGpuHours intervals { from to } }
    utilization {
      total { allocatedGpuHours usedGpuHours coverage }
      byProvider { provider { id } allocatedGpuHours usedGpuHours coverage }
      byGpuModel { gpuModel allocatedGpuHours usedGpuHours }
    }
    jobs { job { id } wasteGpuHours }
  }
}`;

export async function benchFleet(runtime: Runtime, opts: FleetBenchOptions): Promise<FleetBenchResult> {
  const variables = { filter: opts.filter ?? null, from: opts.from, to: opts.to, threshold: opts.threshold ?? 0.5, min: opts.forAtLeast ?? 'PT5M' };
  const ask = async () => {
    const before = runtime.database.statementCount();
    const t0 = performance.now();
    const res = await runtime.app.fetch('http://bench/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: FLEET_BENCH_QUERY, variables }),
    });
    const body = (await res.json()) as { data?: { fleet: any }; errors?: unknown[] };
    const ms = performance.now() - t0;
    if (body.errors?.length || !body.data) throw new Error(`fleet query failed: ${JSON.stringify(body.errors).slice(0, 400)}`);
    return { ms, sql: runtime.database.statementCount() - before, fleet: body.data.fleet };
  };
  const first = await ask();
  const warm = [];
  for (let i = 0; i < (opts.samples ?? 3); i++) warm.push(await ask());
  const sorted = warm.map((w) => w.ms).sort((a, b) => a - b);
  const total = first.fleet.utilization.total;
  return {
    firstMs: first.ms,
    firstSql: first.sql,
    warmMs: warm.map((w) => w.ms),
    warmP50Ms: sorted[Math.max(0, Math.ceil(sorted.length / 2) - 1)] ?? first.ms,
    warmSql: warm.at(-1)?.sql ?? first.sql,
    jobs: first.fleet.jobCount,
    idleGpus: first.fleet.idleGpus.length,
    allocatedGpuHours: total.allocatedGpuHours,
    usedGpuHours: total.usedGpuHours,
    coverage: total.coverage,
  };
}
