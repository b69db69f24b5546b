// What an operation's answer can hold, counted before anything runs: every value (object, scalar,
// list element) the answer may contain at most, with list sizes read from the arguments that set
// them, given as literals or as variables alike: `first` (pages, logs, fleet lists), `maxPoints`
// (points of every series below, and the point columns `timestamps`/`steps`/`values`/`x`),
// `representations` (entity lookups), `ids` (Query.nodes), `jobIds` and `metrics` (compareRuns).
// A series' points are also bounded by its window (`from` and `to` given) over the finest sampling
// interval of the platforms. The lists no argument bounds (a job's nodes and GPUs, a node's GPUs, a
// job's series) are bounded by what the store knows of the jobs (KnownShapes: "the 50 largest jobs
// hold 267 GPUs"), jobs it does not know counting as store/job-shapes.ts UNKNOWN_JOB_SHAPE; other
// unbounded lists count UNBOUNDED_LIST_SIZE. use-limits.ts also counts the actual answer as it is made.
import {
  getNamedType,
  getNullableType,
  isAbstractType,
  isListType,
  isObjectType,
  isInterfaceType,
  isScalarType,
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

/** A list neither an argument nor the store bounds (projects, labels, providers). */
export const UNBOUNDED_LIST_SIZE = 10;

/** What the store knows of the jobs' sizes (store/job-shapes.ts). */
export interface KnownShapes {
  /** The sum of a measure over the `count` largest jobs (jobs it does not know count as a default job). */
  largest(measure: 'nodes' | 'gpus' | 'gpusPerNode' | 'systemSeries' | 'trainingSeries', count: number): number;
}

export interface CostDefaults {
  /** `first` when a connection or list field is given none. */
  defaultPageSize: number;
  /** `maxPoints` when a series is given none. */
  defaultMaxPoints: number;
  /** `first` on log pages when none is given. */
  defaultLogLines: number;
  /** The finest spacing of a system series' points on any configured platform (seconds): a window of W seconds holds at most W / this + 1. */
  sampleSeconds: number;
}

export interface QueryCost {
  /** Values the answer may hold at most. */
  values: number;
  /** The path that contributes most, with each list's size: "jobs(first 500) > edges(500) > node > metrics(114) > points(maxPoints 10000)". */
  costliest: string;
}

interface Walk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  defaults: CostDefaults;
  known: KnownShapes;
  best: { values: number; path: string };
}

/** What the fields above say of the lists below. */
interface Above {
  /** How many of the current object the answer holds at most. */
  multiplier: number;
  /** `first` given to the object field above: bounds its direct list children (a connection's edges and nodes, a log page's lines). */
  pageSize: number | null;
  /** Points of each series below (the nearest `maxPoints`, bounded by its window). */
  points: number;
  /** Jobs of the answer the current object belongs to (the multiplier at the nearest Job), or null above any job. */
  jobs: number | null;
  /** compareRuns: its runs (jobIds) and each run's series (metrics). */
  compare: { runs: number; series: number } | null;
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

function listLength(value: unknown): number | null {
  return Array.isArray(value) ? value.length : null;
}

/** The types whose scalar lists are point columns, one element per point (or per grid bucket). */
const POINT_COLUMN_PARENTS: ReadonlySet<string> = new Set(['MetricSeries', 'ComparedSeries', 'RunComparison']);
/** The objects whose series arguments (from, to) are a time window of system series. */
const SYSTEM_SERIES_PARENTS: ReadonlySet<string> = new Set(['Job', 'ComputeNode', 'Gpu']);

function isPointList(type: GraphQLNamedType, parent: GraphQLNamedType): boolean {
  return type.name.endsWith('Point') || (isScalarType(type) && POINT_COLUMN_PARENTS.has(parent.name));
}

/** Points a window of system series can hold: its seconds over the finest sampling interval, plus one. */
function windowPoints(field: FieldNode, walk: Walk): number | null {
  const from = argValue(field, 'from', walk);
  const to = argValue(field, 'to', walk);
  if (typeof from !== 'string' || typeof to !== 'string') return null;
  const ms = Date.parse(to) - Date.parse(from);
  if (!Number.isFinite(ms) || ms < 0) return null;
  return Math.floor(ms / 1000 / Math.max(walk.defaults.sampleSeconds, 1e-3)) + 1;
}

function selectionCost(set: SelectionSetNode, parent: GraphQLNamedType, above: Above, path: string, walk: Walk, seen: Set<string>): number {
  // A job's own lists are bounded by the jobs above them: the multiplier here is how many jobs.
  if (parent.name === 'Job') above = { ...above, jobs: above.multiplier };
  let total = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.INLINE_FRAGMENT) {
      const on = sel.typeCondition ? (walk.schema.getType(sel.typeCondition.name.value) ?? parent) : parent;
      total += selectionCost(sel.selectionSet, on, above, path, walk, seen);
      continue;
    }
    if (sel.kind === Kind.FRAGMENT_SPREAD) {
      const frag = walk.fragments.get(sel.name.value);
      if (!frag || seen.has(frag.name.value)) continue;
      const on = walk.schema.getType(frag.typeCondition.name.value) ?? parent;
      total += selectionCost(frag.selectionSet, on, above, path, walk, new Set([...seen, frag.name.value]));
      continue;
    }
    total += fieldCost(sel, parent, above, path, walk, seen);
  }
  return total;
}

function fieldDef(parent: GraphQLNamedType, name: string): GraphQLField<unknown, unknown> | null {
  if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name] ?? null;
  return null;
}

/**
 * Elements of a list the store's knowledge bounds, over the whole answer (not per parent): a
 * job's nodes, GPUs and series, a node's GPUs and series; null for any other list.
 */
function knownListSize(name: string, parent: GraphQLNamedType, field: FieldNode, above: Above, walk: Walk): number | null {
  const { known } = walk;
  // An object reached without its job (node(id:), nodes(ids:)): each belongs to one job at most.
  const jobs = above.jobs ?? above.multiplier;
  const names = listLength(argValue(field, 'names', walk));
  if (parent.name === 'Job') {
    if (name === 'nodes') return known.largest('nodes', jobs);
    if (name === 'gpus') return known.largest('gpus', jobs);
    if (name === 'trainingMetrics') return known.largest('trainingSeries', jobs);
    if (name === 'metrics') {
      const all = known.largest('systemSeries', jobs);
      // Each asked metric at most once per scope: the job, each node, each GPU.
      return names === null ? all : Math.min(all, names * (jobs + known.largest('nodes', jobs) + known.largest('gpus', jobs)));
    }
  }
  if (parent.name === 'ComputeNode') {
    const gpus = Math.min(above.multiplier * known.largest('gpusPerNode', 1), known.largest('gpus', jobs));
    if (name === 'gpus') return gpus;
    if (name === 'metrics') {
      const all = known.largest('systemSeries', jobs);
      return names === null ? all : Math.min(all, names * (above.multiplier + gpus));
    }
  }
  return null;
}

function fieldCost(field: FieldNode, parent: GraphQLNamedType, above: Above, path: string, walk: Walk, seen: Set<string>): number {
  const { multiplier } = above;
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
  let points = above.points;
  let pointsLabel = `maxPoints ${points}`;
  if (def.args.some((a) => a.name === 'maxPoints')) {
    const maxPoints = size(argValue(field, 'maxPoints', walk), walk.defaults.defaultMaxPoints);
    const inWindow = SYSTEM_SERIES_PARENTS.has(parent.name) && name !== 'trainingMetrics' ? windowPoints(field, walk) : null;
    points = inWindow === null ? maxPoints : Math.min(maxPoints, inWindow);
    pointsLabel = inWindow !== null && inWindow < maxPoints ? `maxPoints ${maxPoints}, window ${inWindow}` : `maxPoints ${maxPoints}`;
  }
  // Multiplied: the elements of this list over the whole answer. Known: the same, from the store.
  let here = multiplier;
  let label = name;
  if (list) {
    let factor: number | null = null;
    const known = knownListSize(name, parent, field, above, walk);
    if (name === '_entities') {
      factor = listLength(argValue(field, 'representations', walk)) ?? UNBOUNDED_LIST_SIZE;
    } else if (name === 'nodes' && parent === walk.schema.getQueryType()) {
      factor = listLength(argValue(field, 'ids', walk)) ?? UNBOUNDED_LIST_SIZE;
    } else if (first !== null) {
      factor = first;
      label = `${name}(first ${first})`;
    } else if (isPointList(named, parent)) {
      factor = points;
      label = `${name}(${pointsLabel})`;
    } else if (above.pageSize !== null) {
      factor = above.pageSize;
    } else if (name === 'runs' && above.compare) {
      factor = above.compare.runs;
    } else if (name === 'series' && parent.name === 'ComparedRun' && above.compare) {
      factor = above.compare.series;
    } else if (known === null) {
      factor = listLength(argValue(field, 'names', walk)) ?? UNBOUNDED_LIST_SIZE;
    }
    if (factor !== null) {
      here = multiplier * factor;
      if (label === name) label = `${name}(${factor})`;
    } else {
      here = known!;
      label = `${name}(${here} known)`;
    }
  } else if (first !== null) {
    label = `${name}(first ${first})`;
  }
  const fullPath = path ? `${path} > ${label}` : label;
  let total = here;
  if (here > walk.best.values || (here === walk.best.values && fullPath.length > walk.best.path.length)) walk.best = { values: here, path: fullPath };
  if (field.selectionSet && (isObjectType(named) || isInterfaceType(named) || isAbstractType(named))) {
    let compare = above.compare;
    if (name === 'compareRuns') {
      compare = {
        runs: listLength(argValue(field, 'jobIds', walk)) ?? UNBOUNDED_LIST_SIZE,
        series: listLength(argValue(field, 'metrics', walk)) ?? UNBOUNDED_LIST_SIZE,
      };
    }
    const below: Above = { multiplier: here, pageSize: !list && first !== null ? first : null, points, jobs: above.jobs, compare };
    total += selectionCost(field.selectionSet, named, below, fullPath, walk, seen);
  }
  return total;
}

export function queryCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  defaults: CostDefaults,
  known: KnownShapes,
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
    known,
    best: { values: 0, path: '' },
  };
  const root = op.operation === 'query' ? schema.getQueryType() : op.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!root) return { values: 0, costliest: '' };
  const above: Above = { multiplier: 1, pageSize: null, points: defaults.defaultMaxPoints, jobs: null, compare: null };
  const values = selectionCost(op.selectionSet, root, above, '', walk, new Set());
  return { values, costliest: walk.best.path };
}
