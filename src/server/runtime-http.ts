// The runtime's one HTTP server: every route beside GraphQL (scrapes, the query API, probes, the
// web page) in front of the yoga app, with the outgoing guard's and the front's response class.
import http from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { TokenStore } from '../config/index.js';
import type { PromApi } from '../promql/index.js';
import { DEFAULT_LIMITS, type Limits } from '../schema/index.js';
import type { Store } from '../store/index.js';
import { presentedToken } from './access.js';
import { serveExport } from './export.js';
import { FrontResponse, type HttpFront, pathOf } from './http-front.js';
import { serveJobsScrape } from './jobs-scrape.js';
import { serveLedgerExport } from './ledger-export.js';
import type { Metrics } from './metrics.js';
import type { OutgoingGuard } from './outgoing-guard.js';
import { PROM_API_PREFIX, servePromApi } from './prom-api.js';
import { routeListener } from './routes.js';
import { serveWebPage } from './web.js';
import type { App } from './yoga.js';

export interface RuntimeServerContext {
  app: App;
  store: Store;
  tokens: TokenStore | null;
  /** The metrics scrape's own token (config.security.metricsToken). */
  metricsToken: string | null;
  logger: Logger;
  metrics: Metrics;
  front: HttpFront;
  guard: OutgoingGuard;
  promApi: PromApi;
  /** The Prometheus query API's request body limit (requestLimits.maxBodyBytes). */
  maxBodyBytes: number;
  /** The graph's limits (RuntimeOptions.limits), which the exports page by. */
  limits: Limits | undefined;
  /** readyz's status and body (the database's, or 503 once close() began). */
  readiness: () => Promise<[number, string]>;
}

/** The server, not yet listening. */
export function createRuntimeServer(ctx: RuntimeServerContext): http.Server {
  const { app, store, tokens, logger, metrics, front, guard, promApi } = ctx;
  const server = http.createServer(
    // One response class for every request: the outgoing guard's checks and the front's
    // bookkeeping are on it rather than added to each response (outgoing-guard.ts says why).
    { ServerResponse: guard.responseClass(FrontResponse) as unknown as typeof http.ServerResponse },
    front.wrap(
      routeListener(
        {
          jobsScrape: (req, res) => {
            if (pathOf(req.url) !== '/metrics/jobs' || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
            return serveJobsScrape(req, res, { store, tokens }).catch((err) => {
              logger.error({ err }, 'GET /metrics/jobs failed');
              if (!res.headersSent) res.writeHead(503, { 'content-type': 'text/plain' });
              res.end('the cache is not available\n');
            });
          },
          promApi: (req, res) => {
            if (!pathOf(req.url).startsWith(PROM_API_PREFIX)) return false;
            return servePromApi(req, res, { api: promApi, store, tokens, maxBodyBytes: ctx.maxBodyBytes }).catch((err) => {
              logger.error({ err }, 'Prometheus query API failed');
              if (!res.headersSent) res.writeHead(503, { 'content-type': 'application/json' });
              res.end(JSON.stringify({ status: 'error', errorType: 'unavailable', error: 'the cache is not available' }));
            });
          },
          metrics: (req, res) => {
            if (req.url !== '/metrics') return false;
            // Metrics name every provider: with tokens configured only the metrics token or an unscoped API token reads them.
            const denied = metricsAccess(tokens, ctx.metricsToken, req.headers.authorization);
            if (denied) {
              res.writeHead(denied, { 'content-type': 'application/json', ...(denied === 401 ? { 'www-authenticate': 'Bearer' } : {}) });
              res.end(
                JSON.stringify({
                  errors: [
                    {
                      message:
                        denied === 401 ? 'a metrics or unscoped API token is required (Authorization: Bearer <token>)' : 'this token may not read metrics',
                      extensions: { code: denied === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN' },
                    },
                  ],
                }),
              );
              return true;
            }
            return metrics.scrape().then((body) => res.writeHead(200, { 'content-type': metrics.contentType() }).end(body));
          },
          export: (req, res) =>
            serveLedgerExport(req, res, app, (ctx.limits ?? DEFAULT_LIMITS).maxPageSize) || serveExport(req, res, app, ctx.limits ?? DEFAULT_LIMITS),
          webPage: (req, res) => serveWebPage(req, res, logger),
          healthz: (req, res) => {
            if (req.url !== '/healthz') return false;
            res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
            return true;
          },
          readyz: (req, res) => {
            if (req.url !== '/readyz') return false;
            return ctx.readiness().then(([status, body]) => res.writeHead(status, { 'content-type': 'application/json' }).end(body));
          },
          graphql: (req, res) => app.handle(req, res),
        },
        logger,
      ),
    ),
  );
  // Node closes idle keep-alive sockets after 5 s, racing clients and load balancers that reuse
  // them longer (a request then dies with ECONNRESET): the server must outlast their idle timeouts
  // (60 s is common), and Node requires the headers timeout to exceed the keep-alive one.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return server;
}

/** null when the request may read /metrics, else the status to refuse it with. */
function metricsAccess(tokens: TokenStore | null, metricsToken: string | null, authorization: string | undefined): 401 | 403 | null {
  if (!tokens?.configured && !metricsToken) return null;
  const token = presentedToken(new Headers(authorization ? { authorization } : {}), undefined);
  if (!token) return 401;
  if (metricsToken && token.length === metricsToken.length && timingSafeEqual(Buffer.from(token), Buffer.from(metricsToken))) return null;
  const scope = tokens?.lookup(token) ?? null;
  if (!scope) return 401;
  return scope.providers === null && scope.projects === null ? null : 403;
}
