// The HTTP routes beside GraphQL, as one table: runtime.ts dispatches through it and the hostile-input
// fuzz test (test/security/fuzz.test.ts) reads it, so a route added here is fuzzed without anyone
// remembering to. Everything no route claims goes to yoga (/graphql and its 404s).
import type http from 'node:http';
import type { Logger } from 'pino';
import { pathOf } from './http-front.js';

/** Where each route answers; `:name` marks a path segment the client chooses (the fuzz test fills it with hostile text). */
export const HTTP_ROUTES = {
  jobsScrape: { methods: ['GET', 'HEAD'], paths: ['/metrics/jobs'] },
  promApi: {
    methods: ['GET', 'POST'],
    paths: [
      '/api/v1/query',
      '/api/v1/query_range',
      '/api/v1/series',
      '/api/v1/labels',
      '/api/v1/label/:name/values',
      '/api/v1/metadata',
      '/api/v1/status/buildinfo',
    ],
  },
  metrics: { methods: ['GET'], paths: ['/metrics'] },
  export: {
    methods: ['GET', 'HEAD'],
    paths: [
      '/export/jobs/:id/metrics.csv',
      '/export/jobs/:id/metrics.jsonl',
      '/export/jobs/:id/training-metrics.csv',
      '/export/jobs/:id/training-metrics.jsonl',
      '/export/ledger.csv',
    ],
  },
  webPage: { methods: ['GET', 'HEAD'], paths: ['/', '/assets/:name'] },
  healthz: { methods: ['GET'], paths: ['/healthz'] },
  readyz: { methods: ['GET'], paths: ['/readyz'] },
  graphql: { methods: ['GET', 'POST'], paths: ['/graphql'] },
} as const satisfies Record<string, { methods: readonly string[]; paths: readonly string[] }>;

export type RouteName = keyof typeof HTTP_ROUTES;

/**
 * A route's handler: false to let the next one look; anything else means it took the request, and a
 * promise that it is still answering. Every route must have one (the Record's type says so).
 */
export type RouteHandler = (req: http.IncomingMessage, res: http.ServerResponse) => boolean | PromiseLike<unknown> | undefined;

/** Tried in this order; graphql last, as the one that answers everything left. */
const ORDER: readonly RouteName[] = ['jobsScrape', 'promApi', 'metrics', 'export', 'webPage', 'healthz', 'readyz', 'graphql'];

/**
 * One listener over the table, with the last-resort guard: a handler that throws, or whose promise
 * rejects, is logged and answered 500 INTERNAL (or its socket cut when the answer had begun)
 * instead of reaching the process as an uncaught exception or unhandled rejection.
 */
export function routeListener(handlers: Record<RouteName, RouteHandler>, logger: Logger): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const ordered = ORDER.map((name) => [name, handlers[name]] as const);
  return (req, res) => {
    let route: RouteName = 'graphql';
    try {
      for (const [name, handle] of ordered) {
        route = name;
        const answered = handle(req, res);
        if (answered === false) continue;
        if (typeof answered === 'object' && answered !== null) answered.then(undefined, (err: unknown) => failed(err, route, req, res, logger));
        return;
      }
    } catch (err) {
      failed(err, route, req, res, logger);
    }
  };
}

function failed(err: unknown, route: RouteName, req: http.IncomingMessage, res: http.ServerResponse, logger: Logger): void {
  logger.error(
    { err, route, method: req.method, path: pathOf(req.url).slice(0, 200), reqId: req.headers['x-request-id'] },
    'request failed with an unexpected error',
  );
  if (res.writableEnded) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(500, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ errors: [{ message: 'the server failed to answer this request', extensions: { code: 'INTERNAL' } }] }));
}
