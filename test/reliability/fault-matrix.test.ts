// Every HTTP platform x every failure mode, through the whole server: no crash, the right typed
// error, the cached copy served as stale (with a stale error in errors[] for just that part), the
// circuit opening on outages and closing again (half-open trial) once the platform is back, and
// Retry-After honoured. Runicorn is left out: its demo reads local files, there is no upstream.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ProviderConfig } from '../../src/config/index.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startDemoProviders, type DemoProvider } from '../../src/simulators/demo.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { answerWithHeldCalls, ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';

const PLATFORMS = ['BASETEN', 'MODELARTS', 'PAI_DLC', 'PRIMUS_LENS'] as const;
// The circuit's break. The test's clock (Date, faked and moving with real time) never reaches its
// end by itself within a test: the circuit is open for as long as a busy machine takes to read it,
// and half-open once the test moves the clock past the break.
const HALF_OPEN_MS = 600_000;
/** Each provider's timeoutSeconds: what a held call's platform clock moves by (upstreamClock below). */
const TIMEOUT_SECONDS = 10;

/** [name, fault, expected code, whether it opens the circuit] */
const FAULTS: [string, Record<string, unknown>, string, boolean][] = [
  ['5xx', { kind: 'status', status: 503 }, 'UPSTREAM_UNAVAILABLE', true],
  ['429 + retry-after', { kind: 'rate_limit', retryAfterSeconds: 30 }, 'UPSTREAM_RATE_LIMITED', false],
  ['time-out', { kind: 'timeout' }, 'UPSTREAM_TIMEOUT', true],
  ['malformed body', { kind: 'malformed' }, 'UPSTREAM_BAD_RESPONSE', true],
  ['connection reset', { kind: 'reset' }, 'UPSTREAM_UNAVAILABLE', true],
  ['auth failure', { kind: 'auth' }, 'UPSTREAM_AUTH', true],
];

const METRICS = `query($id: ID!) { job(id: $id) { id metrics(maxPoints: 20) { name freshness { stale error { code } } } } }`;
const HEALTH = `{ providers { id health { state circuit consecutiveFailures retryAt lastError { code } } } }`;

type Gql = { status: number; body: { data?: any; errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, any> }[] } };

describe('fault matrix: each platform x each failure', () => {
  let rt: Runtime;
  let db: TestDatabase;
  let demo: DemoProvider[];
  const control = new Map<string, string>();
  const providerOf = new Map<string, string>();
  const warm = new Map<string, string>();
  const cold = new Map<string, string[]>();
  /**
   * The clock each platform's calls time out on (RuntimeOptions.upstreamTimers): it moves only while
   * that platform holds its calls (`holding`), so no other call ever times out on a busy machine,
   * and a held one does without seconds of real waiting.
   */
  const upstreamClock = new Map<string, ManualTimers>();
  /** The platform whose simulator holds every call it gets (the time-out cases). */
  let holding: string | null = null;

  function gql(query: string, variables?: Record<string, unknown>): Promise<Gql> {
    const held = holding;
    if (!held) return ask(query, variables);
    return answerWithHeldCalls(
      () => ask(query, variables),
      () => upstreamCalls(held),
      upstreamClock.get(providerOf.get(held)!)!,
      TIMEOUT_SECONDS * 1000,
    );
  }
  async function ask(query: string, variables?: Record<string, unknown>): Promise<Gql> {
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json()) as Gql['body'] };
  }
  async function fault(kind: string, body: Record<string, unknown> | null) {
    await fetch(`${control.get(kind)}/__sim/faults`, {
      method: body ? 'POST' : 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
  }
  /** Requests the platform's simulator has answered so far, all routes together. */
  async function upstreamCalls(kind: string): Promise<number> {
    const res = await fetch(`${control.get(kind)}/__sim/stats`);
    return Object.values((await res.json()) as Record<string, number>).reduce((a, b) => a + b, 0);
  }
  async function health(kind: string) {
    const res = await gql(HEALTH);
    return res.body.data.providers.find((p: any) => p.id === providerOf.get(kind)).health;
  }

  beforeAll(async () => {
    demo = (await startDemoProviders()).filter((d) => (PLATFORMS as readonly string[]).includes(d.config.kind));
    const providers = demo.map((d) => ({ ...d.config, timeoutSeconds: TIMEOUT_SECONDS }) as ProviderConfig);
    for (const d of demo) {
      control.set(d.config.kind, (d.config as { baseUrl: string }).baseUrl.replace(/^(https?:\/\/[^/]+).*$/, '$1'));
      providerOf.set(d.config.kind, d.config.id);
      upstreamClock.set(d.config.id, new ManualTimers());
    }
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, providers, {
      env: Object.assign({}, ...demo.map((d) => d.secrets)),
      upstreamTimers: (id) => upstreamClock.get(id),
      logger: pino({ level: process.env.DEBUG_LOG ? 'error' : 'silent' }),
      // Every question goes upstream again, so each one meets the fault; lists and details stay cached.
      cachePolicy: { metricsTtlMs: 0, listTtlMs: 3_600_000, detailTtlMs: 3_600_000 },
      resilience: { breakerThreshold: 2, halfOpenAfterMs: HALF_OPEN_MS, initialBackoffMs: 10, maxBackoffMs: 50 },
    });
    // One running job per platform gets a cached copy of its metrics; others stay cold.
    for (const kind of PLATFORMS) {
      const list = await gql(`{ jobs(first: 200, filter: { statuses: [RUNNING], kinds: [${kind}] }) { edges { node { id } } } }`);
      const ids: string[] = list.body.data.jobs.edges.map((e: any) => e.node.id);
      for (const id of ids) {
        const res = await gql(METRICS, { id });
        if (!warm.has(kind) && res.body.data?.job?.metrics?.length > 0) {
          warm.set(kind, id);
          break;
        }
      }
      expect(warm.get(kind), `a running ${kind} job with metrics`).toBeDefined();
      cold.set(
        kind,
        ids.filter((id) => id !== warm.get(kind)),
      );
    }
    // The cold jobs must really be cold: forget whatever the search above fetched for them, once
    // its writes (which follow its answers) have committed.
    await rt.readThrough.writesSettled();
    for (const ids of cold.values())
      for (const id of ids) await rt.database.db.execute(`delete from fetches where job_id = '${id.replace(/'/g, "''")}'` as never);
    // The breaker's clock (cockatiel reads Date.now) and the health's: the test's from here.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  }, 60_000);

  afterAll(async () => {
    vi.useRealTimers();
    await rt?.close();
    await Promise.all((demo ?? []).map((d) => d.close()));
    await db?.drop();
  });

  for (const kind of PLATFORMS) {
    for (const [what, spec, code, trips] of FAULTS) {
      it(`${kind} ${what}: ${code}, stale copy served, circuit ${trips ? 'opens and closes' : 'stays closed'}`, async () => {
        const id = warm.get(kind)!;
        await fault(kind, spec);
        if (spec.kind === 'timeout') holding = kind;
        let stale: Gql;
        let faultedCalls = 0;
        try {
          const callsBefore = await upstreamCalls(kind);
          stale = await gql(METRICS, { id });
          faultedCalls = (await upstreamCalls(kind)) - callsBefore;
          // Cached: the data comes back, marked stale, with a typed error for just that field.
          expect(stale.status).toBe(200);
          const series = stale.body.data.job.metrics;
          expect(series.length).toBeGreaterThan(0);
          for (const s of series) expect(s.freshness).toEqual({ stale: true, error: { code } });
          expect(stale.body.errors).toEqual([
            expect.objectContaining({ path: ['job', 'metrics'], extensions: expect.objectContaining({ code, stale: true }) }),
          ]);
          // Nothing cached: the field fails with the same typed error instead of an empty lie.
          const coldId = cold.get(kind)![0];
          if (coldId) {
            const none = await gql(METRICS, { id: coldId });
            expect(none.status).toBe(200);
            // metrics fails alone: the job is still answered, its metrics null with the typed error.
            expect(none.body.data).toEqual({ job: { id: coldId, metrics: null } });
            expect(none.body.errors?.[0]?.extensions?.code).toBe(code);
            expect(none.body.errors?.[0]?.path).toEqual(['job', 'metrics']);
          }
          const h = await health(kind);
          expect(h.lastError.code).toBe(code);
          if (trips) {
            // Two failed calls opened the circuit: DOWN, and calls fail fast with the same code.
            expect(h).toMatchObject({ state: 'DOWN', circuit: 'OPEN' });
            expect(Number.isFinite(Date.parse(h.retryAt))).toBe(true);
            // Failing fast means not calling: the open circuit answers without a request upstream.
            // The claim is checked on a call the circuit stayed open across: the same open period
            // (retryAt) before and after it.
            await eventually(
              async () => {
                const open = await health(kind);
                const callsOpen = await upstreamCalls(kind);
                const shortCircuited = await gql(METRICS, { id });
                const after = await health(kind);
                if (open.circuit !== 'OPEN' || after.circuit !== 'OPEN' || after.retryAt !== open.retryAt) return undefined;
                expect(await upstreamCalls(kind)).toBe(callsOpen);
                expect(shortCircuited.body.errors?.[0]?.extensions).toMatchObject({ code, stale: true });
                return true;
              },
              30_000,
              `${kind}: a call while the circuit stays open`,
            );
          } else {
            // A rate limit is waited out (or not), never a reason to open the circuit; a
            // Retry-After longer than the retry budget is not waited for at all.
            expect(h).toMatchObject({ state: 'DEGRADED', circuit: 'CLOSED' });
            // Not waited for and not retried: checked below against the calls the same question
            // makes once the platform answers again.
          }
        } finally {
          holding = null;
          await fault(kind, null);
        }
        if (trips) {
          // Half-open once the break is over (the clock moved past it, then waited for as a state),
          // then one trial call succeeds and closes the circuit.
          vi.setSystemTime(Date.now() + HALF_OPEN_MS);
          await eventually(async () => (await health(kind)).circuit === 'HALF_OPEN', 30_000, `${kind} circuit half-open`);
        }
        const callsRecovering = await upstreamCalls(kind);
        const recovered = await gql(METRICS, { id });
        expect(recovered.body.errors).toBeUndefined();
        if (!trips) {
          expect(faultedCalls).toBeGreaterThan(0);
          expect(faultedCalls).toBeLessThanOrEqual((await upstreamCalls(kind)) - callsRecovering);
        }
        for (const s of recovered.body.data.job.metrics) expect(s.freshness.stale).toBe(false);
        expect(await health(kind)).toMatchObject({ state: 'OK', circuit: 'CLOSED', consecutiveFailures: 0 });
      });
    }

    it(`${kind}: a short Retry-After is honoured, then the call succeeds`, async () => {
      await fault(kind, { kind: 'rate_limit', retryAfterSeconds: 1, times: 1 });
      const callsBefore = await upstreamCalls(kind);
      // Real time (the test's Date moves only as fast as its timer ticks).
      const started = performance.now();
      const res = await gql(METRICS, { id: warm.get(kind)! });
      const took = performance.now() - started;
      await fault(kind, null);
      expect(res.body.errors).toBeUndefined();
      // Waited at least what the platform asked (a busy machine only waits longer), then asked again.
      expect(took).toBeGreaterThanOrEqual(950);
      expect(await upstreamCalls(kind)).toBeGreaterThanOrEqual(callsBefore + 2);
    });
  }
});
