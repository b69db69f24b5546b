// A Primus-Lens API server as the fact sheet describes it: the gin routes under `/v1` (or
// `/lens/v1` behind the Primus gateway / SaFE proxy), the {meta, data, tracing} envelope with
// handler errors as HTTP 200 + meta.code, the legacy bare form of the four training-metrics
// routes, cluster resolution, and the three auth setups (none, Lens cookie middleware, SaFE Bearer).
import { startSimulator, type SimulatorHandle } from '../kit.js';
import type { SimFleet } from './fleet.js';
import { lensAuth } from './auth.js';
import { lensPayloads } from './payloads.js';
import { lensRequests } from './requests.js';
import { metricRoutes, podAndClusterRoutes, workloadRoutes } from './routes.js';

export type LensAuth = { mode: 'none' } | { mode: 'cookie'; token: string } | { mode: 'bearer'; token: string };

export interface PrimusLensSimulatorOptions {
  seed?: number;
  now?: () => number;
  /** All workload times derive from it; default the start of the current UTC day. */
  anchorMs?: number;
  port?: number;
  /** `/v1` for the Lens API server itself, `/lens/v1` behind the gateway or the SaFE proxy. */
  prefix?: '/v1' | '/lens/v1';
  /** `legacy`: the four training-metrics routes answer as before PR #315 (bare payload, {"error"}). */
  mode?: 'current' | 'legacy';
  /** false: a Lens without the unified /training-metrics routes (the dispatcher answers 404). Default true. */
  unifiedTrainingMetrics?: boolean;
  /**
   * `cookie`: Lens' auth middleware (a Cookie header whose `Token` cookie SaFE would verify).
   * `bearer`: the SaFE lens-compat proxy (Bearer API key or Token cookie; `cluster` required everywhere).
   */
  auth?: LensAuth;
  defaultCluster?: string;
  /** Behind the SaFE proxy: clusters where the robust addon is missing (Primus.00050). */
  clustersWithoutAddon?: string[];
  /** Repeats the fleet this many times (default 1) to make paging observable. */
  replicas?: number;
}

export interface PrimusLensSimulator extends SimulatorHandle {
  fleet: SimFleet;
  prefix: string;
  /** What a client configures as its base: the URL before `/v1`. */
  baseUrl: string;
}

export async function startPrimusLensSimulator(opts: PrimusLensSimulatorOptions = {}): Promise<PrimusLensSimulator> {
  const requests = lensRequests(opts);
  const ctx = { ...requests, ...lensPayloads(requests) };
  const { fleet, prefix } = ctx;
  const routes = [...workloadRoutes(ctx), ...metricRoutes(ctx), ...podAndClusterRoutes(ctx)];
  const { authenticate, renderFault } = lensAuth(ctx);

  const handle = await startSimulator(
    {
      name: 'primus-lens',
      routes: routes.map((r) => ({ ...r, path: `${prefix}${r.path}` })),
      renderFault,
      authenticate,
      notFound: (req) => ({ status: 404, body: { error: `endpoint not found: ${req.method} ${req.url.pathname.slice(prefix.length) || '/'}` } }),
    },
    opts.port ?? 0,
  );
  return Object.assign(handle, { fleet, prefix, baseUrl: `${handle.url}${prefix.slice(0, -'/v1'.length)}` });
}
