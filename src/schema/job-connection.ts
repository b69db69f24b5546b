// The Relay connection of jobs: keyset pages over the cache after the providers' lists are
// refreshed, newest first (forward with first/after, backward with last/before); used by
// Query.jobs and Project.jobs. Edges are never null: a job's failing part is null on its own
// field (with its error), the job stays listed.
import type { ArgBuilder } from '@pothos/core';
import type { FieldNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import { DomainError } from '../domain/errors.js';
import type { Freshness, JobFilter, JobOrder, OrderedJobRow } from '../store/index.js';
import { checkPageSize, decodeJobCursor, encodeJobCursor } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { JobFilterRef, JobOrderRef, resolveJobFilter, resolveJobOrder, type JobFilterInput, type JobOrderInput } from './job-filter.js';
import { JobRef, SourceErrorRef, type SourceErrorShape } from './refs.js';
import { everyField } from './selection.js';

interface JobConnectionShape {
  rows: OrderedJobRow[];
  order: JobOrder;
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  filter: JobFilter;
  sourceErrors: SourceErrorShape[];
}

interface PageInfoShape {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export const PageInfoRef = builder.objectRef<PageInfoShape>('PageInfo');
PageInfoRef.implement({
  description: 'Where a page of a Relay connection sits in the whole list (the Relay Cursor Connections contract)',
  shareable: true,
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage', {
      description: 'True when more items follow endCursor (asked with first/after); with last/before: true when `before` was given',
    }),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage', {
      description: 'True when more items precede startCursor (asked with last/before); with first/after: true when `after` was given',
    }),
    startCursor: t.string({ nullable: true, description: 'The cursor of the first item of the page; null for an empty page', resolve: (p) => p.startCursor }),
    endCursor: t.string({ nullable: true, description: 'The cursor of the last item of the page; null for an empty page', resolve: (p) => p.endCursor }),
  }),
});

interface JobEdgeShape {
  job: OrderedJobRow;
  order: JobOrder;
}

const cursorOf = (order: JobOrder, j: OrderedJobRow) => encodeJobCursor(order, { key: j.orderKey, id: j.id });

const JobEdgeRef = builder.objectRef<JobEdgeShape>('JobEdge');
JobEdgeRef.implement({
  description: 'One job of a page, with the cursor that continues after (or before) it',
  fields: (t) => ({
    cursor: t.string({
      description: 'Opaque; pass as `after` (or `before`) with the same orderBy to continue from this job',
      resolve: (e) => cursorOf(e.order, e.job),
    }),
    node: t.field({ type: JobRef, description: 'The job', resolve: (e) => e.job }),
  }),
});

export const JobConnectionRef = builder.objectRef<JobConnectionShape>('JobConnection');
JobConnectionRef.implement({
  description: 'A page of jobs in the order asked (default: newest first by creation time), with where it sits in the whole list',
  fields: (t) => ({
    edges: t.field({
      type: [JobEdgeRef],
      description: 'The jobs of this page with their cursors, in the order asked',
      resolve: (c) => c.rows.map((job) => ({ job, order: c.order })),
    }),
    nodes: t.field({ type: [JobRef], description: 'The jobs of this page, in the order asked (edges without the cursors)', resolve: (c) => c.rows }),
    pageInfo: t.field({
      type: PageInfoRef,
      description: 'Cursors of this page and whether there is more either side',
      resolve: (c) => ({
        hasNextPage: c.hasNextPage,
        hasPreviousPage: c.hasPreviousPage,
        startCursor: c.rows[0] ? cursorOf(c.order, c.rows[0]) : null,
        endCursor: c.rows.at(-1) ? cursorOf(c.order, c.rows.at(-1)!) : null,
      }),
    }),
    totalCount: t.int({
      description: 'Jobs matching the filter across all pages (a count)',
      resolve: (c, _a, ctx) => ctx.store.jobsCount(c.filter),
    }),
    sourceErrors: t.field({
      type: [SourceErrorRef],
      description: 'One per platform whose job list could not be refreshed for this answer: its jobs come from the cache as of cachedAt',
      resolve: (c) => c.sourceErrors,
    }),
  }),
});

/** A provider's failed job-list refresh as a SourceError: its id is derived from the provider's (`<providerId>:error:<providerId>`). */
export function jobListError(providerId: string, f: Freshness): SourceErrorShape {
  return { providerId, code: f.error!.code, message: f.error!.message, stale: f.fetchedAt !== null, cachedAt: f.fetchedAt, ownerId: providerId };
}

export interface ConnectionArgs {
  filter?: JobFilterInput | null;
  orderBy?: JobOrderInput | null;
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/** The argument descriptions every jobs connection shares. */
export const CONNECTION_ARG_DOCS = {
  filter: 'Which jobs; default: all jobs the caller may see',
  orderBy: 'The order of the list; default: newest first by creation time. Answered from the cache in one SQL statement',
  first: 'Page size going forward (newest first), 0..the server cap (default 50, cap 500 unless configured); not with `last`',
  after: 'A cursor from this connection: the page starts strictly after it',
  last: 'Page size going backward (the jobs just before `before`, or the oldest ones), 0..the server cap; not with `first`',
  before: 'A cursor from this connection: with `last`, the page ends strictly before it',
} as const;

type Types = typeof builder.$inferSchemaTypes;

/** filter, first/after and last/before, as every jobs connection takes them. */
export function jobConnectionArgs(arg: ArgBuilder<Types>) {
  return {
    filter: arg({ type: JobFilterRef, required: false, description: CONNECTION_ARG_DOCS.filter }),
    orderBy: arg({ type: JobOrderRef, required: false, description: CONNECTION_ARG_DOCS.orderBy }),
    first: arg.int({ required: false, description: CONNECTION_ARG_DOCS.first }),
    after: arg.string({ required: false, description: CONNECTION_ARG_DOCS.after }),
    last: arg.int({ required: false, description: CONNECTION_ARG_DOCS.last }),
    before: arg.string({ required: false, description: CONNECTION_ARG_DOCS.before }),
  };
}

/**
 * Job fields answered from JOB_LIST_FIELDS alone: their resolvers read nothing else of the row
 * (provider only its providerId). Any other Job field selected makes the page read whole rows.
 */
const LIST_JOB_FIELDS = new Set(['__typename', 'id', 'externalId', 'name', 'status', 'rawStatus', 'provider']);
/** JobConnection fields that read nothing of the jobs but their cursors (order key and id). */
const CONNECTION_FIELDS_WITHOUT_JOBS = new Set(['__typename', 'pageInfo', 'totalCount', 'sourceErrors']);

const listColumnsCache = new WeakMap<object, boolean>();

/**
 * Whether this jobs connection's selection asks nothing of its jobs beyond LIST_JOB_FIELDS (through
 * fragments and inline fragments too): its page then reads JOB_LIST_FIELDS instead of whole rows.
 * Worked out once per field of a parsed document (yoga keeps parsed documents).
 */
export function listColumnsSuffice(info: GraphQLResolveInfo): boolean {
  const key = info.fieldNodes[0]!;
  const known = listColumnsCache.get(key);
  if (known !== undefined && info.fieldNodes.length === 1) return known;
  const seen = new Set<string>();
  const every = (set: SelectionSetNode | undefined, ok: (field: FieldNode) => boolean) => everyField(info, set, ok, seen);
  const job = (f: FieldNode) => LIST_JOB_FIELDS.has(f.name.value);
  const edge = (f: FieldNode) => f.name.value === '__typename' || f.name.value === 'cursor' || (f.name.value === 'node' && every(f.selectionSet, job));
  const connection = (f: FieldNode) =>
    CONNECTION_FIELDS_WITHOUT_JOBS.has(f.name.value) ||
    (f.name.value === 'nodes' && every(f.selectionSet, job)) ||
    (f.name.value === 'edges' && every(f.selectionSet, edge));
  const answer = info.fieldNodes.every((node) => every(node.selectionSet, connection));
  if (info.fieldNodes.length === 1) listColumnsCache.set(key, answer);
  return answer;
}

export async function resolveJobConnection(ctx: Context, args: ConnectionArgs, info: GraphQLResolveInfo, projectId?: string): Promise<JobConnectionShape> {
  if (args.first != null && args.last != null) {
    throw new DomainError('BAD_INPUT', 'give "first" (forward) or "last" (backward), not both', { argument: 'last' });
  }
  const backward = args.last != null || (args.before != null && args.first == null);
  const size = backward
    ? checkPageSize(args.last, ctx.limits.defaultPageSize, ctx.limits.maxPageSize, 'last')
    : checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize, 'first');
  const asked = resolveJobOrder(args.orderBy, ctx.store.now(), ctx.ledger?.prices, ctx.store.stepRule(ctx.limits.defaultMaxPoints));
  const after = decodeJobCursor(args.after, asked, 'after');
  const before = decodeJobCursor(args.before, asked, 'before');
  // Durations are measured to the instant the first page used, so later pages continue the same order.
  const from = backward ? before : after;
  const order = (asked.by === 'DURATION' || asked.by === 'COST' || asked.by === 'WASTE') && from?.now ? { ...asked, now: from.now } : asked;
  const filter = resolveJobFilter(ctx, args.filter, projectId);
  const cursor = from?.cursor ?? null;
  const dir = backward ? 'backward' : 'forward';
  const columns = listColumnsSuffice(info) ? 'list' : 'all';
  // Warm lists: the page and the lists' freshness in one statement; else sync, then read.
  const warm = await ctx.store.jobsPageIfListsFresh(filter.providerIds, filter.jobs, size, cursor, dir, order, columns);
  const freshness = warm?.freshness ?? (await ctx.store.syncJobLists(filter.providerIds));
  const read = warm?.rows ?? (filter.providerIds.length ? await ctx.store.jobsPage(filter.jobs, size, cursor, dir, order, columns) : []);
  // A list row holds JOB_LIST_FIELDS only; listColumnsSuffice admitted no Job field that reads
  // another, and such rows are not given to the loaders as whole jobs.
  const rows = read as OrderedJobRow[];
  // Backward pages are read nearest-first; a page is always presented in the order asked.
  const page = backward ? rows.slice(0, size).reverse() : rows.slice(0, size);
  if (columns === 'all') ctx.store.primeJobs(page);
  const more = rows.length > size;
  return {
    rows: page,
    order,
    hasNextPage: backward ? before !== null : more,
    hasPreviousPage: backward ? more : after !== null,
    filter: filter.jobs,
    sourceErrors: [...freshness].filter(([, f]) => f.error).map(([providerId, f]) => jobListError(providerId, f)),
  };
}
