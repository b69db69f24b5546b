// Inputs no API call can mean, refused before any work (NUL bytes, absurd nesting of documents,
// literals and variables), and the codes and messages errors leave with: graphql-armor's refusals
// by name, no "Did you mean ...?" that would map the schema for a stranger.
import { GraphQLError, type ASTVisitor, type DocumentNode, type ExecutionResult, type ParseOptions, type Source, type ValidationContext } from 'graphql';
import { withCode } from './use-error-codes.js';

/** graphql-armor's refusals, told apart by their messages, and what they are called here. */
const ARMOR_CODES: [RegExp, string][] = [
  [/depth limit/i, 'QUERY_TOO_DEEP'],
  [/aliases limit/i, 'TOO_MANY_ALIASES'],
  [/token limit/i, 'TOO_MANY_TOKENS'],
  [/directives limit/i, 'TOO_MANY_DIRECTIVES'],
  [/introspection has been disabled/i, 'INTROSPECTION_DISABLED'],
];

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

export function coded(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => recoded(e as GraphQLError)) };
}

/** Deeper list or object nesting than any argument of this API takes is an attack, not a question. */
export const MAX_INPUT_NESTING = 32;

export function badInput(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_INPUT' } });
}

/** Literals in the document: no NUL byte in a string, no list or object nested deeper than MAX_INPUT_NESTING. */
export function edgeInputRule(context: ValidationContext): ASTVisitor {
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

/** The parse function, after a look at the document's bracket nesting; one wrapper per parse function. */
type ParseFn = (source: string | Source, options?: ParseOptions) => DocumentNode;
const nestingChecked = new WeakMap<ParseFn, ParseFn>();

export function nestingCheckedParse(parseFn: ParseFn): ParseFn {
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
export function keepEdgeErrors({ result, setResult }: { result: readonly Error[]; setResult: (errors: GraphQLError[]) => void }): void {
  if (result.length === 0) return;
  let errors = result as readonly GraphQLError[];
  const edge = errors.filter((e) => e.extensions?.code === 'BAD_INPUT');
  if (edge.length > 0 && edge.length < errors.length) errors = edge;
  if (errors.some(suggests)) errors = errors.map((e) => (suggests(e) ? withoutSuggestions(e) : e));
  if (errors !== result) setResult(errors as GraphQLError[]);
}
