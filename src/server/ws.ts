// graphql-ws on the HTTP server's own port and path (/graphql), executing through the yoga app's
// envelop (same schema, context, error masking as HTTP). Yoga itself serves SSE subscriptions
// (GraphiQL uses them). The socket's limits are part of its protection against abusive clients.
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { GraphQLError, type ExecutionArgs, type ExecutionResult, getOperationAST } from 'graphql';
import type { ConnectionInitMessage, Context, SubscribePayload } from 'graphql-ws';
import { type Extra, useServer } from 'graphql-ws/use/ws';
import { type WebSocket, WebSocketServer } from 'ws';
import type { App } from './yoga.js';
import type { TokenStore } from '../config/index.js';
import { presentedToken } from './access.js';
import { recoded } from './plugins/edge-input.js';
import type { OutgoingGuard } from './outgoing-guard.js';
import { isSharedResult } from './shared-subscriptions.js';
import type { ByteBoundedApqStore } from './apq-store.js';

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

/**
 * A `next` whose result is shared by every subscriber of its event (shared-subscriptions.ts) is
 * serialised once, not once per socket (at 3,000 subscribers of a 59 KB sample, stringifying it
 * for each was most of the fan-out). graphql-ws still runs the protocol: its onNext hook swaps
 * the result for this marker, graphql-ws serialises the small message
 * `{"id":…,"type":"next","payload":"\u0000prepared"}`, and the socket's send puts the prepared
 * payload in the marker's place. Only a `next` carrying the marker ends with MARKED_TAIL (a real
 * payload is an object: it ends with `}}`). Node 20 has no JSON.rawJSON to do this in stringify.
 *
 * The message goes out as three frames of one WebSocket message (RFC 6455 fragmentation, which
 * every client reassembles before its `message` event): the socket's own head `{"id":…,"type":
 * "next","payload":`, the prepared payload, and `}`. The payload frame is the same Buffer on every
 * socket, so a fan-out copies and encodes no payload per subscriber: each socket's write refers to
 * the shared bytes (one message of 57 KB to 3,000 sockets was 171 MB of per-socket copies held
 * until the kernel took them, most of the server's RSS per subscriber).
 */
const MARKER_TEXT = '\u0000prepared';
const MARKER = { toJSON: () => MARKER_TEXT };
const MARKED_HEAD = '{"id":';
const MARKED_TAIL = `,"type":"next","payload":${JSON.stringify(MARKER_TEXT)}}`;

/** The payload graphql-ws would send for `result` (server.js emit.next). */
function serialisePayload(result: ExecutionResult): string {
  const { errors, ...rest } = result;
  return JSON.stringify(errors ? { ...rest, errors: errors.map((e) => e.toJSON()) } : rest);
}

/** What the server counts of its `next` messages (server/metrics.ts). */
export interface WsCounters {
  next(payload: 'shared' | 'own'): void;
  sharedPayload(): void;
}

type RootWithExecutors = { execute: (args: ExecutionArgs) => unknown; subscribe: (args: ExecutionArgs) => unknown };

/** With tokens configured, a connection without a valid token in connectionParams is closed with 4403 Forbidden. */
export function attachGraphqlWs(
  server: http.Server,
  app: App,
  limits: WsLimits = DEFAULT_WS_LIMITS,
  tokens: TokenStore | null = null,
  guard: OutgoingGuard | null = null,
  apqStore: ByteBoundedApqStore | null = null,
  counters: WsCounters | null = null,
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
  // Each shared result's payload, serialised (and secret-checked) and encoded once for every socket.
  const prepared = new WeakMap<object, Buffer>();
  // Per socket, the prepared payload of each operation's `next` on its way (onNext -> send).
  const pendingNext = new WeakMap<WebSocket, Map<string, Buffer>>();
  const preparedPayload = (result: ExecutionResult): Buffer => {
    let bytes = prepared.get(result);
    if (!bytes) {
      let text = serialisePayload(result);
      counters?.sharedPayload();
      if (guard) text = guard.prepared(text);
      bytes = Buffer.from(text, 'utf8');
      prepared.set(result, bytes);
    }
    return bytes;
  };
  // Registered before graphql-ws's own listener, so they wrap the socket before it sends anything:
  // the splice first, then the secret check outside it (it sees the marked message, whose
  // prepared payload it checked once).
  wss.on('connection', (socket) => {
    const pending = new Map<string, Buffer>();
    pendingNext.set(socket, pending);
    spliceSharedPayloads(socket, pending);
    guard?.socket(socket);
    if (apqStore) answerPersistedQueries(socket, apqStore);
  });
  const disposable = useServer(
    {
      connectionInitWaitTimeout: limits.connectionInitWaitTimeoutMs,
      onConnect: (ctx) => {
        if (!tokens?.configured) return true;
        const token = presentedToken(null, ctx.connectionParams);
        return token !== null && tokens.lookup(token) !== null;
      },
      onNext: (ctx, id, _payload, _args, result) => {
        const pending = pendingNext.get(ctx.extra.socket);
        if (!isSharedResult(result) || !pending) {
          counters?.next('own');
          return;
        }
        pending.set(id, preparedPayload(result));
        counters?.next('shared');
        return MARKER as never;
      },
      execute: (args) => (args.rootValue as RootWithExecutors).execute(args) as never,
      subscribe: (args) => (args.rootValue as RootWithExecutors).subscribe(args) as never,
      onComplete: (ctx, id) => {
        // The client stopped the operation (or it ended): nothing waits for its work any more.
        const ops = operations.get(ctx.extra.socket);
        ops?.get(id)?.abort(clientClosed());
        ops?.delete(id);
      },
      onSubscribe: (ctx, id, payload) => subscribeOperation({ ctx, id, payload, app, limits, operationsOf }),
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

/**
 * The socket's `send`, wrapped: a `next` message marked by onNext goes out with the operation's
 * prepared payload spliced in; anything else is sent as it was.
 */
function spliceSharedPayloads(socket: WebSocket, pending: Map<string, Buffer>): void {
  const send = socket.send.bind(socket) as (data: unknown, options: { fin?: boolean }, cb?: (err?: Error) => void) => void;
  socket.send = ((data: unknown, ...rest: unknown[]) => {
    const cb = rest.find((a) => typeof a === 'function') as ((err?: Error) => void) | undefined;
    if (typeof data === 'string' && data.endsWith(MARKED_TAIL) && data.startsWith(MARKED_HEAD)) {
      const idJson = data.slice(MARKED_HEAD.length, data.length - MARKED_TAIL.length);
      const id = JSON.parse(idJson) as string;
      const payload = pending.get(id);
      pending.delete(id);
      if (payload) {
        // One text message in three frames (see MARKER_TEXT), written together: corked, the
        // socket hands the kernel its head, the shared payload and the tail in one writev.
        const tcp = (socket as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
        tcp?.cork();
        try {
          send(`${MARKED_HEAD}${idJson},"type":"next","payload":`, { fin: false });
          send(payload, { fin: false });
          send('}', { fin: true }, cb);
        } finally {
          tcp?.uncork();
        }
        return;
      }
    }
    return (send as (...args: unknown[]) => void)(data, ...rest);
  }) as typeof socket.send;
}

/** graphql-ws' onSubscribe: the operation's execution arguments, or the errors it ends with alone. */
async function subscribeOperation(opts: {
  ctx: Context<ConnectionInitMessage['payload'], Extra>;
  id: string;
  payload: SubscribePayload;
  app: App;
  limits: WsLimits;
  operationsOf: (socket: WebSocket) => Map<string, AbortController>;
}): Promise<ExecutionArgs | readonly GraphQLError[]> {
  const { ctx, id, payload, app, limits, operationsOf } = opts;
  // The operation being set up is already reserved in ctx.subscriptions.
  if (Object.keys(ctx.subscriptions).length > limits.maxSubscriptionsPerConnection) {
    return [
      new GraphQLError(`at most ${limits.maxSubscriptionsPerConnection} operations per connection`, {
        extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' },
      }),
    ];
  }
  // No Fetch request exists over a socket (docs/stack.md): yoga gets the upgrade request instead.
  // graphql-ws' context by its fields, not spread: on Node 20's V8 the spread gave each
  // operation's context a hidden class of its own (~500 bytes a live subscriber).
  const { schema, execute, subscribe, contextFactory, parse, validate } = app.getEnveloped({
    connectionInitReceived: ctx.connectionInitReceived,
    acknowledged: ctx.acknowledged,
    subscriptions: ctx.subscriptions,
    extra: ctx.extra,
    connectionParams: ctx.connectionParams,
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
  // The parse cache hands every subscriber of a query the same document: its text stands in
  // for the copy each message brought, which graphql-ws keeps for the operation's life.
  if (document.loc?.source.body === payload.query) (payload as { query: string }).query = document.loc.source.body;
  // graphql-armor's limits (aliases, depth, directives) throw from inside validation rather
  // than return their error: caught here, the operation ends alone with it (thrown out of
  // onSubscribe, graphql-ws would close the socket with 4500 and every other operation on it).
  let errors: readonly GraphQLError[];
  try {
    errors = validate(schema, document);
  } catch (err) {
    return refused(err);
  }
  if (errors.length > 0) return errors.map((e: GraphQLError) => refused(e)[0]);
  // The token is checked again for each subscription: one revoked since the connection opened is refused.
  let contextValue: Awaited<ReturnType<typeof contextFactory>>;
  try {
    contextValue = await contextFactory();
  } catch (err) {
    if (err instanceof Error && err.name === 'GraphQLError') return refused(err);
    throw err;
  }
  // A socket has no Fetch request whose signal says the client went away: a query or
  // mutation gets its own, aborted when the client completes it early or the socket closes,
  // so its store reads and upstream calls stop as an abandoned HTTP request's do
  // (use-limits.ts, whose execute hook is the only reader). A subscription has none: nothing
  // listens to it there, and thousands of live subscribers each held one (~600 bytes).
  if (getOperationAST(document, payload.operationName)?.operation !== 'subscription') {
    const gone = new AbortController();
    operationsOf(ctx.extra.socket).set(id, gone);
    if (ctx.extra.socket.readyState >= ctx.extra.socket.CLOSING) gone.abort(clientClosed());
    (contextValue as { clientGone?: AbortSignal }).clientGone = gone.signal;
  }
  return {
    schema,
    document,
    operationName: payload.operationName,
    variableValues: payload.variables,
    contextValue,
    rootValue: { execute, subscribe },
  };
}

/**
 * Automatic persisted queries over graphql-ws. graphql-ws closes the socket (4400) on a subscribe
 * message without query text, before any hook of ours runs: such a message is answered here,
 * ahead of it. A hash the store knows gets its text filled in; one it does not know ends that
 * operation alone with PERSISTED_QUERY_NOT_FOUND (an `error` message for its id, as over HTTP the
 * client then sends the text with the hash); a text sent with its hash registers it.
 */
function answerPersistedQueries(socket: WebSocket, store: ByteBoundedApqStore): void {
  const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
  socket.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event !== 'message') return emit(event, ...args);
    const text = String(args[0]);
    // Only subscribe messages carrying a persistedQuery extension, or no query at all, are read here.
    if (!text.includes('"subscribe"') || (text.includes('"query"') && !text.includes('"persistedQuery"'))) return emit(event, ...args);
    let message: { id?: unknown; type?: unknown; payload?: { query?: unknown; extensions?: { persistedQuery?: { sha256Hash?: unknown } } } };
    try {
      message = JSON.parse(text);
    } catch {
      return emit(event, ...args);
    }
    if (message?.type !== 'subscribe' || typeof message.id !== 'string' || typeof message.payload !== 'object' || message.payload === null)
      return emit(event, ...args);
    const payload = message.payload;
    const hash = payload.extensions?.persistedQuery?.sha256Hash;
    // Some clients send an empty text with the hash instead of none: the same as none.
    if (typeof payload.query === 'string' && (payload.query !== '' || typeof hash !== 'string')) {
      if (typeof hash === 'string' && createHash('sha256').update(payload.query).digest('hex') === hash) store.set(hash, payload.query);
      return emit(event, ...args);
    }
    const known = typeof hash === 'string' ? store.get(hash) : undefined;
    if (known !== undefined) return emit(event, JSON.stringify({ ...message, payload: { ...payload, query: known } }), false);
    const error =
      typeof hash === 'string'
        ? { message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }
        : { message: 'a subscribe message needs a query (or a persistedQuery hash this server knows)', extensions: { code: 'BAD_REQUEST' } };
    socket.send(JSON.stringify({ id: message.id, type: 'error', payload: [error] }));
    return true;
  }) as typeof socket.emit;
}
