// The configured provider instances at run time, each one's health as seen from our calls, and the
// resilience policies (cockatiel) every upstream call goes through: a circuit breaker per provider
// instance, retries with exponential backoff and jitter that honour the platform's Retry-After, and
// a concurrency limit (bulkhead) per provider. Each try is bounded by the adapter's own time-out.
import type { RequestScope } from '../domain/request-scope.js';
import {
  BrokenCircuitError,
  BulkheadRejectedError,
  CircuitState,
  ConsecutiveBreaker,
  DelegateBackoff,
  ExponentialBackoff,
  bulkhead,
  circuitBreaker,
  handleWhen,
  retry,
  type BulkheadPolicy,
  type CircuitBreakerPolicy,
  type IBackoff,
} from 'cockatiel';
import type { ProviderKind } from '../domain/types.js';
import { DomainError, UpstreamError, type ErrorCode } from '../domain/errors.js';
import type { ProviderAdapter } from './provider.js';

export type HealthState = 'OK' | 'DEGRADED' | 'DOWN' | 'UNKNOWN';
export type CircuitPosition = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

export interface ProviderHealth {
  state: HealthState;
  lastSuccessAt: Date | null;
  lastErrorAt: Date | null;
  lastError: { code: string; message: string } | null;
  consecutiveFailures: number;
  /** The provider's circuit breaker: OPEN refuses calls until `retryAt`, HALF_OPEN lets one trial through. */
  circuit: CircuitPosition;
  retryAt: Date | null;
}

export interface ProviderInstance {
  id: string;
  kind: ProviderKind;
  name: string;
  simulated: boolean;
  pollIntervalSeconds: number | null;
  adapter: ProviderAdapter;
}

export interface ResilienceOptions {
  /** Tries after the first for outages (5xx, connection resets) and rate limits. Default 1. */
  retries: number;
  /** Backoff between tries: exponential from this, with decorrelated jitter. Default 200 ms. */
  initialBackoffMs: number;
  /** Largest computed backoff. Default 2000 ms. */
  maxBackoffMs: number;
  /**
   * The most one call waits between its tries in total. A Retry-After longer than what is left is
   * not waited for: the call fails at once with the platform's rate-limit error (and its
   * retryAfterSeconds), so no request is held longer than this plus its tries' time-outs. Default 5000 ms.
   */
  retryBudgetMs: number;
  /** Consecutive failed calls (after their retries) that open a provider's circuit. Default 5. */
  breakerThreshold: number;
  /** How long an open circuit refuses calls before one trial call goes through (half-open). Default 10000 ms. */
  halfOpenAfterMs: number;
  /** Upstream calls one provider runs at once. Default 8. */
  maxConcurrent: number;
  /** Calls that may wait for a slot; beyond that a call fails with UPSTREAM_RATE_LIMITED at once. Default 512. */
  maxQueued: number;
  /**
   * One API token's share of a provider, inside maxConcurrent: the calls one tenant runs at once.
   * A noisy tenant queues behind its own share; the other slots stay free for everyone else.
   * Default 4 (half of maxConcurrent).
   */
  maxConcurrentPerTenant: number;
  /** Calls one tenant may have waiting for its share; beyond that its calls fail with UPSTREAM_RATE_LIMITED. Default 64. */
  maxQueuedPerTenant: number;
}

export const DEFAULT_RESILIENCE: ResilienceOptions = {
  retries: 1,
  initialBackoffMs: 200,
  maxBackoffMs: 2000,
  retryBudgetMs: 5000,
  breakerThreshold: 5,
  halfOpenAfterMs: 10_000,
  maxConcurrent: 8,
  maxQueued: 512,
  maxConcurrentPerTenant: 4,
  maxQueuedPerTenant: 64,
};

/** Worth another try soon. A time-out is not: it already cost a whole timeoutSeconds. */
const RETRIED: ReadonlySet<ErrorCode> = new Set(['UPSTREAM_UNAVAILABLE', 'UPSTREAM_RATE_LIMITED']);
/**
 * Failures that say the platform is down or unusable as configured, and that calling again at once
 * will not fix: these open the circuit. Rate limits do not (their Retry-After is honoured instead),
 * nor does an unknown id (a request rightly refused says nothing about the platform).
 */
const TRIPS_BREAKER: ReadonlySet<ErrorCode> = new Set(['UPSTREAM_UNAVAILABLE', 'UPSTREAM_TIMEOUT', 'UPSTREAM_BAD_RESPONSE', 'UPSTREAM_AUTH']);

/** Told of each upstream call as it starts; the function it returns is told how it ended (null = success). */
export type UpstreamObserver = (call: { providerId: string; kind: ProviderKind }) => (error: unknown) => void;

interface Guard {
  breaker: CircuitBreakerPolicy;
  bulkhead: BulkheadPolicy;
  /** The failure that opened the circuit, reported (with its code) while it stays open. */
  openedBy: UpstreamError | null;
  openedAt: number | null;
}

export class ProviderSet {
  private readonly byId = new Map<string, ProviderInstance>();
  private readonly health = new Map<string, ProviderHealth>();
  private readonly guards = new Map<string, Guard>();
  /** Per provider, per tenant (API token name): that tenant's share. Background work has no tenant. */
  private readonly shares = new Map<string, Map<string, BulkheadPolicy>>();
  private readonly observers: UpstreamObserver[] = [];
  /** Set on a scoped view: the only provider ids it shows. */
  private visible: ReadonlySet<string> | null = null;
  readonly resilience: ResilienceOptions;

  constructor(instances: ProviderInstance[], resilience: Partial<ResilienceOptions> = {}) {
    this.resilience = { ...DEFAULT_RESILIENCE, ...resilience };
    for (const p of instances) {
      this.byId.set(p.id, p);
      this.health.set(p.id, {
        state: 'UNKNOWN',
        lastSuccessAt: null,
        lastErrorAt: null,
        lastError: null,
        consecutiveFailures: 0,
        circuit: 'CLOSED',
        retryAt: null,
      });
      this.guards.set(p.id, this.guardFor());
    }
  }

  private guardFor(): Guard {
    const r = this.resilience;
    const guard: Guard = {
      breaker: circuitBreaker(
        handleWhen((err) => err instanceof UpstreamError && TRIPS_BREAKER.has(err.code)),
        { halfOpenAfter: r.halfOpenAfterMs, breaker: new ConsecutiveBreaker(r.breakerThreshold) },
      ),
      bulkhead: bulkhead(r.maxConcurrent, r.maxQueued),
      openedBy: null,
      openedAt: null,
    };
    guard.breaker.onBreak((reason) => {
      guard.openedAt = Date.now();
      guard.openedBy = 'error' in reason && reason.error instanceof UpstreamError ? reason.error : null;
    });
    guard.breaker.onReset(() => {
      guard.openedAt = null;
      guard.openedBy = null;
    });
    return guard;
  }

  /**
   * A view that shows only the given providers (a tenant's): the same instances, health, breakers
   * and concurrency limits, but find/ids/all/call answer as if the others were not configured.
   */
  scoped(ids: Iterable<string>): ProviderSet {
    const view = Object.create(this) as ProviderSet;
    view.visible = new Set(ids);
    return view;
  }

  private shows(id: string): boolean {
    return this.visible === null || this.visible.has(id);
  }

  all(): ProviderInstance[] {
    return [...this.byId.values()].filter((p) => this.shows(p.id));
  }

  ids(): string[] {
    return [...this.byId.keys()].filter((id) => this.shows(id));
  }

  find(id: string): ProviderInstance | undefined {
    return this.shows(id) ? this.byId.get(id) : undefined;
  }

  /** Metrics and tracing watch every upstream call through this, whatever policies wrap it. */
  observe(observer: UpstreamObserver): void {
    this.observers.push(observer);
  }

  healthOf(id: string): ProviderHealth {
    const h = this.health.get(id);
    const guard = this.guards.get(id);
    if (!h || !guard)
      return { state: 'UNKNOWN', lastSuccessAt: null, lastErrorAt: null, lastError: null, consecutiveFailures: 0, circuit: 'CLOSED', retryAt: null };
    // cockatiel moves to half-open lazily, on the first call after the break: report it once it is due.
    const dueForTrial = guard.openedAt !== null && Date.now() >= guard.openedAt + this.resilience.halfOpenAfterMs;
    const circuit = guard.breaker.state === CircuitState.Open && dueForTrial ? 'HALF_OPEN' : circuitOf(guard.breaker.state);
    const state: HealthState =
      circuit === 'OPEN' ? 'DOWN' : circuit === 'HALF_OPEN' || h.consecutiveFailures > 0 ? 'DEGRADED' : h.lastSuccessAt ? 'OK' : h.state;
    const retryAt = circuit === 'OPEN' && guard.openedAt !== null ? new Date(guard.openedAt + this.resilience.halfOpenAfterMs) : null;
    return { ...h, state, circuit, retryAt };
  }

  /**
   * Runs one upstream operation through the provider's breaker, retries and concurrency limit, and
   * keeps its health in step with how it went. Throws the last UpstreamError when every try failed.
   * `scope`: whose share of the platform it draws from (its tenant) and the signal that stops it
   * when nobody waits for the answer any more; none for background work (a poller with no signal).
   */
  async call<T>(id: string, op: (adapter: ProviderAdapter, signal: AbortSignal) => Promise<T>, scope?: RequestScope): Promise<T> {
    const p = this.find(id);
    if (!p) throw new DomainError('NOT_FOUND', `provider "${id}" is not configured`);
    const h = this.health.get(id)!;
    const guard = this.guards.get(id)!;
    const share = this.shareOf(id, scope?.tenant ?? null);
    // Nobody waits for the answer any more (request abandoned, shared fill cancelled): stop the call.
    const signal = scope?.signal;
    try {
      const guarded = () =>
        guard.breaker.execute(
          ({ signal: callSignal }) =>
            this.retryPolicy().execute(({ signal: trySignal }) => guard.bulkhead.execute(() => this.attempt(p, op, trySignal)), callSignal),
          signal,
        );
      const out = share ? await share.execute(guarded) : await guarded();
      h.lastSuccessAt = new Date();
      h.consecutiveFailures = 0;
      return out;
    } catch (err) {
      if (err instanceof BrokenCircuitError) throw this.openCircuitError(id, guard);
      const failure =
        err instanceof BulkheadRejectedError
          ? new UpstreamError('UPSTREAM_RATE_LIMITED', id, 'too many calls to this platform are under way for this client', { retryAfterSeconds: 1 })
          : err;
      // A request the platform rightly refused (unknown id) says nothing about its health.
      if (failure instanceof UpstreamError && failure.code !== 'UPSTREAM_NOT_FOUND') {
        h.consecutiveFailures++;
        h.lastErrorAt = new Date();
        h.lastError = { code: failure.code, message: failure.message };
      }
      throw failure;
    }
  }

  /** The tenant's share of a provider (made on first use; one per token name, so bounded by the token list). */
  private shareOf(id: string, tenant: string | null): BulkheadPolicy | null {
    if (tenant === null) return null;
    let byTenant = this.shares.get(id);
    if (!byTenant) this.shares.set(id, (byTenant = new Map()));
    let share = byTenant.get(tenant);
    if (!share) byTenant.set(tenant, (share = bulkhead(this.resilience.maxConcurrentPerTenant, this.resilience.maxQueuedPerTenant)));
    return share;
  }

  /** One try of one call: what the observers (metrics, tracing) see as an upstream call. */
  private async attempt<T>(p: ProviderInstance, op: (adapter: ProviderAdapter, signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
    const ended = this.observers.map((observe) => observe({ providerId: p.id, kind: p.kind }));
    try {
      const out = await op(p.adapter, signal);
      for (const end of ended) end(null);
      return out;
    } catch (err) {
      for (const end of ended) end(err);
      throw err;
    }
  }

  /** A retry policy for one call: its waits (backoff or the platform's Retry-After) share one budget. */
  private retryPolicy() {
    const r = this.resilience;
    const exponential = new ExponentialBackoff({ initialDelay: r.initialBackoffMs, maxDelay: r.maxBackoffMs });
    let backoff: IBackoff<unknown> | null = null;
    let waited = 0;
    let nextWaitMs = 0;
    return retry(
      handleWhen((err) => {
        if (!(err instanceof UpstreamError) || !RETRIED.has(err.code)) return false;
        backoff = backoff ? backoff.next(undefined) : exponential.next();
        const wait = err.retryAfterSeconds !== null ? err.retryAfterSeconds * 1000 : backoff.duration;
        if (waited + wait > r.retryBudgetMs) return false;
        waited += wait;
        nextWaitMs = wait;
        return true;
      }),
      { maxAttempts: r.retries, backoff: new DelegateBackoff(() => nextWaitMs) },
    );
  }

  /** While the circuit is open: the code of the failure that opened it, and when a trial call is due. */
  private openCircuitError(id: string, guard: Guard): UpstreamError {
    const retryAt = (guard.openedAt ?? Date.now()) + this.resilience.halfOpenAfterMs;
    const cause = guard.openedBy;
    return new UpstreamError(
      cause?.code ?? 'UPSTREAM_UNAVAILABLE',
      id,
      `not calling this platform until ${new Date(retryAt).toISOString()} after repeated failures${cause ? `: ${cause.message}` : ''}`,
      { status: cause?.status ?? null, retryAfterSeconds: Math.max(1, Math.ceil((retryAt - Date.now()) / 1000)), upstreamCode: 'CIRCUIT_OPEN' },
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((p) => p.adapter.close?.()));
  }
}

function circuitOf(state: CircuitState): CircuitPosition {
  if (state === CircuitState.HalfOpen) return 'HALF_OPEN';
  return state === CircuitState.Closed ? 'CLOSED' : 'OPEN';
}
