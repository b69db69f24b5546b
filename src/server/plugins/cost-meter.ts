// The actual cost of an answer, counted while it is made (extensions.cost.actual): every list
// field reports what it resolved to the operation's meter, which stops the operation once the
// count passes the limit, so nothing partial is passed as complete.
import {
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  GraphQLError,
  isListType,
  isObjectType,
  Kind,
  type ExecutionResult,
  type FieldNode,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import type { OperationScope } from '../../domain/request-scope.js';

export function isPromise(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Where an operation's meter sits in its context. */
export const METER = Symbol('cost meter');

/**
 * The values an answer really holds, counted as its lists are resolved: a list of n elements counts
 * n, and each element the fields selected of it (through its single objects, down to its next
 * lists, which count themselves), as the estimate counts them. Past the limit the operation is
 * abandoned (its store reads and upstream calls stop) and its answer is the refusal alone.
 */
export class CostMeter {
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
export function meterLists(schema: GraphQLSchema): void {
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
export function withCost(result: ExecutionResult, meter: CostMeter): ExecutionResult {
  const cost = meter.report();
  if (meter.stopped) return { data: null, errors: [meter.stopped], extensions: { cost } };
  return { ...result, extensions: { ...result.extensions, cost } };
}
