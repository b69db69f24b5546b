// /api/v1/*: the Prometheus HTTP query API (src/promql) on the server's port. Here only the HTTP
// side: GET query strings and POST form bodies (Grafana posts), the body size limit, and the
// token: a request sees the providers and projects its token sees in the graph and the scrape
// target, and is refused in Prometheus' error shape otherwise.
import type http from 'node:http';
import type { TokenStore } from '../config/index.js';
import type { PromApi, PromAnswer } from '../promql/index.js';
import type { Store } from '../store/index.js';
import { authenticateHttp } from './access.js';

export const PROM_API_PREFIX = '/api/v1/';

export interface PromApiDeps {
  api: PromApi;
  store: Store;
  tokens: TokenStore | null;
  maxBodyBytes: number;
}

function send(res: http.ServerResponse, answer: PromAnswer, extra: Record<string, string> = {}): void {
  res.writeHead(answer.status, { 'content-type': 'application/json', ...extra });
  res.end(answer.json ?? JSON.stringify(answer.body));
}

async function readBody(req: http.IncomingMessage, max: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function servePromApi(req: http.IncomingMessage, res: http.ServerResponse, deps: PromApiDeps): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://local');
  } catch {
    send(res, { status: 400, body: { status: 'error', errorType: 'bad_data', error: 'the request target is not a valid URL' } });
    return;
  }
  const path = url.pathname.slice(PROM_API_PREFIX.length);
  if (req.method !== 'GET' && req.method !== 'POST') {
    send(res, { status: 405, body: { status: 'error', errorType: 'bad_data', error: `method ${req.method} not allowed` } }, { allow: 'GET, POST' });
    return;
  }
  const auth = authenticateHttp(deps.tokens, req);
  if ('refusal' in auth) {
    send(res, { status: 401, body: { status: 'error', errorType: 'unauthorized', error: auth.refusal.message } }, { 'www-authenticate': 'Bearer' });
    return;
  }
  const { scope } = auth;
  const params = url.searchParams;
  if (req.method === 'POST') {
    const body = await readBody(req, deps.maxBodyBytes);
    if (body === null) {
      send(res, { status: 413, body: { status: 'error', errorType: 'bad_data', error: `request body larger than ${deps.maxBodyBytes} bytes` } });
      return;
    }
    if (String(req.headers['content-type'] ?? '').includes('application/x-www-form-urlencoded')) {
      for (const [k, v] of new URLSearchParams(body)) params.append(k, v);
    }
  }
  const all = deps.store.providers.ids();
  const answer = await deps.api.handle(path, params, {
    providerIds: scope ? scope.visibleProviders(all) : all,
    projectIds: scope?.projectIds() ?? null,
  });
  send(res, answer);
}
