// The one Context type every resolver sees: the request's store (loaders over the read-through
// cache, the providers it may see), the limits, the live hub and the caller's access scope.
import type { GraphQLError } from 'graphql';
import type { LedgerSettings } from '../domain/ledger.js';
import type { LiveHub } from '../live/hub.js';
import type { RequestStore } from '../store/index.js';

export interface Limits {
  /** Page size of connections when `first` is not given, and its cap. */
  defaultPageSize: number;
  maxPageSize: number;
  /** Points per series when `maxPoints` is not given, and its cap. */
  defaultMaxPoints: number;
  maxPointsCap: number;
  /** Log lines per page when `first` is not given, and its cap. */
  defaultLogLines: number;
  maxLogLines: number;
  /** Widest [from, to] a series question may ask for, in days (both ends given). */
  maxRangeDays?: number;
}

export const DEFAULT_LIMITS: Limits = {
  defaultPageSize: 50,
  maxPageSize: 500,
  defaultMaxPoints: 500,
  maxPointsCap: 10_000,
  defaultLogLines: 200,
  maxLogLines: 1000,
  maxRangeDays: 366,
};

/** What an API token may see (src/server/access.ts implements it). */
export interface Access {
  readonly name: string;
  allowsProvider(providerId: string): boolean;
  allowsProject(projectId: string): boolean;
  allowsJob(job: { providerId: string; projectId: string }): boolean;
  /** The project ids a job list is confined to, or null when projects are not restricted. */
  projectIds(): string[] | null;
  /** The providers it may see, or null when not restricted. */
  providerIds(): string[] | null;
  /** May silence and acknowledge findings (the token's `write: true`). */
  readonly mayWrite: boolean;
}

export interface Context {
  store: RequestStore;
  limits: Limits;
  /** Shared live feeds for subscriptions; absent where a server runs without them. */
  live?: LiveHub;
  /** The API token's scope; absent or null when no tokens are configured. */
  access?: Access | null;
  /**
   * Stale-data errors the resolvers reported for this answer, by path (src/schema/staleness.ts);
   * made by the first report (most answers have none, and a live subscription's context lives as
   * long as it does).
   */
  staleErrors?: Map<string, GraphQLError>;
  /** What `_service { sdl }` answers when SUBGRAPH_TYPE_NAMES renames types in it (src/schema/subgraph-names.ts); absent = the SDL as built. */
  subgraphSdl?: string;
  /** The ledger's price table, average power and MFU peaks (the providers file's `ledger`); absent = no prices. */
  ledger?: LedgerSettings;
}
