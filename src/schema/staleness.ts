// When a platform fails and an older cached copy is served (freshness.stale), the answer keeps its
// data and also gets one typed error in errors[] for just that part: its path, the upstream code
// (extensions.code) and extensions.stale = true with the time of the copy (extensions.cachedAt).
// A client that never selects `freshness` still learns that part of the answer is old. The fields
// that answer cached data (series, progress, topology freshness, job pages) say so here, by name;
// the request's errors are collected in its context and appended by server/plugins/use-stale-errors.
import { GraphQLError, type GraphQLResolveInfo, responsePathAsArray } from 'graphql';
import type { Freshness } from '../store/index.js';
import type { Context } from './context.js';

interface SourceErrorLike {
  providerId: string;
  code: string;
  message: string;
  cachedAt: Date | null;
}

function isFreshness(v: unknown): v is Freshness {
  return typeof v === 'object' && v !== null && 'stale' in v && 'fetchedAt' in v && 'error' in v;
}

function staleError(freshness: Freshness, info: GraphQLResolveInfo): GraphQLError {
  const cachedAt = freshness.fetchedAt?.toISOString() ?? null;
  const reason = freshness.error?.message ?? 'the refresh failed';
  return new GraphQLError(`served from the cache${cachedAt ? ` as of ${cachedAt}` : ''}: ${reason}`, {
    path: responsePathAsArray(info.path),
    extensions: { code: freshness.error?.code ?? 'UPSTREAM_UNAVAILABLE', stale: true, cachedAt },
  });
}

function sourceError(s: SourceErrorLike, info: GraphQLResolveInfo): GraphQLError {
  const cachedAt = s.cachedAt?.toISOString() ?? null;
  return new GraphQLError(`jobs of provider "${s.providerId}" come from the cache${cachedAt ? ` as of ${cachedAt}` : ''}: ${s.message}`, {
    path: responsePathAsArray(info.path),
    extensions: { code: s.code, stale: true, cachedAt, providerId: s.providerId },
  });
}

/**
 * Notes the staleness of what a field answers (a value or a list of values carrying `freshness`,
 * a Freshness itself, or a job page's `sourceErrors`) in the request's context; returns the value.
 * One error per path (and per provider of a job page), whichever resolver saw it first.
 */
export function reportStale<T>(ctx: Context, info: GraphQLResolveInfo, value: T): T {
  const key = responsePathAsArray(info.path).join('.');
  const add = (k: string, make: () => GraphQLError) => {
    const errors = (ctx.staleErrors ??= new Map());
    if (!errors.has(k)) errors.set(k, make());
  };
  const consider = (v: unknown) => {
    if (typeof v !== 'object' || v === null) return;
    const own = (v as { freshness?: unknown }).freshness;
    if (isFreshness(own) && own.stale) add(key, () => staleError(own, info));
    if (isFreshness(v) && v.stale) add(key, () => staleError(v, info));
    const sources = (v as { sourceErrors?: SourceErrorLike[] }).sourceErrors;
    if (Array.isArray(sources)) for (const s of sources) add(`${key}#${s.providerId}`, () => sourceError(s, info));
  };
  if (Array.isArray(value)) value.forEach(consider);
  else consider(value);
  return value;
}
