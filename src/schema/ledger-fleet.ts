// The ledger on the fleet's groups (GpuHours: total, platform, project, owner, labels, GPU model,
// job) and the fleet's ranking by cost, waste or energy: the same figures as Job.cost, Job.energy
// and Job.efficiency (schema/ledger.ts), summed over each group's jobs.
import { DomainError } from '../domain/errors.js';
import { energyOf, type JobUsage, jobCost } from '../domain/ledger.js';
import type { JobRow } from '../store/index.js';
import { checkPageSize } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { FleetRef, type FleetShape, FleetUtilizationRef, GpuHoursRef, type GpuHoursShape, gpuHoursOf, gpuHoursRow } from './fleet.js';
import type { GpuHoursRow } from '../store/index.js';

import { CostRef, EfficiencyRef, EnergyRef, type FigureShape, jobFigure, parseFigurePart, settingsOf } from './ledger.js';

// ---- on the fleet's groups -------------------------------------------------------------------

const fleetLedgers = new WeakMap<FleetShape, { usage?: Promise<JobUsage[]>; full?: Promise<JobUsage[]> }>();

/**
 * The fleet's jobs as the ledger reads them, once per answer: cost needs only the GPU-hours the
 * fleet measured anyway (no statement of its own); energy and useful work (`full`) add the other
 * series' fetch and integrals.
 */
export function fleetLedgerOf(f: FleetShape, ctx: Context, full = false): Promise<JobUsage[]> {
  let entry = fleetLedgers.get(f);
  if (!entry) fleetLedgers.set(f, (entry = {}));
  const measure = (integrals: boolean) =>
    Promise.all([f.prepared, gpuHoursOf(f, ctx)]).then(([prepared, rows]) => ctx.store.ledger.fleet(prepared, rows, integrals, ctx.limits.defaultMaxPoints));
  if (full) return (entry.full ??= measure(true));
  return (entry.usage ??= entry.full ?? measure(false));
}

/** The jobs of a fleet group, as GpuHours counts them (jobs that held accelerators, CPU-only jobs billed per node-hour). */
export function groupMembers(g: GpuHoursShape, usages: readonly JobUsage[]): JobUsage[] {
  // fleetLedgerOf measures exactly the jobs with a row in the fleet's statement: the groups' members.
  const held = [...usages];
  const key = g.row.key;
  switch (g.row.kind) {
    case 'provider':
      return held.filter((u) => u.providerId === key);
    case 'project':
      return held.filter((u) => u.projectId === key);
    case 'model':
      return held.filter((u) => (u.gpuType ?? 'unknown') === key);
    case 'owner':
      return held.filter((u) => (u.owner ?? '') === key);
    case 'label': {
      const l = g.label!;
      return held.filter((u) => labelOf(u.labels, l.key)[1] === l.present && labelOf(u.labels, l.key)[0] === l.value);
    }
    case 'job':
      return held.filter((u) => u.jobId === key);
    default:
      return held;
  }
}

export async function groupFigure(ctx: Context, g: GpuHoursShape, full = true): Promise<FigureShape> {
  return { owner: { group: g }, usages: groupMembers(g, await fleetLedgerOf(g.fleet, ctx, full)) };
}

builder.objectFields(GpuHoursRef, (t) => ({
  cost: t.field({
    type: CostRef,
    description: "What the group's jobs cost in the fleet's window: exact sums of the jobs' amounts (see Cost)",
    resolve: (g, _a, ctx) => groupFigure(ctx, g, false),
  }),
  energy: t.field({
    type: EnergyRef,
    description: "Energy the group's jobs drew in the fleet's window (see Energy)",
    resolve: (g, _a, ctx) => groupFigure(ctx, g),
  }),
  // GpuHours.efficiency already is a ratio (used / allocated): the object goes by another name here.
  usefulWork: t.field({
    type: EfficiencyRef,
    description:
      "Useful work (Job.efficiency's figures) of the group's jobs in the fleet's window: ratios weighted by accelerator-time, MFU over the peak of the same time (see Efficiency)",
    resolve: (g, _a, ctx) => groupFigure(ctx, g),
  }),
}));

/** Query.node for a figure: its owner (a job, or a fleet group) resolved as its own field would, then the figure. */
export async function figureById(
  ctx: Context,
  part: string,
  job: () => Promise<JobRow | null>,
  group: () => Promise<GpuHoursShape | null>,
): Promise<FigureShape | null> {
  const window = parseFigurePart(part);
  if (window === 'group') {
    const g = await group();
    return g ? groupFigure(ctx, g) : null;
  }
  const j = await job();
  return j ? jobFigure(ctx, j, window) : null;
}

// ---- the fleet's jobs ranked by a ledger figure ------------------------------------------------

const LedgerRankEnum = builder.enumType('LedgerRank', {
  description: 'What Fleet.ranked orders jobs by, largest first; jobs without the figure come last (by job id)',
  values: {
    WASTE: { description: "GPU-hours held but not used (the fleet's wasteGpuHours): Fleet.jobs' order" },
    COST: { description: "Money: the job's cost in the window (Cost.amount); the price table must use one currency, else BAD_INPUT" },
    IDLE_COST: { description: 'Money: the idle share of the cost (Cost.idleAmount); one currency, else BAD_INPUT' },
    ENERGY: { description: 'Kilowatt-hours measured from power readings (Energy.measuredKwh)' },
  },
});

const MS_PER_HOUR_ROW = 3_600_000;

builder.objectFields(FleetRef, (t) => ({
  ranked: t.field({
    type: [GpuHoursRef],
    description: "The window's jobs ranked by a ledger figure, largest first (one GpuHours row each, job set)",
    args: {
      by: t.arg({ type: LedgerRankEnum, required: true, defaultValue: 'WASTE', description: 'The figure to rank by; default WASTE' }),
      first: t.arg.int({ required: false, description: 'At most this many jobs (default and cap: the page size limits)' }),
    },
    resolve: async (f, args, ctx) => {
      const first = checkPageSize(args.first, ctx.limits.defaultPageSize, ctx.limits.maxPageSize);
      const { prices } = settingsOf(ctx);
      if ((args.by === 'COST' || args.by === 'IDLE_COST') && new Set(prices.map((p) => p.currency)).size > 1) {
        throw new DomainError('BAD_INPUT', 'ranking by cost needs one currency in the price table: amounts in different currencies do not compare', {
          argument: 'by',
        });
      }
      const prepared = await f.prepared;
      const jobs = new Map(prepared.jobs.map((j) => [j.id, j]));
      // The jobs Fleet.jobs lists (CPU-only ones billed per node-hour among them, with no waste).
      const usages = await fleetLedgerOf(f, ctx, args.by === 'ENERGY');
      const key = (u: JobUsage): number | null => {
        switch (args.by) {
          case 'COST':
            return jobCost(u, prices).amountMicros;
          case 'IDLE_COST':
            return jobCost(u, prices).idleAmountMicros;
          case 'ENERGY':
            return energyOf([u], settingsOf(ctx)).measuredKwh;
          default:
            return u.allocMs - u.usedMs;
        }
      };
      const keyed = usages.map((u) => ({ u, k: key(u) }));
      keyed.sort((a, b) => (a.k === null ? (b.k === null ? 0 : 1) : b.k === null ? -1 : b.k - a.k) || (a.u.jobId < b.u.jobId ? -1 : 1));
      return keyed.slice(0, first).map(({ u }) => ({
        fleet: f,
        row: {
          kind: 'job' as const,
          key: u.jobId,
          jobs: 1,
          allocatedGpuHours: u.allocMs / MS_PER_HOUR_ROW,
          coveredGpuHours: u.coveredMs / MS_PER_HOUR_ROW,
          usedGpuHours: u.usedMs / MS_PER_HOUR_ROW,
        },
        job: jobs.get(u.jobId)!,
      }));
    },
  }),
}));

// ---- the fleet's groups by a label ---------------------------------------------------------------

/** A job's value of a label and whether it has the label at all. */
function labelOf(labels: Readonly<Record<string, string | null>> | null, key: string): [string | null, boolean] {
  return labels && Object.hasOwn(labels, key) ? [labels[key] ?? null, true] : [null, false];
}

/**
 * The fleet's GPU-hours by the value of one label, summed from the fleet's per-job rows (every
 * job's): jobs with the label and no value, and jobs without it, are groups of their own, so the
 * groups add up to the total.
 */
export async function labelRowsOf(ctx: Context, f: FleetShape, key: string): Promise<GpuHoursRow[]> {
  if (key.length === 0 || key.length > 200) throw new DomainError('BAD_INPUT', '"key" must be 1..200 characters', { argument: 'key' });
  const [prepared, rows] = await Promise.all([f.prepared, gpuHoursOf(f, ctx)]);
  const jobs = new Map(prepared.jobs.map((j) => [j.id, j]));
  const groups = new Map<string, GpuHoursRow>();
  for (const r of rows) {
    if (r.kind !== 'job') continue;
    const [value, present] = labelOf(jobs.get(r.key!)?.labels ?? null, key);
    const gk = JSON.stringify([key, value, present]);
    const g = groups.get(gk) ?? { kind: 'label' as const, key: gk, jobs: 0, allocatedGpuHours: 0, coveredGpuHours: 0, usedGpuHours: 0 };
    g.jobs += 1;
    g.allocatedGpuHours += r.allocatedGpuHours;
    g.coveredGpuHours += r.coveredGpuHours;
    g.usedGpuHours += r.usedGpuHours;
    groups.set(gk, g);
  }
  return [...groups.values()].sort((a, b) => (a.key! < b.key! ? -1 : 1));
}

/** Query.node for a label group's GpuHours id. */
export async function labelGroupById(ctx: Context, f: FleetShape, rowKey: string): Promise<GpuHoursShape | null> {
  let key: unknown;
  try {
    key = (JSON.parse(rowKey) as unknown[])[0];
  } catch {
    return null;
  }
  if (typeof key !== 'string') return null;
  const row = (await labelRowsOf(ctx, f, key)).find((r) => r.key === rowKey);
  return row ? gpuHoursRow(f, row) : null;
}

builder.objectFields(FleetUtilizationRef, (t) => ({
  byLabel: t.field({
    type: [GpuHoursRef],
    description:
      'One per value of the label `key` among the matching jobs (labelKey, labelValue and hasLabel set); jobs without the label are one group (hasLabel false), so the groups add up to the total',
    args: { key: t.arg.string({ required: true, description: 'The label key (Job.labels), 1..200 characters' }) },
    resolve: async ({ fleet }, args, ctx) => (await labelRowsOf(ctx, fleet, args.key)).map((row) => gpuHoursRow(fleet, row)),
  }),
}));

builder.objectFields(GpuHoursRef, (t) => ({
  labelKey: t.string({
    nullable: true,
    description: 'The label key, in Fleet.utilization.byLabel; null in other roll-ups',
    resolve: (g) => g.label?.key ?? null,
  }),
  labelValue: t.string({
    nullable: true,
    description:
      "The group's value of the label, in Fleet.utilization.byLabel; null for jobs without it (hasLabel false) or with it and no value; null in other roll-ups",
    resolve: (g) => g.label?.value ?? null,
  }),
  hasLabel: t.boolean({
    nullable: true,
    description: "Whether the group's jobs carry the label, in Fleet.utilization.byLabel; null in other roll-ups",
    resolve: (g) => (g.label ? g.label.present : null),
  }),
}));
