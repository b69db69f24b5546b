// PromQL text -> the small expression tree the engine evaluates. The grammar is not ours: it is
// @prometheus-io/lezer-promql, the Prometheus project's own PromQL grammar for JavaScript (the one
// Prometheus' web UI and Grafana's query editor use, released with every Prometheus version), so
// what parses here parses there. This file only walks its syntax tree, checks types as
// Prometheus' parser does, and names whatever lies outside the documented subset (docs/promql.md,
// "PromQL subset") so it is refused as bad_data instead of answered wrongly.
import { parser } from '@prometheus-io/lezer-promql';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

export class BadData extends Error {}

export type MatchOp = '=' | '!=' | '=~' | '!~';
export interface Matcher {
  name: string;
  op: MatchOp;
  value: string;
  /** For =~ and !~: the fully anchored pattern. */
  re?: RegExp;
}

export const AGGREGATIONS = ['sum', 'avg', 'min', 'max', 'count', 'topk', 'bottomk'] as const;
export type AggOp = (typeof AGGREGATIONS)[number];
export const OVER_TIME = ['avg_over_time', 'min_over_time', 'max_over_time', 'last_over_time', 'count_over_time'] as const;
export type OverTime = (typeof OVER_TIME)[number];
export type BinOp = '+' | '-' | '*' | '/' | '%' | '^' | '==' | '!=' | '>' | '<' | '>=' | '<=';
export const COMPARISONS: ReadonlySet<BinOp> = new Set(['==', '!=', '>', '<', '>=', '<=']);

export type Expr =
  | { kind: 'number'; value: number }
  | { kind: 'selector'; matchers: Matcher[] }
  | { kind: 'range'; selector: { kind: 'selector'; matchers: Matcher[] }; rangeMs: number }
  | { kind: 'call'; fn: OverTime; arg: { kind: 'range'; selector: { kind: 'selector'; matchers: Matcher[] }; rangeMs: number } }
  | { kind: 'agg'; op: AggOp; grouping: { by: boolean; labels: string[] } | null; param: Expr | null; expr: Expr }
  | { kind: 'binary'; op: BinOp; bool: boolean; lhs: Expr; rhs: Expr }
  | { kind: 'neg'; expr: Expr };

export type ValueType = 'scalar' | 'vector' | 'matrix';

export function typeOf(e: Expr): ValueType {
  switch (e.kind) {
    case 'number':
      return 'scalar';
    case 'range':
      return 'matrix';
    case 'binary':
      return typeOf(e.lhs) === 'scalar' && typeOf(e.rhs) === 'scalar' ? 'scalar' : 'vector';
    case 'neg':
      return typeOf(e.expr);
    default:
      return 'vector';
  }
}

const BIN_OPS: Record<string, BinOp> = {
  Add: '+',
  Sub: '-',
  Mul: '*',
  Div: '/',
  Mod: '%',
  Pow: '^',
  Eql: '==',
  Neq: '!=',
  Gtr: '>',
  Lss: '<',
  Gte: '>=',
  Lte: '<=',
};

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };

/** A Prometheus duration ("5m", "1h30m", "90s") in ms. */
export function parseDuration(text: string): number {
  const re = /(\d+)(ms|s|m|h|d|w|y)/gy;
  let total = 0;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(text))) {
    total += Number(m[1]) * DURATION_UNITS[m[2]!]!;
    end = re.lastIndex;
  }
  if (end !== text.length || text.length === 0) throw new BadData(`not a valid duration string: "${text}"`);
  return total;
}

function parseNumber(text: string): number {
  const t = text.toLowerCase();
  if (t === 'inf' || t === '+inf') return Number.POSITIVE_INFINITY;
  if (t === '-inf') return Number.NEGATIVE_INFINITY;
  if (t === 'nan') return Number.NaN;
  const n = Number(text);
  if (!Number.isNaN(n)) return n;
  // A duration where a number is expected ("5m" as a scalar) is a number of seconds in newer PromQL; not in 2.x.
  throw new BadData(`bad number or duration syntax: "${text}"`);
}

/** A PromQL string literal (double, single or back quotes), unquoted as Go's strconv.Unquote does for the common escapes. */
function unquote(raw: string): string {
  const q = raw[0];
  const body = raw.slice(1, -1);
  if (q === '`') return body;
  return body.replace(/\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[0-7]{3}|.)/g, (_all, e: string) => {
    if (e[0] === 'u' && e.length === 5) return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    if (e[0] === 'x' && e.length === 3) return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    if (/^[0-7]{3}$/.test(e)) return String.fromCharCode(Number.parseInt(e, 8));
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', f: '\f', v: '\v', '\\': '\\', '"': '"', "'": "'" };
    if (e in simple) return simple[e]!;
    throw new BadData(`invalid escape sequence "\\${e}" in string ${raw}`);
  });
}

/** Prometheus anchors label regexes at both ends (^(?:re)$); RE2's syntax is, for label patterns, the JavaScript one minus backreferences and lookaround. */
function anchored(pattern: string): RegExp {
  if (/\\[1-9]|\(\?[=!<]/.test(pattern)) throw new BadData(`invalid regular expression "${pattern}": RE2 has no backreferences or lookaround`);
  try {
    // No flags: in Prometheus 2.x `.` does not match a newline.
    return new RegExp(`^(?:${pattern})$`);
  } catch (err) {
    throw new BadData(`invalid regular expression "${pattern}": ${(err as Error).message}`);
  }
}

export function matches(m: Matcher, value: string): boolean {
  switch (m.op) {
    case '=':
      return value === m.value;
    case '!=':
      return value !== m.value;
    case '=~':
      return m.re!.test(value);
    case '!~':
      return !m.re!.test(value);
  }
}

export function parsePromql(query: string): Expr {
  if (query.trim() === '') throw new BadData('parse error: no expression found in input');
  const tree = parser.parse(query);
  let error: SyntaxNode | null = null;
  tree.iterate({
    enter: (n) => {
      if (n.type.isError && !error) error = n.node;
    },
  });
  if (error) {
    const at = (error as SyntaxNode).from;
    throw new BadData(`parse error at char ${at + 1}: unexpected ${at >= query.length ? 'end of input' : `"${query.slice(at, at + 10)}"`}`);
  }
  const text = (n: SyntaxNode) => query.slice(n.from, n.to);
  const kids = (n: SyntaxNode): SyntaxNode[] => {
    const out: SyntaxNode[] = [];
    for (let c = n.firstChild; c; c = c.nextSibling) out.push(c);
    return out;
  };
  const unsupported = (n: SyntaxNode, what: string): never => {
    throw new BadData(`unsupported by this API: ${what} ("${text(n).slice(0, 60)}"); see the PromQL subset in docs/promql.md`);
  };

  const selector = (n: SyntaxNode): { kind: 'selector'; matchers: Matcher[] } => {
    const matchers: Matcher[] = [];
    for (const c of kids(n)) {
      if (c.name === 'Identifier') matchers.push({ name: '__name__', op: '=', value: text(c) });
      else if (c.name === 'LabelMatchers') {
        for (const lm of kids(c)) {
          if (lm.name !== 'UnquotedLabelMatcher') unsupported(lm, 'quoted (UTF-8) label names');
          const [name, op, value] = kids(lm);
          const opText = text(op!) as MatchOp;
          const v = unquote(text(value!));
          matchers.push({ name: text(name!), op: opText, value: v, re: opText === '=~' || opText === '!~' ? anchored(v) : undefined });
        }
      } else unsupported(c, c.name);
    }
    if (matchers.every((m) => matches(m, ''))) throw new BadData('vector selector must contain at least one non-empty matcher');
    if (matchers.filter((m) => m.name === '__name__' && m.op === '=').length > 1) throw new BadData('metric name must not be set twice');
    return { kind: 'selector', matchers };
  };

  const walk = (n: SyntaxNode): Expr => {
    switch (n.name) {
      case 'PromQL':
      case 'ParenExpr': {
        const inner = kids(n);
        if (inner.length !== 1) unsupported(n, 'this expression');
        return walk(inner[0]!);
      }
      case 'NumberDurationLiteral':
        return { kind: 'number', value: parseNumber(text(n)) };
      case 'StringLiteral':
        return unsupported(n, 'string literals');
      case 'VectorSelector':
        return selector(n);
      case 'MatrixSelector': {
        const [vs, dur] = kids(n);
        if (vs!.name !== 'VectorSelector') unsupported(n, 'range of a non-selector');
        const rangeMs = parseDuration(text(dur!));
        if (rangeMs <= 0) throw new BadData('range selector must be positive');
        return { kind: 'range', selector: selector(vs!), rangeMs };
      }
      case 'OffsetExpr':
        return unsupported(n, 'the offset modifier');
      case 'StepInvariantExpr':
        return unsupported(n, 'the @ modifier');
      case 'SubqueryExpr':
        return unsupported(n, 'subqueries');
      case 'UnaryExpr': {
        const [op, e] = kids(n);
        const inner = walk(e!);
        if (typeOf(inner) === 'matrix') throw new BadData('unary expression only allowed on expressions of type scalar or instant vector');
        return text(op!) === '-' ? { kind: 'neg', expr: inner } : inner;
      }
      case 'FunctionCall': {
        const [ident, body] = kids(n);
        const fn = text(ident!);
        if (!(OVER_TIME as readonly string[]).includes(fn)) return unsupported(n, `the function ${fn}()`);
        const args = kids(body!).map(walk);
        if (args.length !== 1) throw new BadData(`expected 1 argument(s) in call to "${fn}", got ${args.length}`);
        const arg = args[0]!;
        if (arg.kind !== 'range')
          throw new BadData(`expected type range vector in call to function "${fn}", got ${typeOf(arg) === 'scalar' ? 'scalar' : 'instant vector'}`);
        return { kind: 'call', fn: fn as OverTime, arg };
      }
      case 'AggregateExpr': {
        let op = '';
        let grouping: { by: boolean; labels: string[] } | null = null;
        let args: Expr[] = [];
        for (const c of kids(n)) {
          if (c.name === 'AggregateOp') op = text(c);
          else if (c.name === 'AggregateModifier') {
            const [kw, labels] = kids(c);
            grouping = { by: kw!.name === 'By', labels: labels ? kids(labels).map(text) : [] };
          } else if (c.name === 'FunctionCallBody') args = kids(c).map(walk);
        }
        if (!(AGGREGATIONS as readonly string[]).includes(op)) return unsupported(n, `the aggregation ${op}`);
        const withParam = op === 'topk' || op === 'bottomk';
        if (args.length !== (withParam ? 2 : 1))
          throw new BadData(`wrong number of arguments for aggregate expression provided, expected ${withParam ? 2 : 1}, got ${args.length}`);
        const expr = args.at(-1)!;
        if (typeOf(expr) !== 'vector')
          throw new BadData(`expected type instant vector in aggregation expression, got ${typeOf(expr) === 'scalar' ? 'scalar' : 'range vector'}`);
        const param = withParam ? args[0]! : null;
        if (param && typeOf(param) !== 'scalar') throw new BadData(`expected type scalar in aggregation parameter, got ${typeOf(param)}`);
        return { kind: 'agg', op: op as AggOp, grouping, param, expr };
      }
      case 'BinaryExpr': {
        const parts = kids(n);
        const lhs = walk(parts[0]!);
        const rhs = walk(parts.at(-1)!);
        const opNode = parts[1]!;
        const op = BIN_OPS[opNode.name];
        if (!op) return unsupported(n, `the ${text(opNode)} operator`);
        let bool = false;
        for (const m of parts.slice(2, -1)) {
          if (m.name === 'BoolModifier') bool = true;
          else unsupported(m, 'vector matching (on, ignoring, group_left, group_right)');
        }
        if (bool && !COMPARISONS.has(op)) throw new BadData('bool modifier can only be used on comparison operators');
        const lt = typeOf(lhs);
        const rt = typeOf(rhs);
        if (lt === 'matrix' || rt === 'matrix') throw new BadData('binary expression must contain only scalar and instant vector types');
        if (lt === 'vector' && rt === 'vector') return unsupported(n, 'binary operations between two vectors');
        if (lt === 'scalar' && rt === 'scalar' && COMPARISONS.has(op) && !bool) throw new BadData('comparisons between scalars must use BOOL modifier');
        return { kind: 'binary', op, bool, lhs, rhs };
      }
      default:
        return unsupported(n, n.name);
    }
  };
  return walk(tree.topNode);
}

/** The selectors of an expression with the look-back each needs before an evaluation time (ms). */
export function selectorsOf(e: Expr, lookbackMs: number): { matchers: Matcher[]; backMs: number }[] {
  switch (e.kind) {
    case 'number':
      return [];
    case 'selector':
      return [{ matchers: e.matchers, backMs: lookbackMs }];
    case 'range':
      return [{ matchers: e.selector.matchers, backMs: e.rangeMs }];
    case 'call':
      return selectorsOf(e.arg, lookbackMs);
    case 'agg':
      return [...(e.param ? selectorsOf(e.param, lookbackMs) : []), ...selectorsOf(e.expr, lookbackMs)];
    case 'binary':
      return [...selectorsOf(e.lhs, lookbackMs), ...selectorsOf(e.rhs, lookbackMs)];
    case 'neg':
      return selectorsOf(e.expr, lookbackMs);
  }
}
