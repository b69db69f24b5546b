// The ledger in the graph: Job.cost, Job.energy and Job.efficiency, and the same on the fleet's
// groups (GpuHours: total, platform, project, owner, GPU model, job). Figures come from
// src/domain/ledger.ts over what src/store/ledger.ts measured; the method is docs/ledger.md.
import { DomainError } from '../domain/errors.js';
import {
  type CostFigure,
  efficiencyOf,
  type EfficiencyFigure,
  energyOf,
  type EnergyFigure,
  groupCost,
  type JobUsage,
  jobCost,
  type LedgerReason,
  type LedgerReasonCode,
  type LedgerSettings,
  mfuOf,
  microsToAmount,
  NO_LEDGER_SETTINGS,
  PRECISIONS,
  type Precision,
} from '../domain/ledger.js';
import { jsonPart, parseJsonPart, valueId } from '../domain/value-ids.js';
import type { JobRow } from '../store/index.js';
import { checkSeriesArgs } from './args.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { type GpuHoursShape, idOfFleet } from './fleet.js';
import { JobRef, NodeInterfaceRef } from './refs.js';
import { gpuHoursId, ID_DOCS } from './value-ids.js';

export const LEDGER_REASON_CODES: readonly LedgerReasonCode[] = [
  'NO_PRICE',
  'NO_TOPOLOGY',
  'MIXED_CURRENCY',
  'UNKNOWN_END',
  'NOT_STARTED',
  'NO_UTILIZATION',
  'NO_POWER_READINGS',
  'NOT_REPORTED',
  'NO_FLOPS_SERIES',
  'NO_PEAK',
  'NOT_MEASURED',
  'STALE',
];

const LedgerReasonCodeEnum = builder.enumType('LedgerReasonCode', {
  description: 'Why a ledger figure is null (or, for a group, why its amount is); `reason` says it in words',
  values: {
    NO_PRICE: { description: "The price table (the providers file's ledger.prices) has no entry for the job's provider and accelerator" },
    NO_TOPOLOGY: { description: 'The job holds no known accelerators and its nodes are not known: nothing to bill or measure' },
    MIXED_CURRENCY: { description: 'The group holds jobs priced in different currencies: amounts are never summed across currencies' },
    UNKNOWN_END: { description: 'The job finished but its platform does not say when (Baseten): its hours cannot be counted' },
    NOT_STARTED: { description: 'The job held nothing in the window (pending, or its life does not overlap the window)' },
    NO_UTILIZATION: { description: 'No utilization readings in the window: every held hour counts as idle (the figure is given, this says why)' },
    NO_POWER_READINGS: { description: 'Power readings cover less than every held accelerator-hour and no average power is configured for the rest' },
    NOT_REPORTED: { description: 'The platform does not report this series (tensor-pipe and SM active: PAI-DLC card metrics only)' },
    NO_FLOPS_SERIES: { description: "No achieved model TFLOP/s reported in the window (Primus-Lens' TrainingPerformance only)" },
    NO_PEAK: { description: 'No peak TFLOP/s known for the accelerator at the precision (docs/ledger.md; ledger.peakTflops adds one)' },
    NOT_MEASURED: { description: 'Not measurable for this job (a CPU-only job has no idle share)' },
    STALE: {
      description:
        "The platform's series could not be refreshed for this answer: the figures stand, counted from what the cache holds (the fleet's groups say so in Fleet.problems)",
    },
  } satisfies Record<LedgerReasonCode, { description: string }>,
});

const PrecisionEnum = builder.enumType('Precision', {
  description: 'The number format a peak TFLOP/s is quoted for (dense tensor throughput, no structured sparsity)',
  values: {
    FP8: { description: '8-bit floating point (E4M3/E5M2) tensor throughput' },
    BF16: { description: 'bfloat16 tensor throughput (the usual MFU basis for training)' },
    FP16: { description: 'IEEE half precision tensor throughput' },
    TF32: { description: 'TensorFloat-32 tensor throughput' },
    FP32: { description: 'single precision (vector, or matrix cores where the vendor quotes them)' },
  } satisfies Record<Precision, { description: string }>,
});

const CostBasisEnum = builder.enumType('CostBasis', {
  description: 'What a job is billed by',
  values: {
    ACCELERATOR_HOUR: { description: 'Accelerators held x hours x the price per accelerator-hour' },
    NODE_HOUR: { description: 'A CPU-only job: nodes x hours x the price per node-hour' },
  },
});

/** The settings a request reads: the context's, or none (no prices; built-in peaks). */
export const settingsOf = (ctx: Context): LedgerSettings => ctx.ledger ?? NO_LEDGER_SETTINGS;

// ---- shapes ----------------------------------------------------------------------------------

/** Which window a job's figure covers: absent ends are the job's life. Part of the figure's id. */
interface JobWindowArgs {
  from: Date | null;
  to: Date | null;
}

/** Whose figure it is: a job over a window, or one of a fleet's groups. */
type Owner = { job: JobRow; window: JobWindowArgs } | { group: GpuHoursShape };

export interface FigureShape {
  owner: Owner;
  usages: JobUsage[];
  id?: string;
}

export type LedgerKind = 'cost' | 'energy' | 'efficiency';

/** The figure's id: its owner's (the job, or the fleet's group) plus the window a job's was asked for. */
export function figureId(kind: LedgerKind, owner: Owner): string {
  if ('job' in owner) return valueId(kind, owner.job.id, jsonPart([owner.window.from?.getTime() ?? null, owner.window.to?.getTime() ?? null]));
  const g = owner.group;
  return valueId(kind, g.id ?? gpuHoursId(idOfFleet(g.fleet), g.row), 'g');
}

/** The window a job figure's id part names (BAD_ID for anything else). */
export function parseFigurePart(part: string): JobWindowArgs | 'group' {
  if (part === 'g') return 'group';
  const v = parseJsonPart(part);
  if (!Array.isArray(v) || v.length !== 2 || !v.every((x) => x === null || (typeof x === 'number' && Number.isFinite(x)))) {
    throw new DomainError('BAD_ID', 'not an id of this graph');
  }
  return { from: v[0] === null ? null : new Date(v[0] as number), to: v[1] === null ? null : new Date(v[1] as number) };
}

const reasonText = (reasons: readonly LedgerReason[], fields?: readonly string[]): string | null => {
  const picked = fields ? reasons.filter((r) => fields.includes(r.field)) : reasons;
  return picked.length ? [...new Set(picked.map((r) => `${r.field}: ${r.message}`))].join('; ') : null;
};
const reasonCodes = (reasons: readonly LedgerReason[]): LedgerReasonCode[] => [...new Set(reasons.map((r) => r.code))];

// ---- Cost ------------------------------------------------------------------------------------

interface CostView {
  amountMicros: number | null;
  idleAmountMicros: number | null;
  pricedAmountMicros: number | null;
  currency: string | null;
  unpricedJobs: number;
  basis: CostFigure['basis'];
  unitPrice: number | null;
  billedHours: number;
  reasons: LedgerReason[];
}

function costView(shape: FigureShape, ctx: Context): CostView {
  const prices = settingsOf(ctx).prices;
  const figures = shape.usages.map((u) => jobCost(u, prices));
  if ('job' in shape.owner) {
    const f = figures[0]!;
    return {
      ...f,
      pricedAmountMicros: f.amountMicros,
      unpricedJobs: f.amountMicros === null ? 1 : 0,
    };
  }
  const g = groupCost(figures);
  const bases = new Set(figures.map((f) => f.basis));
  const units = new Set(figures.map((f) => f.unitPrice));
  return {
    ...g,
    basis: bases.size === 1 ? [...bases][0]! : null,
    unitPrice: units.size === 1 ? [...units][0]! : null,
    billedHours: figures.reduce((a, f) => a + f.billedHours, 0),
  };
}

const costCache = new WeakMap<FigureShape, CostView>();
const cost = (s: FigureShape, ctx: Context) => {
  let v = costCache.get(s);
  if (!v) costCache.set(s, (v = costView(s, ctx)));
  return v;
};

export const CostRef = builder.objectRef<FigureShape>('Cost');
CostRef.implement({
  description:
    "What a job (or a group of jobs) cost in the window, from the price table in the providers file (ledger.prices; no price is ever assumed): accelerator-hours held x the price per accelerator-hour of the job's provider and model (a CPU-only job: node-hours x the price per node-hour). Held hours are the fleet's allocatedGpuHours; idle is allocated minus used (the fleet's waste). Each job's amount is rounded to 6 decimals once, so a group's amount is the exact sum of its jobs'",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.Cost, resolve: (s) => s.id ?? figureId('cost', s.owner) }),
    amount: t.float({
      nullable: true,
      description:
        'Money, in `currency`, rounded to 6 decimals per job: held hours x price; null when any job of it has no price (NO_PRICE), no known accelerators or nodes (NO_TOPOLOGY), no known end (UNKNOWN_END), or a group mixes currencies (MIXED_CURRENCY)',
      resolve: (s, _a, ctx) => microsToAmount(cost(s, ctx).amountMicros),
    }),
    idleAmount: t.float({
      nullable: true,
      description:
        'Money, in `currency`: the idle share, (held - used) accelerator-hours x price, where used is utilization x time as the fleet counts it and time without readings counts as idle; null where amount is, and for CPU-only jobs (NOT_MEASURED)',
      resolve: (s, _a, ctx) => microsToAmount(cost(s, ctx).idleAmountMicros),
    }),
    pricedAmount: t.float({
      nullable: true,
      description:
        "Money, in `currency`: the sum over the jobs that have a price (equal to amount when every job has one); null when none has, or currencies are mixed. Not the group's cost when unpricedJobCount > 0",
      resolve: (s, _a, ctx) => microsToAmount(cost(s, ctx).pricedAmountMicros),
    }),
    currency: t.string({
      nullable: true,
      description: 'ISO 4217 code of the price entry (as configured); null when no job has a price or currencies are mixed',
      resolve: (s, _a, ctx) => cost(s, ctx).currency,
    }),
    unpricedJobCount: t.int({
      description: 'Jobs (a count) without a cost: no price, no topology or no known end; 0 or 1 for a job',
      resolve: (s, _a, ctx) => cost(s, ctx).unpricedJobs,
    }),
    billedHours: t.float({
      description: 'Hours billed: accelerator-hours held (node-hours for a CPU-only job) of the priced jobs; 0 when none',
      resolve: (s, _a, ctx) => cost(s, ctx).billedHours,
    }),
    basis: t.field({
      type: CostBasisEnum,
      nullable: true,
      description: 'What the amount is billed by; null without a price, or for a group that mixes both',
      resolve: (s, _a, ctx) => cost(s, ctx).basis,
    }),
    unitPrice: t.float({
      nullable: true,
      description: "Money per accelerator-hour (or node-hour) of the matching price entry; null without a price, or in a group whose jobs' prices differ",
      resolve: (s, _a, ctx) => cost(s, ctx).unitPrice,
    }),
    reason: t.string({
      nullable: true,
      description:
        'Why amount or idleAmount is null, or how a known one was counted (NO_UTILIZATION: no readings, all idle; STALE: from the cache after a failed refresh), in words; null when both are known from fresh readings',
      resolve: (s, _a, ctx) => reasonText(cost(s, ctx).reasons),
    }),
    reasonCodes: t.field({
      type: [LedgerReasonCodeEnum],
      description: 'The codes of `reason`, each once; empty when it is null',
      resolve: (s, _a, ctx) => reasonCodes(cost(s, ctx).reasons),
    }),
  }),
});

// ---- Energy ----------------------------------------------------------------------------------

const energyCache = new WeakMap<FigureShape, EnergyFigure>();
const energy = (s: FigureShape, ctx: Context) => {
  let v = energyCache.get(s);
  if (!v) energyCache.set(s, (v = energyOf(s.usages, settingsOf(ctx))));
  return v;
};

export const EnergyRef = builder.objectRef<FigureShape>('Energy');
EnergyRef.implement({
  description:
    "Energy the job's (or group's) accelerators drew in the window, from per-accelerator power readings (GPU_POWER at GPU scope: Primus-Lens; Runicorn's host telemetry is host-wide and a Lens node-wide series covers other workloads, so neither counts), integrated by the trapezoid rule between consecutive readings no more than 2 steps apart. Hours without readings are estimated only from a configured average power per model (ledger.averagePowerWatts), and said so",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.Energy, resolve: (s) => s.id ?? figureId('energy', s.owner) }),
    kwh: t.float({
      nullable: true,
      description:
        'Kilowatt-hours: measuredKwh + estimatedKwh; null when some held accelerator-hours have neither readings nor a configured average power (NO_POWER_READINGS: see measuredKwh and coverage)',
      resolve: (s, _a, ctx) => energy(s, ctx).kwh,
    }),
    measuredKwh: t.float({
      nullable: true,
      description: 'Kilowatt-hours from power readings alone (trapezoid); null without any reading',
      resolve: (s, _a, ctx) => energy(s, ctx).measuredKwh,
    }),
    estimatedKwh: t.float({
      nullable: true,
      description:
        'Kilowatt-hours estimated for the held accelerator-hours without readings: those hours x the configured average power of the model; null when nothing was estimated',
      resolve: (s, _a, ctx) => energy(s, ctx).estimatedKwh,
    }),
    coverage: t.float({
      nullable: true,
      description: 'Ratio 0..1: the share of the held accelerator-hours between two power readings; null when nothing was held',
      resolve: (s, _a, ctx) => energy(s, ctx).coverage,
    }),
    estimated: t.boolean({
      description: 'True when kwh includes an estimate (estimatedKwh is not null); false when it is measured alone or null',
      resolve: (s, _a, ctx) => energy(s, ctx).estimated,
    }),
    reason: t.string({
      nullable: true,
      description: 'Why kwh is null, in words; null when it is known',
      resolve: (s, _a, ctx) => reasonText(energy(s, ctx).reasons),
    }),
    reasonCodes: t.field({
      type: [LedgerReasonCodeEnum],
      description: 'The codes of `reason`, each once; empty when it is null',
      resolve: (s, _a, ctx) => reasonCodes(energy(s, ctx).reasons),
    }),
  }),
});

// ---- Efficiency ------------------------------------------------------------------------------

const effCache = new WeakMap<FigureShape, EfficiencyFigure>();
const eff = (s: FigureShape) => {
  let v = effCache.get(s);
  if (!v) effCache.set(s, (v = efficiencyOf(s.usages)));
  return v;
};

const MS_PER_HOUR = 3_600_000;
const PRECISION_ARG_DOC = "The precision whose peak counts; default: the config's ledger.precision (BF16 when unset)";

export const EfficiencyRef = builder.objectRef<FigureShape>('Efficiency');
EfficiencyRef.implement({
  description:
    "How much of the held hardware did useful work in the window: utilization-weighted accelerator-hours (the fleet's used), tensor-pipe and SM active where the platform reports them (PAI-DLC card metrics), and MFU from the achieved model TFLOP/s the platform reports (Primus-Lens) over the accelerator's dense peak (docs/ledger.md has the table and its sources). Ratios are time-weighted means over the readings (trapezoid)",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.Efficiency, resolve: (s) => s.id ?? figureId('efficiency', s.owner) }),
    heldAcceleratorHours: t.float({
      description: "Accelerator-hours held in the window (the fleet's allocatedGpuHours)",
      resolve: (s) => s.usages.reduce((a, u) => a + u.allocMs, 0) / MS_PER_HOUR,
    }),
    usedAcceleratorHours: t.float({
      description: "Accelerator-hours: utilization x time over the readings (the fleet's usedGpuHours)",
      resolve: (s) => s.usages.reduce((a, u) => a + u.usedMs, 0) / MS_PER_HOUR,
    }),
    utilization: t.float({
      nullable: true,
      description: 'Ratio 0..1: usedAcceleratorHours / heldAcceleratorHours (time without readings counts as unused); null when nothing was held',
      resolve: (s) => {
        const held = s.usages.reduce((a, u) => a + u.allocMs, 0);
        return held > 0 ? s.usages.reduce((a, u) => a + u.usedMs, 0) / held : null;
      },
    }),
    tensorActive: t.float({
      nullable: true,
      description: 'Ratio 0..1: tensor-pipe active (DCGM), time-weighted over the per-GPU readings; null where not reported (NOT_REPORTED)',
      resolve: (s) => eff(s).tensorActive,
    }),
    smActive: t.float({
      nullable: true,
      description: 'Ratio 0..1: SM active (DCGM), time-weighted over the per-GPU readings; null where not reported (NOT_REPORTED)',
      resolve: (s) => eff(s).smActive,
    }),
    achievedTflops: t.float({
      nullable: true,
      description: 'TFLOP/s per accelerator: the model FLOP/s the platform reports, time-weighted over its readings; null where not reported (NO_FLOPS_SERIES)',
      resolve: (s) => (eff(s).achievedFlops === null ? null : eff(s).achievedFlops! / 1e12),
    }),
    acceleratorModel: t.string({
      nullable: true,
      description: 'The accelerator model the peak is looked up by (H100, MI300X, Ascend 910B, ...); null when unknown, or mixed in a group',
      resolve: (s) => eff(s).model,
    }),
    peakTflops: t.float({
      nullable: true,
      args: { precision: t.arg({ type: PrecisionEnum, required: false, description: PRECISION_ARG_DOC }) },
      description:
        'TFLOP/s: the dense peak per accelerator at the precision (config ledger.peakTflops first, then the built-in table); null when unknown, or different peaks in a group',
      resolve: (s, args, ctx) => mfuOf(s.usages, precisionOf(ctx, args), settingsOf(ctx).peakTflops).peakTflops,
    }),
    mfu: t.float({
      nullable: true,
      args: { precision: t.arg({ type: PrecisionEnum, required: false, description: PRECISION_ARG_DOC }) },
      description:
        'Ratio (0..1 in practice): model FLOPs utilization, achieved model FLOP over the peak FLOP of the same accelerator-time; null without a TFLOP/s series (NO_FLOPS_SERIES) or a known peak (NO_PEAK)',
      resolve: (s, args, ctx) => mfuOf(s.usages, precisionOf(ctx, args), settingsOf(ctx).peakTflops).mfu,
    }),
    reason: t.string({
      nullable: true,
      args: { precision: t.arg({ type: PrecisionEnum, required: false, description: PRECISION_ARG_DOC }) },
      description: 'Why tensorActive, smActive or mfu is null, in words; null when all are known',
      resolve: (s, args, ctx) => reasonText(efficiencyReasons(s, ctx, args)),
    }),
    reasonCodes: t.field({
      type: [LedgerReasonCodeEnum],
      args: { precision: t.arg({ type: PrecisionEnum, required: false, description: PRECISION_ARG_DOC }) },
      description: 'The codes of `reason`, each once; empty when it is null',
      resolve: (s, args, ctx) => reasonCodes(efficiencyReasons(s, ctx, args)),
    }),
  }),
});

function precisionOf(ctx: Context, args: { precision?: unknown }): Precision {
  const p = (args.precision as Precision | null | undefined) ?? settingsOf(ctx).precision;
  if (!PRECISIONS.includes(p)) throw new DomainError('BAD_INPUT', `unknown precision ${String(p)}`, { argument: 'precision' });
  return p;
}

function efficiencyReasons(s: FigureShape, ctx: Context, args: { precision?: unknown }): LedgerReason[] {
  const unmeasured = s.usages.find((u) => u.unmeasured)?.unmeasured;
  if (unmeasured && s.usages.every((u) => u.unmeasured)) {
    return ['tensorActive', 'smActive', 'mfu'].map((field) => ({ field, code: unmeasured.code, message: unmeasured.message }));
  }
  const base = eff(s).reasons.filter((r) => r.field !== 'mfu');
  const m = mfuOf(s.usages, precisionOf(ctx, args), settingsOf(ctx).peakTflops);
  return m.reason ? [...base, m.reason] : base;
}

// ---- on jobs ---------------------------------------------------------------------------------

const FROM_DOC = "Window start; default: the job's start. [from, to] spans at most the series bound (366 days), else BAD_INPUT";
const TO_DOC = "Window end; default: the job's end, or now while it runs";

/** A job's figure over the window: its measurements, batched with the answer's other jobs. */
export async function jobFigure(ctx: Context, job: JobRow, window: JobWindowArgs): Promise<FigureShape> {
  checkSeriesArgs({ from: window.from, to: window.to }, ctx.limits);
  const usage = await ctx.store.ledger.job(job, window, ctx.limits.defaultMaxPoints);
  return { owner: { job, window }, usages: [usage] };
}

const jobWindowOf = (args: { from?: Date | null; to?: Date | null }): JobWindowArgs => ({ from: args.from ?? null, to: args.to ?? null });

builder.objectFields(JobRef, (t) => ({
  cost: t.field({
    type: CostRef,
    nullable: true,
    // Reads the job's utilization over its life (fetched when not cached), as the fleet does.
    directives: { cost: { weight: 10 } },
    args: { from: t.arg({ type: 'DateTime', required: false, description: FROM_DOC }), to: t.arg({ type: 'DateTime', required: false, description: TO_DOC }) },
    description:
      'What the job cost in the window (default its life): held accelerator-hours x the configured price, and the idle share; null fields say why. Null (with an error) only when its platform failed and nothing is cached',
    resolve: (job, args, ctx) => jobFigure(ctx, job, jobWindowOf(args)),
  }),
  energy: t.field({
    type: EnergyRef,
    nullable: true,
    directives: { cost: { weight: 10 } },
    args: { from: t.arg({ type: 'DateTime', required: false, description: FROM_DOC }), to: t.arg({ type: 'DateTime', required: false, description: TO_DOC }) },
    description: 'Energy the job drew in the window (default its life), from power readings, with their coverage; null fields say why',
    resolve: (job, args, ctx) => jobFigure(ctx, job, jobWindowOf(args)),
  }),
  efficiency: t.field({
    type: EfficiencyRef,
    nullable: true,
    directives: { cost: { weight: 10 } },
    args: { from: t.arg({ type: 'DateTime', required: false, description: FROM_DOC }), to: t.arg({ type: 'DateTime', required: false, description: TO_DOC }) },
    description: 'Useful work in the window (default its life): utilization-weighted hours, tensor-pipe and SM active, MFU; null fields say why',
    resolve: (job, args, ctx) => jobFigure(ctx, job, jobWindowOf(args)),
  }),
}));
