// What every HTTP request passes through before routing: a request id (the client's x-request-id
// when it is sane, else a new UUID, echoed in the response), one structured log line, the request
// counters, and the in-flight count that graceful shutdown waits on.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';

const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/;
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/** A bounded route label: the path's first segment for known routes, "other" for the rest. */
function routeOf(path: string): string {
  if (path === '/' || path === '/graphql' || path === '/metrics/jobs' || PROBES.has(path)) return path;
  if (path.startsWith('/assets/')) return '/assets';
  if (path.startsWith('/export/')) return '/export';
  return 'other';
}

export interface HttpFront {
  wrap(listener: http.RequestListener): http.RequestListener;
  /** Requests being served now (SSE subscription streams excluded: shutdown closes them instead). */
  inFlight(): number;
  /** Resolves true once no request is in flight, or false when timeoutMs passes first. */
  drained(timeoutMs: number): Promise<boolean>;
}

export function createHttpFront(logger: Logger, metrics: Metrics): HttpFront {
  let inFlight = 0;
  let waiters: (() => void)[] = [];
  const settle = () => {
    if (inFlight > 0) return;
    for (const w of waiters) w();
    waiters = [];
  };
  metrics.countInFlight(() => inFlight);
  return {
    wrap(listener) {
      return (req, res) => {
        const started = performance.now();
        const incoming = req.headers['x-request-id'];
        const reqId = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
        // Downstream (yoga's plugins, error logs) read the id from the request itself.
        req.headers['x-request-id'] = reqId;
        res.setHeader('x-request-id', reqId);
        const path = (req.url ?? '/').split('?')[0]!;
        const stream = String(req.headers.accept ?? '').includes('text/event-stream');
        if (!stream) inFlight++;
        res.once('close', () => {
          if (!stream) {
            inFlight--;
            settle();
          }
          const route = routeOf(path);
          metrics.httpAnswered(route, res.statusCode);
          const level = PROBES.has(path) ? 'debug' : 'info';
          if (!logger.isLevelEnabled(level)) return;
          const line = { reqId, method: req.method, path, status: res.statusCode, ms: Math.round(performance.now() - started), aborted: !res.writableFinished };
          logger[level](line, 'request');
        });
        listener(req, res);
      };
    },
    inFlight: () => inFlight,
    drained(timeoutMs) {
      if (inFlight === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== done);
          resolve(false);
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          resolve(true);
        };
        waiters.push(done);
      });
    },
  };
}
