// SourceError: the one shape of "this part could not be answered from upstream", wherever it
// appears (a series' freshness, a connection's platforms, a fleet answer's jobs, provider health).
import { ERROR_CODES, type ErrorCode } from '../domain/errors.js';
import { builder } from './builder.js';
import { valueKindOf } from '../domain/value-ids.js';
import { JobRef, NodeInterfaceRef, ProviderRef, SourceErrorRef, type SourceErrorShape } from './refs.js';
import { errorId, ID_DOCS, problemId } from './value-ids.js';

const ERROR_CODE_DOCS: Record<ErrorCode, string> = {
  BAD_ID: 'An id this graph did not issue, or of another kind than the argument takes',
  BAD_INPUT: 'An argument out of its documented range or format (extensions.argument names it)',
  NOT_FOUND: 'The object does not exist (or no longer exists) here',
  UPSTREAM_AUTH: 'The platform refused our credentials (401/403): the configured secret is wrong or lacks a permission',
  UPSTREAM_RATE_LIMITED: 'The platform asked us to slow down (429); retryable after its Retry-After',
  UPSTREAM_UNAVAILABLE: 'The platform answered 5xx or could not be reached, or its circuit breaker is open; retryable',
  UPSTREAM_TIMEOUT: "The platform did not answer within the provider's timeoutSeconds; retryable",
  UPSTREAM_BAD_RESPONSE: 'The platform answered something that does not match its documented shape (or an error inside an HTTP 200)',
  UPSTREAM_NOT_FOUND: 'The platform says the object does not exist',
  UNSUPPORTED: 'The platform (or this server) does not offer what was asked',
  CACHE_UNAVAILABLE: 'The Postgres cache could not be reached (restarting, failing over); retryable',
  RATE_LIMITED:
    'This API token spent its budget of upstream lookups of ids the cache has never seen (default 20 at once, refilled by 20 a minute; UNKNOWN_ID_LOOKUP_BURST, UNKNOWN_ID_LOOKUPS_PER_MINUTE); retryable after extensions.retryAfterSeconds',
  UNKNOWN_END:
    'A finished job whose platform does not report when it ended (Baseten gives no finish time): what needs its end, such as its GPU-hours in a fleet, is left out rather than counted until now',
  FORBIDDEN: 'The API token may see this but not change it: silencing and acknowledging findings need a token whose entry says `write: true`',
  INTERNAL: 'An unexpected failure on our side (details are in the server log, never in the answer)',
};

export const ErrorCodeEnum = builder.enumType('ErrorCode', {
  description: 'Why something could not be answered; the same codes as `extensions.code` of GraphQL errors',
  values: Object.fromEntries(ERROR_CODES.map((c) => [c, { description: ERROR_CODE_DOCS[c] }])) as Record<ErrorCode, { description: string }>,
});

/** A stored or upstream code as the enum; anything unknown is INTERNAL rather than a new value. */
export function errorCodeOf(code: string): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'INTERNAL';
}

SourceErrorRef.implement({
  description:
    'One upstream call that failed for this answer: what failed, and whether an older cached copy is served in its place. Secrets and internals never appear here.',
  shareable: true,
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.SourceError, resolve: (e) => e.id ?? sourceErrorId(e) }),
    code: t.field({ type: ErrorCodeEnum, description: 'What kind of failure', resolve: (e) => errorCodeOf(e.code) }),
    message: t.exposeString('message', { description: 'A human-readable account, at most a few hundred characters' }),
    stale: t.exposeBoolean('stale', {
      description: 'True when an older cached copy is served in place of the failed refresh; false when nothing could be served',
    }),
    cachedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the cached copy served in its place was fetched; null when none is served or the time is not known',
      resolve: (e) => e.cachedAt ?? null,
    }),
    provider: t.field({
      type: ProviderRef,
      nullable: true,
      description: 'The platform whose call failed, where the error is about one platform (null where the path already says)',
      resolve: (e, _a, ctx) => (e.providerId ? (ctx.store.providers.find(e.providerId) ?? null) : null),
    }),
    job: t.field({
      type: JobRef,
      nullable: true,
      description: 'The job whose data failed, where the error is about one job among many (null where the path already says)',
      resolve: (e) => e.job ?? null,
    }),
  }),
});

/** A fleet's problem is one of several (per job); any other error is the one failure of its owner. */
export function sourceErrorId(e: SourceErrorShape): string {
  return valueKindOf(e.ownerId) === 'fleet' && e.job ? problemId(e.ownerId, e.job.id) : errorId(e.ownerId);
}
