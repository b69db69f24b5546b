// What every HTTP request passes through before routing: a request id (the client's x-request-id
// when it is sane, else a new UUID, echoed in the response), one structured log line, the request
// counters, and the in-flight count that graceful shutdown waits on.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';

const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/;
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/** The path of a request target (what comes before `?`), without splitting when there is no query. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** A bounded route label: the path's first segment for known routes, "other" for the rest. */
function routeOf(path: string): string {
  if (path === '/' || path === '/graphql' || path === '/metrics/jobs' || PROBES.has(path)) return path;
  if (path.startsWith('/assets/')) return '/assets';
  if (path.startsWith('/export/')) return '/export';
  if (path.startsWith('/api/v1/')) return '/api/v1';
  return 'other';
}

/** What the answer's end needs to know of its request (kept on the response: no closure per request). */
interface Answering {
  front: FrontState;
  req: http.IncomingMessage;
  reqId: string;
  path: string;
  stream: boolean;
  started: number;
}

interface FrontState {
  logger: Logger;
  metrics: Metrics;
  inFlight: number;
  settle(): void;
}

/**
 * A response with room for what its end needs (http.createServer's ServerResponse option), so
 * nothing is added to a response after it is made and every response keeps one shape for V8.
 * wrap() works with plain responses too.
 */
export class FrontResponse extends http.ServerResponse {
  answering: Answering | null = null;
  /**
   * The request id, sent among writeHead's own headers. Set beforehand with setHeader, it sent
   * Node down its slow path, which sets a writeHead's headers one by one over the ones already set
   * (a trivial query's profile: Node's header code 4-5 µs per request against the floor's 1).
   */
  requestId: string | null = null;

  // A handler's own x-request-id wins, as it did over setHeader.
  override writeHead(statusCode: number, ...rest: unknown[]): this {
    const id = this.requestId;
    if (id !== null) {
      this.requestId = null;
      const last = rest.length - 1;
      const headers = rest[last];
      if (last >= 0 && typeof headers === 'object' && headers !== null && !Array.isArray(headers)) rest[last] = { 'x-request-id': id, ...headers };
      else if (!this.headersSent) this.setHeader('x-request-id', id);
    }
    return (super.writeHead as (statusCode: number, ...rest: unknown[]) => this)(statusCode, ...rest);
  }
}

/** The one 'close' listener of every response: counts, logs and releases the request once. */
function answered(this: FrontResponse): void {
  const a = this.answering;
  if (!a) return;
  this.answering = null;
  const front = a.front;
  if (!a.stream) {
    front.inFlight--;
    front.settle();
  }
  front.metrics.httpAnswered(routeOf(a.path), this.statusCode);
  const level = PROBES.has(a.path) ? 'debug' : 'info';
  if (!front.logger.isLevelEnabled(level)) return;
  const line = {
    reqId: a.reqId,
    method: a.req.method,
    path: a.path,
    status: this.statusCode,
    ms: Math.round(performance.now() - a.started),
    aborted: !this.writableFinished,
  };
  front.logger[level](line, 'request');
}

export interface HttpFront {
  wrap(listener: http.RequestListener): http.RequestListener;
  /** Requests being served now (SSE subscription streams excluded: shutdown closes them instead). */
  inFlight(): number;
  /** Resolves true once no request is in flight, or false when timeoutMs passes first. */
  drained(timeoutMs: number): Promise<boolean>;
}

export function createHttpFront(logger: Logger, metrics: Metrics): HttpFront {
  let waiters: (() => void)[] = [];
  const front: FrontState = {
    logger,
    metrics,
    inFlight: 0,
    settle() {
      if (front.inFlight > 0) return;
      for (const w of waiters) w();
      waiters = [];
    },
  };
  metrics.countInFlight(() => front.inFlight);
  return {
    wrap(listener) {
      return (req, res) => {
        const started = performance.now();
        const incoming = req.headers['x-request-id'];
        const reqId = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
        // Downstream (yoga's plugins, error logs) read the id from the request itself.
        req.headers['x-request-id'] = reqId;
        if (res instanceof FrontResponse) res.requestId = reqId;
        else res.setHeader('x-request-id', reqId);
        const accept = req.headers.accept;
        const stream = accept?.includes('text/event-stream') === true;
        if (!stream) front.inFlight++;
        (res as FrontResponse).answering = { front, req, reqId, path: pathOf(req.url), stream, started };
        res.on('close', answered);
        listener(req, res);
      };
    },
    inFlight: () => front.inFlight,
    drained(timeoutMs) {
      if (front.inFlight === 0) return Promise.resolve(true);
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
