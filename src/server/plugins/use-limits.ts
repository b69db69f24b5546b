// Limits on every request, before any work is done: graphql-armor (depth, aliases, tokens,
// directives, static cost, no field suggestions), the body size (counted while reading, so a huge
// or endless body is cut off early), schema introspection on or off, and an execution time-out.
// Every refusal carries extensions.code; nothing here answers with a 5xx.
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, NoSchemaIntrospectionCustomRule, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { RequestLimits } from '../../config/security.js';
import { withCode } from './use-error-codes.js';

/** graphql-armor's refusals, told apart by their messages, and what they are called here. */
const ARMOR_CODES: [RegExp, string][] = [
  [/depth limit/i, 'QUERY_TOO_DEEP'],
  [/aliases limit/i, 'TOO_MANY_ALIASES'],
  [/token limit/i, 'TOO_MANY_TOKENS'],
  [/directives limit/i, 'TOO_MANY_DIRECTIVES'],
  [/cost limit/i, 'QUERY_TOO_COSTLY'],
  [/introspection has been disabled/i, 'INTROSPECTION_DISABLED'],
];

function requestError(message: string, code: string, status: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code, http: { status } } });
}

/** Reads a body up to `max` bytes; one byte more and it stops reading and refuses the request. */
async function readCapped(request: Request, max: number): Promise<string> {
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

function recoded(error: GraphQLError): GraphQLError {
  const armor = ARMOR_CODES.find(([pattern]) => pattern.test(error.message));
  const current = error.extensions?.code;
  const code = armor?.[1] ?? (current ? String(current) : /^Syntax Error/.test(error.message) ? 'GRAPHQL_PARSE_FAILED' : 'BAD_REQUEST');
  const message = error.message.replace(SUGGESTION, '');
  if (code === current && message === error.message) return error;
  return withCode(error, code, message);
}

function coded(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => recoded(e as GraphQLError)) };
}

export function useLimits(limits: RequestLimits): Plugin[] {
  const armor = EnvelopArmorPlugin({
    maxDepth: { n: limits.maxDepth, ignoreIntrospection: true },
    maxAliases: { n: limits.maxAliases },
    maxTokens: { n: limits.maxTokens },
    maxDirectives: { n: limits.maxDirectives },
    costLimit: { maxCost: limits.maxCost, ignoreIntrospection: true },
    blockFieldSuggestion: { enabled: true },
  });
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
      const declared = Number(request.headers.get('content-length') ?? NaN);
      if (declared > limits.maxBodyBytes) throw requestError(`the request body is larger than ${limits.maxBodyBytes} bytes`, 'PAYLOAD_TOO_LARGE', 413);
      if (!(request.headers.get('content-type') ?? '').includes('json')) return;
      setRequestParser(async (req) => {
        const text = await readCapped(req, limits.maxBodyBytes);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw requestError('the request body is not valid JSON', 'BAD_REQUEST', 400);
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          throw requestError('the request body must be a JSON object with "query"', 'BAD_REQUEST', 400);
        }
        return body as Record<string, never>;
      });
    },
    onValidate({ addValidationRule }) {
      if (!limits.introspection) addValidationRule(NoSchemaIntrospectionCustomRule);
    },
    onExecute({ executeFn, setExecuteFn }) {
      setExecuteFn((args) => {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<ExecutionResult>((resolve) => {
          timer = setTimeout(
            () =>
              resolve({
                data: null,
                errors: [new GraphQLError(`the operation took longer than ${limits.executionTimeoutMs} ms`, { extensions: { code: 'EXECUTION_TIMEOUT' } })],
              }),
            limits.executionTimeoutMs,
          );
        });
        return Promise.race([Promise.resolve(executeFn(args)), timedOut]).finally(() => clearTimeout(timer)) as never;
      });
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result)) setResult(result.map(coded));
      else if (!(Symbol.asyncIterator in Object(result))) setResult(coded(result as ExecutionResult));
    },
  };
  return [armor as Plugin, own];
}
