// Primus-Lens simulator: the three auth setups (none, Lens' cookie middleware, the SaFE Bearer proxy)
// and faults in the shapes this deployment would produce.
import http from 'node:http';
import type { Fault, SimRequest, SimResponse } from '../kit.js';
import { TRAINING_ROUTES } from './requests.js';
import type { LensContext } from './payloads.js';

/** Who may call, and how an injected fault looks. */
export function lensAuth(ctx: LensContext) {
  const { legacy, auth, withoutAddon, envelopeError } = ctx;
  // ---- auth and proxy checks ----------------------------------------------------------------

  const cookieToken = (req: SimRequest): string | null => {
    const raw = req.headers.cookie;
    if (!raw) return null;
    for (const part of raw.split(';')) {
      const [k, ...v] = part.trim().split('=');
      if (k === 'Token') return v.join('=');
    }
    return null;
  };

  const safeError = (status: number, errorCode: string, errorMessage: string): SimResponse => ({ status, body: { errorCode, errorMessage } });

  const authenticate = (req: SimRequest): SimResponse | null => {
    if (auth.mode === 'cookie') {
      if (!req.headers.cookie) return { status: 401, body: { code: 401, message: 'authentication required' } };
      if (cookieToken(req) !== auth.token) return { status: 401, body: { code: 401, message: 'authentication failed' } };
      return null;
    }
    if (auth.mode === 'bearer') {
      const header = req.headers.authorization;
      const bearer = header?.startsWith('Bearer ') ? header.slice(7) : null;
      const presented = bearer ?? cookieToken(req);
      if (!presented) return safeError(401, 'Primus.00009', 'token not present');
      if (presented !== auth.token) return safeError(401, 'Primus.00009', 'token is invalid');
      const cluster = req.query.get('cluster');
      if (!cluster) return safeError(400, 'Primus.00002', 'cluster query parameter is required for lens-compat requests');
      if (withoutAddon.has(cluster)) {
        return safeError(404, 'Primus.00050', `primus-robust addon is not installed on cluster "${cluster}"; metrics and logs endpoints are unavailable`);
      }
    }
    return null;
  };

  // ---- faults, in the shapes this deployment would produce ----------------------------------

  const renderFault = (fault: Fault, req: SimRequest): SimResponse => {
    const legacyRoute = legacy && TRAINING_ROUTES.has(req.route);
    switch (fault.kind) {
      case 'rate_limit': {
        // Lens has no limiter of its own; a 429 comes from the gateway in front of it.
        const retryAfter = fault.retryAfterSeconds ?? 1;
        return {
          status: 429,
          headers: { 'retry-after': String(retryAfter), 'content-type': 'text/html' },
          rawText:
            '<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n',
        };
      }
      case 'status': {
        const code = fault.status ?? 503;
        // A status of 1000 and above is a Lens meta.code: the handler error arrives as HTTP 200.
        if (code >= 1000) {
          if (legacyRoute) return { status: code >= 5000 ? 500 : 400, body: { error: `simulated error ${code}` } };
          // An injected 5xxx is a typed internal error; "Unknown error" is only for untyped failures (bad parameters).
          return envelopeError(code, code === 4004 ? 'workload not found' : code >= 5000 ? 'internal error' : 'simulated error');
        }
        if (code === 502 || code === 503 || code === 504) {
          return {
            status: code,
            headers: { 'content-type': 'text/plain' },
            rawText: 'upstream connect error or disconnect/reset before headers. reset reason: connection termination',
          };
        }
        return { status: code, body: { error: http.STATUS_CODES[code] ?? 'error' } };
      }
      case 'malformed':
        return { status: 200, headers: { 'content-type': 'application/json' }, rawText: '{"meta":{"code":2000,"message":"OK"},"data":{"data":[{"kind":"PyTor' };
      case 'empty':
        return { status: 200, headers: { 'content-type': 'application/json' }, rawText: '' };
      case 'auth':
        return auth.mode === 'bearer'
          ? safeError(401, 'Primus.00009', 'token is invalid')
          : { status: 401, body: { code: 401, message: 'authentication failed' } };
      default:
        return envelopeError(5000, 'Unknown error');
    }
  };
  return { authenticate, renderFault };
}
