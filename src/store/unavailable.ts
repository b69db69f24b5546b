// Tells "the cache database is unreachable right now" apart from every other failure, so a client
// gets CACHE_UNAVAILABLE (retry shortly) instead of INTERNAL while Postgres restarts or fails over,
// and the live pollers report it as such and back off. Nothing here retries: the driver reconnects
// by itself on the next statement (patches/postgres+3.4.9.patch), so the next request just works.
import { DomainError } from '../domain/errors.js';

/** postgres.js's own connection errors, by their `code`. */
const DRIVER_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT']);
/** Socket errors from Node's net module. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * SQLSTATEs a server sends when it is going away or not accepting yet: admin_shutdown (a backend
 * terminated, a fast shutdown), crash_shutdown, cannot_connect_now (starting up, recovering),
 * too_many_connections; class 08 is connection_exception.
 */
const SERVER_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

function codeOf(err: unknown): string | null {
  if (typeof err !== 'object' || err === null) return null;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : null;
}

/** True when the error, or one it wraps (drizzle wraps driver errors as `cause`), means the database cannot be reached. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DomainError) return false;
    const code = codeOf(e);
    if (code && (DRIVER_CODES.has(code) || SOCKET_CODES.has(code) || SERVER_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
    // An aggregate of connection attempts (IPv4 and IPv6 both refused) carries its reasons in `errors`.
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0 && inner.every((x) => isDatabaseUnavailable(x))) return true;
  }
  return false;
}

function cacheUnavailable(): DomainError {
  return new DomainError('CACHE_UNAVAILABLE', 'the cache database is unreachable right now; retry shortly', { retryable: true });
}

/** The error a client may see: domain errors as they are, an unreachable database as CACHE_UNAVAILABLE, anything else null. */
export function clientFacingError(err: unknown): DomainError | null {
  if (err instanceof DomainError) return err;
  return isDatabaseUnavailable(err) ? cacheUnavailable() : null;
}
