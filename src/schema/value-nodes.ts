// Query.node for values: a value's id names its owner (src/domain/value-ids.ts), so it is answered
// by resolving the owner the way its own field would (entities through entities.ts, values through
// this file again) and picking the value from it, through the same loaders and store calls a query
// makes. A value the owner no longer holds (a point of a bucket that moved, an error that is over,
// a live feed that stopped) is null, as is anything this graph did not issue.
import { DomainError } from '../domain/errors.js';
import { DecodedArgError } from './decoded-args.js';
import { ENTITY_KINDS, type EntityKind } from '../domain/ids.js';
import { type ParsedValueId, parseTextPart, parseValueId, type ValueKind, valueKindOf } from '../domain/value-ids.js';
import type { JobRow, ProviderView } from '../store/index.js';
import type { Context } from './context.js';
import { jobById, providerById, seriesById } from './entities.js';
import {
  askFleet,
  type FleetShape,
  type FleetUtilizationShape,
  type GpuHoursShape,
  gpuHoursOf,
  gpuHoursRow,
  type IdleGpuShape,
  type IdleIntervalShape,
  idleGpusOf,
  problemsOf,
  totalRow,
} from './fleet.js';
import {
  askComparison,
  type ComparedRunShape,
  type ComparedSeriesShape,
  type ComparisonShape,
  parseComparedRunPart,
  parseComparedSeriesPart,
  parseComparisonPart,
} from './compare.js';
import { jobListError } from './job-connection.js';
import { type LogGapView, type LogLineView, type LogPageView, logPageOf, type ProgressView, progressOf } from './job.js';
import { type FreshnessView, freshnessError, freshnessView, type PointView, pointsOf, type SeriesView, type SummaryView, summaryOf } from './metric-series.js';
import { type CollectionView, collectionError, collectionView, type HealthView, healthError, healthView } from './provider.js';
import type { SourceErrorShape } from './refs.js';
import { latestSample, type SampleView } from './subscription.js';
import {
  parseFleetPart,
  parseGpuHoursPart,
  parseIdleGpuPart,
  parseIdleIntervalPart,
  parseLogGapPart,
  parseLogLinePart,
  parseLogPagePart,
  parsePointPart,
  parseProblemPart,
  parseSamplePart,
  parseTrainingSummaryPart,
} from './value-ids.js';
import { type JobLabelView, summariesOf, type TrainingSummaryView } from './run-metadata.js';
import type { FigureShape } from './ledger.js';
import { figureById, labelGroupById } from './ledger-fleet.js';
import { type EvidenceShape, evidenceOf, findingOfJob, type FindingSeriesView, type FindingView, seriesOfEvidence } from './finding.js';
import {
  ackNode,
  type AckView,
  matchersNode,
  type MatchersView,
  notificationNode,
  type NotificationView,
  silenceLabelNode,
  type SilenceLabelView,
  silenceNode,
  type SilenceView,
} from './alerts.js';

type Value =
  | HealthView
  | CollectionView
  | FreshnessView
  | SourceErrorShape
  | PointView
  | SummaryView
  | ProgressView
  | JobLabelView
  | TrainingSummaryView
  | LogPageView
  | LogLineView
  | LogGapView
  | SampleView
  | FleetShape
  | FleetUtilizationShape
  | GpuHoursShape
  | IdleGpuShape
  | IdleIntervalShape
  | ComparisonShape
  | ComparedRunShape
  | ComparedSeriesShape
  | FigureShape
  | FindingView
  | EvidenceShape
  | FindingSeriesView
  | NotificationView
  | AckView
  | SilenceView
  | MatchersView
  | SilenceLabelView;

/** The value a value id names, carrying that id; null when it is not one this graph issued or it is gone. */
export async function valueById(ctx: Context, id: string): Promise<(Value & { id: string }) | null> {
  try {
    const value = await resolveValue(ctx, parseValueId(id));
    return value ? { ...value, id } : null;
  } catch (e) {
    // Malformed parts, or arguments the server's limits no longer allow: not an object here.
    // Arguments an id carries that do not fit the field's own (decoded-args.ts) say so: BAD_INPUT.
    if (e instanceof DomainError && (e.code === 'BAD_ID' || e.code === 'BAD_INPUT') && !(e instanceof DecodedArgError)) return null;
    throw e;
  }
}

/** What an owner id names: an entity kind, a value kind, or a provider (an id with no ':'). */
function ownerKindOf(ownerId: string): EntityKind | ValueKind | 'provider' {
  if (!ownerId.includes(':')) return 'provider';
  const value = valueKindOf(ownerId);
  if (value) return value;
  const kind = ownerId.split(':', 2)[1] as EntityKind;
  if (!ENTITY_KINDS.includes(kind)) throw new DomainError('BAD_ID', 'not an id of this graph');
  return kind;
}

/** The owner, when it is of the kind the value needs; null when it is gone (or of another kind: not an id we issued). */
async function owner<T>(ctx: Context, p: ParsedValueId, kind: ValueKind | EntityKind | 'provider'): Promise<T | null> {
  const ownerId = p.ownerId!;
  if (ownerKindOf(ownerId) !== kind) return null;
  switch (kind) {
    case 'provider':
      return providerById(ctx, ownerId) as T | null;
    case 'job':
      return (await jobById(ctx, ownerId)) as T | null;
    case 'series':
      return (await seriesById(ctx, ownerId)) as T | null;
    default: {
      const v = await valueById(ctx, ownerId);
      return v as T | null;
    }
  }
}

async function resolveValue(ctx: Context, p: ParsedValueId): Promise<Value | null> {
  const part = p.part ?? '';
  switch (p.kind) {
    case 'health': {
      const provider = await owner<ProviderView>(ctx, p, 'provider');
      return provider ? healthView(provider) : null;
    }
    case 'collection': {
      const provider = await owner<ProviderView>(ctx, p, 'provider');
      return provider ? collectionView(provider) : null;
    }
    case 'summary': {
      const series = await owner<SeriesView>(ctx, p, 'series');
      return series ? summaryOf(series, ctx) : null;
    }
    case 'point': {
      const key = parsePointPart(part);
      const series = await owner<SeriesView>(ctx, p, 'series');
      if (!series) return null;
      const found = (await pointsOf(series, ctx)).find((pt) => ('ts' in key ? pt.timestamp?.getTime() === key.ts : pt.step === key.step));
      return found ? { timestamp: found.timestamp, step: found.step, value: found.value, series } : null;
    }
    case 'freshness':
      return freshnessById(ctx, p);
    case 'error':
      return errorById(ctx, p);
    case 'problem': {
      const jobId = parseProblemPart(part);
      const fleet = await owner<FleetShape>(ctx, p, 'fleet');
      return fleet ? ((await problemsOf(fleet)).find((e) => e.job?.id === jobId) ?? null) : null;
    }
    case 'progress': {
      const job = await owner<JobRow>(ctx, p, 'job');
      return job ? progressOf(ctx, job) : null;
    }
    case 'label': {
      const key = parseTextPart(part);
      const job = await owner<JobRow>(ctx, p, 'job');
      return job?.labels && Object.hasOwn(job.labels, key) ? { jobId: job.id, key, value: job.labels[key] ?? null } : null;
    }
    case 'runsummary': {
      const name = parseTrainingSummaryPart(part);
      const job = await owner<JobRow>(ctx, p, 'job');
      return job ? ((await summariesOf(ctx, job, [name]))[0] ?? null) : null;
    }
    case 'logpage': {
      const request = parseLogPagePart(part);
      const job = await owner<JobRow>(ctx, p, 'job');
      return job ? logPageOf(ctx, job, checkedLogRequest(ctx, request)) : null;
    }
    case 'logline':
      return logLineById(ctx, p);
    case 'loggap': {
      const after = parseLogGapPart(part);
      const job = await owner<JobRow>(ctx, p, 'job');
      if (!job) return null;
      // The missing lines follow `after`: a page read from there reports them first.
      const page = await logPageOf(ctx, job, { after, since: null, limit: 1 });
      const gap = page.gaps?.find((g) => g.after === after);
      return gap ? { ...gap, jobId: job.id } : null;
    }
    case 'sample': {
      const args = parseSamplePart(part);
      const job = await owner<JobRow>(ctx, p, 'job');
      return job ? latestSample(ctx, job.id, args) : null;
    }
    case 'fleet':
      return askFleet(ctx, parseFleetPart(part));
    case 'comparison':
      return askComparison(ctx, parseComparisonPart(part));
    case 'comparedrun': {
      const jobId = parseComparedRunPart(part);
      const comparison = await owner<ComparisonShape>(ctx, p, 'comparison');
      return comparison?.runs.find((r) => r.jobId === jobId) ?? null;
    }
    case 'comparedseries': {
      const { kind, name } = parseComparedSeriesPart(part);
      const run = await owner<ComparedRunShape>(ctx, p, 'comparedrun');
      return run?.series.find((x) => x.kind === kind && x.name === name) ?? null;
    }
    case 'cost':
    case 'energy':
    case 'efficiency':
      return figureById(
        ctx,
        part,
        () => owner<JobRow>(ctx, p, 'job'),
        () => owner<GpuHoursShape>(ctx, p, 'gpuhours'),
      );
    case 'fleetutilization':
    case 'gpuhours':
    case 'idlegpu':
    case 'idleinterval':
      return resolveGpuValue(ctx, p);
    case 'finding':
    case 'findingevidence':
    case 'findingseries':
    case 'notification':
    case 'acknowledgement':
    case 'silence':
    case 'silencematchers':
    case 'silencelabel':
      return resolveFindingValue(ctx, p);
  }
}

/** resolveValue's GPU-hour and idle-GPU values (a fleet's). */
async function resolveGpuValue(ctx: Context, p: ParsedValueId): Promise<Value | null> {
  const part = p.part ?? '';
  switch (p.kind) {
    case 'fleetutilization': {
      const fleet = await owner<FleetShape>(ctx, p, 'fleet');
      return fleet ? { fleet, rows: await gpuHoursOf(fleet, ctx) } : null;
    }
    case 'gpuhours': {
      const group = parseGpuHoursPart(part);
      const fleet = await owner<FleetShape>(ctx, p, 'fleet');
      if (!fleet) return null;
      const rows = await gpuHoursOf(fleet, ctx);
      if (group.kind === 'total') return totalRow(fleet, rows);
      if (group.kind === 'label') return labelGroupById(ctx, fleet, group.key);
      const row = rows.find((r) => r.kind === group.kind && r.key === group.key);
      if (!row) return null;
      const job = row.kind === 'job' ? (await fleet.prepared).jobs.find((j) => j.id === row.key) : undefined;
      return row.kind === 'job' && !job ? null : gpuHoursRow(fleet, row, job);
    }
    case 'idlegpu': {
      const key = parseIdleGpuPart(part);
      const fleet = await owner<FleetShape>(ctx, p, 'fleet');
      if (!fleet) return null;
      // Every GPU a page of idleGpus can show (the page cap), as it would rank them.
      const gpus = await idleGpusOf(ctx, fleet, key.threshold, key.forAtLeast, ctx.limits.maxPageSize);
      const found = gpus.find((g) => {
        const r = g.runs[0]!;
        return g.job.id === key.jobId && r.scope === key.scope && r.nodeId === key.nodeId && r.gpuId === key.gpuId;
      });
      return found ?? null;
    }
    case 'idleinterval': {
      const from = parseIdleIntervalPart(part);
      const gpu = await owner<IdleGpuShape>(ctx, p, 'idlegpu');
      const run = gpu?.runs.find((r) => r.from.getTime() === from);
      return gpu && run ? { gpu, run } : null;
    }
    default:
      return null;
  }
}

/** resolveValue's findings, their notifications, and silences. */
async function resolveFindingValue(ctx: Context, p: ParsedValueId): Promise<Value | null> {
  const part = p.part ?? '';
  switch (p.kind) {
    case 'finding': {
      if (!/^\d{1,15}$/.test(part)) return null;
      const job = await owner<JobRow>(ctx, p, 'job');
      return job ? findingOfJob(ctx, job.id, Number(part)) : null;
    }
    case 'findingevidence': {
      const finding = await owner<FindingView>(ctx, p, 'finding');
      return finding ? evidenceOf(finding) : null;
    }
    case 'findingseries': {
      const evidence = await owner<EvidenceShape>(ctx, p, 'findingevidence');
      return evidence ? (seriesOfEvidence(evidence).find((x) => String(x.seriesId) === part) ?? null) : null;
    }
    case 'notification': {
      const finding = await owner<FindingView>(ctx, p, 'finding');
      return finding ? notificationNode(ctx, finding, part) : null;
    }
    case 'acknowledgement': {
      const finding = await owner<FindingView>(ctx, p, 'finding');
      return finding ? ackNode(ctx, finding) : null;
    }
    case 'silence':
      return /^\d{1,15}$/.test(part) ? silenceNode(ctx, part) : null;
    case 'silencematchers': {
      const silence = await owner<SilenceView>(ctx, p, 'silence');
      return silence ? matchersNode(silence) : null;
    }
    case 'silencelabel': {
      const matchers = await owner<MatchersView>(ctx, p, 'silencematchers');
      return matchers ? silenceLabelNode(matchers, part) : null;
    }
    default:
      return null;
  }
}

async function freshnessById(ctx: Context, p: ParsedValueId): Promise<FreshnessView | null> {
  const ownerId = p.ownerId!;
  switch (ownerKindOf(ownerId)) {
    case 'series': {
      const series = await owner<SeriesView>(ctx, p, 'series');
      return series ? freshnessView(series.freshness, series.id) : null;
    }
    case 'job': {
      // A job's own freshness is its topology's (Job.topologyFreshness).
      const job = await owner<JobRow>(ctx, p, 'job');
      return job ? freshnessView(await ctx.store.loaders.topology.load(job), job.id) : null;
    }
    case 'progress': {
      const progress = await owner<ProgressView & { id: string }>(ctx, p, 'progress');
      return progress ? freshnessView(progress.freshness, progress.id) : null;
    }
    default:
      return null;
  }
}

async function errorById(ctx: Context, p: ParsedValueId): Promise<SourceErrorShape | null> {
  switch (ownerKindOf(p.ownerId!)) {
    case 'freshness': {
      const freshness = await owner<FreshnessView>(ctx, p, 'freshness');
      return freshness ? freshnessError(freshness) : null;
    }
    case 'health': {
      const health = await owner<HealthView>(ctx, p, 'health');
      return health ? healthError(health) : null;
    }
    case 'collection': {
      const collection = await owner<CollectionView>(ctx, p, 'collection');
      return collection ? collectionError(collection) : null;
    }
    case 'provider': {
      // A provider's job list: the refresh a jobs connection makes, failed (JobConnection.sourceErrors).
      const provider = await owner<ProviderView>(ctx, p, 'provider');
      if (!provider) return null;
      const freshness = (await ctx.store.syncJobLists([provider.id])).get(provider.id);
      return freshness?.error ? jobListError(provider.id, freshness) : null;
    }
    case 'comparedrun': {
      const run = await owner<ComparedRunShape>(ctx, p, 'comparedrun');
      return run?.error ?? null;
    }
    default:
      return null;
  }
}

/**
 * A log line is the first line after where its id says it sits. A page of one line is read from
 * there; when that page holds only lines the platform could not deliver (gaps) or skipped, one more
 * page, as large as the server allows, is read from where it ended.
 */
async function logLineById(ctx: Context, p: ParsedValueId): Promise<LogLineView | null> {
  const position = parseLogLinePart(p.part ?? '');
  const job = await owner<JobRow>(ctx, p, 'job');
  if (!job) return null;
  let after = 'after' in position ? position.after : null;
  const since = 'since' in position ? position.since : null;
  for (const limit of [1, ctx.limits.maxLogLines]) {
    const page = await ctx.store.logs(job, { after, since, limit });
    const line = page.lines[0];
    if (line) return { ...line, jobId: job.id, position };
    if (!page.nextCursor || page.nextCursor === after) return null;
    after = page.nextCursor;
  }
  return null;
}

function checkedLogRequest(ctx: Context, r: { after: string | null; since: Date | null; limit: number }) {
  if (!(Number.isInteger(r.limit) && r.limit >= 0 && r.limit <= ctx.limits.maxLogLines)) {
    throw new DomainError('BAD_INPUT', `a log page holds at most ${ctx.limits.maxLogLines} lines`);
  }
  return r;
}
