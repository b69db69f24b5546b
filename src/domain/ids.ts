// Global ids are readable and stable: `<providerId>:<kind>:<external key>` (a provider's id is
// its config id). The same object gets the
// same id across restarts and replicas because it is derived only from upstream identity.
import { DomainError } from './errors.js';

export const ENTITY_KINDS = ['project', 'job', 'node', 'gpu', 'series'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

const PROVIDER_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function isValidProviderId(id: string): boolean {
  return PROVIDER_ID_PATTERN.test(id);
}

export function projectGlobalId(providerId: string, projectExternalId: string): string {
  return `${providerId}:project:${projectExternalId}`;
}

export function jobGlobalId(providerId: string, jobExternalId: string): string {
  return `${providerId}:job:${jobExternalId}`;
}

// Node and GPU keys nest the job key; '/' cannot be used as a separator because Runicorn
// run paths contain it, so the node name is appended after a '#'.
export function nodeGlobalId(providerId: string, jobExternalId: string, nodeExternalId: string): string {
  return `${providerId}:node:${jobExternalId}#${nodeExternalId}`;
}

export function gpuGlobalId(providerId: string, jobExternalId: string, nodeExternalId: string, index: number): string {
  return `${providerId}:gpu:${jobExternalId}#${nodeExternalId}#${index}`;
}

/**
 * A metric series as a field answered it: the stored series (its key names job, kind, metric,
 * source, stage, node and GPU) plus the window and shaping asked for, because the same series
 * asked with other points is another object to a client cache. Opaque (base64url JSON), stable.
 */
export interface SeriesIdParts {
  seriesKey: string;
  from: Date | null;
  to: Date | null;
  maxPoints: number;
  aggregation: string;
}

export function seriesGlobalId(providerId: string, p: SeriesIdParts): string {
  const tail = JSON.stringify([p.seriesKey, p.from?.toISOString() ?? null, p.to?.toISOString() ?? null, p.maxPoints, p.aggregation]);
  return `${providerId}:series:${Buffer.from(tail, 'utf8').toString('base64url')}`;
}

/** The parts of a series id; throws BAD_ID for anything seriesGlobalId did not write. */
export function parseSeriesId(id: string): SeriesIdParts & { providerId: string } {
  const { providerId, key } = parseGlobalId(id, 'series');
  try {
    const [seriesKey, from, to, maxPoints, aggregation] = JSON.parse(Buffer.from(key, 'base64url').toString('utf8')) as unknown[];
    if (
      typeof seriesKey === 'string' &&
      seriesKey.startsWith(`${providerId}:job:`) &&
      (from === null || typeof from === 'string') &&
      (to === null || typeof to === 'string') &&
      typeof maxPoints === 'number' &&
      typeof aggregation === 'string'
    ) {
      const f = from === null ? null : new Date(from);
      const t = to === null ? null : new Date(to);
      if ((f === null || !Number.isNaN(f.getTime())) && (t === null || !Number.isNaN(t.getTime()))) {
        return { providerId, seriesKey, from: f, to: t, maxPoints, aggregation };
      }
    }
  } catch {
    // fall through to the coded error
  }
  throw new DomainError('BAD_ID', `"${truncate(id)}" is not an id of this graph`);
}

export interface ParsedId {
  providerId: string;
  kind: EntityKind;
  key: string;
}

export function parseGlobalId(id: string, expected?: EntityKind): ParsedId {
  const first = id.indexOf(':');
  const second = first < 0 ? -1 : id.indexOf(':', first + 1);
  if (first <= 0 || second < 0 || id.length > 1024) {
    throw new DomainError('BAD_ID', `"${truncate(id)}" is not an id of this graph`);
  }
  const providerId = id.slice(0, first);
  const kind = id.slice(first + 1, second) as EntityKind;
  const key = id.slice(second + 1);
  if (!isValidProviderId(providerId) || !ENTITY_KINDS.includes(kind) || key.length === 0) {
    throw new DomainError('BAD_ID', `"${truncate(id)}" is not an id of this graph`);
  }
  if (expected && kind !== expected) {
    throw new DomainError('BAD_ID', `"${truncate(id)}" is a ${kind} id, expected a ${expected} id`);
  }
  return { providerId, kind, key };
}

function truncate(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
