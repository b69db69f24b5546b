// HTTP to PAI-DLC: V3-signed ROA requests (signer.ts), Alibaba's error bodies read into typed
// UpstreamErrors, throttling hints, and JSON validated against the wire schemas.
import type { z } from 'zod';
import { requireSecret, type PaiDlcConfig, type SecretSource } from '../../config/index.js';
import { UpstreamError } from '../../domain/errors.js';
import { errorCodeForStatus, parseJsonBody, retryAfterFromHeader, sendHttp, type HttpResponse } from '../http-client.js';
import { canonicalQueryString, signedHeadersFor, type Acs3Credentials } from './signer.js';
import { errorBody } from './wire.js';

export const PAI_DLC_VERSION = '2020-12-03';

const AUTH_CODE = /^(SignatureDoesNotMatch|SignatureNonceUsed|IncompleteSignature|MissingAuthorization|InvalidAuthorization|InvalidTimeStamp|InvalidAccessKeyId|InvalidSecurityToken|Forbidden|NoPermission|AccessDenied|InvalidAccessKeySecret)/i;
const NOT_FOUND_CODE = /NotFound|NotExist/i;

export interface CallOptions {
  action: string;
  method?: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  signal: AbortSignal;
}

/**
 * Seconds to wait from a throttling answer: `x-acs-retry-after` (read as milliseconds, our reading,
 * unconfirmed), the older `x-ratelimit-user-api` / `x-ratelimit-user` headers (`TimeLeft:<ms>`), or
 * a standard Retry-After.
 */
export function retryAfterOf(headers: Headers): number | null {
  const acs = headers.get('x-acs-retry-after');
  if (acs && /^\d+(\.\d+)?$/.test(acs.trim())) return Math.ceil(Number(acs) / 1000);
  for (const name of ['x-ratelimit-user-api', 'x-ratelimit-user']) {
    const m = /TimeLeft:\s*(\d+)/i.exec(headers.get(name) ?? '');
    if (m) return Math.ceil(Number(m[1]) / 1000);
  }
  return retryAfterFromHeader(headers);
}

export interface PaiDlcClient {
  readonly providerId: string;
  call<T>(opts: CallOptions, schema: z.ZodType<T>): Promise<T>;
}

export function createPaiDlcClient(config: PaiDlcConfig, secrets: SecretSource): PaiDlcClient {
  const providerId = config.id;
  const creds: Acs3Credentials = {
    accessKeyId: requireSecret(secrets, config.accessKeyIdEnv, providerId),
    accessKeySecret: requireSecret(secrets, config.secretAccessKeyEnv, providerId),
    ...(config.securityTokenEnv ? { securityToken: requireSecret(secrets, config.securityTokenEnv, providerId) } : {}),
  };
  const base = new URL(config.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const timeoutMs = (config.timeoutSeconds ?? 30) * 1000;

  function toError(res: HttpResponse, action: string): UpstreamError {
    let code: string | null = null;
    let message: string | null = null;
    let requestId: string | null = null;
    try {
      const body = errorBody.safeParse(JSON.parse(res.text));
      if (body.success) {
        code = body.data.Code ?? body.data.code ?? null;
        message = body.data.Message ?? body.data.message ?? null;
        requestId = body.data.RequestId ?? body.data.requestId ?? null;
      }
    } catch {
      // Not Alibaba's JSON error body (a proxy's HTML page, say): the status alone decides.
    }
    const text = `PAI-DLC ${action} answered ${res.status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}${requestId ? ` (RequestId ${requestId})` : ''}`;
    const opts = { status: res.status, upstreamCode: code };
    if ((code && /Throttling/i.test(code)) || res.status === 429) {
      return new UpstreamError('UPSTREAM_RATE_LIMITED', providerId, text, { ...opts, retryAfterSeconds: retryAfterOf(res.headers) });
    }
    // Checked before not-found: an unknown AccessKeyId comes back as 404 InvalidAccessKeyId.NotFound.
    if ((code && AUTH_CODE.test(code)) || res.status === 401 || res.status === 403) {
      return new UpstreamError('UPSTREAM_AUTH', providerId, text, opts);
    }
    if ((code && NOT_FOUND_CODE.test(code)) || res.status === 404) {
      return new UpstreamError('UPSTREAM_NOT_FOUND', providerId, text, opts);
    }
    return new UpstreamError(errorCodeForStatus(res.status), providerId, text, opts);
  }

  return {
    providerId,
    async call<T>(opts: CallOptions, schema: z.ZodType<T>): Promise<T> {
      const method = opts.method ?? 'GET';
      const path = `${basePath}${opts.path}`;
      const query = opts.query ?? {};
      const headers = signedHeadersFor({ method, path, query, body: '' }, creds, {
        action: opts.action,
        version: PAI_DLC_VERSION,
        host: base.host,
      });
      // fetch derives Host from the URL (the same host[:port] we signed); it may not be set by hand.
      delete headers.host;
      const qs = canonicalQueryString(query);
      const res = await sendHttp(providerId, {
        method,
        url: `${base.protocol}//${base.host}${path}${qs ? `?${qs}` : ''}`,
        headers,
        timeoutMs,
        signal: opts.signal,
      });
      if (res.status < 200 || res.status >= 300) throw toError(res, opts.action);
      const parsed = schema.safeParse(parseJsonBody(providerId, res));
      if (!parsed.success) {
        throw new UpstreamError('UPSTREAM_BAD_RESPONSE', providerId, `PAI-DLC ${opts.action} answered an unexpected shape`, {
          status: res.status,
        });
      }
      return parsed.data;
    },
  };
}
