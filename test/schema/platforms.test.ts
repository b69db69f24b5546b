// Baseten, ModelArts and PAI-DLC in one graph: one query answers all three in canonical units,
// and each platform's failure modes end as a typed error on that platform's jobs only.
import { sql } from 'drizzle-orm';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startDemoProviders, type DemoProvider } from '../../src/simulators/demo.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { answerWithHeldCalls, ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';

const CLOUDS = ['BASETEN', 'MODELARTS', 'PAI_DLC'] as const;
const METRICS_ROUTE: Record<(typeof CLOUDS)[number], string> = { BASETEN: 'getMetrics', MODELARTS: 'getMetrics', PAI_DLC: 'getJobMetrics' };

/** Each provider's timeoutSeconds: what a held call's platform clock moves by (below). */
const TIMEOUT_SECONDS = 10;

const RUNNING = `{
  jobs(first: 100, filter: { statuses: [RUNNING], kinds: [BASETEN, MODELARTS, PAI_DLC] }) {
    edges { node { id name status provider { id kind } gpuCount
      gpus { utilization(maxPoints: 10) { unit } }
      metrics(names: [GPU_UTILIZATION, GPU_MEMORY_UTILIZATION, GPU_MEMORY_USED], maxPoints: 10) { name unit scope points { value } } } }
  }
}`;

describe('three cloud platforms in one graph', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let demo: DemoProvider[];
  const baseUrl = new Map<string, string>();
  /**
   * The clock each platform's calls time out on (RuntimeOptions.upstreamTimers). It moves only
   * where the time-out cases move it, so every other call answers whatever the machine's speed,
   * and a held call times out without ten seconds of real waiting.
   */
  const upstreamClock = new Map<string, ManualTimers>();
  // The server's error lines: an INTERNAL answer is masked, and its cause is only in the log.
  const logged: string[] = [];

  beforeAll(async () => {
    demo = (await startDemoProviders()).filter((d) => (CLOUDS as readonly string[]).includes(d.config.kind));
    const providers = demo.map((d) => ({ ...d.config, timeoutSeconds: TIMEOUT_SECONDS }) as ProviderConfig);
    for (const d of demo) {
      baseUrl.set(d.config.kind, (d.config as { baseUrl: string }).baseUrl);
      upstreamClock.set(d.config.kind, new ManualTimers());
    }
    const kindOf = new Map(demo.map((d) => [d.config.id, d.config.kind]));
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, providers, {
      env: Object.assign({}, ...demo.map((d) => d.secrets)),
      upstreamTimers: (id) => upstreamClock.get(kindOf.get(id)!),
      // Each fault below must reach the platform, not an open circuit left by the previous one
      // (the breaker has its own matrix in test/reliability/fault-matrix.test.ts).
      resilience: { breakerThreshold: Number.MAX_SAFE_INTEGER },
      config: { logLevel: 'error' },
      logDestination: new Writable({
        write(chunk, _enc, done) {
          logged.push(String(chunk));
          done();
        },
      }),
    });
  });
  afterAll(async () => {
    await rt.close();
    await Promise.all(demo.map((d) => d.close()));
    await db.drop();
  });

  /**
   * Each logged line's message and the end of its error's: a failed statement's error carries its
   * SQL and parameters (tens of kB) with the cause (a Postgres code's message) at the end.
   */
  function loggedErrors(): string {
    return logged
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        try {
          const entry = JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string } };
          return `${entry.msg}: ${entry.err?.type ?? ''} …${String(entry.err?.message ?? '').slice(-400)}`;
        } catch {
          return line.slice(0, 400);
        }
      })
      .join('\n');
  }

  async function gql(query: string) {
    const res = await rt.app.fetch('http://yoga/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    return (await res.json()) as { data: any; errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } }[] };
  }

  /** Requests `kind`'s platform has had on its metrics route (its simulator's /__sim/stats). */
  async function metricsCalls(kind: (typeof CLOUDS)[number]): Promise<number> {
    const stats = (await (await fetch(`${baseUrl.get(kind)}/__sim/stats`)).json()) as Record<string, number>;
    return stats[METRICS_ROUTE[kind]] ?? 0;
  }

  it('answers running jobs of all three with GPU utilization in RATIO and GPU memory in BYTES or RATIO', async () => {
    const res = await gql(RUNNING);
    expect(res.errors, `server log: ${loggedErrors()}`).toBeUndefined();
    const nodes = res.data.jobs.edges.map((e: any) => e.node);
    for (const kind of CLOUDS) {
      // Baseten's job resource has no GPU total (only per node), so select by the GPU series.
      const jobs = nodes.filter((n: any) => n.provider.kind === kind && n.metrics.some((s: any) => s.name === 'GPU_UTILIZATION'));
      expect(jobs.length, `running ${kind} jobs with GPUs`).toBeGreaterThan(0);
      const series = jobs.flatMap((j: any) => j.metrics);
      const util = series.filter((s: any) => s.name === 'GPU_UTILIZATION' && s.points.length > 0);
      expect(util.length, `${kind} GPU utilization`).toBeGreaterThan(0);
      for (const s of series) {
        expect(s.unit).toBe(s.name === 'GPU_MEMORY_USED' ? 'BYTES' : 'RATIO');
        for (const p of s.points) expect(p.value === null || s.unit === 'BYTES' || (p.value >= 0 && p.value <= 1)).toBe(true);
      }
      if (kind === 'BASETEN') {
        expect(util.every((s: any) => s.scope === 'GPU')).toBe(true);
      } else if (kind === 'PAI_DLC') {
        // Pay-as-you-go jobs: pod aggregates (GetJobMetrics); quota and Lingjun jobs: each card
        // and the job's duty cycle (CloudMonitor's CARD_ and JOB_ names).
        expect(new Set(util.map((s: any) => s.scope))).toEqual(new Set(['NODE', 'GPU', 'JOB']));
      } else {
        // Node (task / pod) aggregates only: no invented per-GPU series.
        expect(util.every((s: any) => s.scope === 'NODE')).toBe(true);
        for (const j of jobs) for (const g of j.gpus) expect(g.utilization).toBeNull();
      }
    }
  });

  const faults: [string, Record<string, unknown>, string][] = [
    ['5xx', { kind: 'status', status: 503 }, 'UPSTREAM_UNAVAILABLE'],
    // A Retry-After past the call's retry budget (5 s): the call gives up at once instead of waiting
    // 5 s to meet the same fault again (honouring it is test/reliability/fault-matrix.test.ts').
    ['429 + retry-after', { kind: 'rate_limit', retryAfterSeconds: 30 }, 'UPSTREAM_RATE_LIMITED'],
    ['time-out', { kind: 'timeout' }, 'UPSTREAM_TIMEOUT'],
    ['malformed body', { kind: 'malformed' }, 'UPSTREAM_BAD_RESPONSE'],
    ['connection reset', { kind: 'reset' }, 'UPSTREAM_UNAVAILABLE'],
    ['auth failure', { kind: 'auth' }, 'UPSTREAM_AUTH'],
  ];

  for (const kind of CLOUDS) {
    for (const [what, fault, code] of faults) {
      it(`${kind} ${what}: ${code} on its jobs' field, the other platforms still answered`, async () => {
        // Start cold for this platform so there is no cached copy to fall back on. Earlier answers
        // went out before their cache writes: those commit first, or they would bring the copy back.
        await rt.readThrough.writesSettled();
        await rt.database.db.execute(sql`delete from fetches where job_id like ${`${kind === 'PAI_DLC' ? 'pai-dlc' : kind.toLowerCase()}-demo:%`}`);
        const control = `${baseUrl.get(kind)}/__sim/faults`;
        await fetch(control, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...fault, route: METRICS_ROUTE[kind] }),
        });
        let res: Awaited<ReturnType<typeof gql>>;
        try {
          res =
            fault.kind === 'timeout'
              ? await answerWithHeldCalls(
                  () => gql(RUNNING),
                  () => metricsCalls(kind),
                  upstreamClock.get(kind)!,
                  TIMEOUT_SECONDS * 1000,
                )
              : await gql(RUNNING);
        } finally {
          await fetch(control, { method: 'DELETE' });
        }
        expect(res.errors?.length, `${kind} ${what} should fail its jobs`).toBeGreaterThan(0);
        for (const e of res.errors!) {
          expect(e.extensions?.code, `${e.message}; server log: ${loggedErrors()}`).toBe(code);
          // The job's series fields fail (and, on Baseten, the GPUs it learns from metrics).
          expect(['metrics', 'utilization', 'gpus']).toContain(e.path?.at(-1));
        }
        const edges = res.data.jobs.edges;
        const failed = new Set(res.errors!.map((e) => e.path![2]));
        // A failing part fails alone: the job stays listed with its name and status, and only the
        // field named by the error's path is null.
        for (const e of res.errors!) {
          const value = e.path!.reduce((at: any, key) => at?.[key], res.data);
          expect(value, e.path!.join('.')).toBeNull();
        }
        for (const i of failed) {
          expect(edges[i as number].node.name).toBeTruthy();
          expect(edges[i as number].node.status).toBeTruthy();
          expect(edges[i as number].node.provider.kind).toBe(kind);
        }
        expect(failed.size).toBeGreaterThan(0);
        const answered = edges.map((e: any) => e.node);
        for (const other of CLOUDS.filter((k) => k !== kind)) {
          expect(
            answered.some((n: any) => n.provider.kind === other && n.metrics?.length > 0),
            `${other} still answered`,
          ).toBe(true);
        }
      });
    }
  }
});
