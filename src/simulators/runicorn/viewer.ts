// A Runicorn 0.6.0 viewer over a storage folder: the /api routes, their headers and error bodies,
// and the log WebSocket, answering like the captured fixtures (shared/fixtures/runicorn).
import { existsSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { startSimulator, wave, hashSeed, type Fault, type RouteDef, type SimHandler, type SimRequest, type SimResponse, type SimulatorHandle } from '../kit.js';
import { defaultIsProcessAlive, downsampleLttb, markCrashedIfDead, readJsonLenient, readMetricsTable, scanRuns, type ScannedRun } from './storage-scan.js';

export interface RunicornViewerOptions {
  storageDir: string;
  port?: number;
  now?: () => number;
  /** The viewer host's name: pid checks run only for runs written on this host. */
  hostname?: string;
  isProcessAlive?: (pid: number) => boolean;
  /** Rate limiting: headers are always sent; 429s only when `enforce` (off in the shipped config). */
  rateLimit?: { enforce?: boolean; defaultLimit?: number; runsLimit?: number; windowSeconds?: number };
  /** Simulated nvidia-smi GPUs for /api/gpu/telemetry; none = "nvidia-smi not found". */
  gpus?: { name: string; memTotalMib: number }[];
  /** How often the viewer re-checks running runs for a dead pid (real viewer: 60 s). */
  statusCheckIntervalMs?: number;
}

export interface RunicornViewerHandle extends SimulatorHandle {
  readonly storageDir: string;
  /** Log WebSockets open right now (a real viewer keeps tailing logs.txt for each). */
  openLogSockets(): number;
  /** How log sockets ended: the client sent a close frame, or vanished without one (1006). */
  logSocketCloses(): { withCloseFrame: number; withoutCloseFrame: number; byServer: number };
}

const VERSION = '0.6.0';
const NO_LOGS = '[info] No logs available yet. Waiting for logs to be created...';
const MAX_INITIAL_LINES = 10000;

/** The options read once, the per-path rate limiter, and run lookup. */
function viewerLimits(opts: RunicornViewerOptions) {
  const root = opts.storageDir;
  const now = opts.now ?? Date.now;
  const crashCheck = {
    hostname: opts.hostname ?? osHostname(),
    isProcessAlive: opts.isProcessAlive ?? defaultIsProcessAlive,
    nowSeconds: () => now() / 1000,
  };
  const windowSeconds = opts.rateLimit?.windowSeconds ?? 60;
  const limiterFor = (path: string) =>
    path.startsWith('/api/runs')
      ? { key: '/api/runs', limit: opts.rateLimit?.runsLimit ?? 10000 }
      : { key: 'default', limit: opts.rateLimit?.defaultLimit ?? 6000 };
  const requestTimes = new Map<string, number[]>();
  const cacheSizes = new Map<string, number>();
  const cacheStats = { hits: 0, misses: 0, incremental_updates: 0 };

  const rateHeaders = (path: string): Record<string, string> => {
    const { key, limit } = limiterFor(path);
    const used = (requestTimes.get(key) ?? []).filter((t) => t > now() / 1000 - windowSeconds).length;
    return {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(Math.max(0, limit - used)),
      'X-RateLimit-Reset': String(windowSeconds),
    };
  };

  /** The sliding-window limiter; returns a 429 when enforced and over the limit. */
  const admit = (path: string): SimResponse | null => {
    if (!opts.rateLimit?.enforce) return null;
    const { key, limit } = limiterFor(path);
    const t = now() / 1000;
    const times = (requestTimes.get(key) ?? []).filter((x) => x >= t - windowSeconds);
    requestTimes.set(key, times);
    if (times.length >= limit) {
      const retryAfter = Math.trunc(times[0]! + windowSeconds - t) + 1;
      return rateLimited(retryAfter, limit);
    }
    times.push(t);
    return null;
  };

  const rateLimited = (retryAfter: number, limit: number): SimResponse => ({
    status: 429,
    body: { detail: 'Rate limit exceeded', retry_after: retryAfter },
    headers: { 'Retry-After': String(retryAfter), 'X-RateLimit-Limit': String(limit), 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(retryAfter) },
  });

  const withApiHeaders =
    (handler: SimHandler): SimHandler =>
    async (req) => {
      const denied = admit(req.url.pathname);
      if (denied) return denied;
      const out = await handler(req);
      return { ...out, headers: { ...(out.headers ?? {}), ...rateHeaders(req.url.pathname) } };
    };

  const findRun = (id: string): ScannedRun | null => scanRuns(root).find((r) => r.id === id) ?? null;
  const runNotFound: SimResponse = { status: 404, body: { detail: 'Run not found' } };

  const listItem = (run: ScannedRun) => {
    const meta = readJsonLenient(join(run.dir, 'meta.json'));
    let status = readJsonLenient(join(run.dir, 'status.json'));
    if (String(status.status ?? 'finished') === 'running') {
      markCrashedIfDead(run.dir, crashCheck);
      status = readJsonLenient(join(run.dir, 'status.json'));
    }
    const summary = readJsonLenient(join(run.dir, 'summary.json'));
    const created = typeof meta.created_at === 'number' ? meta.created_at : statSync(run.dir).mtimeMs / 1000;
    return {
      id: run.id,
      run_dir: run.dir,
      created_time: created,
      status: String(status.status || 'finished'),
      pid: meta.pid ?? null,
      best_metric_value: summary.best_metric_value ?? null,
      best_metric_name: summary.best_metric_name ?? null,
      path: (meta.path as string) || run.layoutPath,
      alias: meta.alias ?? null,
      tags: Array.isArray(meta.tags) ? meta.tags : [],
      assets_count: countAssets(readJsonLenient(join(run.dir, 'assets.json'))),
    };
  };
  return {
    opts,
    root,
    now,
    crashCheck,
    windowSeconds,
    limiterFor,
    requestTimes,
    cacheSizes,
    cacheStats,
    rateHeaders,
    admit,
    rateLimited,
    withApiHeaders,
    findRun,
    runNotFound,
    listItem,
  };
}

/** The metrics route's handler, the incremental cache's statistics, and the path tree. */
function viewerReads(ctx: ReturnType<typeof viewerLimits>) {
  const { root, cacheSizes, cacheStats, findRun, runNotFound, listItem } = ctx;
  const metricsHandler: SimHandler = (req) => {
    const raw = req.query.get('downsample');
    let downsample: number | null = null;
    if (raw !== null) {
      const n = /^[+-]?\d+$/.test(raw.trim()) ? Number.parseInt(raw, 10) : Number.NaN;
      if (Number.isNaN(n)) return validationError('value is not a valid integer', 'type_error.integer');
      if (n < 100) return validationError('ensure this value is greater than or equal to 100', 'value_error.number.not_ge', { limit_value: 100 });
      if (n > 50000) return validationError('ensure this value is less than or equal to 50000', 'value_error.number.not_le', { limit_value: 50000 });
      downsample = n;
    }
    const run = findRun(req.params.runId!);
    if (!run) return runNotFound;
    const eventsFile = join(run.dir, 'events.jsonl');
    noteCacheAccess(eventsFile);
    const table = readMetricsTable(eventsFile);
    const total = table.rows.length;
    const rows = downsample !== null && total > downsample ? downsampleLttb(table.rows, downsample) : table.rows;
    const headers: Record<string, string> = { 'X-Row-Count': String(rows.length), 'X-Total-Count': String(total) };
    if (rows.length > 0) headers['X-Last-Step'] = String(rows[rows.length - 1]!.global_step ?? 0);
    return { status: 200, body: { columns: table.columns, rows, total, sampled: downsample !== null ? rows.length : total }, headers };
  };

  // Cache statistics the way the incremental cache counts them: same size = hit, grown = incremental.
  const noteCacheAccess = (file: string) => {
    if (!existsSync(file)) return;
    const size = statSync(file).size;
    const prev = cacheSizes.get(file);
    if (prev === size) cacheStats.hits++;
    else if (prev !== undefined && size > prev) cacheStats.incremental_updates++;
    else cacheStats.misses++;
    cacheSizes.set(file, size);
  };
  const cacheStatsBody = () => {
    const total = cacheStats.hits + cacheStats.misses + cacheStats.incremental_updates;
    return {
      size: cacheSizes.size,
      max_size: 100,
      ...cacheStats,
      hit_rate: total ? cacheStats.hits / total : 0,
      incremental_rate: total ? cacheStats.incremental_updates / total : 0,
    };
  };

  const pathTree = (paths: string[]) => {
    const tree: Record<string, unknown> = {};
    for (const p of paths) {
      let node = tree;
      for (const seg of p.split('/').filter(Boolean)) node = (node[seg] ??= {}) as Record<string, unknown>;
    }
    return tree;
  };
  const allPaths = () =>
    [
      ...new Set(
        scanRuns(root)
          .map((r) => listItem(r).path)
          .filter((p): p is string => Boolean(p)),
      ),
    ].sort();
  return { metricsHandler, noteCacheAccess, cacheStatsBody, pathTree, allPaths };
}

/** The health and GPU telemetry answers, and faults in this API's shapes. */
function viewerProbes(ctx: ReturnType<typeof viewerLimits> & ReturnType<typeof viewerReads>) {
  const { opts, root, now, limiterFor, rateHeaders, rateLimited, cacheStatsBody } = ctx;

  const healthBody = () => {
    const s = cacheStatsBody();
    return {
      status: 'ok',
      storage: root,
      version: VERSION,
      cache: {
        enabled: true,
        type: 'incremental',
        hit_rate: `${(s.hit_rate * 100).toFixed(1)}%`,
        hits: s.hits,
        misses: s.misses,
        incremental_updates: s.incremental_updates,
        size: s.size,
        max_size: s.max_size,
      },
    };
  };

  const gpuTelemetry = () => {
    if (!opts.gpus || opts.gpus.length === 0) return { available: false, reason: 'nvidia-smi not found in PATH' };
    const t = now();
    return {
      available: true,
      ts: t / 1000,
      gpus: opts.gpus.map((g, index) => {
        const seed = hashSeed(`runicorn-gpu-${index}`);
        const used = Math.round(g.memTotalMib * wave(seed ^ 7, t, 0.05, 0.9));
        return {
          index,
          name: g.name,
          util_gpu: Math.round(100 * wave(seed, t)),
          util_mem: Math.round(100 * wave(seed ^ 3, t, 0, 0.6)),
          mem_total_mib: g.memTotalMib,
          mem_used_mib: used,
          temp_c: Math.round(30 + 40 * wave(seed ^ 5, t)),
          power_w: Math.round(70000 + 600000 * wave(seed ^ 11, t)) / 1000,
          power_limit_w: 700.0,
          clock_sm_mhz: 1980.0,
          clock_mem_mhz: 2619.0,
          pstate: 'P0',
          fan_speed_pct: null,
          mem_used_pct: (used / g.memTotalMib) * 100,
        };
      }),
    };
  };

  const renderFault = (fault: Fault, req: SimRequest): SimResponse => {
    const headers = rateHeaders(req.url.pathname);
    switch (fault.kind) {
      case 'rate_limit':
        return rateLimited(fault.retryAfterSeconds ?? 1, limiterFor(req.url.pathname).limit);
      case 'malformed':
        return { status: 200, rawText: '{"columns": ["global_step", ', headers: { ...headers, 'content-type': 'application/json' } };
      case 'empty':
        return { status: 200, rawText: '', headers: { ...headers, 'content-type': 'application/json' } };
      case 'auth':
        // The viewer has no authentication; a proxy in front of it would answer like this.
        return { status: 403, body: { detail: 'Forbidden' }, headers };
      default:
        return { status: fault.status ?? 503, body: { detail: 'Service Unavailable' }, headers };
    }
  };
  return { healthBody, gpuTelemetry, renderFault };
}

/** The log WebSocket: streaming a run's logs.txt as the viewer does, and how sockets close. */
function logSockets(ctx: ReturnType<typeof viewerLimits> & ReturnType<typeof viewerReads> & ReturnType<typeof viewerProbes>) {
  const { findRun } = ctx;
  const wss = new WebSocketServer({ noServer: true });
  const openSockets = new Set<WebSocket>();
  const closes = { withCloseFrame: 0, withoutCloseFrame: 0, byServer: 0 };
  const closedByServer = new WeakSet<WebSocket>();
  const serverClose = (ws: WebSocket) => {
    closedByServer.add(ws);
    ws.close(1000);
  };
  const wsPath = /^\/api\/runs\/([^/]+)\/logs\/ws$/;

  const streamLogs = (ws: WebSocket, runId: string) => {
    const run = findRun(runId);
    if (!run) {
      ws.send('[error] run not found');
      serverClose(ws);
      return;
    }
    const logFile = join(run.dir, 'logs.txt');
    if (existsSync(logFile)) {
      tail(ws, logFile);
      return;
    }
    ws.send(NO_LOGS);
    // Upstream then waits 2 s and calls websocket.ping(), which Starlette lacks: the handler
    // raises and the connection closes (1000) unless the file appeared in those 2 s.
    const timer = setTimeout(() => {
      if (ws.readyState !== ws.OPEN) return;
      if (!existsSync(logFile)) {
        serverClose(ws);
        return;
      }
      ws.send('[info] Logs are now available, streaming...');
      tail(ws, logFile);
    }, 2000);
    ws.on('close', () => clearTimeout(timer));
  };

  /** Replays complete lines (blank ones skipped), then polls every 0.2-2 s for appended lines. */
  const tail = (ws: WebSocket, file: string) => {
    let offset = 0;
    let sent = 0;
    let replaying = true;
    let lastActivity = Date.now();
    let timer: NodeJS.Timeout | undefined;
    ws.on('close', () => clearTimeout(timer));
    const readNew = (): string[] => {
      const size = statSync(file).size;
      if (size <= offset) return [];
      const fd = openSync(file, 'r');
      try {
        const buf = Buffer.alloc(size - offset);
        readSync(fd, buf, 0, buf.length, offset);
        const end = buf.lastIndexOf(0x0a);
        if (end < 0) return [];
        offset += end + 1;
        return buf.subarray(0, end).toString('utf8').split('\n');
      } finally {
        closeSync(fd);
      }
    };
    const poll = () => {
      if (ws.readyState !== ws.OPEN) return;
      const lines = readNew();
      for (const raw of lines) {
        const line = raw.replace(/\r$/, '');
        if (replaying && sent >= MAX_INITIAL_LINES) {
          // Upstream drops the line it read when the cap hit, then keeps tailing.
          ws.send(`[info] Showing last ${MAX_INITIAL_LINES} lines. Full log file: logs.txt`);
          replaying = false;
          continue;
        }
        if (line.trim()) {
          ws.send(line);
          if (replaying) sent++;
        }
      }
      replaying = false;
      if (lines.length > 0) lastActivity = Date.now();
      const idle = (Date.now() - lastActivity) / 1000;
      if (idle > 3600) {
        ws.send('[info] Connection timeout after 1 hour of inactivity');
        serverClose(ws);
        return;
      }
      timer = setTimeout(poll, idle < 10 ? 200 : idle < 60 ? 500 : idle < 300 ? 1000 : 2000);
    };
    poll();
  };
  return { wss, openSockets, closes, closedByServer, serverClose, wsPath, streamLogs, tail };
}

/** The HTTP routes (before the API headers every answer gets). */
function viewerRoutes(ctx: ViewerSim): RouteDef[] {
  const { root, crashCheck, findRun, runNotFound, listItem, metricsHandler, cacheStatsBody, pathTree, allPaths, healthBody, gpuTelemetry } = ctx;
  return [
    { method: 'GET', path: '/api/health', name: 'health', handler: () => ({ status: 200, body: healthBody() }) },
    {
      method: 'GET',
      path: '/api/config',
      name: 'config',
      handler: () => ({ status: 200, body: { user_root_dir: '', storage: root, config_file: '/home/user/.config/runicorn/config.json' } }),
    },
    { method: 'GET', path: '/api/runs', name: 'runs', handler: () => ({ status: 200, body: scanRuns(root).map(listItem) }) },
    {
      method: 'GET',
      path: '/api/runs/:runId',
      name: 'run_detail',
      handler: (req) => {
        const run = findRun(req.params.runId!);
        if (!run) return runNotFound;
        markCrashedIfDead(run.dir, crashCheck);
        const meta = readJsonLenient(join(run.dir, 'meta.json'));
        const status = readJsonLenient(join(run.dir, 'status.json'));
        const assets = existsSync(join(run.dir, 'assets.json')) ? readJsonLenient(join(run.dir, 'assets.json')) : {};
        return {
          status: 200,
          body: {
            id: run.id,
            status: String(status.status || 'finished'),
            pid: meta.pid ?? null,
            run_dir: run.dir,
            path: (meta.path as string) || run.layoutPath,
            alias: meta.alias ?? null,
            logs: join(run.dir, 'logs.txt'),
            metrics: join(run.dir, 'events.jsonl'),
            metrics_step: join(run.dir, 'events.jsonl'),
            assets,
            assets_count: countAssets(assets),
          },
        };
      },
    },
    {
      method: 'GET',
      path: '/api/runs/:runId/assets',
      name: 'run_assets',
      handler: (req) => {
        const run = findRun(req.params.runId!);
        if (!run) return runNotFound;
        const assets = readJsonLenient(join(run.dir, 'assets.json'));
        return { status: 200, body: { run_id: run.id, assets, assets_count: countAssets(assets) } };
      },
    },
    { method: 'GET', path: '/api/runs/:runId/metrics', name: 'metrics', handler: metricsHandler },
    { method: 'GET', path: '/api/runs/:runId/metrics_step', name: 'metrics_step', handler: metricsHandler },
    // A dead stub in 0.6.0: the same body for every run id, known or not.
    { method: 'GET', path: '/api/runs/:runId/progress', name: 'progress', handler: () => ({ status: 200, body: { available: false, status: 'unknown' } }) },
    { method: 'GET', path: '/api/metrics/cache/stats', name: 'metrics_cache_stats', handler: () => ({ status: 200, body: cacheStatsBody() }) },
    {
      method: 'GET',
      path: '/api/paths',
      name: 'paths',
      handler: () => {
        const paths = allPaths();
        return { status: 200, body: { paths, tree: pathTree(paths) } };
      },
    },
    { method: 'GET', path: '/api/paths/tree', name: 'paths_tree', handler: () => ({ status: 200, body: { tree: pathTree(allPaths()) } }) },
    {
      method: 'GET',
      path: '/api/paths/runs',
      name: 'paths_runs',
      handler: (req) => {
        const prefix = req.query.get('path') ?? '';
        const exact = req.query.get('exact') === 'true';
        const items = scanRuns(root)
          .map(listItem)
          .filter((it) => {
            const p = it.path ?? '';
            return exact ? p === prefix : prefix === '' || p === prefix || p.startsWith(`${prefix}/`);
          })
          .map((it) => ({ ...it, tags: [], assets_count: 0 }));
        return { status: 200, body: items };
      },
    },
    {
      method: 'GET',
      path: '/api/projects',
      name: 'projects',
      handler: () => ({ status: 200, body: { projects: [...new Set(allPaths().map((p) => p.split('/')[0]!))].sort() } }),
    },
    {
      method: 'GET',
      path: '/api/projects/:project/names',
      name: 'project_names',
      handler: (req) => {
        const names = allPaths()
          .map((p) => p.split('/'))
          .filter((s) => s[0] === req.params.project && s.length > 1)
          .map((s) => s[1]!);
        return { status: 200, body: { names: [...new Set(names)].sort() } };
      },
    },
    {
      method: 'GET',
      path: '/api/projects/:project/names/:name/runs',
      name: 'project_name_runs',
      handler: (req) => {
        const wanted = `${req.params.project}/${req.params.name}`;
        const runs = scanRuns(root)
          .map(listItem)
          .filter((it) => it.path === wanted)
          .map((it) => ({ run_id: it.id, path: it.path, alias: it.alias, status: it.status, start_time: it.created_time }));
        return { status: 200, body: runs };
      },
    },
    { method: 'GET', path: '/api/gpu/telemetry', name: 'gpu_telemetry', handler: () => ({ status: 200, body: gpuTelemetry() }) },
    // Broken upstream in 0.6.0 (the experiment manager import fails).
    {
      method: 'GET',
      path: '/api/experiments/search',
      name: 'experiments_search',
      handler: () => ({ status: 501, body: { detail: 'Experiment management not available' } }),
    },
  ];
}

type ViewerSim = ReturnType<typeof viewerLimits> & ReturnType<typeof viewerReads> & ReturnType<typeof viewerProbes> & ReturnType<typeof logSockets>;

export async function startRunicornViewer(opts: RunicornViewerOptions): Promise<RunicornViewerHandle> {
  const limits = viewerLimits(opts);
  const reads = { ...limits, ...viewerReads(limits) };
  const probes = { ...reads, ...viewerProbes(reads) };
  const ctx: ViewerSim = { ...probes, ...logSockets(probes) };
  const plainRoutes = viewerRoutes(ctx);
  const { root, crashCheck, rateHeaders, withApiHeaders, renderFault, wss, openSockets, closes, closedByServer, wsPath, streamLogs } = ctx;
  const routes = plainRoutes.map((r) => ({ ...r, handler: withApiHeaders(r.handler) }));

  const sim = await startSimulator(
    {
      name: 'runicorn',
      routes,
      renderFault,
      notFound: (req) => ({ status: 404, body: { detail: 'Not Found' }, headers: rateHeaders(req.url.pathname) }),
    },
    opts.port ?? 0,
  );

  sim.server.on('upgrade', (req, socket, head) => {
    const m = wsPath.exec(new URL(req.url ?? '/', 'http://sim.local').pathname);
    if (!m) {
      socket.destroy();
      return;
    }
    sim.stats.set('logs_ws', (sim.stats.get('logs_ws') ?? 0) + 1);
    wss.handleUpgrade(req, socket, head, (ws) => {
      openSockets.add(ws);
      ws.on('close', (code) => {
        openSockets.delete(ws);
        if (closedByServer.has(ws)) closes.byServer++;
        else if (code === 1006) closes.withoutCloseFrame++;
        else closes.withCloseFrame++;
      });
      streamLogs(ws, decodeURIComponent(m[1]!));
    });
  });

  const statusTimer = setInterval(() => {
    for (const run of scanRuns(root)) markCrashedIfDead(run.dir, crashCheck);
  }, opts.statusCheckIntervalMs ?? 60_000);
  statusTimer.unref();

  return {
    get name() {
      return sim.name;
    },
    get url() {
      return sim.url;
    },
    get port() {
      return sim.port;
    },
    get server() {
      return sim.server;
    },
    get stats() {
      return sim.stats;
    },
    storageDir: root,
    openLogSockets: () => openSockets.size,
    logSocketCloses: () => ({ ...closes }),
    count: (route) => sim.count(route),
    abandoned: (route) => sim.abandoned(route),
    release: () => sim.release(),
    get events() {
      return sim.events;
    },
    resetStats: () => sim.resetStats(),
    inject: (fault) => sim.inject(fault),
    clearFaults: () => sim.clearFaults(),
    close: async () => {
      clearInterval(statusTimer);
      for (const client of wss.clients) client.terminate();
      wss.close();
      await sim.close();
    },
  };
}

/** Entries the run has logged as assets (datasets, pretrained models, outputs, code, config). */
function countAssets(assets: Record<string, unknown>): number {
  let n = 0;
  for (const v of Object.values(assets)) {
    if (Array.isArray(v)) n += v.length;
    else if (v && typeof v === 'object') n += Object.keys(v).length;
  }
  return n;
}

/** FastAPI + pydantic 1 (the runtime the fixtures came from) query-validation error. */
function validationError(msg: string, type: string, ctx?: Record<string, unknown>): SimResponse {
  return { status: 422, body: { detail: [{ loc: ['query', 'downsample'], msg, type, ...(ctx ? { ctx } : {}) }] } };
}
