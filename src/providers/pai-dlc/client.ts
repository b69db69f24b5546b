// HTTP to PAI-DLC: V3-signed ROA requests (signer.ts), Alibaba's error bodies read into typed
// UpstreamErrors, throttling hints, and JSON validated against the wire schemas.
import type { z } from 'zod';
import { DEFAULT_PROVIDER_TIMEOUT_SECONDS, requireSecret, type SecretSource } from '../../config/provider-kit.js';
import type { PaiDlcConfig } from './config.js';
import { requestJson, type ErrorClassifier, type UpstreamTimers } from '../http-client.js';
import { canonicalQueryString, signedHeadersFor, type Acs3Credentials } from './signer.js';
import { errorBody } from './wire.js';

export const PAI_DLC_VERSION = '2020-12-03';

const AUTH_CODE =
  /^(SignatureDoesNotMatch|SignatureNonceUsed|IncompleteSignature|MissingAuthorization|InvalidAuthorization|InvalidTimeStamp|InvalidAccessKeyId|InvalidSecurityToken|Forbidden|NoPermission|AccessDenied|InvalidAccessKeySecret)/i;
const NOT_FOUND_CODE = /NotFound|NotExist/i;

export interface CallOptions {
  action: string;
  method?: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  signal: AbortSignal;
}

/**
 * Alibaba's own throttling hints: `x-acs-retry-after` (read as milliseconds, our reading,
 * unconfirmed) or the older `x-ratelimit-user-api` / `x-ratelimit-user` (`TimeLeft:<ms>`). The
 * standard Retry-After is read by http-client.ts, which waits for the longer of the two.
 */
function acsRetryAfter(headers: Headers): number | null {
  const acs = headers.get('x-acs-retry-after');
  if (acs && /^\d+(\.\d+)?$/.test(acs.trim())) return Math.ceil(Number(acs) / 1000);
  for (const name of ['x-ratelimit-user-api', 'x-ratelimit-user']) {
    const m = /TimeLeft:\s*(\d+)/i.exec(headers.get(name) ?? '');
    if (m) return Math.ceil(Number(m[1]) / 1000);
  }
  return null;
}

/** Alibaba's JSON error body ({Code, Message, RequestId}); its codes decide before the status does. */
export const classifyPaiDlcError: ErrorClassifier = (res, raw, what) => {
  const body = errorBody.safeParse(raw);
  const code = body.success ? (body.data.Code ?? body.data.code ?? null) : null;
  const message = body.success ? (body.data.Message ?? body.data.message ?? null) : null;
  const requestId = body.success ? (body.data.RequestId ?? body.data.requestId ?? null) : null;
  const text = `${what} answered ${res.status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}${requestId ? ` (RequestId ${requestId})` : ''}`;
  const reading = { message: text, upstreamCode: code };
  if ((code && /Throttling/i.test(code)) || res.status === 429) {
    return { ...reading, code: 'UPSTREAM_RATE_LIMITED', retryAfterSeconds: acsRetryAfter(res.headers) };
  }
  // Checked before not-found: an unknown AccessKeyId comes back as 404 InvalidAccessKeyId.NotFound.
  if ((code && AUTH_CODE.test(code)) || res.status === 401 || res.status === 403) return { ...reading, code: 'UPSTREAM_AUTH' };
  if ((code && NOT_FOUND_CODE.test(code)) || res.status === 404) return { ...reading, code: 'UPSTREAM_NOT_FOUND' };
  return reading;
};

export interface PaiDlcClient {
  readonly providerId: string;
  call<T>(opts: CallOptions, schema: z.ZodType<T>): Promise<T>;
}

/**
 * `now`: the clock x-acs-date is read from (the server's clock, a test's in tests); default Date.now.
 * `timers`: what each call's time-out runs on; default the real clock.
 */
export function createPaiDlcClient(config: PaiDlcConfig, secrets: SecretSource, now: () => number = Date.now, timers?: UpstreamTimers): PaiDlcClient {
  const providerId = config.id;
  const creds: Acs3Credentials = {
    accessKeyId: requireSecret(secrets, config.accessKeyIdEnv, providerId),
    accessKeySecret: requireSecret(secrets, config.secretAccessKeyEnv, providerId),
    ...(config.securityTokenEnv ? { securityToken: requireSecret(secrets, config.securityTokenEnv, providerId) } : {}),
  };
  const base = new URL(config.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const timeoutMs = (config.timeoutSeconds ?? DEFAULT_PROVIDER_TIMEOUT_SECONDS) * 1000;

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
        now: new Date(now()),
      });
      // fetch derives Host from the URL (the same host[:port] we signed); it may not be set by hand.
      delete headers.host;
      const qs = canonicalQueryString(query);
      return requestJson(providerId, {
        method,
        url: `${base.protocol}//${base.host}${path}${qs ? `?${qs}` : ''}`,
        headers,
        timeoutMs,
        timers,
        signal: opts.signal,
        schema,
        what: `PAI-DLC ${opts.action}`,
        classify: classifyPaiDlcError,
      });
    },
  };
}
