// JobFilter and JobOrder: the inputs every job list takes, resolved against the configured providers.
import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import type { JobStatus, ProviderKind } from '../domain/types.js';
import type { PriceEntry } from '../domain/ledger.js';
import { DEFAULT_JOB_ORDER, type JobFilter, type JobOrder, type JobOrderKey, type WasteStep } from '../store/index.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { JobOrderFieldEnum, JobStatusFilterEnum, ProviderKindEnum, SortDirectionEnum, SummaryValueEnum } from './enums.js';

interface TimeWindowInput {
  from?: Date | null;
  to?: Date | null;
}

interface LabelInput {
  key: string;
  value?: string | null;
}

interface SummaryConditionInput {
  metric: string;
  value?: 'LATEST' | 'BEST' | null;
  gt?: number | null;
  gte?: number | null;
  lt?: number | null;
  lte?: number | null;
}

export interface JobFilterInput {
  providerIds?: readonly (string | number)[] | null;
  kinds?: readonly ProviderKind[] | null;
  statuses?: readonly JobStatus[] | null;
  projectId?: string | number | null;
  nameContains?: string | null;
  labels?: readonly LabelInput[] | null;
  owners?: readonly string[] | null;
  created?: TimeWindowInput | null;
  started?: TimeWindowInput | null;
  finished?: TimeWindowInput | null;
  hasTrainingMetrics?: readonly string[] | null;
  summary?: readonly SummaryConditionInput[] | null;
}

export interface JobOrderInput {
  field: JobOrderKey;
  direction?: 'ASC' | 'DESC' | null;
  summary?: { metric: string; value?: 'LATEST' | 'BEST' | null } | null;
}

/** At most this many conditions of each list kind (labels, owners, metrics, summary conditions) in one filter. */
export const MAX_FILTER_CONDITIONS = 20;

const TimeWindowRef = builder.inputRef<TimeWindowInput>('TimeWindow').implement({
  description: 'A window of instants, both ends inclusive; an open end is unbounded. A job without the instant does not match',
  fields: (t) => ({
    from: t.field({ type: 'DateTime', required: false, description: 'Earliest instant (inclusive); default: unbounded' }),
    to: t.field({ type: 'DateTime', required: false, description: 'Latest instant (inclusive); default: unbounded' }),
  }),
});

const LabelConditionRef = builder.inputRef<LabelInput>('LabelCondition').implement({
  description: 'A label the job must have (Job.labels)',
  fields: (t) => ({
    key: t.string({ required: true, description: 'The label key (a Runicorn tag is a key), 1..200 characters' }),
    value: t.string({
      required: false,
      description: 'The exact value, at most 1000 characters; omitted: any value (the key is present); null: a bare tag without a value',
    }),
  }),
});

const SummaryConditionRef = builder.inputRef<SummaryConditionInput>('SummaryCondition').implement({
  description:
    "A condition on a training metric's summary value (Job.summary), in the metric's own unit; at least one of gt, gte, lt, lte. Jobs whose summary is not cached do not match",
  fields: (t) => ({
    metric: t.string({ required: true, description: 'The metric name as the platform logs it (e.g. "val_acc"), 1..200 characters' }),
    value: t.field({ type: SummaryValueEnum, required: false, description: 'Which summary value; default LATEST' }),
    gt: t.float({ required: false, description: 'Greater than' }),
    gte: t.float({ required: false, description: 'Greater than or equal' }),
    lt: t.float({ required: false, description: 'Less than' }),
    lte: t.float({ required: false, description: 'Less than or equal' }),
  }),
});

const SummaryOrderRef = builder.inputRef<NonNullable<JobOrderInput['summary']>>('SummaryOrder').implement({
  description: 'The summary value a SUMMARY ordering reads',
  fields: (t) => ({
    metric: t.string({ required: true, description: 'The metric name as the platform logs it, 1..200 characters' }),
    value: t.field({ type: SummaryValueEnum, required: false, description: 'Which summary value; default LATEST' }),
  }),
});

export const JobOrderRef = builder.inputRef<JobOrderInput>('JobOrder').implement({
  description: 'How a job list is ordered; ties by job id in the same direction, so cursors stay stable',
  fields: (t) => ({
    field: t.field({ type: JobOrderFieldEnum, required: true, description: 'What to order by' }),
    direction: t.field({ type: SortDirectionEnum, required: false, description: 'Default DESC' }),
    summary: t.field({ type: SummaryOrderRef, required: false, description: 'Required with field SUMMARY, refused otherwise' }),
  }),
});

export const JobFilterRef = builder.inputRef<JobFilterInput>('JobFilter').implement({
  description: 'All given conditions must hold',
  fields: (t) => ({
    providerIds: t.idList({ required: false, description: 'Only jobs of these providers (ids from the providers file); default: all' }),
    kinds: t.field({ type: [ProviderKindEnum], required: false, description: 'Only jobs on these platforms; default: all' }),
    statuses: t.field({ type: [JobStatusFilterEnum], required: false, description: 'Only jobs in these statuses; default: any' }),
    projectId: t.id({ required: false, description: 'Only jobs of this project (a Project id); default: any' }),
    nameContains: t.string({ required: false, description: 'Case-insensitive substring of the job name, at most 200 characters; default: any name' }),
    labels: t.field({
      type: [LabelConditionRef],
      required: false,
      description: `Jobs with all of these labels, at most ${MAX_FILTER_CONDITIONS}; default: any labels`,
    }),
    owners: t.stringList({
      required: false,
      description: `Jobs launched by one of these owners (Job.owner) as people type them: any case, and a name matches an address whose local part it is (\`alice\` finds \`alice@example.com\`; two addresses match only whole), at most ${MAX_FILTER_CONDITIONS}; default: anyone`,
    }),
    created: t.field({ type: TimeWindowRef, required: false, description: 'Jobs created in this window; default: any time' }),
    started: t.field({ type: TimeWindowRef, required: false, description: 'Jobs started in this window (jobs not started do not match); default: any' }),
    finished: t.field({ type: TimeWindowRef, required: false, description: 'Jobs finished in this window (unfinished jobs do not match); default: any' }),
    hasTrainingMetrics: t.stringList({
      required: false,
      description: `Jobs with cached training metrics of all these names, at most ${MAX_FILTER_CONDITIONS}; default: any. Cache only (not on jobStatusChanged)`,
    }),
    summary: t.field({
      type: [SummaryConditionRef],
      required: false,
      description: `Jobs whose summary values meet all these conditions, at most ${MAX_FILTER_CONDITIONS}; default: any. Cache only (not on jobStatusChanged)`,
    }),
  }),
});

export interface ResolvedFilter {
  /** The providers whose jobs can match (and whose lists must be fresh). */
  providerIds: string[];
  jobs: JobFilter;
}

export function resolveJobFilter(ctx: Context, filter: JobFilterInput | null | undefined, projectId?: string): ResolvedFilter {
  let ids = ctx.store.providers.ids();
  if (filter?.providerIds) {
    const wanted = new Set(filter.providerIds.map(String));
    ids = ids.filter((id) => wanted.has(id));
  }
  if (filter?.kinds) {
    const kinds = new Set(filter.kinds);
    ids = ids.filter((id) => kinds.has(ctx.store.providers.find(id)!.kind));
  }
  const project = projectId ?? (filter?.projectId != null ? String(filter.projectId) : null);
  if (project) {
    const pid = parseGlobalId(project, 'project').providerId;
    ids = ids.filter((id) => id === pid);
  }
  if (filter?.nameContains != null && filter.nameContains.length > 200) {
    throw new DomainError('BAD_INPUT', '"nameContains" is longer than 200 characters', { argument: 'nameContains' });
  }
  for (const [name, list] of Object.entries({
    labels: filter?.labels,
    owners: filter?.owners,
    hasTrainingMetrics: filter?.hasTrainingMetrics,
    summary: filter?.summary,
  })) {
    if (list && list.length > MAX_FILTER_CONDITIONS) {
      throw new DomainError('BAD_INPUT', `"${name}" takes at most ${MAX_FILTER_CONDITIONS} conditions, got ${list.length}`, { argument: `filter.${name}` });
    }
  }
  for (const l of filter?.labels ?? []) {
    checkName(l.key, 'filter.labels.key');
    if (l.value != null && l.value.length > 1000)
      throw new DomainError('BAD_INPUT', 'a label value is longer than 1000 characters', { argument: 'filter.labels.value' });
  }
  for (const m of filter?.hasTrainingMetrics ?? []) checkName(m, 'filter.hasTrainingMetrics');
  for (const w of ['created', 'started', 'finished'] as const) {
    const win = filter?.[w];
    if (win?.from && win.to && win.from > win.to) throw new DomainError('BAD_INPUT', `"${w}.from" is after "${w}.to"`, { argument: `filter.${w}` });
  }
  const summary = (filter?.summary ?? []).map((c) => {
    checkName(c.metric, 'filter.summary.metric');
    const bounds = { gt: c.gt, gte: c.gte, lt: c.lt, lte: c.lte };
    if (Object.values(bounds).every((b) => b == null)) {
      throw new DomainError('BAD_INPUT', `the summary condition on "${c.metric}" needs one of gt, gte, lt, lte`, { argument: 'filter.summary' });
    }
    return { metric: c.metric, value: c.value ?? 'LATEST', ...bounds };
  });
  return {
    providerIds: ids,
    jobs: {
      providerIds: ids,
      statuses: filter?.statuses ?? null,
      projectId: project,
      nameContains: filter?.nameContains || null,
      projectIds: ctx.access?.projectIds() ?? null,
      labels: filter?.labels?.map((l) => (l.value === undefined ? { key: l.key } : { key: l.key, value: l.value })) ?? null,
      owners: filter?.owners ?? null,
      created: filter?.created ?? null,
      started: filter?.started ?? null,
      finished: filter?.finished ?? null,
      hasTrainingMetrics: filter?.hasTrainingMetrics ?? null,
      summary: summary.length ? summary : null,
    },
  };
}

function checkName(name: string, argument: string) {
  if (name.length === 0 || name.length > 200) throw new DomainError('BAD_INPUT', `"${argument}" must be 1..200 characters`, { argument });
}

/** The ordering a list asked for; `now` is when durations are measured to (a cursor's, else this request's). */
export function resolveJobOrder(input: JobOrderInput | null | undefined, now: Date, prices: readonly PriceEntry[] = [], wasteStep?: WasteStep): JobOrder {
  if (!input) return DEFAULT_JOB_ORDER;
  const direction = input.direction ?? 'DESC';
  if (input.field === 'SUMMARY') {
    if (!input.summary) throw new DomainError('BAD_INPUT', 'orderBy field SUMMARY needs orderBy.summary (which metric)', { argument: 'orderBy.summary' });
    checkName(input.summary.metric, 'orderBy.summary.metric');
    return { by: 'SUMMARY', direction, summary: { metric: input.summary.metric, value: input.summary.value ?? 'LATEST' } };
  }
  if (input.summary) throw new DomainError('BAD_INPUT', 'orderBy.summary goes only with field SUMMARY', { argument: 'orderBy.summary' });
  if (input.field === 'COST') {
    const currencies = new Set(prices.map((p) => p.currency));
    if (currencies.size > 1) {
      throw new DomainError(
        'BAD_INPUT',
        `orderBy COST needs one currency, and the price table has ${[...currencies].sort().join(', ')}: amounts in different currencies do not compare`,
        {
          argument: 'orderBy.field',
        },
      );
    }
    return { by: 'COST', direction, now, prices };
  }
  if (input.field === 'WASTE') return { by: 'WASTE', direction, now, ...(wasteStep ? { wasteStep } : {}) };
  return { by: input.field, direction, ...(input.field === 'DURATION' ? { now } : {}) };
}
