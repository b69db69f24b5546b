// The configured provider instances at run time, and each one's health as seen from our calls.
import type { ProviderKind } from '../domain/types.js';
import { DomainError, UpstreamError } from '../domain/errors.js';
import type { ProviderAdapter } from './provider.js';

export type HealthState = 'OK' | 'DEGRADED' | 'DOWN' | 'UNKNOWN';

export interface ProviderHealth {
  state: HealthState;
  lastSuccessAt: Date | null;
  lastErrorAt: Date | null;
  lastError: { code: string; message: string } | null;
  consecutiveFailures: number;
}

export interface ProviderInstance {
  id: string;
  kind: ProviderKind;
  name: string;
  simulated: boolean;
  pollIntervalSeconds: number | null;
  adapter: ProviderAdapter;
}

/** Consecutive failures after which a provider counts as DOWN rather than DEGRADED. */
const DOWN_AFTER = 3;

export class ProviderSet {
  private readonly byId = new Map<string, ProviderInstance>();
  private readonly health = new Map<string, ProviderHealth>();

  constructor(instances: ProviderInstance[]) {
    for (const p of instances) {
      this.byId.set(p.id, p);
      this.health.set(p.id, { state: 'UNKNOWN', lastSuccessAt: null, lastErrorAt: null, lastError: null, consecutiveFailures: 0 });
    }
  }

  all(): ProviderInstance[] {
    return [...this.byId.values()];
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  find(id: string): ProviderInstance | undefined {
    return this.byId.get(id);
  }

  healthOf(id: string): ProviderHealth {
    return this.health.get(id) ?? { state: 'UNKNOWN', lastSuccessAt: null, lastErrorAt: null, lastError: null, consecutiveFailures: 0 };
  }

  /** Runs one upstream operation and keeps the provider's health in step with how it went. */
  async call<T>(id: string, op: (adapter: ProviderAdapter, signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const p = this.byId.get(id);
    if (!p) throw new DomainError('NOT_FOUND', `provider "${id}" is not configured`);
    const h = this.health.get(id)!;
    try {
      const out = await op(p.adapter, signal ?? new AbortController().signal);
      h.state = 'OK';
      h.lastSuccessAt = new Date();
      h.consecutiveFailures = 0;
      return out;
    } catch (err) {
      // A request the platform rightly refused (unknown id) says nothing about its health.
      if (err instanceof UpstreamError && err.code !== 'UPSTREAM_NOT_FOUND') {
        h.consecutiveFailures++;
        h.lastErrorAt = new Date();
        h.lastError = { code: err.code, message: err.message };
        h.state = h.consecutiveFailures >= DOWN_AFTER ? 'DOWN' : 'DEGRADED';
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((p) => p.adapter.close?.()));
  }
}
