// What a run was launched with and how it went, in one vocabulary across platforms: owner,
// labels, configuration, image and command (from the job's own row), queue and run time, and the
// summary of its training metrics (latest and best value of each, from the cache's job_summaries).
import { isTerminal, type JobRow, type JobSummaryRow } from '../store/index.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { SummaryModeEnum } from './enums.js';
import { NodeInterfaceRef } from './refs.js';
import { JobRef } from './refs.js';
import { ID_DOCS, labelId, trainingSummaryId } from './value-ids.js';

export interface JobLabelView {
  jobId: string;
  key: string;
  value: string | null;
  id?: string;
}

export interface TrainingSummaryView {
  row: JobSummaryRow;
  id?: string;
}

export const JobLabelRef = builder.objectRef<JobLabelView>('JobLabel');
JobLabelRef.implement({
  description: 'A label of a job, as the platform keeps it (ModelArts annotations, Runicorn tags)',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.JobLabel, resolve: (l) => l.id ?? labelId(l.jobId, l.key) }),
    key: t.exposeString('key', { description: 'The key (a Runicorn tag is a key without a value)' }),
    value: t.string({ nullable: true, description: 'The value; null for a bare tag', resolve: (l) => l.value }),
  }),
});

export const TrainingSummaryRef = builder.objectRef<TrainingSummaryView>('TrainingMetricSummary');
TrainingSummaryRef.implement({
  description:
    "The latest and best value of one training metric of a job (across its stages, as W&B keys a summary by name), in the metric's own unit, as the cache holds them: rebuilt from the stored points each time the job's training metrics are fetched; a best the platform reports (Runicorn's best metric) is kept as reported",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.TrainingMetricSummary, resolve: (s) => s.id ?? trainingSummaryId(s.row.jobId, s.row.name) }),
    name: t.string({ description: 'The metric name as the platform logs it (e.g. "val_acc")', resolve: (s) => s.row.name }),
    stage: t.string({
      nullable: true,
      description: 'The stage of the latest value (Runicorn: train/eval/...); null when it has none. A metric is summarized across its stages',
      resolve: (s) => s.row.stage,
    }),
    latestValue: t.float({
      nullable: true,
      description: 'The value at the highest step recorded; null when only a reported best is known',
      resolve: (s) => s.row.latestValue,
    }),
    latestStep: t.float({ nullable: true, description: 'Its step (a count)', resolve: (s) => s.row.latestStep }),
    latestAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it was recorded; null where the platform keys by step only',
      resolve: (s) => s.row.latestAt,
    }),
    bestValue: t.float({
      nullable: true,
      description: 'The best value by `mode`; null when the mode is unknown (a best is never guessed)',
      resolve: (s) => s.row.bestValue,
    }),
    bestStep: t.float({
      nullable: true,
      description: 'The step of the best value (the first, on a tie); null where the platform reports none',
      resolve: (s) => s.row.bestStep,
    }),
    mode: t.field({
      type: SummaryModeEnum,
      nullable: true,
      description:
        "Which way the metric improves: the platform's (Runicorn best_metric_mode), else by its name's words (loss -> MIN, acc -> MAX); null when neither says",
      resolve: (s) => (s.row.mode === 'MAX' || s.row.mode === 'MIN' ? s.row.mode : null),
    }),
    bestReportedByPlatform: t.boolean({
      description: 'True when the best value is the one the platform reported, false when computed from the stored points (or unknown)',
      resolve: (s) => s.row.bestSource === 'platform',
    }),
  }),
});

/** Seconds between two instants, never negative (clocks of different systems can disagree by a little). */
const secondsBetween = (a: Date, b: Date) => Math.max(0, (b.getTime() - a.getTime()) / 1000);

builder.objectFields(JobRef, (t) => ({
  owner: t.string({
    nullable: true,
    description:
      'Who launched the job: Baseten user e-mail, ModelArts user_name, PAI-DLC Username; null where the platform does not say (Primus-Lens, Runicorn)',
    resolve: (j) => j.owner,
  }),
  labels: t.field({
    type: [JobLabelRef],
    description:
      "The job's labels, by key: ModelArts annotations, Runicorn tags (value null); empty where the platform has none (Baseten, PAI-DLC, Primus-Lens)",
    resolve: (j) =>
      Object.entries(j.labels ?? {})
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([key, value]) => ({ jobId: j.id, key, value })),
  }),
  config: t.field({
    type: 'JSON',
    nullable: true,
    description:
      'What the job was launched with, as the platform records it: ModelArts { parameters: {name: value}, environments }, PAI-DLC { envs }; null where the platform records none (Baseten, Primus-Lens, Runicorn viewer)',
    resolve: (j) => j.config ?? null,
  }),
  image: t.string({
    nullable: true,
    description: 'The container image: PAI-DLC JobSpecs Image, ModelArts engine image_url; null where not given',
    resolve: (j) => j.image,
  }),
  command: t.string({
    nullable: true,
    description: 'The command the job runs: PAI-DLC UserCommand, ModelArts algorithm command (else its boot file); null where not given',
    resolve: (j) => j.command,
  }),
  queuedFor: t.field({
    type: 'Duration',
    nullable: true,
    description:
      'From submission to start (still growing while the job waits); null where the platform gives no submission time, or a job ended without starting',
    resolve: (j, _a, ctx) => queuedFor(j, ctx.store.now()),
  }),
  ranFor: t.field({
    type: 'Duration',
    nullable: true,
    description: 'From start to finish (to now while it runs); null until it starts, or for an ended job whose finish the platform does not give',
    resolve: (j, _a, ctx) => ranFor(j, ctx.store.now()),
  }),
  summary: t.field({
    type: [TrainingSummaryRef],
    nullable: true,
    directives: { cost: { weight: 10 }, listSize: { assumedSize: 20 } },
    description:
      'The latest and best value of each training metric (Primus-Lens, Runicorn), read through the cache like trainingMetrics; empty where the platform has none; null (with the error at this path) when the platform failed and nothing is cached',
    args: {
      names: t.arg.stringList({ required: false, description: 'Only these metric names (as the platform logs them); default: all' }),
    },
    resolve: async (j, args, ctx) => summariesOf(ctx, j, args.names ?? null),
  }),
}));

export async function summariesOf(ctx: Context, job: JobRow, names: readonly string[] | null): Promise<TrainingSummaryView[]> {
  await ctx.store.loaders.trainingReady.load(job);
  const wanted = names?.length ? new Set(names) : null;
  return (await ctx.store.loaders.summariesOfJob.load(job.id)).filter((r) => !wanted || wanted.has(r.name)).map((row) => ({ row }));
}

function queuedFor(j: JobRow, now: Date): number | null {
  if (!j.createdAt) return null;
  if (j.startedAt) return secondsBetween(j.createdAt, j.startedAt);
  return isTerminal(j.status) ? null : secondsBetween(j.createdAt, now);
}

function ranFor(j: JobRow, now: Date): number | null {
  if (!j.startedAt) return null;
  if (j.finishedAt) return secondsBetween(j.startedAt, j.finishedAt);
  return isTerminal(j.status) ? null : secondsBetween(j.startedAt, now);
}
