// One error type for everything the graph reports to a client; `code` lands in extensions.code.
import { sanitiseUpstreamText } from './secrets.js';

export const ERROR_CODES = [
  'BAD_ID',
  'BAD_INPUT',
  'NOT_FOUND',
  'UPSTREAM_AUTH',
  'UPSTREAM_RATE_LIMITED',
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_TIMEOUT',
  'UPSTREAM_BAD_RESPONSE',
  'UPSTREAM_NOT_FOUND',
  'UNSUPPORTED',
  /** The Postgres cache cannot be reached (restarting, failing over); the request can be retried. */
  'CACHE_UNAVAILABLE',
  /** This API token spent its budget of upstream lookups of ids never seen; retryable after retryAfterSeconds. */
  'RATE_LIMITED',
  /** A finished job whose platform reports no end time: what depends on its end (its GPU-hours in a fleet) cannot be counted. */
  'UNKNOWN_END',
  /** The API token may not do this (a mutation without the token's `write: true`). */
  'FORBIDDEN',
  'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.details = details;
  }
}

/**
 * An upstream platform failed; `retryAfterSeconds` is what the platform asked us to wait.
 * Every upstream failure becomes one of these, and this constructor is where the platform's words
 * are sanitised (secrets in any spelling scrubbed, control characters and length bounded): what
 * comes out of it may go to any field, event, log line or metric.
 */
export class UpstreamError extends DomainError {
  readonly providerId: string;
  readonly status: number | null;
  readonly retryAfterSeconds: number | null;
  constructor(
    code: ErrorCode,
    providerId: string,
    message: string,
    opts: { status?: number | null; retryAfterSeconds?: number | null; upstreamCode?: string | null } = {},
  ) {
    super(code, sanitiseUpstreamText(message), {
      providerId,
      ...(opts.status != null ? { status: opts.status } : {}),
      ...(opts.retryAfterSeconds != null ? { retryAfterSeconds: opts.retryAfterSeconds } : {}),
      ...(opts.upstreamCode ? { upstreamCode: sanitiseUpstreamText(opts.upstreamCode) } : {}),
    });
    this.name = 'UpstreamError';
    this.providerId = providerId;
    this.status = opts.status ?? null;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? null;
  }

  /** Worth another try later (rate limits, outages, time-outs), as opposed to a request that will never work. */
  get retryable(): boolean {
    return this.code === 'UPSTREAM_RATE_LIMITED' || this.code === 'UPSTREAM_UNAVAILABLE' || this.code === 'UPSTREAM_TIMEOUT';
  }
}
