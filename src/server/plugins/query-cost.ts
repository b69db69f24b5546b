// What an operation's answer can hold, counted before anything runs: every value (object, scalar,
// list element) the answer may contain at most, with list sizes read from the arguments that set
// them, given as literals or as variables alike: `first` (pages, logs, fleet lists), `maxPoints`
// (points of every series below), `representations` (entity lookups). Lists no argument bounds
// (a job's nodes, a node's GPUs, a job's series) count as UNBOUNDED_LIST_SIZE each.
import {
  getNamedType,
  getNullableType,
  isAbstractType,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** A list no argument bounds: what a job's nodes, a node's GPUs or a job's series count as. */
export const UNBOUNDED_LIST_SIZE = 10;

export interface CostDefaults {
  /** `first` when a connection or list field is given none. */
  defaultPageSize: number;
  /** `maxPoints` when a series is given none. */
  defaultMaxPoints: number;
  /** `first` on log pages when none is given. */
  defaultLogLines: number;
}

export interface QueryCost {
  /** Values the answer may hold at most. */
  values: number;
  /** The path that contributes most, with each list's size: "jobs(first 500) > edges > node > metrics(10) > points(maxPoints 10000)". */
  costliest: string;
}

interface Walk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  defaults: CostDefaults;
  best: { values: number; path: string };
}

/** Literal or variable, as the client gave it (before coercion: the count must not trust what it bounds). */
function argValue(field: FieldNode, name: string, walk: Walk): unknown {
  const arg = field.arguments?.find((a) => a.name.value === name);
  if (!arg) return undefined;
  return valueFromASTUntyped(arg.value, walk.variables);
}

function size(value: unknown, fallback: number): number {
  if (typeof value === 'number' && Number.isFinite(value)) return Math.max(0, Math.floor(value));
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return fallback;
}

function isPointList(type: GraphQLNamedType): boolean {
  return type.name.endsWith('Point');
}

/**
 * `pageSize`: a `first` given to the object field above, bounding its direct list children
 * (a connection's edges and nodes, a log page's lines). `points`: the nearest `maxPoints` above.
 */
function selectionCost(
  set: SelectionSetNode,
  parent: GraphQLNamedType,
  multiplier: number,
  pageSize: number | null,
  points: number,
  path: string,
  walk: Walk,
  seen: Set<string>,
): number {
  let total = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.INLINE_FRAGMENT) {
      const on = sel.typeCondition ? (walk.schema.getType(sel.typeCondition.name.value) ?? parent) : parent;
      total += selectionCost(sel.selectionSet, on, multiplier, pageSize, points, path, walk, seen);
      continue;
    }
    if (sel.kind === Kind.FRAGMENT_SPREAD) {
      const frag = walk.fragments.get(sel.name.value);
      if (!frag || seen.has(frag.name.value)) continue;
      const on = walk.schema.getType(frag.typeCondition.name.value) ?? parent;
      total += selectionCost(frag.selectionSet, on, multiplier, pageSize, points, path, walk, new Set([...seen, frag.name.value]));
      continue;
    }
    total += fieldCost(sel, parent, multiplier, pageSize, points, path, walk, seen);
  }
  return total;
}

function fieldDef(parent: GraphQLNamedType, name: string): GraphQLField<unknown, unknown> | null {
  if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name] ?? null;
  return null;
}

function fieldCost(
  field: FieldNode,
  parent: GraphQLNamedType,
  multiplier: number,
  pageSize: number | null,
  points: number,
  path: string,
  walk: Walk,
  seen: Set<string>,
): number {
  const name = field.name.value;
  if (name.startsWith('__')) return multiplier;
  const def = fieldDef(parent, name);
  if (!def) return multiplier;
  const type = getNullableType(def.type);
  const named = getNamedType(def.type);
  const list = isListType(type);
  const first = def.args.some((a) => a.name === 'first')
    ? size(argValue(field, 'first', walk), name === 'logs' ? walk.defaults.defaultLogLines : walk.defaults.defaultPageSize)
    : null;
  const maxPoints = def.args.some((a) => a.name === 'maxPoints') ? size(argValue(field, 'maxPoints', walk), walk.defaults.defaultMaxPoints) : null;
  let factor = 1;
  let label = name;
  if (list) {
    if (name === '_entities') {
      const reps = argValue(field, 'representations', walk);
      factor = Array.isArray(reps) ? reps.length : UNBOUNDED_LIST_SIZE;
      label = `${name}(${factor})`;
    } else if (first !== null) {
      factor = first;
      label = `${name}(first ${first})`;
    } else if (isPointList(named)) {
      factor = points;
      label = `${name}(maxPoints ${points})`;
    } else if (pageSize !== null) {
      factor = pageSize;
      label = `${name}(${pageSize})`;
    } else {
      const names = argValue(field, 'names', walk);
      factor = Array.isArray(names) ? names.length : UNBOUNDED_LIST_SIZE;
      label = `${name}(${factor})`;
    }
  } else if (first !== null) {
    label = `${name}(first ${first})`;
  }
  const here = multiplier * factor;
  const fullPath = path ? `${path} > ${label}` : label;
  let total = here;
  if (here > walk.best.values || (here === walk.best.values && fullPath.length > walk.best.path.length)) walk.best = { values: here, path: fullPath };
  if (field.selectionSet && (isObjectType(named) || isInterfaceType(named) || isAbstractType(named))) {
    const childPage = !list && first !== null ? first : null;
    total += selectionCost(field.selectionSet, named, here, childPage, maxPoints ?? points, fullPath, walk, seen);
  }
  return total;
}

export function queryCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  defaults: CostDefaults,
): QueryCost {
  const ops = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const op = operationName ? ops.find((o) => o.name?.value === operationName) : ops[0];
  if (!op) return { values: 0, costliest: '' };
  const vars: Record<string, unknown> = {};
  for (const def of op.variableDefinitions ?? []) {
    if (def.defaultValue) vars[def.variable.name.value] = valueFromASTUntyped(def.defaultValue);
  }
  Object.assign(vars, variables ?? {});
  const walk: Walk = {
    schema,
    fragments: new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f])),
    variables: vars,
    defaults,
    best: { values: 0, path: '' },
  };
  const root = op.operation === 'query' ? schema.getQueryType() : op.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!root) return { values: 0, costliest: '' };
  const values = selectionCost(op.selectionSet, root, 1, null, defaults.defaultMaxPoints, '', walk, new Set());
  return { values, costliest: walk.best.path };
}
