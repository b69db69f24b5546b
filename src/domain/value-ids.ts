// Ids of the graph's values: objects that belong to an entity (a series' points, summary and
// freshness, a job's progress and log lines, a provider's health, an error of any of them) or to a
// question (the fleet, its roll-ups, idle GPUs and problems). A value's id is derived from its
// owner's id plus, where the owner holds several, the value's natural key within it (a point's
// time or step, a roll-up row's group), never from its content: it is as stable as its owner's id,
// so the same point of the same series has the same id in every answer, query or live sample, and
// a value that changes keeps its id (a cache updates the entry in place). Every value is a Relay
// Node: Query.node resolves the owner and picks the value from it (src/schema/value-nodes.ts).
//
// Format, following the entity ids' `<providerId>:<kind>:<key>` (src/domain/ids.ts):
//   `<prefix>:<kind>:<ownerId>`           kinds whose owner holds one (a series' summary)
//   `<prefix>:<kind>:<part>:<ownerId>`    kinds whose owner holds several (a point: `t<epoch ms>`)
//   `*:fleet:<part>`                      the fleet: a question, owned by nothing
// <prefix> is the owner id's own prefix (its provider, `*` under the fleet) and <part> holds no
// ':', so the owner id, whatever it holds, is the rest of the id.
import { DomainError } from './errors.js';
import { isValidProviderId } from './ids.js';

/** Per kind: whether the id has a <part>, and the GraphQL type it names. */
export const VALUE_KINDS = {
  health: { part: false, type: 'ProviderHealth' },
  collection: { part: false, type: 'ProviderCollection' },
  freshness: { part: false, type: 'Freshness' },
  error: { part: false, type: 'SourceError' },
  problem: { part: true, type: 'SourceError' },
  point: { part: true, type: 'MetricPoint' },
  summary: { part: false, type: 'MetricSummary' },
  progress: { part: false, type: 'JobProgress' },
  label: { part: true, type: 'JobLabel' },
  runsummary: { part: true, type: 'TrainingMetricSummary' },
  logpage: { part: true, type: 'LogPage' },
  logline: { part: true, type: 'LogLine' },
  loggap: { part: true, type: 'LogGap' },
  sample: { part: true, type: 'UtilizationSample' },
  fleet: { part: true, type: 'Fleet' },
  fleetutilization: { part: false, type: 'FleetUtilization' },
  gpuhours: { part: true, type: 'GpuHours' },
  idlegpu: { part: true, type: 'IdleGpu' },
  idleinterval: { part: true, type: 'IdleInterval' },
  cost: { part: true, type: 'Cost' },
  energy: { part: true, type: 'Energy' },
  efficiency: { part: true, type: 'Efficiency' },
  comparison: { part: true, type: 'RunComparison' },
  comparedrun: { part: true, type: 'ComparedRun' },
  comparedseries: { part: true, type: 'ComparedSeries' },
  finding: { part: true, type: 'Finding' },
  findingevidence: { part: false, type: 'FindingEvidence' },
  findingseries: { part: true, type: 'FindingSeriesEvidence' },
  notification: { part: true, type: 'AlertNotification' },
  acknowledgement: { part: false, type: 'FindingAcknowledgement' },
  silence: { part: true, type: 'Silence' },
  silencematchers: { part: false, type: 'SilenceMatchers' },
  silencelabel: { part: true, type: 'SilenceLabel' },
} as const;
export type ValueKind = keyof typeof VALUE_KINDS;

/** The prefix of the fleet's ids and of everything under it: it spans providers. */
export const FLEET_PREFIX = '*';

/** Value ids nest their owner's; the deepest (an idle interval of the fleet) stays well under this. */
export const MAX_VALUE_ID_LENGTH = 4096;

export function isValueKind(kind: string): kind is ValueKind {
  return Object.hasOwn(VALUE_KINDS, kind);
}

/** The kind an id names (its second segment), if it is a value kind. */
export function valueKindOf(id: string): ValueKind | null {
  const kind = id.split(':', 2)[1];
  return kind !== undefined && isValueKind(kind) ? kind : null;
}

/** The prefix of an id: a provider id (itself a Provider's whole id), or `*` under the fleet. */
function prefixOf(ownerId: string): string {
  const colon = ownerId.indexOf(':');
  return colon < 0 ? ownerId : ownerId.slice(0, colon);
}

/** The id of a value its owner holds one of (`part` omitted) or several of (`part` names which). */
export function valueId(kind: Exclude<ValueKind, 'fleet' | 'comparison' | 'silence'>, ownerId: string, part?: string): string {
  return part === undefined ? `${prefixOf(ownerId)}:${kind}:${ownerId}` : `${prefixOf(ownerId)}:${kind}:${part}:${ownerId}`;
}

/** Kinds that are questions owned by nothing (their arguments are their part), under the `*` prefix. */
const QUESTION_KINDS = new Set<ValueKind>(['fleet', 'comparison', 'silence']);

/** The fleet's id: its question's arguments as a part. */
export function fleetValueId(part: string): string {
  return `${FLEET_PREFIX}:fleet:${part}`;
}

/** A silence's id: its number as a part (a silence spans providers). */
export function silenceValueId(n: number): string {
  return `${FLEET_PREFIX}:silence:${n}`;
}

/** A run comparison's id: its arguments as a part. */
export function comparisonValueId(part: string): string {
  return `${FLEET_PREFIX}:comparison:${part}`;
}

export interface ParsedValueId {
  prefix: string;
  kind: ValueKind;
  /** The value's key within its owner; null for kinds without one. */
  part: string | null;
  /** The owner's id (an entity's or another value's); null for the fleet. */
  ownerId: string | null;
}

/** The parts of a value id; throws BAD_ID for anything valueId / fleetValueId did not write. */
export function parseValueId(id: string): ParsedValueId {
  const bad = () => new DomainError('BAD_ID', `"${id.length > 80 ? `${id.slice(0, 77)}...` : id}" is not an id of this graph`);
  if (id.length > MAX_VALUE_ID_LENGTH) throw bad();
  const first = id.indexOf(':');
  const second = first < 0 ? -1 : id.indexOf(':', first + 1);
  if (first <= 0 || second < 0) throw bad();
  const prefix = id.slice(0, first);
  const kind = id.slice(first + 1, second);
  if (!isValueKind(kind) || !(prefix === FLEET_PREFIX || isValidProviderId(prefix))) throw bad();
  let rest = id.slice(second + 1);
  let part: string | null = null;
  if (VALUE_KINDS[kind].part) {
    const colon = rest.indexOf(':');
    part = colon < 0 ? rest : rest.slice(0, colon);
    rest = colon < 0 ? '' : rest.slice(colon + 1);
    if (part.length === 0) throw bad();
  }
  if (QUESTION_KINDS.has(kind)) {
    if (prefix !== FLEET_PREFIX || rest.length > 0) throw bad();
    return { prefix, kind, part, ownerId: null };
  }
  if (rest.length === 0 || prefixOf(rest) !== prefix) throw bad();
  return { prefix, kind, part, ownerId: rest };
}

/** A part holding any JSON value (arguments, several keys): base64url, so it holds no ':'. */
export function jsonPart(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

/** The value jsonPart wrote; throws BAD_ID for anything else. */
export function parseJsonPart(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    throw new DomainError('BAD_ID', 'not an id of this graph');
  }
}

/** A part holding one string (a cursor, a project id): base64url, so it holds no ':'. */
export function textPart(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

export function parseTextPart(part: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) throw new DomainError('BAD_ID', 'not an id of this graph');
  return Buffer.from(part, 'base64url').toString('utf8');
}
