// The one way adapters call an HTTP API: send with a time-out, read the body, validate it with
// zod, and turn every failure into a typed UpstreamError. A platform supplies only what differs:
// how to read its error bodies (an ErrorClassifier), and, where it wraps answers, how to unwrap.
// Retry-After is decided here, once, for every platform (see retryAfterSeconds below).
import type { z } from 'zod';
import { UpstreamError, type ErrorCode } from '../domain/errors.js';

export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** What the time-out runs on; default the real clock (AbortSignal.timeout). */
  timers?: UpstreamTimers;
  signal?: AbortSignal;
}

/**
 * The timers an upstream call's time-out (a provider's timeoutSeconds) runs on: a test gives a
 * clock it moves, so a call the platform holds times out when the test says the time has passed
 * rather than after seconds of real waiting (test/schema/platforms.test.ts).
 */
export interface UpstreamTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** An abort signal that fires after `ms` on `timers`, and how to disarm it once the call is over. */
function timeoutSignal(ms: number, timers: UpstreamTimers | undefined): { signal: AbortSignal; disarm(): void } {
  if (!timers) return { signal: AbortSignal.timeout(ms), disarm: () => {} };
  const controller = new AbortController();
  const handle = timers.setTimeout(() => controller.abort(new DOMException('The operation timed out.', 'TimeoutError')), ms);
  return { signal: controller.signal, disarm: () => timers.clearTimeout(handle) };
}

/** What a platform reads from one of its error answers. */
export interface ErrorReading {
  /** Our code for it; by default the status decides (errorCodeForStatus). */
  code?: ErrorCode;
  /** The whole message the error carries (never a secret: platforms' error texts only). */
  message: string;
  /** The platform's own error code, kept in the error's details. */
  upstreamCode?: string | null;
  /** A wait the platform asks for outside the standard Retry-After header (a body field, its own header), in seconds. */
  retryAfterSeconds?: number | null;
}

/**
 * Reads an error answer of one platform. `body` is the parsed JSON body, or null when there is
 * none (a gateway's HTML page, an empty body). `what` names the call ("GET /v1/jobs").
 */
export type ErrorClassifier = (res: HttpResponse, body: unknown, what: string) => ErrorReading;

export interface JsonRequest<T> extends HttpRequest {
  schema: z.ZodType<T>;
  /** Names the call in error messages, e.g. "GET /v1/runs" or "PAI-DLC ListJobs". */
  what: string;
  classify: ErrorClassifier;
  /** Takes the payload out of an envelope (throwing for an error reported inside it) before validation. */
  unwrap?: (body: unknown, res: HttpResponse) => unknown;
}

/** Sends one request; a time-out and a refused connection become typed errors, the caller's abort stays an abort. */
export async function sendHttp(providerId: string, req: HttpRequest): Promise<HttpResponse> {
  const deadline = timeoutSignal(req.timeoutMs, req.timers);
  const timeout = deadline.signal;
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  try {
    const res = await fetch(req.url, { method: req.method, headers: req.headers, body: req.body, signal });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  } catch (err) {
    if (timeout.aborted) {
      throw new UpstreamError('UPSTREAM_TIMEOUT', providerId, `no answer within ${req.timeoutMs} ms`);
    }
    if (req.signal?.aborted) throw err;
    const cause = (err as { cause?: { code?: string } }).cause;
    throw new UpstreamError('UPSTREAM_UNAVAILABLE', providerId, `connection failed (${cause?.code ?? 'network error'})`);
  } finally {
    deadline.disarm();
  }
}

/**
 * Sends a request and returns its validated JSON payload; any answer but a 2xx becomes the error
 * the platform's classifier reads from it. With `absent`, an answer it recognises (a 404 of a job
 * that does not exist) resolves to null instead.
 */
export async function requestJson<T>(providerId: string, req: JsonRequest<T>): Promise<T>;
export async function requestJson<T>(providerId: string, req: JsonRequest<T> & { absent: (res: HttpResponse) => boolean }): Promise<T | null>;
export async function requestJson<T>(providerId: string, req: JsonRequest<T> & { absent?: (res: HttpResponse) => boolean }): Promise<T | null> {
  const res = await sendHttp(providerId, req);
  if (req.absent?.(res)) return null;
  if (res.status < 200 || res.status >= 300) throw upstreamError(providerId, res, req.what, req.classify);
  return readJson(providerId, res, req.schema, req.what, req.unwrap);
}

/** Validates a 2xx answer's JSON body (after `unwrap`); malformed JSON or a wrong shape is UPSTREAM_BAD_RESPONSE. */
export function readJson<T>(
  providerId: string,
  res: HttpResponse,
  schema: z.ZodType<T>,
  what: string,
  unwrap?: (body: unknown, res: HttpResponse) => unknown,
): T {
  const body = parseJsonBody(providerId, res);
  const parsed = schema.safeParse(unwrap ? unwrap(body, res) : body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `${what}: unexpected shape${where} (${issue?.message ?? 'invalid'})`, {
      status: res.status,
    });
  }
  return parsed.data;
}

/** The typed error for a failed answer, read by the platform's classifier. */
export function upstreamError(providerId: string, res: HttpResponse, what: string, classify: ErrorClassifier, now = Date.now()): UpstreamError {
  const reading = classify(res, jsonOrNull(res.text), what);
  const code = reading.code ?? errorCodeForStatus(res.status);
  return new UpstreamError(code, providerId, reading.message, {
    status: res.status,
    upstreamCode: reading.upstreamCode ?? null,
    retryAfterSeconds: code === 'UPSTREAM_RATE_LIMITED' ? retryAfterSeconds(res.headers, reading.retryAfterSeconds ?? null, now) : null,
  });
}

/**
 * How long a rate-limited caller waits, decided once for every platform: the standard Retry-After
 * header and the platform's own hint (Baseten's and Runicorn's body `retry_after`, PAI-DLC's
 * `x-acs-retry-after`) are both honoured, so the longer of the two wins. Neither takes precedence
 * because either may come from the hop that actually throttled (a gateway sets the header, the
 * platform its body); retrying before one of them allows only earns another 429. Null when neither says.
 */
export function retryAfterSeconds(headers: Headers, platformHint: number | null, now = Date.now()): number | null {
  const header = retryAfterFromHeader(headers, now);
  if (header === null) return platformHint;
  if (platformHint === null) return header;
  return Math.max(header, platformHint);
}

/** Parses a JSON body or fails with UPSTREAM_BAD_RESPONSE (never with a SyntaxError). */
export function parseJsonBody(providerId: string, res: HttpResponse): unknown {
  try {
    return JSON.parse(res.text);
  } catch {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `malformed JSON in a ${res.status} answer`, {
      status: res.status,
    });
  }
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Seconds to wait from a Retry-After header (delta-seconds or HTTP date), if present. */
export function retryAfterFromHeader(headers: Headers, now = Date.now()): number | null {
  const v = headers.get('retry-after');
  if (!v) return null;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The generic mapping of an HTTP status to an error code, for bodies a platform has no better reading of. */
export function errorCodeForStatus(status: number): ErrorCode {
  if (status === 401 || status === 403) return 'UPSTREAM_AUTH';
  if (status === 404) return 'UPSTREAM_NOT_FOUND';
  if (status === 429) return 'UPSTREAM_RATE_LIMITED';
  if (status >= 500) return 'UPSTREAM_UNAVAILABLE';
  return 'UPSTREAM_BAD_RESPONSE';
}
