// The id of every value type, built from its owner's id (src/domain/value-ids.ts has the format),
// and the parts of it that Query.node reads back (value-nodes.ts). Builders are called from `id`
// resolvers only, so a value whose id is not selected costs nothing.
import type { Aggregation, MetricScope, SystemMetric } from '../domain/types.js';
import { fleetValueId, jsonPart, parseJsonPart, parseTextPart, textPart, valueId } from '../domain/value-ids.js';
import { DomainError } from '../domain/errors.js';
import type { JobFilterInput } from './job-filter.js';
import { decodedArgs } from './decoded-args.js';

/** The id field's description, per value type: what it is derived from, and how long it holds. */
export const ID_DOCS = {
  ProviderHealth: "Global id (a Node id): the provider's health, `<providerId>:health:<providerId>`; one per provider, stable",
  ProviderCollection: "Global id (a Node id): the provider's collection, `<providerId>:collection:<providerId>`; one per provider, stable",
  Freshness:
    "Global id (a Node id): derived from the id of what it describes (a series, a job's topology, a job's progress), `<prefix>:freshness:<owner id>`; stable, so a refresh updates the same cache entry",
  SourceError:
    'Global id (a Node id): derived from what failed, `<prefix>:error:<id of the Freshness, ProviderHealth or Provider (its job list)>`, or for a fleet problem `*:problem:<job>:<fleet id>`; stable while the failure lasts (Query.node answers null once it is over)',
  MetricPoint:
    "Global id (a Node id): the series' id plus the point's time (`t<epoch ms>`) or, in a step-keyed series, its step (`s<step>`), `<prefix>:point:<t|s…>:<series id>`. The same in every answer and live sample holding this point of this series asked the same way; a point of a downsampled bucket is its bucket's first. Opaque, about as long as the series id: select it only when a cache needs it (it costs bytes per point; the `timestamps`/`values` columns carry none)",
  MetricSummary: "Global id (a Node id): the series' id, `<prefix>:summary:<series id>`; stable, so new points update the same cache entry",
  JobProgress: "Global id (a Node id): the job's id, `<providerId>:progress:<job id>`; stable",
  JobLabel: "Global id (a Node id): the job's id plus the label's key, `<providerId>:label:<key>:<job id>`; stable while the label exists",
  TrainingMetricSummary:
    "Global id (a Node id): the job's id plus the metric's name, `<providerId>:runsummary:<name>:<job id>`; stable, so new points update the same cache entry",
  LogPage:
    "Global id (a Node id): the job's id plus the page's `after`, `since` and page size; the same page asked again has the same id (and Query.node reads it again)",
  LogLine:
    "Global id (a Node id): the job's id plus where the line sits: after the previous line's cursor (or the page's `after`), or first at or after `since`, or first of the log. The same line read on from the same place has the same id, in Job.logs and in jobLogs",
  LogGap: "Global id (a Node id): the job's id plus the cursor the missing lines follow (`after`); stable",
  UtilizationSample:
    "Global id (a Node id): the job's id plus the subscription's names, scope, maxPoints and aggregation: every sample of one feed has the same id (the entry holds the latest); Query.node answers the latest sample while the feed runs on this server, null otherwise",
  Fleet: 'Global id (a Node id): the question, `*:fleet:<filter, from and to>`; the same arguments give the same id (and Query.node asks the question again)',
  FleetUtilization: "Global id (a Node id): the fleet's id, `*:fleetutilization:<fleet id>`; stable",
  GpuHours:
    "Global id (a Node id): the fleet's id plus the group (total, or provider, project, GPU model, owner, label or job and its key), `*:gpuhours:<group>:<fleet id>`; stable",
  IdleGpu:
    "Global id (a Node id): the fleet's id plus idleGpus' threshold and forAtLeast and the series' job, scope, node and GPU, `*:idlegpu:<…>:<fleet id>`; stable",
  Cost: "Global id (a Node id): a job's is the job's id plus the window asked (`<providerId>:cost:<window>:<job id>`), a fleet group's the group's id (`*:cost:g:<GpuHours id>`); stable",
  Energy:
    "Global id (a Node id): a job's is the job's id plus the window asked (`<providerId>:energy:<window>:<job id>`), a fleet group's the group's id (`*:energy:g:<GpuHours id>`); stable",
  Efficiency:
    "Global id (a Node id): a job's is the job's id plus the window asked (`<providerId>:efficiency:<window>:<job id>`), a fleet group's the group's id (`*:efficiency:g:<GpuHours id>`); stable",
  IdleInterval: "Global id (a Node id): the idle GPU's id plus the stretch's start (epoch ms), `*:idleinterval:<ms>:<idle GPU id>`; stable",
} as const;

export const healthId = (providerId: string) => valueId('health', providerId);
export const collectionId = (providerId: string) => valueId('collection', providerId);
export const freshnessId = (ownerId: string) => valueId('freshness', ownerId);
export const errorId = (ownerId: string) => valueId('error', ownerId);
export const summaryId = (seriesId: string) => valueId('summary', seriesId);
export const progressId = (jobId: string) => valueId('progress', jobId);
export const labelId = (jobId: string, key: string) => valueId('label', jobId, textPart(key));
export const trainingSummaryId = (jobId: string, name: string) => valueId('runsummary', jobId, textPart(name));
export const parseTrainingSummaryPart = (part: string) => parseTextPart(part);
export const fleetUtilizationId = (fleetId: string) => valueId('fleetutilization', fleetId);

export const problemId = (fleetId: string, jobId: string) => valueId('problem', fleetId, textPart(jobId));
export const parseProblemPart = (part: string) => parseTextPart(part);

// ---- points ----------------------------------------------------------------------------------

/** A point's key in its series: its time in a time-keyed series, its step in a step-keyed one. */
export type PointKey = { ts: number } | { step: number };

export function pointId(seriesId: string, keyedBy: string, p: { timestamp: Date | null; step: number | null }): string {
  const key = keyedBy === 'step' && p.step !== null ? `s${p.step}` : p.timestamp !== null ? `t${p.timestamp.getTime()}` : `s${p.step}`;
  return valueId('point', seriesId, key);
}

export function parsePointPart(part: string): PointKey {
  const m = /^([ts])(-?\d{1,16})$/.exec(part);
  if (!m) throw badPart();
  return m[1] === 't' ? { ts: Number(m[2]) } : { step: Number(m[2]) };
}

// ---- logs ------------------------------------------------------------------------------------

export interface LogPageArgs {
  after: string | null;
  since: Date | null;
  /** The page size as checked (the default applied). */
  limit: number;
}

export const logPageId = (jobId: string, a: LogPageArgs) => valueId('logpage', jobId, jsonPart([a.after, a.since?.getTime() ?? null, a.limit]));

export function parseLogPagePart(part: string): LogPageArgs {
  const v = parseJsonPart(part);
  if (Array.isArray(v) && v.length === 3) {
    const [after, since, limit] = v as unknown[];
    const when = since === null ? null : new Date(since as number);
    if (
      (after === null || typeof after === 'string') &&
      (when === null || (Number.isInteger(since) && !Number.isNaN(when.getTime()))) &&
      Number.isInteger(limit)
    ) {
      return { after: after as string | null, since: when, limit: decodedArgs('Job.logs', { first: limit as number }, 'id').first };
    }
  }
  throw badPart();
}

/** Where a log line sits: right after a cursor, first at or after a time, or first of the log. */
export type LinePosition = { after: string } | { since: Date } | { start: true };

/** The position of each line of a page read after `after` (or from `since`): after the line before it. */
export function linePositions(lines: readonly { cursor: string }[], after: string | null, since: Date | null): LinePosition[] {
  return lines.map((_, i) => (i > 0 ? { after: lines[i - 1]!.cursor } : after !== null ? { after } : since !== null ? { since } : { start: true as const }));
}

export function logLineId(jobId: string, p: LinePosition): string {
  const part = 'after' in p ? `a${textPart(p.after)}` : 'since' in p ? `s${p.since.getTime()}` : '0';
  return valueId('logline', jobId, part);
}

export function parseLogLinePart(part: string): LinePosition {
  if (part === '0') return { start: true };
  if (part.startsWith('a')) return { after: parseTextPart(part.slice(1)) };
  const m = /^s(-?\d{1,16})$/.exec(part);
  if (m) return { since: new Date(Number(m[1])) };
  throw badPart();
}

export const logGapId = (jobId: string, after: string | null) => valueId('loggap', jobId, after === null ? '0' : `a${textPart(after)}`);

export function parseLogGapPart(part: string): string | null {
  if (part === '0') return null;
  if (part.startsWith('a')) return parseTextPart(part.slice(1));
  throw badPart();
}

// ---- live samples ----------------------------------------------------------------------------

export interface SampleArgs {
  names: readonly SystemMetric[] | null;
  scope: MetricScope | null;
  maxPoints: number;
  aggregation: Aggregation;
}

export const sampleId = (jobId: string, a: SampleArgs) =>
  valueId('sample', jobId, jsonPart([a.names?.length ? a.names : null, a.scope ?? null, a.maxPoints, a.aggregation]));

export function parseSamplePart(part: string): SampleArgs {
  const v = parseJsonPart(part);
  if (Array.isArray(v) && v.length === 4) {
    const [names, scope, maxPoints, aggregation] = v as unknown[];
    // The subscription's own arguments, checked as it checks them; maxPoints and aggregation are never absent in an id.
    if (Number.isInteger(maxPoints) && typeof aggregation === 'string') {
      return decodedArgs(
        'Subscription.jobUtilization',
        { names: names as SystemMetric[] | null, scope: scope as MetricScope | null, maxPoints: maxPoints as number, aggregation: aggregation as Aggregation },
        'id',
      );
    }
  }
  throw badPart();
}

// ---- the fleet -------------------------------------------------------------------------------

export interface FleetArgs {
  /** The JobFilter as given, null when absent. */
  filter: JobFilterInput | null;
  from: Date;
  to: Date;
}

/** Null and absent filter fields mean the same: dropped, so both spellings of a question share an id. */
function compactFilter(filter: object | null | undefined): Record<string, unknown> | null {
  if (!filter) return null;
  const kept = Object.entries(filter).filter(([, v]) => v !== null && v !== undefined);
  return kept.length ? Object.fromEntries(kept) : null;
}

export const fleetId = (a: FleetArgs) => fleetValueId(jsonPart([compactFilter(a.filter), a.from.toISOString(), a.to.toISOString()]));

export function parseFleetPart(part: string): FleetArgs {
  const v = parseJsonPart(part);
  if (Array.isArray(v) && v.length === 3) {
    const [filter, from, to] = v as unknown[];
    // Checked as Query.fleet's own arguments: a forged filter or window is BAD_INPUT, not a crash in the store.
    return decodedArgs('Query.fleet', { filter: filter as JobFilterInput | null, from: from as Date, to: to as Date }, 'id');
  }
  throw badPart();
}

export type GpuHoursGroup = { kind: 'total'; key: null } | { kind: 'job' | 'provider' | 'project' | 'model' | 'owner' | 'label'; key: string };

export const gpuHoursId = (fleet: string, g: { kind: string; key: string | null }) =>
  valueId('gpuhours', fleet, g.kind === 'total' || g.key === null ? 'total' : `${g.kind}.${textPart(g.key)}`);

export function parseGpuHoursPart(part: string): GpuHoursGroup {
  if (part === 'total') return { kind: 'total', key: null };
  const m = /^(job|provider|project|model|owner|label)\.([A-Za-z0-9_-]*)$/.exec(part);
  if (!m) throw badPart();
  return { kind: m[1] as 'job', key: parseTextPart(m[2]!) };
}

export interface IdleGpuKey {
  threshold: number;
  forAtLeast: number;
  jobId: string;
  scope: string;
  nodeId: string | null;
  gpuId: string | null;
}

export const idleGpuId = (fleet: string, k: IdleGpuKey) =>
  valueId('idlegpu', fleet, jsonPart([k.threshold, k.forAtLeast, k.jobId, k.scope, k.nodeId, k.gpuId]));

export function parseIdleGpuPart(part: string): IdleGpuKey {
  const v = parseJsonPart(part);
  if (Array.isArray(v) && v.length === 6) {
    const [threshold, forAtLeast, jobId, scope, nodeId, gpuId] = v as unknown[];
    if (
      typeof threshold === 'number' &&
      Number.isFinite(threshold) &&
      typeof forAtLeast === 'number' &&
      Number.isFinite(forAtLeast) &&
      typeof jobId === 'string' &&
      typeof scope === 'string' &&
      (nodeId === null || typeof nodeId === 'string') &&
      (gpuId === null || typeof gpuId === 'string')
    ) {
      return { threshold, forAtLeast, jobId, scope, nodeId, gpuId };
    }
  }
  throw badPart();
}

export const idleIntervalId = (idleGpu: string, from: Date) => valueId('idleinterval', idleGpu, String(from.getTime()));

export function parseIdleIntervalPart(part: string): number {
  if (!/^-?\d{1,16}$/.test(part)) throw badPart();
  return Number(part);
}

function badPart() {
  return new DomainError('BAD_ID', 'not an id of this graph');
}
