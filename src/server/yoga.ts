// The yoga app: schema, per-request context (fresh loaders), error codes, offline GraphiQL.
import { useSharedSubscriptions } from './shared-subscriptions.js';
import { useQueryJit } from './plugins/use-query-jit.js';
import { useAPQ } from '@graphql-yoga/plugin-apq';
import { createYoga, type Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { LiveHub } from '../live/index.js';
import { schema, DEFAULT_LIMITS, type Context, type Limits } from '../schema/index.js';
import type { Store } from '../store/index.js';
import { maskError, useErrorCodes } from './plugins/use-error-codes.js';
import { DEFAULT_REQUEST_LIMITS, type RequestLimits, type TokenStore } from '../config/index.js';
import { authenticate, scopeContext } from './access.js';
import { useLimits } from './plugins/use-limits.js';
import type { LedgerSettings } from '../domain/ledger.js';
import { useStaleErrors } from './plugins/use-stale-errors.js';
import { useRevocation } from './plugins/use-revocation.js';
import { useValidationCache } from './plugins/use-validation-cache.js';
import { useCompressedGraphiQL } from './plugins/use-compressed-graphiql.js';
import { type ByteBoundedApqStore, createByteBoundedApqStore } from './apq-store.js';

export interface YogaDeps {
  store: Store;
  logger: Logger;
  limits?: Limits;
  plugins?: Plugin[];
  live?: LiveHub;
  /** Depth, aliases, tokens, cost, body size, introspection, execution time-out. */
  requestLimits?: RequestLimits;
  /** API tokens; with none configured every request sees everything (the server is on loopback or explicitly open). */
  tokens?: TokenStore | null;
  /** Origins allowed cross-origin (with credentials); none when empty or absent. */
  corsOrigins?: readonly string[];
  /** Queries on graphql-jit (default) or graphql-js (AppConfig.executor). */
  executor?: 'jit' | 'graphql-js';
  /** The persisted queries' store (graphql-ws reads it too); a byte-bounded one of requestLimits.apqStoreMaxBytes when absent. */
  apqStore?: ByteBoundedApqStore;
  /** What `_service { sdl }` answers with SUBGRAPH_TYPE_NAMES set (runtime.ts checks and renames at start). */
  subgraphSdl?: string;
  /** The ledger's prices, average power and peaks (AppConfig.ledger, or the demo's); absent = no prices. */
  ledger?: LedgerSettings;
}

export const EXAMPLE_QUERY = `# Every platform's jobs, newest first, with per-GPU utilization (ratio 0..1)
query Fleet {
  jobs(first: 5) {
    edges {
      node {
        name
        status
        provider { kind name simulated }
        nodes { name gpus { index model utilization(maxPoints: 20) { unit summary { avg max } } } }
      }
    }
  }
}
`;

export function createApp(deps: YogaDeps) {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const apqStore = deps.apqStore ?? createByteBoundedApqStore((deps.requestLimits ?? DEFAULT_REQUEST_LIMITS).apqStoreMaxBytes);
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // GraphiQL's assets ship in the package: no CDN, so it works offline and behind firewalls.
    // GraphiQL's page carries its assets inline (about 9 MB of JavaScript): loaded on the first
    // visit, not at every start (it was most of the built server's load time).
    renderGraphiQL: async (opts) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(opts),
    graphiql: { title: 'Training graph', defaultQuery: EXAMPLE_QUERY },
    maskedErrors: { maskError: maskError(deps.logger) },
    logging: false,
    // use-limits.ts caps every body it accepts (declared or chunked, with its own codes) and
    // refuses every other media type: yoga's own limit re-wrapped each body in a second stream.
    maxRequestBodySize: false,
    // Documents are cached by yoga; validation results by use-validation-cache.ts (last plugin).
    parserAndValidationCache: { validationCache: false },
    // Yoga's default echoes any Origin with credentials: only configured origins get CORS headers.
    cors: (request) => {
      const origin = request.headers.get('origin');
      return origin && deps.corsOrigins?.includes(origin) ? { origin, credentials: true, methods: ['GET', 'POST'] } : false;
    },
    plugins: [
      ...(deps.executor === 'graphql-js' ? [] : [useQueryJit()]),
      useErrorCodes(),
      // Automatic persisted queries (Apollo's protocol): a client sends a query's sha256 alone and
      // the text only once per replica (kept in a byte-bounded LRU per replica, apq-store.ts).
      useAPQWhenAsked(apqStore),
      ...useLimits(
        deps.requestLimits ?? DEFAULT_REQUEST_LIMITS,
        {
          defaultPageSize: limits.defaultPageSize,
          defaultMaxPoints: limits.defaultMaxPoints,
          defaultLogLines: limits.defaultLogLines,
          // Any platform's series may be asked: the finest of them bounds a window's points.
          sampleSeconds: Math.min(...deps.store.providers.all().map((p) => p.capabilities.sampleSeconds ?? 1), 60),
        },
        () => deps.store.shapes(),
      ),
      useStaleErrors(),
      // Subscribers of the same live question share each event's execution.
      useSharedSubscriptions(),
      useRevocation(deps.tokens ?? null),
      useCompressedGraphiQL(),
      ...(deps.plugins ?? []),
      useValidationCache(),
    ],
    context: (initial): Context => {
      const base: Context = {
        store: deps.store.forRequest(),
        limits,
        live: deps.live,
        ...(deps.subgraphSdl ? { subgraphSdl: deps.subgraphSdl } : {}),
        ...(deps.ledger ? { ledger: deps.ledger } : {}),
      };
      // Over graphql-ws there is no Fetch request: the token comes in connectionParams.
      const scope = authenticate(deps.tokens ?? null, initial.request?.headers ?? null, initial.connectionParams as Record<string, unknown> | undefined);
      return scope ? scopeContext(base, scope) : base;
    },
  });
}

export type App = ReturnType<typeof createApp>;

/**
 * APQ's hook is async: every request, persisted or not, paid a promise and a turn of the
 * microtask queue before it was parsed. Requests without a persistedQuery extension (APQ ignores
 * them) skip it.
 */
export function useAPQWhenAsked(store: ByteBoundedApqStore): Plugin {
  const apq = useAPQ({ store });
  const onParams = apq.onParams!;
  return {
    onParams(payload) {
      if (payload.params.extensions?.persistedQuery == null) return;
      return onParams(payload);
    },
  };
}
