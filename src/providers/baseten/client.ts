// HTTP to Baseten's management API: the API key header, JSON bodies validated against the wire
// schemas through the shared requestJson, and Baseten's loosely documented error bodies.
import type { z } from 'zod';
import { DEFAULT_PROVIDER_TIMEOUT_SECONDS, requireSecret, type SecretSource } from '../../config/provider-kit.js';
import type { BasetenConfig } from './config.js';
import { requestJson, type ErrorClassifier, type HttpResponse, type UpstreamTimers } from '../http-client.js';

/**
 * Baseten's error bodies are not documented (fact sheet) beyond 429's `retry_after` (seconds);
 * `message` or `error` is read when present, otherwise the status alone speaks.
 */
export const classifyBasetenError: ErrorClassifier = (res, body) => {
  const b = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const upstreamMessage = typeof b.message === 'string' ? b.message : typeof b.error === 'string' ? b.error : null;
  return {
    message: `Baseten answered ${res.status}${upstreamMessage ? `: ${upstreamMessage}` : ''}`,
    retryAfterSeconds: typeof b.retry_after === 'number' ? b.retry_after : null,
  };
};

export interface CallOptions {
  query?: Record<string, string>;
  body?: unknown;
  signal: AbortSignal;
  /** Answer null instead of failing on 404 (a job that does not exist). */
  notFoundIsNull?: boolean;
}

export interface BasetenClient {
  readonly providerId: string;
  call<T>(method: 'GET' | 'POST', path: string, schema: z.ZodType<T>, opts: CallOptions): Promise<T | null>;
}

/** `timers`: what each call's time-out runs on (AdapterOptions.timers); default the real clock. */
export function createBasetenClient(config: BasetenConfig, secrets: SecretSource, timers?: UpstreamTimers): BasetenClient {
  const apiKey = requireSecret(secrets, config.apiKeyEnv, config.id);
  const base = config.baseUrl.replace(/\/+$/, '');
  const timeoutMs = (config.timeoutSeconds ?? DEFAULT_PROVIDER_TIMEOUT_SECONDS) * 1000;
  const providerId = config.id;
  return {
    providerId,
    call<T>(method: 'GET' | 'POST', path: string, schema: z.ZodType<T>, opts: CallOptions): Promise<T | null> {
      const qs = opts.query ? `?${new URLSearchParams(opts.query).toString()}` : '';
      return requestJson(providerId, {
        method,
        url: `${base}${path}${qs}`,
        headers: {
          // The spec also accepts Bearer; Api-Key is what every Baseten client sends today.
          authorization: `Api-Key ${apiKey}`,
          accept: 'application/json',
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
        timeoutMs,
        timers,
        signal: opts.signal,
        schema,
        what: `${method} ${path.split('/').slice(0, 3).join('/')}`,
        classify: classifyBasetenError,
        absent: (res: HttpResponse) => res.status === 404 && opts.notFoundIsNull === true,
      });
    },
  };
}
