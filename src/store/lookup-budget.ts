// A token bucket per API token for upstream lookups of ids the cache has never seen. Such a lookup
// is the one read a client can make as costly as it likes (every made-up id is a new miss that no
// cache can answer), so it is the one that draws from a budget: a token that spends it gets
// RATE_LIMITED for those ids only, with when the next one can be tried, and the platform hears of
// at most `burst` + `perMinute` a minute of its forged ids.

import type { LookupBudget } from '../config/index.js';

// The budget is a setting (UNKNOWN_ID_LOOKUP_BURST, UNKNOWN_ID_LOOKUPS_PER_MINUTE), so config/ owns its shape.
export { DEFAULT_LOOKUP_BUDGET, type LookupBudget } from '../config/index.js';

/** Tenants with a bucket at most (token names are few; a full bucket is forgotten first). */
const MAX_BUCKETS = 10_000;

export class LookupBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly budget: LookupBudget) {}

  /**
   * Takes one lookup from the tenant's bucket: true when there was one, else false and the seconds
   * until there will be (at least 1).
   */
  take(tenant: string | null, nowMs: number): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const key = tenant ?? '';
    const b = this.refilled(key, nowMs);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    const msPerToken = 60_000 / Math.max(this.budget.perMinute, Number.MIN_VALUE);
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(((1 - b.tokens) * msPerToken) / 1000)) };
  }

  private refilled(key: string, nowMs: number): { tokens: number; at: number } {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!);
      b = { tokens: this.budget.burst, at: nowMs };
      this.buckets.set(key, b);
      return b;
    }
    const elapsed = Math.max(0, nowMs - b.at);
    b.tokens = Math.min(this.budget.burst, b.tokens + (elapsed * this.budget.perMinute) / 60_000);
    b.at = nowMs;
    return b;
  }
}
