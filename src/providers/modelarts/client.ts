// HTTP to ModelArts with either auth mode: AK/SK signing on every request, or an IAM token that is
// fetched once, cached until shortly before it expires and refreshed once when ModelArts says 401.
// Every failure leaves here as a typed UpstreamError.
import { registerSecret } from '../../domain/secrets.js';
import { z } from 'zod';
import { UpstreamError } from '../../domain/errors.js';
import { isoToDate } from '../../domain/units.js';
import { readJson, sendHttp, upstreamError, type ErrorClassifier, type HttpResponse, type UpstreamTimers } from '../http-client.js';
import { signRequest, type AkSkCredentials } from './signer.js';

export type ModelArtsAuth =
  | { mode: 'aksk'; credentials: AkSkCredentials; securityToken: string | null }
  | { mode: 'token'; iamUrl: string; domainName: string; username: string; password: string; projectName: string | null };

export interface ModelArtsClientOptions {
  providerId: string;
  baseUrl: string;
  projectId: string;
  timeoutMs: number;
  /** What each call's time-out runs on; default the real clock. */
  timers?: UpstreamTimers;
  auth: ModelArtsAuth;
  now: () => number;
}

/** Codes ModelArts uses for throttling, whatever HTTP status carries them. */
const THROTTLING_CODES = new Set(['ModelArts.2799', 'ModelArts.4206', 'ModelArts.6101']);
export const JOB_NOT_FOUND_CODE = 'ModelArts.2775';
/** The token's project does not match the URL's: a credentials problem, although it arrives as 404. */
const TOKEN_PROJECT_MISMATCH_CODE = 'ModelArts.2786';

/** Refresh a token this long before IAM says it expires (or halfway, for very short-lived tokens). */
const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;

const iamTokenBody = z.object({ token: z.object({ expires_at: z.string() }) });

interface CachedToken {
  value: string;
  refreshAt: number;
}

/**
 * ModelArts' error body is {error_code, error_msg} (the SDK also accepts {code, message}; IAM sends
 * {error: {message}}); its codes decide before the status does.
 */
export const classifyModelArtsError: ErrorClassifier = (res, raw, what) => {
  const body = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const nested = typeof body.error === 'object' && body.error !== null ? (body.error as Record<string, unknown>) : {};
  const rawCode = body.error_code ?? body.code;
  const rawMessage = body.error_msg ?? body.message ?? nested.message;
  const code = typeof rawCode === 'string' ? rawCode : null;
  const message = typeof rawMessage === 'string' ? rawMessage : null;
  const reading = { message: `${what}: HTTP ${res.status}${code ? ` ${code}` : ''}${message ? ` (${message})` : ''}`, upstreamCode: code };
  if (res.status === 429 || (code !== null && THROTTLING_CODES.has(code))) return { ...reading, code: 'UPSTREAM_RATE_LIMITED' };
  if (code === JOB_NOT_FOUND_CODE) return { ...reading, code: 'UPSTREAM_NOT_FOUND' };
  if (res.status === 401 || res.status === 403 || code === TOKEN_PROJECT_MISMATCH_CODE) return { ...reading, code: 'UPSTREAM_AUTH' };
  return reading;
};

export class ModelArtsClient {
  private token: CachedToken | null = null;
  private tokenRequest: Promise<string> | null = null;

  constructor(private readonly opts: ModelArtsClientOptions) {}

  /** `/v2/{project_id}` + rest: every ModelArts path carries the IAM project id. */
  projectPath(rest: string): string {
    return `/v2/${encodeURIComponent(this.opts.projectId)}${rest}`;
  }

  /**
   * Sends a request and returns any 2xx answer (including a bodiless 204); everything else
   * becomes an UpstreamError. In token mode a 401 gets one retry with a freshly issued token.
   */
  async send(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal): Promise<HttpResponse> {
    const bodyText = body === undefined ? '' : JSON.stringify(body);
    let res = await this.sendOnce(method, path, bodyText, signal, false);
    if (res.status === 401 && this.opts.auth.mode === 'token') {
      res = await this.sendOnce(method, path, bodyText, signal, true);
    }
    if (res.status >= 200 && res.status < 300) return res;
    throw upstreamError(this.opts.providerId, res, `${method} ${path}`, classifyModelArtsError, this.opts.now());
  }

  /** Parses a JSON answer against a schema, or fails with UPSTREAM_BAD_RESPONSE. */
  parse<T>(res: HttpResponse, schema: z.ZodType<T>, what: string): T {
    return readJson(this.opts.providerId, res, schema, what);
  }

  private async sendOnce(method: 'GET' | 'POST', path: string, bodyText: string, signal: AbortSignal, freshToken: boolean): Promise<HttpResponse> {
    const url = `${this.opts.baseUrl.replace(/\/+$/, '')}${path}`;
    const base: Record<string, string> = { 'Content-Type': 'application/json' };
    let headers: Record<string, string>;
    const auth = this.opts.auth;
    if (auth.mode === 'aksk') {
      base['X-Project-Id'] = this.opts.projectId;
      if (auth.securityToken) base['X-Security-Token'] = auth.securityToken;
      headers = signRequest({ method, url, headers: base, body: bodyText }, auth.credentials, new Date(this.opts.now()));
    } else {
      headers = { ...base, 'X-Auth-Token': await this.currentToken(signal, freshToken) };
    }
    return sendHttp(this.opts.providerId, {
      method,
      url,
      headers,
      ...(bodyText ? { body: bodyText } : {}),
      timeoutMs: this.opts.timeoutMs,
      timers: this.opts.timers,
      signal,
    });
  }

  private async currentToken(signal: AbortSignal, forceRefresh: boolean): Promise<string> {
    if (forceRefresh) this.token = null;
    if (this.token && this.opts.now() < this.token.refreshAt) return this.token.value;
    // Concurrent callers share one IAM request instead of each fetching a token.
    this.tokenRequest ??= this.requestToken(signal).finally(() => {
      this.tokenRequest = null;
    });
    return this.tokenRequest;
  }

  private async requestToken(signal: AbortSignal): Promise<string> {
    const auth = this.opts.auth;
    if (auth.mode !== 'token') throw new Error('IAM tokens are only used in token mode');
    const iamBase = auth.iamUrl.replace(/\/+$/, '').replace(/\/v3$/, '');
    // nocatalog trims the service catalog we never read (seen in samples; unconfirmed for this doc set).
    const url = `${iamBase}/v3/auth/tokens?nocatalog=true`;
    const scope = auth.projectName ? { project: { name: auth.projectName } } : { project: { id: this.opts.projectId } };
    const res = await sendHttp(this.opts.providerId, {
      method: 'POST',
      url,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ['password'],
            password: { user: { name: auth.username, password: auth.password, domain: { name: auth.domainName } } },
          },
          scope,
        },
      }),
      timeoutMs: this.opts.timeoutMs,
      timers: this.opts.timers,
      signal,
    });
    if (res.status !== 201 && res.status !== 200) throw upstreamError(this.opts.providerId, res, 'IAM token request', classifyModelArtsError, this.opts.now());
    const value = res.headers.get('x-subject-token');
    // A session token is a credential too: no error or response may quote it.
    registerSecret(value);
    if (!value) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', this.opts.providerId, 'IAM token answer has no X-Subject-Token header', { status: res.status });
    }
    const body = this.parse(res, iamTokenBody, 'IAM token answer');
    const expiresAt = isoToDate(body.token.expires_at)?.getTime();
    if (expiresAt === undefined) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', this.opts.providerId, 'IAM token answer has an unreadable expires_at', { status: res.status });
    }
    const now = this.opts.now();
    this.token = { value, refreshAt: expiresAt - Math.min(TOKEN_REFRESH_MARGIN_MS, Math.max(0, (expiresAt - now) / 2)) };
    return value;
  }
}
