// The one Context type every resolver sees: request-scoped loaders over the read-through store.
import type { LiveHub } from '../live/hub.js';
import type { AccessScope } from '../server/access.js';
import type { ProviderSet } from '../providers/provider-set.js';
import type { Loaders } from '../store/loaders.js';
import type { ReadThrough } from '../store/read-through.js';

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

export interface Context {
  loaders: Loaders;
  readThrough: ReadThrough;
  providers: ProviderSet;
  limits: Limits;
  /** Shared live feeds for subscriptions; absent where a server runs without them. */
  live?: LiveHub;
  /** The API token's scope; absent or null when no tokens are configured. */
  access?: AccessScope | null;
}
