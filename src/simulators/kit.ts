// Shared plumbing for the platform simulators (never imported by adapters): a loopback HTTP
// server with a tiny router, per-route request counters, and fault injection that a test or a
// benchmark can switch on in process or over HTTP (`/__sim/*`), so other processes can too.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultKind = 'status' | 'rate_limit' | 'timeout' | 'malformed' | 'reset' | 'auth' | 'empty';

export interface Fault {
  kind: FaultKind;
  /** Only requests whose route name matches (exact, or a RegExp source) are hit; default every route. */
  route?: string;
  /** How many requests it hits; default unlimited until cleared. */
  times?: number;
  /** For 'status': the HTTP status (default 503). */
  status?: number;
  /** For 'rate_limit': seconds the platform asks the client to wait (default 1). */
  retryAfterSeconds?: number;
  /** For 'timeout': how long to hold the request before answering normally (default: never answer). */
  delayMs?: number;
  /** Only requests it accepts are hit (their query, body): in process only, `/__sim/fault` cannot carry it. */
  match?: (req: SimRequest) => boolean;
}

export interface SimRequest {
  method: string;
  route: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  url: URL;
  rawBody: Buffer;
  /** Parsed JSON body, undefined when empty; a malformed body answers 400 before the handler runs. */
  body: unknown;
}

export interface SimResponse {
  status: number;
  body?: unknown;
  /** Sent verbatim instead of JSON (malformed-body faults, text errors). */
  rawText?: string;
  headers?: Record<string, string>;
}

export type SimHandler = (req: SimRequest) => SimResponse | Promise<SimResponse>;

export interface RouteDef {
  method: string;
  /** Path pattern with `:param` segments, e.g. `/v1/training_projects/:projectId/jobs`. */
  path: string;
  /** Stable name used by counters and fault targeting. */
  name: string;
  handler: SimHandler;
}

/** How a platform renders each injected fault: its own error bodies and headers. */
export type FaultRenderer = (fault: Fault, req: SimRequest) => SimResponse;

export interface SimulatorOptions {
  name: string;
  routes: RouteDef[];
  renderFault: FaultRenderer;
  /** Called for every request before routing; return a response to reject (auth, signature). */
  authenticate?: (req: SimRequest) => SimResponse | null;
  notFound?: (req: SimRequest) => SimResponse;
}

export interface SimulatorHandle {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  /** The underlying node server, for protocols the router does not handle (WebSocket upgrades). */
  readonly server: http.Server;
  /** Requests per route name since start (or the last resetStats). */
  readonly stats: Map<string, number>;
  count(route: string): number;
  /** Requests of a route whose client went away before the answer (an aborted upstream call). */
  abandoned(route: string): number;
  /** Lets the requests a 'timeout' fault without delay holds go on to their normal answer. */
  release(): void;
  /** Emits 'request' (route name, the request: its query) as each request arrives, 'abandoned' when its client goes away before the answer. */
  readonly events: EventEmitter;
  resetStats(): void;
  inject(fault: Fault): void;
  clearFaults(): void;
  close(): Promise<void>;
}

interface CompiledRoute extends RouteDef {
  regex: RegExp;
  keys: string[];
}

function compile(def: RouteDef): CompiledRoute {
  const keys: string[] = [];
  const pattern = def.path
    .split('/')
    .map((seg) => {
      if (seg.startsWith(':')) {
        keys.push(seg.slice(1));
        return '([^/]+)';
      }
      return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return { ...def, regex: new RegExp(`^${pattern}$`), keys };
}

/** What serveRequest needs of its simulator: the compiled routes, counters, and the fault and answer helpers. */
interface KitParts {
  opts: SimulatorOptions;
  routes: CompiledRoute[];
  stats: Map<string, number>;
  abandoned: Map<string, number>;
  held: Set<() => void>;
  events: EventEmitter;
  takeFault: (req: SimRequest) => Fault | null;
  send: (res: http.ServerResponse, out: SimResponse) => void;
  control: (req: SimRequest) => SimResponse | null;
}

/** One request: read its body, match a route, apply a fault or the handler, and answer. */
async function serveRequest(kit: KitParts, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const { opts, routes, stats, abandoned, held, events, takeFault, send, control } = kit;
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const rawBody = Buffer.concat(chunks);
  const url = new URL(req.url ?? '/', 'http://sim.local');
  let body: unknown;
  if (rawBody.length > 0) {
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch {
      body = undefined;
    }
  }
  const base: SimRequest = {
    method: req.method ?? 'GET',
    route: '',
    params: {},
    query: url.searchParams,
    headers: req.headers,
    url,
    rawBody,
    body,
  };
  try {
    const ctl = control(base);
    if (ctl) return send(res, ctl);

    let matched: CompiledRoute | undefined;
    let params: Record<string, string> = {};
    for (const r of routes) {
      if (r.method !== base.method) continue;
      const m = r.regex.exec(url.pathname);
      if (!m) continue;
      matched = r;
      params = Object.fromEntries(r.keys.map((k, i) => [k, decodeURIComponent(m[i + 1]!)]));
      break;
    }
    const simReq: SimRequest = { ...base, route: matched?.name ?? 'unknown', params };
    stats.set(simReq.route, (stats.get(simReq.route) ?? 0) + 1);
    events.emit('request', simReq.route, simReq);
    res.once('close', () => {
      if (res.writableFinished) return;
      abandoned.set(simReq.route, (abandoned.get(simReq.route) ?? 0) + 1);
      events.emit('abandoned', simReq.route);
    });

    const fault = takeFault(simReq);
    if (fault?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'timeout') {
      // Held until the delay passes, or (no delay) until the client gives up or release() is called.
      await new Promise<void>((r) => {
        if (fault.delayMs !== undefined) setTimeout(r, fault.delayMs);
        else held.add(r);
      });
      if (res.destroyed) return;
    } else if (fault) {
      return send(res, opts.renderFault(fault, simReq));
    }

    const denied = opts.authenticate?.(simReq);
    if (denied) return send(res, denied);
    if (!matched) return send(res, opts.notFound?.(simReq) ?? { status: 404, body: { error: 'not found' } });
    return send(res, await matched.handler(simReq));
  } catch (err) {
    send(res, { status: 500, body: { error: `simulator ${opts.name} failed: ${(err as Error).message}` } });
  }
}

export async function startSimulator(opts: SimulatorOptions, port = 0, host = '127.0.0.1'): Promise<SimulatorHandle> {
  const routes = opts.routes.map(compile);
  const stats = new Map<string, number>();
  const abandoned = new Map<string, number>();
  const held = new Set<() => void>();
  const events = new EventEmitter();
  let faults: Fault[] = [];
  const sockets = new Set<import('node:net').Socket>();

  const takeFault = (req: SimRequest): Fault | null => {
    const { route } = req;
    for (const f of faults) {
      if (f.route && f.route !== route && !new RegExp(`^(?:${f.route})$`).test(route)) continue;
      if (f.match && !f.match(req)) continue;
      if (f.times !== undefined) {
        f.times -= 1;
        if (f.times <= 0) faults = faults.filter((x) => x !== f);
      }
      return f;
    }
    return null;
  };

  const send = (res: http.ServerResponse, out: SimResponse) => {
    const headers: Record<string, string> = { ...(out.headers ?? {}) };
    let payload = '';
    if (out.rawText !== undefined) payload = out.rawText;
    else if (out.body !== undefined) {
      payload = JSON.stringify(out.body);
      headers['content-type'] ??= 'application/json';
    }
    res.writeHead(out.status, headers);
    res.end(payload);
  };

  const control = (req: SimRequest): SimResponse | null => {
    if (!req.url.pathname.startsWith('/__sim/')) return null;
    if (req.url.pathname === '/__sim/stats') return { status: 200, body: Object.fromEntries(stats) };
    if (req.url.pathname === '/__sim/faults' && req.method === 'POST') {
      handle.inject(req.body as Fault);
      return { status: 204 };
    }
    if (req.url.pathname === '/__sim/faults' && req.method === 'DELETE') {
      handle.clearFaults();
      return { status: 204 };
    }
    if (req.url.pathname === '/__sim/reset' && req.method === 'POST') {
      handle.clearFaults();
      handle.resetStats();
      return { status: 204 };
    }
    return { status: 404, body: { error: 'unknown simulator control route' } };
  };

  const kit: KitParts = { opts, routes, stats, abandoned, held, events, takeFault, send, control };
  const server = http.createServer((req, res) => serveRequest(kit, req, res));
  // The platforms' APIs sit behind load balancers that keep idle connections for a minute or more;
  // Node's 5 s default races a client reusing a connection (fetch keeps them 4 s), which shows up
  // as ECONNRESET on a busy machine. Longer than any client's: the client always closes first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;

  const handle: SimulatorHandle = {
    name: opts.name,
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    server,
    stats,
    count: (route) => stats.get(route) ?? 0,
    abandoned: (route) => abandoned.get(route) ?? 0,
    release: () => {
      for (const r of held) r();
      held.clear();
    },
    events,
    resetStats: () => {
      stats.clear();
      abandoned.clear();
    },
    inject: (fault) => {
      faults.push({ ...fault });
    },
    clearFaults: () => {
      faults = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        held.clear();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return handle;
}

const DAY_MS = 86_400_000;

/** Midnight UTC of the day `ms` falls on: the default anchor of every simulated fleet. */
export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** A deterministic PRNG (mulberry32) so simulated fleets are the same on every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stable hash of a string to a 32-bit seed, so each simulated series has its own noise. */
export function hashSeed(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

/**
 * A smooth, deterministic utilization-like signal in [lo, hi] at time t (ms): the same (seed, t)
 * always gives the same value, so repeated fetches of a window agree and running jobs move.
 */
export function wave(seed: number, tMs: number, lo = 0.2, hi = 0.95): number {
  const phase = (seed % 1000) / 1000;
  const minutes = tMs / 60000;
  const base = 0.5 + 0.35 * Math.sin(2 * Math.PI * (minutes / 47 + phase)) + 0.1 * Math.sin(2 * Math.PI * (minutes / 7.3 + phase * 3));
  const jitter = seededRandom(seed ^ Math.floor(minutes))() * 0.05;
  return lo + (hi - lo) * Math.min(1, Math.max(0, base + jitter - 0.025));
}
