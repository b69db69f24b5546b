// graphql-ws on the HTTP server's own port and path (/graphql), executing through the yoga app's
// envelop (same schema, context, error masking as HTTP). Yoga itself serves SSE subscriptions
// (GraphiQL uses them). The socket's limits are part of its protection against abusive clients.
import type http from 'node:http';
import { GraphQLError, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { type WebSocket, WebSocketServer } from 'ws';
import type { App } from './yoga.js';
import type { TokenStore } from '../config/security.js';
import { presentedToken } from './access.js';
import { recoded } from './plugins/use-limits.js';
import type { OutgoingGuard } from './outgoing-guard.js';

export interface WsLimits {
  /** Largest message a client may send; bigger frames close the socket with 1009. Default 64 KiB. */
  maxPayloadBytes: number;
  /** A client that sends no ConnectionInit within this closes with 4408. Default 3000 ms. */
  connectionInitWaitTimeoutMs: number;
  /** Operations one connection may run at once; more are refused with a TOO_MANY_SUBSCRIPTIONS error. Default 100. */
  maxSubscriptionsPerConnection: number;
  /** Ping interval that detects dead peers (their subscriptions are then cleaned up). Default 12000 ms. */
  keepAliveMs: number;
}

export const DEFAULT_WS_LIMITS: WsLimits = {
  maxPayloadBytes: 64 * 1024,
  connectionInitWaitTimeoutMs: 3000,
  maxSubscriptionsPerConnection: 100,
  keepAliveMs: 12_000,
};

/**
 * One operation refused with a coded error; the socket and its other operations live on.
 * graphql-ws tells errors from execution arguments with `instanceof GraphQLError`, and a limit
 * plugin may throw the other build's GraphQLError (graphql ships CJS and ESM): anything not made
 * with this module's class would be taken for arguments and close the socket (4500). So every
 * refusal is re-made here, with the code the HTTP answer would carry.
 */
function refused(err: unknown): [GraphQLError] {
  const isGraphQL = err instanceof Error && err.name === 'GraphQLError';
  const coded = isGraphQL ? recoded(err as GraphQLError) : null;
  return [
    new GraphQLError(coded?.message ?? 'the query does not parse', {
      extensions: { ...(coded?.extensions ?? {}), code: coded?.extensions?.code ?? 'BAD_REQUEST', http: undefined },
    }),
  ];
}

const clientClosed = () => new GraphQLError('the client went away', { extensions: { code: 'CLIENT_CLOSED_REQUEST' } });

type RootWithExecutors = { execute: (args: ExecutionArgs) => unknown; subscribe: (args: ExecutionArgs) => unknown };

/** With tokens configured, a connection without a valid token in connectionParams is closed with 4403 Forbidden. */
export function attachGraphqlWs(
  server: http.Server,
  app: App,
  limits: WsLimits = DEFAULT_WS_LIMITS,
  tokens: TokenStore | null = null,
  guard: OutgoingGuard | null = null,
) {
  const wss = new WebSocketServer({ server, path: '/graphql', maxPayload: limits.maxPayloadBytes });
  // Per socket, the client-gone signal of each operation under way, by operation id.
  const operations = new WeakMap<WebSocket, Map<string, AbortController>>();
  const operationsOf = (socket: WebSocket) => {
    let ops = operations.get(socket);
    if (!ops) {
      const created = new Map<string, AbortController>();
      operations.set(socket, (ops = created));
      socket.once('close', () => {
        for (const c of created.values()) c.abort(clientClosed());
        created.clear();
      });
    }
    return ops;
  };
  // Registered before graphql-ws's own listener: every message it sends passes the secret check.
  if (guard) wss.on('connection', (socket) => guard.socket(socket));
  const disposable = useServer(
    {
      connectionInitWaitTimeout: limits.connectionInitWaitTimeoutMs,
      onConnect: (ctx) => {
        if (!tokens?.configured) return true;
        const token = presentedToken(null, ctx.connectionParams);
        return token !== null && tokens.lookup(token) !== null;
      },
      execute: (args) => (args.rootValue as RootWithExecutors).execute(args) as never,
      subscribe: (args) => (args.rootValue as RootWithExecutors).subscribe(args) as never,
      onComplete: (ctx, id) => {
        // The client stopped the operation (or it ended): nothing waits for its work any more.
        const ops = operations.get(ctx.extra.socket);
        ops?.get(id)?.abort(clientClosed());
        ops?.delete(id);
      },
      onSubscribe: async (ctx, _id, payload) => {
        // The operation being set up is already reserved in ctx.subscriptions.
        if (Object.keys(ctx.subscriptions).length > limits.maxSubscriptionsPerConnection) {
          return [
            new GraphQLError(`at most ${limits.maxSubscriptionsPerConnection} operations per connection`, {
              extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' },
            }),
          ];
        }
        // No Fetch request exists over a socket (STACK.md): yoga gets the upgrade request instead.
        const { schema, execute, subscribe, contextFactory, parse, validate } = app.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params: payload,
        });
        let document: ReturnType<typeof parse>;
        try {
          document = parse(payload.query);
        } catch (err) {
          return refused(err);
        }
        const errors = validate(schema, document);
        if (errors.length > 0) return errors.map((e: GraphQLError) => refused(e)[0]);
        // The token is checked again for each subscription: one revoked since the connection opened is refused.
        let contextValue: Awaited<ReturnType<typeof contextFactory>>;
        try {
          contextValue = await contextFactory();
        } catch (err) {
          if (err instanceof Error && err.name === 'GraphQLError') return refused(err);
          throw err;
        }
        // A socket has no Fetch request whose signal says the client went away: the operation
        // gets its own, aborted when the client completes it early or the socket closes, so its
        // store reads and upstream calls stop as an abandoned HTTP request's do (use-limits.ts).
        const gone = new AbortController();
        operationsOf(ctx.extra.socket).set(_id, gone);
        if (ctx.extra.socket.readyState >= ctx.extra.socket.CLOSING) gone.abort(clientClosed());
        (contextValue as { clientGone?: AbortSignal }).clientGone = gone.signal;
        return {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue,
          rootValue: { execute, subscribe },
        };
      },
    },
    wss,
    limits.keepAliveMs,
  );
  return {
    wss,
    async close() {
      await disposable.dispose();
    },
  };
}
