// When a platform fails and an older cached copy is served (freshness.stale), the answer keeps its
// data and also gets one typed error in errors[] for just that part: its path, the upstream code
// (extensions.code) and extensions.stale = true with the time of the copy (extensions.cachedAt).
// A client that never selects `freshness` still learns that part of the answer is old.
import {
  GraphQLError,
  GraphQLObjectType,
  getNamedType,
  responsePathAsArray,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Freshness } from '../../store/read-through.js';

/** Output types whose values carry a freshness (a series, progress), or are one, or list source errors (job pages). */
const WATCHED_TYPES = new Set(['MetricSeries', 'JobProgress', 'Freshness', 'JobConnection']);
const WRAPPED = Symbol('staleErrorsWrapped');

interface SourceError {
  providerId: string;
  code: string;
  message: string;
  cachedAt: Date | null;
}

const collected = new WeakMap<object, Map<string, GraphQLError>>();

function isFreshness(v: unknown): v is Freshness {
  return typeof v === 'object' && v !== null && 'stale' in v && 'fetchedAt' in v && 'error' in v;
}

function staleError(freshness: Freshness, info: GraphQLResolveInfo): GraphQLError {
  const path = responsePathAsArray(info.path);
  const cachedAt = freshness.fetchedAt?.toISOString() ?? null;
  const reason = freshness.error?.message ?? 'the refresh failed';
  return new GraphQLError(`served from the cache${cachedAt ? ` as of ${cachedAt}` : ''}: ${reason}`, {
    path,
    extensions: { code: freshness.error?.code ?? 'UPSTREAM_UNAVAILABLE', stale: true, cachedAt },
  });
}

function note(context: object, info: GraphQLResolveInfo, root: unknown, value: unknown) {
  const found = new Map<string, GraphQLError>();
  const key = responsePathAsArray(info.path).join('.');
  const consider = (v: unknown) => {
    if (typeof v !== 'object' || v === null) return;
    const own = (v as { freshness?: unknown }).freshness;
    if (isFreshness(own) && own.stale) found.set(key, staleError(own, info));
    // A Freshness field of a value already reported (MetricSeries.freshness) is the same news; the
    // field answers a copy carrying its owner's id, so the parent is asked, not the object's identity.
    const parents = (root as { freshness?: unknown } | null)?.freshness;
    if (isFreshness(v) && v.stale && !(isFreshness(parents) && parents.stale)) found.set(key, staleError(v, info));
    const sources = (v as { sourceErrors?: SourceError[] }).sourceErrors;
    if (Array.isArray(sources)) {
      for (const s of sources) {
        const cachedAt = s.cachedAt?.toISOString() ?? null;
        found.set(
          `${key}#${s.providerId}`,
          new GraphQLError(`jobs of provider "${s.providerId}" come from the cache${cachedAt ? ` as of ${cachedAt}` : ''}: ${s.message}`, {
            path: responsePathAsArray(info.path),
            extensions: { code: s.code, stale: true, cachedAt, providerId: s.providerId },
          }),
        );
      }
    }
  };
  if (Array.isArray(value)) value.forEach(consider);
  else consider(value);
  if (found.size === 0) return;
  let errors = collected.get(context);
  if (!errors) collected.set(context, (errors = new Map()));
  for (const [k, e] of found) if (!errors.has(k)) errors.set(k, e);
}

/** Wraps the resolvers of fields returning a watched type, once per schema object. */
function watch(schema: GraphQLSchema) {
  const marked = schema as GraphQLSchema & { [WRAPPED]?: true };
  if (marked[WRAPPED]) return;
  marked[WRAPPED] = true;
  for (const type of Object.values(schema.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (!field.resolve || !WATCHED_TYPES.has(getNamedType(field.type).name)) continue;
      const resolve: GraphQLFieldResolver<unknown, object> = field.resolve;
      field.resolve = (root, args, context: object, info) => {
        const out = resolve(root, args, context, info);
        if (out instanceof Promise) return out.then((v) => (note(context, info, root, v), v));
        note(context, info, root, out);
        return out;
      };
    }
  }
}

export function useStaleErrors(): Plugin {
  return {
    onExecute({ args }) {
      watch(args.schema);
      const context = args.contextValue as object;
      return {
        onExecuteDone({ result, setResult }) {
          const stale = collected.get(context);
          if (!stale || Symbol.asyncIterator in Object(result)) return;
          collected.delete(context);
          const single = result as { errors?: readonly GraphQLError[] };
          setResult({ ...single, errors: [...(single.errors ?? []), ...stale.values()] } as never);
        },
      };
    },
  };
}
