// Who may see what. With API tokens configured, every operation (HTTP, SSE or graphql-ws, each
// subscription re-checked when it starts) presents a token; its scope narrows the request's
// context: `providers` shows only the token's providers, and the loaders every resolver and entity
// lookup goes through answer null for any job, project, node or GPU outside it, exactly as for an
// id that does not exist. Job lists and status streams filter by the same scope in SQL / in the
// stream, so counts and cursors never reveal another tenant's jobs.
import DataLoader from 'dataloader';
import { GraphQLError } from 'graphql';
import type { TokenScope, TokenStore } from '../config/index.js';
import { parseGlobalId } from '../domain/ids.js';
import type { Access, Context } from '../schema/index.js';
import type { GpuRow, JobRow, Loaders, NodeRow, ProjectRow } from '../store/index.js';

export class AccessScope implements Access {
  private readonly providers: ReadonlySet<string> | null;
  private readonly projects: ReadonlySet<string> | null;

  constructor(readonly scope: TokenScope) {
    this.providers = scope.providers ? new Set(scope.providers) : null;
    this.projects = scope.projects ? new Set(scope.projects) : null;
  }

  get name(): string {
    return this.scope.name;
  }

  allowsProvider(providerId: string): boolean {
    return this.providers === null || this.providers.has(providerId);
  }

  allowsProject(projectId: string): boolean {
    if (this.projects !== null && !this.projects.has(projectId)) return false;
    try {
      return this.allowsProvider(parseGlobalId(projectId, 'project').providerId);
    } catch {
      return false;
    }
  }

  allowsJob(job: { providerId: string; projectId: string }): boolean {
    return this.allowsProvider(job.providerId) && (this.projects === null || this.projects.has(job.projectId));
  }

  get mayWrite(): boolean {
    return this.scope.write === true;
  }

  providerIds(): string[] | null {
    return this.providers ? [...this.providers] : null;
  }

  /** The project ids a job list is confined to, or null when projects are not restricted. */
  projectIds(): string[] | null {
    return this.projects ? [...this.projects].filter((p) => this.allowsProject(p)) : null;
  }

  visibleProviders(all: readonly string[]): string[] {
    return all.filter((id) => this.allowsProvider(id));
  }
}

/** The token a request presents: `Authorization: Bearer <token>`, or graphql-ws connectionParams. */
export function presentedToken(headers: Headers | null, connectionParams: Record<string, unknown> | undefined): string | null {
  if (typeof connectionParams?.token === 'string') return connectionParams.token;
  const param = connectionParams?.authorization ?? connectionParams?.Authorization;
  const raw = typeof param === 'string' ? param : (headers?.get('authorization') ?? null);
  const bearer = raw ? /^Bearer\s+(\S+)\s*$/i.exec(raw) : null;
  return bearer ? bearer[1]! : null;
}

export function unauthenticated(): GraphQLError {
  return new GraphQLError('a valid API token is required (Authorization: Bearer <token>)', {
    extensions: { code: 'UNAUTHENTICATED', http: { status: 401, headers: { 'www-authenticate': 'Bearer' } } },
  });
}

/** The scope of a request, or a thrown UNAUTHENTICATED; null = no tokens configured (loopback or open mode). */
export function authenticate(tokens: TokenStore | null, headers: Headers | null, connectionParams?: Record<string, unknown>): AccessScope | null {
  if (!tokens?.configured) return null;
  const token = presentedToken(headers, connectionParams);
  const scope = token ? tokens.lookup(token) : null;
  if (!scope) throw unauthenticated();
  return new AccessScope(scope);
}

/**
 * authenticate() for a plain HTTP request (the scrape target, the query API): its scope, null when
 * no tokens are configured, or the refusal the graph would give (UNAUTHENTICATED), never a throw.
 */
export function authenticateHttp(
  tokens: TokenStore | null,
  req: { headers: { authorization?: string } },
): { scope: AccessScope | null } | { refusal: GraphQLError } {
  try {
    const headers = new Headers();
    if (req.headers.authorization) headers.set('authorization', req.headers.authorization);
    return { scope: authenticate(tokens, headers) };
  } catch (err) {
    return { refusal: err instanceof GraphQLError ? err : unauthenticated() };
  }
}

/** Wraps a by-id loader so rows outside the scope come back as null, like unknown ids. */
function filtered<T>(inner: DataLoader<string, T | null>, visible: (row: T) => Promise<boolean> | boolean): DataLoader<string, T | null> {
  return new DataLoader<string, T | null>(
    async (ids) =>
      Promise.all(
        ids.map(async (id) => {
          try {
            const row = await inner.load(id);
            return row && (await visible(row)) ? row : null;
          } catch (err) {
            return err as Error;
          }
        }),
      ),
    { maxBatchSize: 1000 },
  );
}

/** The request's context narrowed to a token's scope. */
export function scopeContext(base: Context, scope: AccessScope): Context {
  const providers = base.store.providers.narrowed(scope.visibleProviders(base.store.providers.ids()));
  return { ...base, store: base.store.narrowed(providers, (inner) => scopedLoaders(inner, scope)), access: scope };
}

/** The request's loaders narrowed to a token's scope. */
function scopedLoaders(inner: Loaders, scope: AccessScope): Loaders {
  // A project-scoped token answers job ids from the cache only: fetching a cache miss upstream
  // would make an unknown id slow and another project's known job fast, and the difference would
  // tell the token which ids exist. From the cache, both cost one lookup and answer null. (The
  // cache holds every job a list sync has seen; the token's own job lists sync it.)
  const byId = scope.scope.projects === null ? inner.jobById : inner.cachedJobById;
  // Ids of providers outside the scope never reach the store or upstream: same answer as unconfigured ones.
  const jobById = new DataLoader<string, JobRow | null>(
    async (ids) =>
      Promise.all(
        ids.map(async (id) => {
          try {
            const parsed = parseGlobalId(id, 'job');
            if (!scope.allowsProvider(parsed.providerId)) return null;
          } catch {
            // malformed: the inner loader reports it exactly as it would for anyone
          }
          try {
            const row = await byId.load(id);
            return row && scope.allowsJob(row) ? row : null;
          } catch (err) {
            return err as Error;
          }
        }),
      ),
    { maxBatchSize: 1000 },
  );
  const ownJob = async (row: NodeRow | GpuRow) => (await jobById.load(row.jobId)) !== null;
  return {
    ...inner,
    jobById,
    projectById: filtered<ProjectRow>(inner.projectById, (p) => scope.allowsProject(p.id)),
    nodeById: filtered<NodeRow>(inner.nodeById, ownJob),
    gpuById: filtered<GpuRow>(inner.gpuById, ownJob),
  };
}
