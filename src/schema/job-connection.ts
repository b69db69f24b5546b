// The Relay-style jobs connection: keyset pages over the cache after the providers' lists are
// refreshed, newest first; used by Query.jobs and Project.jobs.
import type { JobFilter, JobRow } from '../store/index.js';
import { checkPageSize, decodeJobCursor, encodeJobCursor } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { resolveJobFilter, type JobFilterInput } from './job-filter.js';
import { JobRef } from './refs.js';

interface JobConnectionShape {
  rows: JobRow[];
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  filter: JobFilter;
  sourceErrors: { providerId: string; code: string; message: string; cachedAt: Date | null }[];
}

const PageInfoRef = builder.objectRef<{ hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null }>(
  'PageInfo',
);
PageInfoRef.implement({
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage'),
    startCursor: t.string({ nullable: true, resolve: (p) => p.startCursor }),
    endCursor: t.string({ nullable: true, resolve: (p) => p.endCursor }),
  }),
});

const JobEdgeRef = builder.objectRef<JobRow>('JobEdge');
JobEdgeRef.implement({
  fields: (t) => ({
    cursor: t.string({ resolve: (j) => encodeJobCursor({ sortAt: j.sortAt, id: j.id }) }),
    node: t.field({ type: JobRef, resolve: (j) => j }),
  }),
});

const ProviderSourceErrorRef = builder.objectRef<JobConnectionShape['sourceErrors'][number]>('ProviderSourceError');
ProviderSourceErrorRef.implement({
  description: 'A platform whose job list could not be refreshed: its jobs are answered from the cache as of cachedAt',
  fields: (t) => ({
    providerId: t.exposeID('providerId'),
    code: t.exposeString('code'),
    message: t.exposeString('message'),
    cachedAt: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.cachedAt }),
  }),
});

export const JobConnectionRef = builder.objectRef<JobConnectionShape>('JobConnection');
JobConnectionRef.implement({
  fields: (t) => ({
    // Edge items are nullable so one job's failing field cannot erase the whole page.
    edges: t.field({ type: [JobEdgeRef], nullable: { list: false, items: true }, resolve: (c) => c.rows }),
    nodes: t.field({ type: [JobRef], nullable: { list: false, items: true }, resolve: (c) => c.rows }),
    pageInfo: t.field({
      type: PageInfoRef,
      resolve: (c) => ({
        hasNextPage: c.hasNextPage,
        hasPreviousPage: c.hasPreviousPage,
        startCursor: c.rows[0] ? encodeJobCursor({ sortAt: c.rows[0].sortAt, id: c.rows[0].id }) : null,
        endCursor: c.rows.at(-1) ? encodeJobCursor({ sortAt: c.rows.at(-1)!.sortAt, id: c.rows.at(-1)!.id }) : null,
      }),
    }),
    totalCount: t.int({ description: 'Jobs matching the filter across all pages', resolve: (c, _a, ctx) => ctx.store.jobsCount(c.filter) }),
    sourceErrors: t.field({
      type: [ProviderSourceErrorRef],
      description: 'Platforms that could not be refreshed for this answer (their jobs come from the cache)',
      resolve: (c) => c.sourceErrors,
    }),
  }),
});

export async function resolveJobConnection(
  ctx: Context,
  args: { filter?: JobFilterInput | null; first?: number | null; after?: string | null },
  projectId?: string,
): Promise<JobConnectionShape> {
  const first = checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize);
  const after = decodeJobCursor(args.after);
  const filter = resolveJobFilter(ctx, args.filter, projectId);
  const freshness = await ctx.store.syncJobLists(filter.providerIds);
  const rows = filter.providerIds.length ? await ctx.store.jobsPage(filter.jobs, first, after) : [];
  const page = rows.slice(0, first);
  for (const j of page) ctx.store.loaders.jobById.prime(j.id, j);
  return {
    rows: page,
    hasNextPage: rows.length > first,
    hasPreviousPage: after !== null,
    filter: filter.jobs,
    sourceErrors: [...freshness]
      .filter(([, f]) => f.error)
      .map(([providerId, f]) => ({ providerId, code: f.error!.code, message: f.error!.message, cachedAt: f.fetchedAt })),
  };
}
