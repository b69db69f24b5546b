// The one place adapters send HTTP: time-outs, JSON parsing and the mapping of transport
// failures to typed UpstreamErrors. Platform-specific error bodies are read by each adapter.
import { UpstreamError } from '../domain/errors.js';

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
  signal?: AbortSignal;
}

export async function sendHttp(providerId: string, req: HttpRequest): Promise<HttpResponse> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
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
  }
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

/** Seconds to wait from a Retry-After header (delta-seconds or HTTP date), if present. */
export function retryAfterFromHeader(headers: Headers, now = Date.now()): number | null {
  const v = headers.get('retry-after');
  if (!v) return null;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The generic mapping of an HTTP status to an error code, for bodies an adapter has no better reading of. */
export function errorCodeForStatus(status: number) {
  if (status === 401 || status === 403) return 'UPSTREAM_AUTH' as const;
  if (status === 404) return 'UPSTREAM_NOT_FOUND' as const;
  if (status === 429) return 'UPSTREAM_RATE_LIMITED' as const;
  if (status >= 500) return 'UPSTREAM_UNAVAILABLE' as const;
  return 'UPSTREAM_BAD_RESPONSE' as const;
}
