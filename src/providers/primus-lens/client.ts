// HTTP to a Primus-Lens API (directly, through the Primus gateway, or through the SaFE lens-compat
// proxy): auth headers, the `cluster` parameter, both response forms, and every error shape the
// fact sheet lists turned into a typed UpstreamError.
import { z } from 'zod';
import { UpstreamError, type ErrorCode } from '../../domain/errors.js';
import { errorCodeForStatus, requestJson, type ErrorClassifier, type UpstreamTimers } from '../http-client.js';

export const LENS_OK = 2000;

export type Query = Record<string, string | number | undefined>;

export interface LensClientOptions {
  providerId: string;
  /** The URL before `/v1` (e.g. `https://safe.example.com/lens`). */
  baseUrl: string;
  cluster: string | undefined;
  headers: Record<string, string>;
  timeoutMs: number;
  /** What each call's time-out runs on; default the real clock. */
  timers?: UpstreamTimers;
}

const metaSchema = z.object({ code: z.number(), message: z.string().nullish() });
const safeErrorSchema = z.object({ errorCode: z.string(), errorMessage: z.string().nullish() });
const lensAuthErrorSchema = z.object({ code: z.number(), message: z.string().nullish() });
const legacyErrorSchema = z.object({ error: z.string() });

/** Lens' handle-error middleware answers every untyped failure so, bad parameters included (page_num=abc). */
export const LENS_UNTYPED_ERROR = 'Unknown error';

/**
 * A handler error's meta.code, as the sheet groups them. 5000 "Unknown error" is Lens' answer to
 * an untyped failure, which is how a request Lens cannot bind (bad parameters) comes back: asking
 * again would fail the same way, so it is not retryable. A typed 5000 (another message) is an
 * internal error and is.
 */
export function errorCodeForLensCode(code: number, message?: string | null): ErrorCode {
  if (code === 4004) return 'UPSTREAM_NOT_FOUND';
  if (code === 4003 || code === 4005) return 'UPSTREAM_AUTH';
  if (code === 5000 && message === LENS_UNTYPED_ERROR) return 'UPSTREAM_BAD_RESPONSE';
  if (code >= 5000 && code < 6000) return 'UPSTREAM_UNAVAILABLE';
  // 4001 (bad parameter) and the codes the sheet lists without meaning (4002, 4016, 6001, ...).
  return 'UPSTREAM_BAD_RESPONSE';
}

/** True for Lens' "workload not found" (meta.code 4004), as opposed to a missing route or addon. */
export function isLensNotFound(err: unknown): boolean {
  return err instanceof UpstreamError && err.details.upstreamCode === '4004';
}

function short(text: string | null | undefined): string {
  if (!text) return '';
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 200 ? `${oneLine.slice(0, 200)}…` : oneLine;
}

export class LensClient {
  constructor(private readonly opts: LensClientOptions) {}

  get providerId(): string {
    return this.opts.providerId;
  }

  /** GET a route relative to `/v1`; returns the payload (the envelope's `data`, or a legacy bare body). */
  async get<T>(path: string, query: Query, schema: z.ZodType<T>, signal: AbortSignal): Promise<T> {
    const url = new URL(`${this.opts.baseUrl.replace(/\/+$/, '')}/v1${path}`);
    const params: Query = { ...query, cluster: this.opts.cluster };
    for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, String(v));
    return requestJson(this.opts.providerId, {
      method: 'GET',
      url: url.toString(),
      headers: { accept: 'application/json', ...this.opts.headers },
      timeoutMs: this.opts.timeoutMs,
      timers: this.opts.timers,
      signal,
      schema,
      what: path,
      classify: classifyLensError,
      unwrap: (body, res) => this.unwrap(body, res.status, path),
    });
  }

  /**
   * Current builds wrap every answer in {meta, data, tracing} and report handler errors as HTTP 200
   * with meta.code != 2000; legacy builds of the training-metrics routes send the bare payload.
   */
  private unwrap(body: unknown, status: number, path: string): unknown {
    if (body === null || typeof body !== 'object' || Array.isArray(body) || !('meta' in body)) return body;
    const meta = metaSchema.safeParse((body as { meta: unknown }).meta);
    if (!meta.success) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', this.opts.providerId, `malformed envelope from ${path}`, { status });
    }
    if (meta.data.code === LENS_OK) return (body as { data?: unknown }).data;
    throw new UpstreamError(
      errorCodeForLensCode(meta.data.code, meta.data.message),
      this.opts.providerId,
      `Primus-Lens error ${meta.data.code} on ${path}: ${short(meta.data.message)}`,
      { status, upstreamCode: String(meta.data.code) },
    );
  }
}

/**
 * Every error shape the fact sheet lists: SaFE's {errorCode, errorMessage} (matched on the code, not
 * the status: Primus.00050 is an HTTP 404 today), Lens' envelope with meta.code, its auth body
 * {code, message}, the legacy {error}, and gateways' plain-text 502/503 pages (the status decides).
 */
export const classifyLensError: ErrorClassifier = (res, body, path) => {
  if (res.status === 429) return { code: 'UPSTREAM_RATE_LIMITED', message: `rate limited on ${path}` };
  const safe = safeErrorSchema.safeParse(body);
  if (safe.success) {
    const { errorCode, errorMessage } = safe.data;
    const code: ErrorCode =
      errorCode === 'Primus.00050'
        ? 'UPSTREAM_UNAVAILABLE'
        : errorCode === 'Primus.00009'
          ? 'UPSTREAM_AUTH'
          : errorCode === 'Primus.00002'
            ? 'UPSTREAM_BAD_RESPONSE'
            : errorCodeForStatus(res.status);
    const hint = errorCode === 'Primus.00002' ? ' (set `cluster` in the provider config)' : '';
    return { code, message: `SaFE ${errorCode} on ${path}: ${short(errorMessage)}${hint}`, upstreamCode: errorCode };
  }
  if (body !== null && typeof body === 'object' && 'meta' in body) {
    const meta = metaSchema.safeParse((body as { meta: unknown }).meta);
    if (meta.success && meta.data.code !== LENS_OK) {
      return {
        code: errorCodeForLensCode(meta.data.code, meta.data.message),
        message: `Primus-Lens error ${meta.data.code} on ${path}: ${short(meta.data.message)}`,
        upstreamCode: String(meta.data.code),
      };
    }
  }
  const lensAuth = lensAuthErrorSchema.safeParse(body);
  const legacy = legacyErrorSchema.safeParse(body);
  const message = lensAuth.success ? lensAuth.data.message : legacy.success ? legacy.data.error : res.text;
  return { message: `HTTP ${res.status} on ${path}: ${short(message)}` };
};
