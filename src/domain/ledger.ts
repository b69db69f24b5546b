// The ledger's arithmetic: what a job (or a group of jobs) cost in money, energy and useful work,
// from the accelerator-hours the fleet counts and the series the store integrates. Plain values in,
// plain values out: the SQL that measures hours and integrates series is src/store/ledger.ts, the
// graph is src/schema/ledger.ts, the method and the sources of every figure are docs/ledger.md.

/** A price from the config's price table (`ledger.prices`). */
export interface PriceEntry {
  /** A provider id of the providers file; `*` for any. */
  provider: string;
  /**
   * The accelerator model as the platform names it (Job.gpuType, case-insensitive) or as the
   * ledger knows it (acceleratorModel: `H100`, `MI300X`, ...); `*` for any accelerator. Absent with
   * perNodeHour only: the entry prices CPU-only jobs.
   */
  accelerator?: string;
  /** Money per accelerator-hour held. */
  perAcceleratorHour?: number;
  /** Money per node-hour held, for jobs that hold no accelerator. */
  perNodeHour?: number;
  /** ISO 4217 code (USD, CNY, EUR, ...), as written. */
  currency: string;
}

/** Peak dense tensor throughput per precision, in TFLOP/s (10^12 FLOP/s). */
export type Precision = 'FP8' | 'BF16' | 'FP16' | 'TF32' | 'FP32';
export const PRECISIONS: readonly Precision[] = ['FP8', 'BF16', 'FP16', 'TF32', 'FP32'];
export type PeakTable = Readonly<Record<string, Partial<Record<Precision, number>>>>;

export interface LedgerSettings {
  prices: readonly PriceEntry[];
  /** Average board power per accelerator model (acceleratorModel name or the platform's), in watts: the estimate for hours without readings. */
  averagePowerWatts: Readonly<Record<string, number>>;
  /** Peaks that replace or add to PEAK_TFLOPS, by model. */
  peakTflops: PeakTable;
  /** The precision MFU is measured against when a question does not say (default BF16). */
  precision: Precision;
}

export const NO_LEDGER_SETTINGS: LedgerSettings = { prices: [], averagePowerWatts: {}, peakTflops: {}, precision: 'BF16' };

/**
 * The accelerator models the ledger knows, most specific first: a platform's type name (`NVIDIA
 * A100-SXM4-80GB`, `H800-80GB`, `AMD Instinct MI300X_OAM`, `Ascend-snt9b`) is matched against each
 * pattern in turn. A name none matches has no model: its MFU is null with NO_PEAK.
 */
export const MODEL_PATTERNS: readonly [string, RegExp][] = [
  ['H100 PCIe', /h100[^a-z0-9]*pcie/i],
  ['H100', /h100/i],
  ['H200', /h200/i],
  ['H800', /h800/i],
  ['H20', /h20(?![0-9])/i],
  ['A100', /a100/i],
  ['A800', /a800/i],
  ['A10G', /a10g/i],
  ['A10', /a10(?![0-9])/i],
  ['L40S', /l40s/i],
  ['L4', /(^|[^a-z0-9])l4(?![0-9])/i],
  ['V100', /v100/i],
  ['P100', /p100/i],
  ['T4', /(^|[^a-z0-9])t4(?![0-9])/i],
  ['MI325X', /mi325x/i],
  ['MI300X', /mi300x/i],
  ['MI250X', /mi250x/i],
  // ModelArts names Ascend 910B cards by their flavor family ("snt9b").
  ['Ascend 910B', /910b|snt9b/i],
];

/** The ledger's name for a platform's accelerator type, or null when it is not one it knows. */
export function acceleratorModel(gpuType: string | null | undefined): string | null {
  if (!gpuType) return null;
  for (const [name, re] of MODEL_PATTERNS) if (re.test(gpuType)) return name;
  return null;
}

/**
 * Dense (no structured sparsity) peak tensor TFLOP/s per model and precision, from the vendors'
 * datasheets (docs/ledger.md names each source). Datasheets quote FP8/FP16/BF16/TF32 "with
 * sparsity" at twice these figures: MFU is measured against dense peaks, as PaLM's MFU defines it.
 */
export const PEAK_TFLOPS: PeakTable = {
  V100: { FP16: 125, FP32: 15.7 },
  P100: { FP16: 18.7, FP32: 9.3 },
  T4: { FP16: 65, FP32: 8.1 },
  A10: { BF16: 125, FP16: 125, TF32: 62.5, FP32: 31.2 },
  A100: { BF16: 312, FP16: 312, TF32: 156, FP32: 19.5 },
  A800: { BF16: 312, FP16: 312, TF32: 156, FP32: 19.5 },
  L4: { FP8: 242.5, BF16: 121, FP16: 121, TF32: 60, FP32: 30.3 },
  L40S: { FP8: 733, BF16: 362.05, FP16: 362.05, TF32: 183, FP32: 91.6 },
  H100: { FP8: 1979, BF16: 989, FP16: 989, TF32: 494.5, FP32: 67 },
  'H100 PCIe': { FP8: 1513, BF16: 756, FP16: 756, TF32: 378, FP32: 51 },
  H800: { FP8: 1979, BF16: 989, FP16: 989, TF32: 494.5, FP32: 67 },
  H200: { FP8: 1979, BF16: 989, FP16: 989, TF32: 494.5, FP32: 67 },
  H20: { FP8: 296, BF16: 148, FP16: 148, TF32: 74, FP32: 44 },
  MI250X: { BF16: 383, FP16: 383, FP32: 95.7 },
  MI300X: { FP8: 2614.9, BF16: 1307.4, FP16: 1307.4, TF32: 653.7, FP32: 163.4 },
  MI325X: { FP8: 2614.9, BF16: 1307.4, FP16: 1307.4, TF32: 653.7, FP32: 163.4 },
  'Ascend 910B': { BF16: 313, FP16: 313 },
};

/** Why a ledger figure is null (or, for a group, why its amount is). */
export type LedgerReasonCode =
  | 'NO_PRICE'
  | 'NO_TOPOLOGY'
  | 'MIXED_CURRENCY'
  | 'UNKNOWN_END'
  | 'NOT_STARTED'
  | 'NO_UTILIZATION'
  | 'NO_POWER_READINGS'
  | 'NOT_REPORTED'
  | 'NO_FLOPS_SERIES'
  | 'NO_PEAK'
  | 'NOT_MEASURED'
  | 'STALE';

export interface LedgerReason {
  /** The field the reason is about (amount, idleAmount, kwh, mfu, tensorActive, smActive). */
  field: string;
  code: LedgerReasonCode;
  message: string;
}

/**
 * What the store measured of one job in one window: the inputs of every ledger figure. Times are
 * accelerator-milliseconds (ms x accelerators), so that a node aggregate's share and a GPU's add up.
 */
export interface JobUsage {
  jobId: string;
  providerId: string;
  projectId: string;
  owner: string | null;
  labels: Readonly<Record<string, string | null>> | null;
  gpuType: string | null;
  /** Nodes known for the job (its cached topology); 0 when unknown. */
  nodeCount: number;
  /** The window's length, ms (0 when the job's life does not overlap it). */
  windowMs: number;
  /** Accelerators held x window, as the fleet's allocatedGpuHours counts them (in ms). */
  allocMs: number;
  /** Accelerator-ms with utilization data, and utilization x that time (the fleet's covered and used). */
  coveredMs: number;
  usedMs: number;
  /** Accelerator-ms between two power readings (GPU scope), and the trapezoid integral of watts over them, W x ms. */
  powerCoveredMs: number;
  powerWattMs: number;
  /** Per-GPU ratio series: accelerator-ms with readings and the integral of the ratio over them. */
  tensorCoveredMs: number;
  tensorIntegral: number;
  smCoveredMs: number;
  smIntegral: number;
  /** The job's achieved model FLOP/s per accelerator: covered ms (x accelerators) and FLOP/s x ms over them. */
  flopsCoveredMs: number;
  flopsIntegral: number;
  /** Why the job could not be measured at all (the fleet's UNKNOWN_END, a job that has not started). */
  unmeasured?: { code: LedgerReasonCode; message: string } | null;
  /** The platform failed to refresh the job's series for this answer: the figures are from what the cache holds. */
  stale?: { code: string; message: string } | null;
}

const MS_PER_HOUR = 3_600_000;
/** Money is kept in millionths of its unit: each job's amount rounds once, so groups add up exactly. */
export const MICROS = 1_000_000;

export interface CostFigure {
  /** In millionths of the currency (integers), so sums are exact; null = unknown (see reasons). */
  amountMicros: number | null;
  idleAmountMicros: number | null;
  currency: string | null;
  /** Accelerator-hours (or node-hours, for a CPU-only job) the amount is for. */
  billedHours: number;
  basis: 'ACCELERATOR_HOUR' | 'NODE_HOUR' | null;
  unitPrice: number | null;
  reasons: LedgerReason[];
}

/** How specific a price entry is (provider + model 3, provider 2, model 1, any 0; CPU entries alike): the most specific match wins, the first of equals. */
export function priceRank(p: PriceEntry): number {
  const model = p.accelerator !== undefined && p.accelerator !== '*' ? 1 : 0;
  return (p.provider === '*' ? 0 : 2) + model;
}

/** The price entry for a job: the most specific match wins (provider + model, then provider, then model, then any). */
export function priceFor(prices: readonly PriceEntry[], providerId: string, gpuType: string | null, cpuOnly: boolean): PriceEntry | null {
  const model = acceleratorModel(gpuType)?.toLowerCase() ?? null;
  const raw = gpuType?.toLowerCase() ?? null;
  let best: PriceEntry | null = null;
  let bestRank = -1;
  for (const p of prices) {
    if (p.provider !== '*' && p.provider !== providerId) continue;
    let modelRank: number;
    if (cpuOnly) {
      if (p.perNodeHour === undefined || (p.accelerator !== undefined && p.accelerator !== '*')) continue;
      modelRank = p.accelerator === undefined ? 1 : 0;
    } else {
      if (p.perAcceleratorHour === undefined || p.accelerator === undefined) continue;
      const a = p.accelerator.toLowerCase();
      if (a === '*') modelRank = 0;
      else if (a === raw || a === model) modelRank = 1;
      else continue;
    }
    const rank = (p.provider === '*' ? 0 : 2) + modelRank;
    if (rank > bestRank) [best, bestRank] = [p, rank];
  }
  return best;
}

/**
 * The providers whose CPU-only jobs the price table bills per node-hour (an entry priceFor would
 * pick for them): `'*'` when an entry of any provider does. The fleet's groups count those jobs, so
 * their cost is in the groups' sums; other CPU-only jobs stay out of the groups, as before.
 */
export function nodeBilledProviders(prices: readonly PriceEntry[]): readonly string[] | '*' {
  const billing = prices.filter((p) => p.perNodeHour !== undefined && (p.accelerator === undefined || p.accelerator === '*'));
  if (billing.some((p) => p.provider === '*')) return '*';
  return [...new Set(billing.map((p) => p.provider))];
}

const money = (ms: number, perHour: number) => Math.round(((ms / MS_PER_HOUR) * perHour * MICROS) as number);

/** A job's cost in the window: accelerator-hours held x price; idle = (held - used) x price. */
export function jobCost(u: JobUsage, prices: readonly PriceEntry[]): CostFigure {
  const none = (code: LedgerReasonCode, message: string): CostFigure => ({
    amountMicros: null,
    idleAmountMicros: null,
    currency: null,
    billedHours: 0,
    basis: null,
    unitPrice: null,
    reasons: [
      { field: 'amount', code, message },
      { field: 'idleAmount', code, message },
    ],
  });
  if (u.unmeasured) return none(u.unmeasured.code, u.unmeasured.message);
  if (u.allocMs > 0) {
    const p = priceFor(prices, u.providerId, u.gpuType, false);
    if (!p) {
      return none(
        'NO_PRICE',
        `no price for ${u.gpuType ?? 'an accelerator of unknown model'} on provider "${u.providerId}" in the price table (ledger.prices)`,
      );
    }
    const reasons: LedgerReason[] = [];
    let idle: number | null = money(u.allocMs - u.usedMs, p.perAcceleratorHour!);
    if (u.coveredMs === 0) {
      // No utilization at all: every held hour counts as idle, as the fleet's waste counts it; said so.
      reasons.push({
        field: 'idleAmount',
        code: 'NO_UTILIZATION',
        message: 'no utilization readings in the window: every held hour counts as idle (unmeasured use is not shown as use)',
      });
    }
    if (idle < 0) idle = 0;
    if (u.stale) reasons.push(staleReason('idleAmount', u.stale));
    return {
      amountMicros: money(u.allocMs, p.perAcceleratorHour!),
      idleAmountMicros: idle,
      currency: p.currency,
      billedHours: u.allocMs / MS_PER_HOUR,
      basis: 'ACCELERATOR_HOUR',
      unitPrice: p.perAcceleratorHour!,
      reasons,
    };
  }
  // No accelerators held: a CPU-only job is billed per node-hour where the table says so.
  if (u.nodeCount === 0) {
    return none('NO_TOPOLOGY', 'the job holds no known accelerators and its nodes are not known: nothing to bill');
  }
  const p = priceFor(prices, u.providerId, null, true);
  if (!p) return none('NO_PRICE', `no per-node-hour price for CPU-only jobs on provider "${u.providerId}" in the price table (ledger.prices)`);
  const nodeMs = u.nodeCount * u.windowMs;
  return {
    amountMicros: money(nodeMs, p.perNodeHour!),
    idleAmountMicros: null,
    currency: p.currency,
    billedHours: nodeMs / MS_PER_HOUR,
    basis: 'NODE_HOUR',
    unitPrice: p.perNodeHour!,
    reasons: [
      { field: 'idleAmount', code: 'NOT_MEASURED', message: 'a CPU-only job has no accelerator utilization: its idle share is not known' },
      ...(u.stale ? [staleReason('amount', u.stale)] : []),
    ],
  };
}

/** A figure computed from the cache after a failed refresh says so (its value stands, as a stale series' does). */
function staleReason(field: string, s: { code: string; message: string }): LedgerReason {
  return { field, code: 'STALE', message: `counted from the cache: the platform's series could not be refreshed (${s.code}: ${s.message})` };
}

export interface EnergyFigure {
  /** kWh from power readings (trapezoid), null when there are none. */
  measuredKwh: number | null;
  /** kWh for the held accelerator-hours without readings, from the configured average power; null when none is configured or nothing is missing. */
  estimatedKwh: number | null;
  /** measured + estimated; null when neither is known, or when readings are missing and no average power is configured. */
  kwh: number | null;
  /** Ratio 0..1 of the held accelerator-hours that had power readings; null when nothing was held. */
  coverage: number | null;
  /** True when kwh includes an estimate. */
  estimated: boolean;
  reasons: LedgerReason[];
}

const WATT_MS_PER_KWH = 3_600_000 * 1000;

/** Power to energy: Wms / 3.6e9 = kWh. */
export function jobEnergy(u: JobUsage, settings: Pick<LedgerSettings, 'averagePowerWatts'>): EnergyFigure {
  return energyOf([u], settings);
}

/** Energy of jobs together (one job, or a group): readings summed, estimates per job's model. */
export function energyOf(us: readonly JobUsage[], settings: Pick<LedgerSettings, 'averagePowerWatts'>): EnergyFigure {
  const reasons: LedgerReason[] = [];
  const measured = us.filter((u) => !u.unmeasured);
  if (measured.length === 0) {
    const u = us[0]?.unmeasured;
    return {
      measuredKwh: null,
      estimatedKwh: null,
      kwh: null,
      coverage: null,
      estimated: false,
      reasons: [{ field: 'kwh', code: u?.code ?? 'NO_TOPOLOGY', message: u?.message ?? 'no job held accelerators in the window' }],
    };
  }
  let alloc = 0;
  let covered = 0;
  let wattMs = 0;
  let estimatedWattMs = 0;
  let unestimated = 0;
  for (const u of measured) {
    alloc += u.allocMs;
    const c = Math.min(u.powerCoveredMs, u.allocMs);
    covered += c;
    wattMs += u.powerWattMs;
    const missing = u.allocMs - c;
    if (missing > 0) {
      const w = averagePower(settings.averagePowerWatts, u.gpuType);
      if (w === null) unestimated += missing;
      else estimatedWattMs += missing * w;
    }
  }
  if (alloc === 0) {
    return {
      measuredKwh: null,
      estimatedKwh: null,
      kwh: null,
      coverage: null,
      estimated: false,
      reasons: [{ field: 'kwh', code: 'NO_TOPOLOGY', message: 'no accelerators held in the window (or their count is unknown)' }],
    };
  }
  const measuredKwh = covered > 0 ? wattMs / WATT_MS_PER_KWH : null;
  const estimatedKwh = estimatedWattMs > 0 ? estimatedWattMs / WATT_MS_PER_KWH : null;
  let kwh: number | null = null;
  if (unestimated > 0) {
    reasons.push({
      field: 'kwh',
      code: covered > 0 ? 'NO_POWER_READINGS' : 'NO_POWER_READINGS',
      message:
        covered > 0
          ? `${pct(covered / alloc)} of the held accelerator-hours had power readings and no average power is configured for the rest (ledger.averagePowerWatts): see measuredKwh`
          : 'the platform reports no per-accelerator power for this window and no average power is configured for its model (ledger.averagePowerWatts)',
    });
  } else {
    kwh = (measuredKwh ?? 0) + (estimatedKwh ?? 0);
  }
  const stale = measured.find((u) => u.stale)?.stale;
  if (stale) reasons.push(staleReason('kwh', stale));
  return { measuredKwh, estimatedKwh, kwh, coverage: covered / alloc, estimated: estimatedKwh !== null, reasons };
}

function averagePower(table: Readonly<Record<string, number>>, gpuType: string | null): number | null {
  if (!gpuType) return null;
  const model = acceleratorModel(gpuType);
  for (const [k, w] of Object.entries(table)) {
    const key = k.toLowerCase();
    if (key === gpuType.toLowerCase() || (model !== null && key === model.toLowerCase())) return w;
  }
  return null;
}

export interface EfficiencyFigure {
  /** Time-weighted mean of the per-GPU ratio over the readings, 0..1. */
  tensorActive: number | null;
  smActive: number | null;
  /** The achieved model FLOP/s per accelerator, time-weighted over its readings. */
  achievedFlops: number | null;
  /** The accelerators' model as the ledger knows it (PEAK_TFLOPS' keys), null when unknown (mixed in a group). */
  model: string | null;
  reasons: LedgerReason[];
}

export function efficiencyOf(us: readonly JobUsage[]): EfficiencyFigure {
  const measured = us.filter((u) => !u.unmeasured);
  const sum = (f: (u: JobUsage) => number) => measured.reduce((a, u) => a + f(u), 0);
  const reasons: LedgerReason[] = [];
  const ratio = (field: string, covered: number, integral: number, what: string) => {
    if (covered > 0) return integral / covered;
    reasons.push({
      field,
      code: 'NOT_REPORTED',
      message: `no ${what} readings in the window (PAI-DLC reports it per card through CloudMonitor; other platforms do not)`,
    });
    return null;
  };
  const tensorActive = ratio(
    'tensorActive',
    sum((u) => u.tensorCoveredMs),
    sum((u) => u.tensorIntegral),
    'tensor-pipe active',
  );
  const smActive = ratio(
    'smActive',
    sum((u) => u.smCoveredMs),
    sum((u) => u.smIntegral),
    'SM active',
  );
  const flopsCovered = sum((u) => u.flopsCoveredMs);
  const achievedFlops = flopsCovered > 0 ? sum((u) => u.flopsIntegral) / flopsCovered : null;
  const models = new Set(measured.map((u) => acceleratorModel(u.gpuType)));
  const model = models.size === 1 ? [...models][0]! : null;
  if (achievedFlops === null) {
    reasons.push({
      field: 'mfu',
      code: 'NO_FLOPS_SERIES',
      message: "no achieved model TFLOP/s in the window (Primus-Lens' TrainingPerformance reports it; other platforms do not)",
    });
  }
  const stale = measured.find((u) => u.stale)?.stale;
  if (stale) reasons.push(staleReason('efficiency', stale));
  return { tensorActive, smActive, achievedFlops, model, reasons };
}

/** The peak of a model at a precision, config first, then PEAK_TFLOPS; null when neither knows it. */
export function peakTflops(model: string | null, precision: Precision, overrides: PeakTable): number | null {
  if (!model) return null;
  const find = (table: PeakTable) => Object.entries(table).find(([k]) => k.toLowerCase() === model.toLowerCase())?.[1]?.[precision];
  return find(overrides) ?? PEAK_TFLOPS[model]?.[precision] ?? null;
}

/**
 * MFU: achieved model FLOP/s over the accelerator's dense peak at the precision. For a group the
 * achieved FLOP (FLOP/s x time) of every job with a known peak over the peak FLOP of the same time.
 */
export function mfuOf(
  us: readonly JobUsage[],
  precision: Precision,
  overrides: PeakTable,
): { mfu: number | null; peakTflops: number | null; reason: LedgerReason | null } {
  const withFlops = us.filter((u) => !u.unmeasured && u.flopsCoveredMs > 0);
  if (withFlops.length === 0) {
    return {
      mfu: null,
      peakTflops: null,
      reason: { field: 'mfu', code: 'NO_FLOPS_SERIES', message: "no achieved model TFLOP/s in the window (Primus-Lens' TrainingPerformance reports it)" },
    };
  }
  let achieved = 0;
  let peak = 0;
  const peaks = new Set<number>();
  const unknown: string[] = [];
  for (const u of withFlops) {
    const p = peakTflops(acceleratorModel(u.gpuType), precision, overrides);
    if (p === null) {
      unknown.push(u.gpuType ?? 'unknown');
      continue;
    }
    peaks.add(p);
    achieved += u.flopsIntegral;
    peak += p * 1e12 * u.flopsCoveredMs;
  }
  if (unknown.length > 0) {
    return {
      mfu: null,
      peakTflops: null,
      reason: {
        field: 'mfu',
        code: 'NO_PEAK',
        message: `no ${precision} peak known for ${[...new Set(unknown)].join(', ')} (the table in docs/ledger.md; ledger.peakTflops adds one)`,
      },
    };
  }
  return { mfu: achieved / peak, peakTflops: peaks.size === 1 ? [...peaks][0]! : null, reason: null };
}

/** Costs of a group: exact sums of the jobs' rounded amounts, never across currencies, never partial. */
export interface GroupCost {
  amountMicros: number | null;
  idleAmountMicros: number | null;
  /** The sum over the jobs that have a price (in their one currency); null with mixed currencies. */
  pricedAmountMicros: number | null;
  currency: string | null;
  unpricedJobs: number;
  reasons: LedgerReason[];
}

export function groupCost(costs: readonly CostFigure[]): GroupCost {
  const priced = costs.filter((c) => c.amountMicros !== null);
  const currencies = new Set(priced.map((c) => c.currency!));
  const unpriced = costs.length - priced.length;
  if (currencies.size > 1) {
    const message = `the jobs are priced in ${[...currencies].sort().join(' and ')}: amounts in different currencies are never summed`;
    return {
      amountMicros: null,
      idleAmountMicros: null,
      pricedAmountMicros: null,
      currency: null,
      unpricedJobs: unpriced,
      reasons: [
        { field: 'amount', code: 'MIXED_CURRENCY', message },
        { field: 'idleAmount', code: 'MIXED_CURRENCY', message },
      ],
    };
  }
  const currency = priced.length ? [...currencies][0]! : null;
  const pricedSum = priced.reduce((a, c) => a + c.amountMicros!, 0);
  const reasons: LedgerReason[] = [];
  let amount: number | null = pricedSum;
  if (unpriced > 0) {
    amount = null;
    const first = costs.find((c) => c.amountMicros === null)!.reasons[0]!;
    reasons.push({
      field: 'amount',
      code: first.code,
      message: `${unpriced} of ${costs.length} jobs have no cost (first: ${first.message}): pricedAmount sums the others`,
    });
  }
  let idle: number | null = null;
  const idleKnown = priced.filter((c) => c.idleAmountMicros !== null);
  if (unpriced === 0 && idleKnown.length === priced.length) idle = idleKnown.reduce((a, c) => a + c.idleAmountMicros!, 0);
  else
    reasons.push({
      field: 'idleAmount',
      code: unpriced > 0 ? reasons[0]!.code : 'NOT_MEASURED',
      message: 'some jobs have no idle amount (no price, or CPU-only)',
    });
  if (costs.length === 0) {
    amount = null;
    idle = null;
    reasons.push({ field: 'amount', code: 'NO_TOPOLOGY', message: 'no job held anything in the window' });
  }
  return { amountMicros: amount, idleAmountMicros: idle, pricedAmountMicros: priced.length ? pricedSum : null, currency, unpricedJobs: unpriced, reasons };
}

function pct(r: number): string {
  return `${Math.round(r * 1000) / 10}%`;
}

export const microsToAmount = (m: number | null): number | null => (m === null ? null : m / MICROS);
