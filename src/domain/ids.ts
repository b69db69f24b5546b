// Global ids are readable and stable: `<providerId>:<kind>:<external key>` (a provider's id is
// its config id). The same object gets the
// same id across restarts and replicas because it is derived only from upstream identity.
import { DomainError } from './errors.js';

export const ENTITY_KINDS = ['project', 'job', 'node', 'gpu'] as const;
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
