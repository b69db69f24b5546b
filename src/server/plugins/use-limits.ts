// Limits on every request, before any work is done, as yoga plugins: graphql-armor (depth,
// aliases, tokens, directives), what the answer can hold (query-cost.ts, from literals and
// variables; counted again while the answer is made, cost-meter.ts), the body size (every content
// type, counted while reading: request-body.ts), inputs no API call can mean (edge-input.ts),
// schema introspection on or off, an execution time-out that cancels the work it stops waiting
// for, and the size of the answer (answer-size.ts). Every refusal carries extensions.code; nothing
// here answers with a 5xx. HTTP, SSE and graphql-ws run through the same hooks.
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import { GraphQLError, NoSchemaIntrospectionCustomRule, type ExecutionResult, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { RequestLimits } from '../../config/index.js';
import { OperationScope, type RequestScope } from '../../domain/request-scope.js';
import { answerBytes } from './answer-size.js';
import { CostMeter, isPromise, METER, meterLists, withCost } from './cost-meter.js';
import { badInput, coded, edgeInputProblem, edgeInputRule, keepEdgeErrors, nestingCheckedParse } from './edge-input.js';
import { queryCost, type CostDefaults, type KnownShapes, type QueryCost } from './query-cost.js';
import { bodyParser, CONTENT_LENGTH, readCapped, requestError } from './request-body.js';

/**
 * How long a field may wait on a platform within one operation: a fifth of the execution time-out
 * (at most 5 s) is kept for the rest of the answer, so a slow platform fails its own field with
 * UPSTREAM_TIMEOUT and never turns the whole answer into EXECUTION_TIMEOUT.
 */
export function fieldBudgetMs(executionTimeoutMs: number): number {
  return executionTimeoutMs - Math.min(5_000, executionTimeoutMs / 5);
}

const clientGoneError = () => new GraphQLError('the client went away', { extensions: { code: 'CLIENT_CLOSED_REQUEST' } });

/** Costs kept per document: variables sets up to this many, each at most this long as JSON. */
const MAX_COSTS_PER_DOCUMENT = 64;
const MAX_COST_KEY_CHARS = 1024;

/** What the store knows of the jobs' sizes, and a number that changes when that knowledge does. */
export type KnownShapesNow = () => KnownShapes & { readonly version: number };

export function useLimits(limits: RequestLimits, defaults: CostDefaults, knownShapes: KnownShapesNow): Plugin[] {
  const rules = limitRules(limits);
  const costOf = costCounter({ defaults, knownShapes });
  const requestParserFor = requestParserCache(limits);
  const answerSizeLimit = answerSizeLimitHooks(limits);
  const refusal = refusalCheck({ limits, costOf });
  const own: Plugin = {
    onRequestParse({ request, url, setRequestParser }) {
      if (request.method === 'GET') {
        // Yoga would parse these itself and report broken JSON as an internal error.
        for (const param of ['variables', 'extensions']) {
          const raw = url.searchParams.get(param);
          if (raw === null) continue;
          try {
            JSON.parse(raw);
          } catch {
            throw requestError(`the "${param}" parameter is not valid JSON`, 'BAD_REQUEST', 400);
          }
        }
      }
      if (request.method !== 'POST') return;
      const length = request.headers.get('content-length');
      // What yoga's own body limit checked (it is off: every accepted body is read through the cap below).
      if (length !== null && !CONTENT_LENGTH.test(length)) throw requestError('Content-Length header is invalid.', 'BAD_REQUEST', 400);
      const declared = Number(length ?? NaN);
      if (declared > limits.maxBodyBytes) throw requestError(`the request body is larger than ${limits.maxBodyBytes} bytes`, 'PAYLOAD_TOO_LARGE', 413);
      const contentType = request.headers.get('content-type') ?? '';
      const parse = bodyParser(contentType);
      if (!parse) {
        throw requestError(
          `unsupported content type "${contentType.slice(0, 100)}": send application/json (or application/graphql, application/x-www-form-urlencoded)`,
          'UNSUPPORTED_MEDIA_TYPE',
          415,
        );
      }
      // Every accepted body, with or without a length, chunked or not, is read through the cap.
      setRequestParser(requestParserFor(parse));
    },
    onParse({ parseFn, setParseFn }) {
      setParseFn(nestingCheckedParse(parseFn));
    },
    onValidate({ addValidationRule }) {
      for (const rule of rules) addValidationRule(rule);
      return keepEdgeErrors;
    },
    onSchemaChange({ schema }) {
      meterLists(schema);
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const refused = refusal(args as never);
      if (refused instanceof GraphQLError) setResultAndStopExecution({ errors: [refused] });
    },
    onExecute({ args, executeFn, setExecuteFn, setResultAndStopExecution }) {
      const refused = refusal(args as never);
      if (refused instanceof GraphQLError) {
        const estimated = Number(refused.extensions.cost ?? 0);
        setResultAndStopExecution({ data: null, errors: [refused], extensions: { cost: { estimated, actual: 0, limit: limits.maxCost } } });
        return;
      }
      // The operation's store reads for a scope that is abandoned when nobody waits for it any
      // more: the time-out below, or the client gone (HTTP: the Node response closing before it
      // finished; graphql-ws: the operation's own signal, server/ws.ts). Its store reads are then
      // cancelled (store/db.ts) and its upstream calls stop (providers/provider-set.ts); nothing is
      // made for an operation that reads nothing (request-scope.ts).
      const context = args.contextValue as {
        request?: Request;
        res?: import('node:http').ServerResponse;
        clientGone?: AbortSignal;
        access?: { name: string } | null;
        store?: { enter(scope: RequestScope): void };
      };
      const scope = new OperationScope(context.access?.name ?? null, context, clientGoneError);
      scope.deadline = Date.now() + fieldBudgetMs(limits.executionTimeoutMs);
      context.store?.enter(scope);
      const meter = new CostMeter(refused.values, limits.maxCost, scope);
      (context as { [METER]?: CostMeter })[METER] = meter;
      setExecuteFn((a) => {
        const started = performance.now();
        let out: ReturnType<typeof executeFn>;
        try {
          out = executeFn(a);
        } catch (err) {
          scope.end();
          throw err;
        }
        // Answered without waiting (every resolver answered from memory): nothing to time out.
        if (!isPromise(out)) {
          scope.end();
          return withCost(out as ExecutionResult, meter) as never;
        }
        return new Promise<ExecutionResult>((resolve, reject) => {
          const timer = setTimeout(
            () => {
              const error = new GraphQLError(`the operation took longer than ${limits.executionTimeoutMs} ms`, { extensions: { code: 'EXECUTION_TIMEOUT' } });
              scope.abandon(error);
              scope.end();
              resolve({ data: null, errors: [error], extensions: { cost: meter.report() } });
            },
            // The time-out counts from the start of execution, its synchronous part included.
            Math.max(0, limits.executionTimeoutMs - (performance.now() - started)),
          );
          out.then(
            (result) => {
              clearTimeout(timer);
              scope.end();
              resolve(withCost(result as ExecutionResult, meter));
            },
            (err) => {
              clearTimeout(timer);
              scope.end();
              reject(err);
            },
          );
        }) as never;
      });
      return answerSizeLimit;
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result)) setResult(result.map(coded));
      else if (!(Symbol.asyncIterator in Object(result))) {
        const out = coded(result as ExecutionResult);
        if (out !== result) setResult(out);
      }
    },
  };
  return [maxTokensPlugin({ n: limits.maxTokens }) as Plugin, own];
}

/** The validation rules every operation is checked with. */
function limitRules(limits: RequestLimits): ValidationRule[] {
  // graphql-armor's rules, made once: its plugins made each rule anew for every request, so no
  // two requests validated with the same rules and a validation cache could only compare them by
  // name (use-validation-cache.ts). What an answer can hold is counted by query-cost.ts, with
  // variables (armor's cost limit sees literals only).
  return [
    maxDepthRule({ n: limits.maxDepth, ignoreIntrospection: true }),
    // armor lets `__typename` aliases through uncounted by default: 60 of them passed a limit of 30. Each costs a field in the answer like any other.
    maxAliasesRule({ n: limits.maxAliases, allowList: [] }),
    maxDirectivesRule({ n: limits.maxDirectives }),
    edgeInputRule,
    ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule]),
  ];
}

/** What the limits read of an operation about to run (a subscription's or an execution's arguments). */
type OperationArgs = { schema: never; document: never; operationName?: string | null; variableValues?: unknown };

/**
 * The cost of an operation with its variables, counted once per parsed document (yoga's parser
 * cache hands the same document back) and set of small variables: a dashboard repeats them.
 */
function costCounter(ctx: { defaults: CostDefaults; knownShapes: KnownShapesNow }): (args: OperationArgs) => QueryCost {
  const { defaults, knownShapes } = ctx;
  const costs = new WeakMap<object, WeakMap<object, Map<string, { version: number; cost: QueryCost }>>>();
  return (args: OperationArgs): QueryCost => {
    const known = knownShapes();
    const variables = args.variableValues as Record<string, unknown> | null | undefined;
    const vars = variables ? JSON.stringify(variables) : '';
    if (vars.length > MAX_COST_KEY_CHARS) return queryCost(args.schema, args.document, args.operationName, variables, defaults, known);
    let bySchema = costs.get(args.schema);
    if (!bySchema) costs.set(args.schema, (bySchema = new WeakMap()));
    let byDocument = bySchema.get(args.document);
    if (!byDocument) bySchema.set(args.document, (byDocument = new Map()));
    const key = `${args.operationName ?? ''}\u0000${vars}`;
    const kept = byDocument.get(key);
    // Counted again once the store knows more of the jobs (a topology learnt since).
    if (kept && kept.version === known.version) return kept.cost;
    const cost = queryCost(args.schema, args.document, args.operationName, variables, defaults, known);
    if (kept || byDocument.size < MAX_COSTS_PER_DOCUMENT) byDocument.set(key, { version: known.version, cost });
    return cost;
  };
}

/** One request parser per media type and one parse wrapper per parse function: no closures per request. */
function requestParserCache(limits: RequestLimits): (parse: (text: string) => Record<string, unknown>) => (request: Request) => Promise<Record<string, never>> {
  const requestParsers = new Map<(text: string) => Record<string, unknown>, (request: Request) => Promise<Record<string, never>>>();
  return (parse: (text: string) => Record<string, unknown>) => {
    let parser = requestParsers.get(parse);
    if (!parser) {
      parser = (request: Request) => readCapped(request, limits.maxBodyBytes).then(parse) as Promise<Record<string, never>>;
      requestParsers.set(parse, parser);
    }
    return parser;
  };
}

/** The answer's size, bounded once it is made (one hook object for every operation). */
function answerSizeLimitHooks(limits: RequestLimits) {
  return {
    onExecuteDone({ result, setResult }: { result: unknown; setResult: (result: ExecutionResult) => void }) {
      if (Symbol.asyncIterator in Object(result)) return;
      // The cost bounds the number of values; this bounds their bytes (long strings, names).
      const bytes = answerBytes(result as ExecutionResult, limits.maxResponseBytes);
      if (bytes > limits.maxResponseBytes) {
        setResult({
          data: null,
          errors: [
            new GraphQLError(
              `the answer is ${bytes} bytes, more than the ${limits.maxResponseBytes} allowed (MAX_RESPONSE_BYTES): ask for fewer items or points`,
              {
                extensions: { code: 'RESPONSE_TOO_LARGE' },
              },
            ),
          ],
        });
      }
    },
  };
}

/** Refusal of an operation before it runs (HTTP, SSE and graphql-ws alike), or the cost it may run with. */
function refusalCheck(ctx: { limits: RequestLimits; costOf: (args: OperationArgs) => QueryCost }): (args: OperationArgs) => GraphQLError | QueryCost {
  const { limits, costOf } = ctx;
  return (args: OperationArgs): GraphQLError | QueryCost => {
    const problem = edgeInputProblem(args.variableValues);
    if (problem) return badInput(problem);
    const cost = costOf(args);
    if (cost.values > limits.maxCost) {
      return new GraphQLError(
        `the answer could hold ${cost.values.toLocaleString('en-US')} values, more than the ${limits.maxCost.toLocaleString('en-US')} allowed (MAX_QUERY_COST); ` +
          `the costliest part is ${cost.costliest}: ask for fewer items (first) or points (maxPoints)`,
        { extensions: { code: 'QUERY_TOO_COSTLY', cost: cost.values, maxCost: limits.maxCost } },
      );
    }
    return cost;
  };
}
