// Limits on every request, before any work is done: graphql-armor (depth, aliases, tokens,
// directives, no field suggestions), what the answer can hold (query-cost.ts, from literals and
// variables; counted again while the answer is made, CostMeter), the body size (every content
// type, counted while reading, so a huge, chunked or endless body is cut off early), inputs no
// API call can mean (NUL bytes, absurdly nested lists), schema introspection on or off, an
// execution time-out that cancels the work it stops waiting for, and the size of the answer. Every refusal carries extensions.code; nothing here answers
// with a 5xx. HTTP, SSE and graphql-ws run through the same hooks.
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import {
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  GraphQLError,
  isListType,
  isObjectType,
  Kind,
  NoSchemaIntrospectionCustomRule,
  type FieldNode,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
  type ASTVisitor,
  type DocumentNode,
  type ExecutionResult,
  type ParseOptions,
  type Source,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { RequestLimits } from '../../config/index.js';
import { withCode } from './use-error-codes.js';
import { queryCost, type CostDefaults, type KnownShapes, type QueryCost } from './query-cost.js';
import { OperationScope, type RequestScope } from '../../domain/request-scope.js';

/** graphql-armor's refusals, told apart by their messages, and what they are called here. */
const ARMOR_CODES: [RegExp, string][] = [
  [/depth limit/i, 'QUERY_TOO_DEEP'],
  [/aliases limit/i, 'TOO_MANY_ALIASES'],
  [/token limit/i, 'TOO_MANY_TOKENS'],
  [/directives limit/i, 'TOO_MANY_DIRECTIVES'],
  [/introspection has been disabled/i, 'INTROSPECTION_DISABLED'],
];

/**
 * How long a field may wait on a platform within one operation: a fifth of the execution time-out
 * (at most 5 s) is kept for the rest of the answer, so a slow platform fails its own field with
 * UPSTREAM_TIMEOUT and never turns the whole answer into EXECUTION_TIMEOUT.
 */
export function fieldBudgetMs(executionTimeoutMs: number): number {
  return executionTimeoutMs - Math.min(5_000, executionTimeoutMs / 5);
}

export function requestError(message: string, code: string, status: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code, http: { status } } });
}

const CONTENT_LENGTH = /^\d+$/;

/**
 * Reads a body up to `max` bytes; one byte more and it stops reading and refuses the request. A
 * body with a declared length (already checked against `max`) is read whole: Node's HTTP parser
 * delivers exactly that many bytes, never more, and reading it as text skips the web stream.
 * Not itself async: a request with a declared length (nearly all) costs the body's own promise only.
 */
function readCapped(request: Request, max: number): Promise<string> {
  const declared = request.headers.get('content-length');
  if (declared !== null && CONTENT_LENGTH.test(declared) && Number(declared) <= max && !request.headers.has('transfer-encoding')) {
    return request.text();
  }
  return readStreamCapped(request, max);
}

async function readStreamCapped(request: Request, max: number): Promise<string> {
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw requestError(`the request body is larger than ${max} bytes`, 'PAYLOAD_TOO_LARGE', 413);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** graphql-js suggests enum values and types by name ("Did you mean ...?"): that maps the schema for a stranger. */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

/** The error with the code this server gives it (graphql-armor's refusals by name, parse errors, ...). */
export function recoded(error: GraphQLError): GraphQLError {
  const armor = ARMOR_CODES.find(([pattern]) => pattern.test(error.message));
  const current = error.extensions?.code;
  const code = armor?.[1] ?? (current ? String(current) : /^Syntax Error/.test(error.message) ? 'GRAPHQL_PARSE_FAILED' : 'BAD_REQUEST');
  // graphql-armor reports its token limit as a "Syntax Error": the document was fine, it was too big.
  const message = error.message.replace(SUGGESTION, '').replace(armor ? /^Syntax Error:\s*/ : /$^/, '');
  if (code === current && message === error.message) return error;
  return withCode(error, code, message);
}

function coded(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => recoded(e as GraphQLError)) };
}

const clientGoneError = () => new GraphQLError('the client went away', { extensions: { code: 'CLIENT_CLOSED_REQUEST' } });

function isPromise(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Deeper list or object nesting than any argument of this API takes is an attack, not a question. */
export const MAX_INPUT_NESTING = 32;

function badInput(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_INPUT' } });
}

/** Literals in the document: no NUL byte in a string, no list or object nested deeper than MAX_INPUT_NESTING. */
function edgeInputRule(context: ValidationContext): ASTVisitor {
  let nesting = 0;
  let reported = false;
  const enter = () => {
    nesting++;
    if (nesting > MAX_INPUT_NESTING && !reported) {
      reported = true;
      context.reportError(badInput(`an argument nests lists or objects deeper than ${MAX_INPUT_NESTING} levels`));
    }
  };
  const leave = () => {
    nesting--;
  };
  return {
    ListValue: { enter, leave },
    ObjectValue: { enter, leave },
    StringValue(node) {
      if (node.value.includes('\u0000')) context.reportError(badInput('a string argument contains a NUL byte'));
    },
  };
}

/** Bracket nesting a document may have: selections (MAX_QUERY_DEPTH) plus argument literals, with room to spare. */
const MAX_DOCUMENT_NESTING = 2 * MAX_INPUT_NESTING + 32;

/**
 * graphql-js parses recursively: a document of 3,000 nested brackets overflows the stack before
 * any limit looks at it. This scan (strings and comments skipped) refuses it first.
 */
export function documentNestingProblem(source: string): string | null {
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i);
    if (c === 0x23 /* # */) {
      while (i < source.length && source[i] !== '\n' && source[i] !== '\r') i++;
    } else if (c === 0x22 /* " */) {
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3);
        i = end < 0 ? source.length : end + 2;
      } else {
        for (i++; i < source.length && source[i] !== '"' && source[i] !== '\n'; i++) if (source[i] === '\\') i++;
      }
    } else if (c === 0x5b || c === 0x7b || c === 0x28 /* [ { ( */) {
      if (++depth > MAX_DOCUMENT_NESTING) return `the document nests brackets deeper than ${MAX_DOCUMENT_NESTING} levels`;
    } else if (c === 0x5d || c === 0x7d || c === 0x29) {
      depth--;
    }
  }
  return null;
}

/** The same for variables (walked without recursion: a 3,000-deep list must not exhaust the stack). */
export function edgeInputProblem(variables: unknown): string | null {
  if (typeof variables !== 'object' || variables === null) return null;
  const stack: [unknown, number][] = [[variables, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return 'a variable contains a NUL byte';
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_INPUT_NESTING) return `a variable nests lists or objects deeper than ${MAX_INPUT_NESTING} levels`;
    for (const [key, child] of Object.entries(value)) {
      if (key.includes('\u0000')) return 'a variable contains a NUL byte';
      stack.push([child, depth + 1]);
    }
  }
  return null;
}

/** Answers bounded by a walk up to this many bytes (see answerBytes). */
const SMALL_ANSWER_BYTES = 16 * 1024;

/**
 * The answer's UTF-8 bytes as far as the limit needs them (0 when surely under it). An answer
 * without errors is serialised here, once: yoga's HTTP answer calls a result's own `stringify`,
 * which hands back this text (a dashboard's 54 MB answer was walked to bound its size, then
 * serialised again: 0.2 s of a cold answer's last 1.5 s). An answer with errors is bounded by a
 * walk, as yoga serialises a copy of it without the errors' internal fields. So is a small one
 * (bound at most SMALL_ANSWER_BYTES): a walk that stops at that bound costs less than a
 * serialisation and its hand-over, and yoga still serialises it once (graphql-jit's `stringify`
 * is JSON.stringify: use-query-jit.ts compiles without its custom serialiser, so a plugin's
 * changed copy that carries it is serialised whole).
 */
export function answerBytes(result: ExecutionResult, limit: number): number {
  const withInternals = result.errors?.length || (result.extensions as { http?: unknown } | undefined)?.http;
  if (withInternals || !Object.isExtensible(result)) {
    if (jsonBytesAtMost(result, limit) <= limit) return 0;
    return Buffer.byteLength(JSON.stringify(result));
  }
  if (SMALL_ANSWER_BYTES <= limit && jsonBytesAtMost(result, SMALL_ANSWER_BYTES) <= SMALL_ANSWER_BYTES) return 0;
  const text = JSON.stringify(result);
  // A UTF-16 unit is one to three UTF-8 bytes: the exact count only where the bounds straddle the limit.
  const bytes = text.length * 3 <= limit ? 0 : Buffer.byteLength(text);
  if (bytes > limit) return bytes;
  const { data, errors, extensions } = result;
  // Assigned as graphql-jit assigns its own, so a plugin's `{ ...result }` copy carries it too; any
  // result that is not this one's data, errors and extensions alone is serialised anew.
  (result as { stringify?: (value: ExecutionResult) => string }).stringify = (value) =>
    value.data === data && value.errors === errors && value.extensions === extensions && onlyAnswerKeys(value) ? text : JSON.stringify(value);
  return bytes;
}

const ANSWER_KEYS: ReadonlySet<string> = new Set(['data', 'errors', 'extensions', 'stringify']);

function onlyAnswerKeys(value: object): boolean {
  for (const key of Object.keys(value)) if (!ANSWER_KEYS.has(key)) return false;
  return true;
}

/** Bytes a JSON number takes at most ("-1.2345678901234567e-308"). */
const MAX_NUMBER_BYTES = 24;
const MAX_WALK_DEPTH = 1000;

/**
 * An upper bound of the UTF-8 bytes of JSON.stringify(value), without building the string: a
 * UTF-16 unit of a string takes at most 6 bytes (a \u escape), a number at most 24. Stops and
 * answers Infinity once the bound passes `limit`; the caller then measures exactly.
 */
export function jsonBytesAtMost(value: unknown, limit: number, depth = 0): number {
  if (typeof value === 'string') return 2 + 6 * value.length;
  if (typeof value === 'number') return MAX_NUMBER_BYTES;
  if (typeof value === 'boolean') return 5;
  if (value === null || typeof value !== 'object') return 4;
  // Deeper than any answer nests (or a cycle, which JSON.stringify refuses): measured exactly.
  if (depth > MAX_WALK_DEPTH) return Number.POSITIVE_INFINITY;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return jsonBytesAtMost(toJSON.call(value), limit, depth + 1);
  let bytes = 2;
  if (Array.isArray(value)) {
    bytes += value.length;
    for (let i = 0; i < value.length; i++) {
      bytes += jsonBytesAtMost(value[i], limit, depth + 1);
      if (bytes > limit) return Number.POSITIVE_INFINITY;
    }
    return bytes;
  }
  // JSON.stringify's keys: own and enumerable (an executor's result objects have no prototype).
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    bytes += 4 + 6 * key.length + jsonBytesAtMost((value as Record<string, unknown>)[key], limit, depth + 1);
    if (bytes > limit) return Number.POSITIVE_INFINITY;
  }
  return bytes;
}

function parseForm(text: string): Record<string, unknown> {
  const form = new URLSearchParams(text);
  const body: Record<string, unknown> = {};
  for (const key of ['query', 'operationName']) if (form.has(key)) body[key] = form.get(key);
  for (const key of ['variables', 'extensions']) {
    const raw = form.get(key);
    if (raw === null || raw === '') continue;
    try {
      body[key] = JSON.parse(raw);
    } catch {
      throw requestError(`the "${key}" field is not valid JSON`, 'BAD_REQUEST', 400);
    }
  }
  return body;
}

function parseJsonBody(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw requestError('the request body is not valid JSON', 'BAD_REQUEST', 400);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw requestError('the request body must be a JSON object with "query"', 'BAD_REQUEST', 400);
  }
  return body as Record<string, unknown>;
}

const parseGraphqlBody = (text: string): Record<string, unknown> => ({ query: text });

/** The media types a POST may carry and how each becomes GraphQL parameters; anything else is 415. */
function bodyParser(contentType: string): ((text: string) => Record<string, unknown>) | null {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return parseJsonBody;
  if (type === 'application/graphql') return parseGraphqlBody;
  if (type === 'application/x-www-form-urlencoded') return parseForm;
  return null;
}

/** The parse function, after a look at the document's bracket nesting; one wrapper per parse function. */
type ParseFn = (source: string | Source, options?: ParseOptions) => DocumentNode;
const nestingChecked = new WeakMap<ParseFn, ParseFn>();

function nestingCheckedParse(parseFn: ParseFn): ParseFn {
  let checked = nestingChecked.get(parseFn);
  if (!checked) {
    checked = (source, options) => {
      const problem = documentNestingProblem(typeof source === 'string' ? source : source.body);
      if (problem) throw badInput(problem);
      return parseFn(source, options);
    };
    nestingChecked.set(parseFn, checked);
  }
  return checked;
}

const suggests = (e: GraphQLError) => e.message.includes('Did you mean');

function withoutSuggestions(e: GraphQLError): GraphQLError {
  const { nodes, source, positions, path, originalError, extensions } = e;
  return new GraphQLError(e.message.replace(SUGGESTION, ''), { nodes, source, positions, path, originalError, extensions });
}

/**
 * An input refused at the edge is the answer; type errors about the same literal are noise.
 * graphql-js's suggestions ("Did you mean ...?") map the schema for a stranger: cut here, and
 * again from every error that leaves (recoded).
 */
function keepEdgeErrors({ result, setResult }: { result: readonly Error[]; setResult: (errors: GraphQLError[]) => void }): void {
  if (result.length === 0) return;
  let errors = result as readonly GraphQLError[];
  const edge = errors.filter((e) => e.extensions?.code === 'BAD_INPUT');
  if (edge.length > 0 && edge.length < errors.length) errors = edge;
  if (errors.some(suggests)) errors = errors.map((e) => (suggests(e) ? withoutSuggestions(e) : e));
  if (errors !== result) setResult(errors as GraphQLError[]);
}

/** Costs kept per document: variables sets up to this many, each at most this long as JSON. */
const MAX_COSTS_PER_DOCUMENT = 64;
const MAX_COST_KEY_CHARS = 1024;

/** What the store knows of the jobs' sizes, and a number that changes when that knowledge does. */
export type KnownShapesNow = () => KnownShapes & { readonly version: number };

/** Where an operation's meter sits in its context. */
const METER = Symbol('cost meter');

/**
 * The values an answer really holds, counted as its lists are resolved: a list of n elements counts
 * n, and each element the fields selected of it (through its single objects, down to its next
 * lists, which count themselves), as the estimate counts them. Past the limit the operation is
 * abandoned (its store reads and upstream calls stop) and its answer is the refusal alone.
 */
class CostMeter {
  actual = 0;
  stopped: GraphQLError | null = null;
  constructor(
    readonly estimated: number,
    readonly limit: number,
    private readonly scope: OperationScope,
  ) {}

  add(value: unknown, info: GraphQLResolveInfo): void {
    if (!Array.isArray(value) || this.stopped) return;
    this.actual += value.length * (1 + elementWidth(info));
    if (this.actual > this.limit) {
      this.stopped = new GraphQLError(
        `the answer held more than ${this.limit.toLocaleString('en-US')} values (MAX_QUERY_COST) while it was made, ` +
          `${this.actual.toLocaleString('en-US')} at ${pathText(info.path)} (estimated ${this.estimated.toLocaleString('en-US')}): ask for fewer items (first) or points (maxPoints)`,
        { extensions: { code: 'QUERY_TOO_COSTLY', cost: this.actual, maxCost: this.limit } },
      );
      this.scope.abandon(this.stopped);
    }
  }

  report(): { estimated: number; actual: number; limit: number } {
    return { estimated: this.estimated, actual: this.actual, limit: this.limit };
  }
}

function pathText(path: GraphQLResolveInfo['path'] | undefined): string {
  const parts: (string | number)[] = [];
  for (let p = path; p; p = p.prev) parts.unshift(p.key);
  return parts.join('.');
}

/** Per list field of the document: the values one element holds down to its next lists. */
const widths = new WeakMap<FieldNode, number>();

function elementWidth(info: GraphQLResolveInfo): number {
  const node = info.fieldNodes[0]!;
  let width = widths.get(node);
  if (width === undefined) {
    width = 0;
    for (const f of info.fieldNodes) if (f.selectionSet) width += selectionWidth(f.selectionSet, getNamedType(info.returnType).name, info, 0);
    widths.set(node, width);
  }
  return width;
}

function selectionWidth(set: SelectionSetNode, typeName: string, info: GraphQLResolveInfo, depth: number): number {
  if (depth > 32) return 0;
  const type = info.schema.getType(typeName);
  const fields = isObjectType(type) ? type.getFields() : null;
  let width = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      width++;
      const def = fields?.[sel.name.value];
      if (def && sel.selectionSet && !isListType(getNullableType(def.type)))
        width += selectionWidth(sel.selectionSet, getNamedType(def.type).name, info, depth + 1);
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      width += selectionWidth(sel.selectionSet, sel.typeCondition?.name.value ?? typeName, info, depth + 1);
    } else {
      const frag = info.fragments[sel.name.value];
      if (frag) width += selectionWidth(frag.selectionSet, frag.typeCondition.name.value, info, depth + 1);
    }
  }
  return width;
}

const metered = new WeakSet<GraphQLSchema>();

/** Every list field's resolver reports what it resolved to the operation's meter (once per schema; a context without one passes through). */
function meterLists(schema: GraphQLSchema): void {
  if (metered.has(schema)) return;
  metered.add(schema);
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (!isListType(getNullableType(field.type))) continue;
      const resolve = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, context, info) => {
        const out = resolve(source, args, context, info);
        const meter = (context as { [METER]?: CostMeter } | null)?.[METER];
        if (!meter) return out;
        if (isPromise(out)) {
          return Promise.resolve(out).then((value) => {
            meter.add(value, info);
            if (meter.stopped) throw meter.stopped;
            return value;
          });
        }
        meter.add(out, info);
        if (meter.stopped) throw meter.stopped;
        return out;
      };
    }
  }
}

/** The answer with the cost beside it (extensions.cost), or the meter's refusal alone when it stopped the operation. */
function withCost(result: ExecutionResult, meter: CostMeter): ExecutionResult {
  const cost = meter.report();
  if (meter.stopped) return { data: null, errors: [meter.stopped], extensions: { cost } };
  return { ...result, extensions: { ...result.extensions, cost } };
}

export function useLimits(limits: RequestLimits, defaults: CostDefaults, knownShapes: KnownShapesNow): Plugin[] {
  // graphql-armor's rules, made once: its plugins made each rule anew for every request, so no
  // two requests validated with the same rules and a validation cache could only compare them by
  // name (use-validation-cache.ts). What an answer can hold is counted by query-cost.ts, with
  // variables (armor's cost limit sees literals only).
  const rules: ValidationRule[] = [
    maxDepthRule({ n: limits.maxDepth, ignoreIntrospection: true }),
    // armor lets `__typename` aliases through uncounted by default: 60 of them passed a limit of 30. Each costs a field in the answer like any other.
    maxAliasesRule({ n: limits.maxAliases, allowList: [] }),
    maxDirectivesRule({ n: limits.maxDirectives }),
    edgeInputRule,
    ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule]),
  ];
  /**
   * The cost of an operation with its variables, counted once per parsed document (yoga's parser
   * cache hands the same document back) and set of small variables: a dashboard repeats them.
   */
  const costs = new WeakMap<object, WeakMap<object, Map<string, { version: number; cost: QueryCost }>>>();
  const costOf = (args: { schema: never; document: never; operationName?: string | null; variableValues?: unknown }): QueryCost => {
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
  /** One request parser per media type and one parse wrapper per parse function: no closures per request. */
  const requestParsers = new Map<(text: string) => Record<string, unknown>, (request: Request) => Promise<Record<string, never>>>();
  const requestParserFor = (parse: (text: string) => Record<string, unknown>) => {
    let parser = requestParsers.get(parse);
    if (!parser) {
      parser = (request: Request) => readCapped(request, limits.maxBodyBytes).then(parse) as Promise<Record<string, never>>;
      requestParsers.set(parse, parser);
    }
    return parser;
  };
  /** The answer's size, bounded once it is made (one hook object for every operation). */
  const answerSizeLimit = {
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
  /** Refusal of an operation before it runs (HTTP, SSE and graphql-ws alike), or the cost it may run with. */
  const refusal = (args: { schema: never; document: never; operationName?: string | null; variableValues?: unknown }): GraphQLError | QueryCost => {
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
