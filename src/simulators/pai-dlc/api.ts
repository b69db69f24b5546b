// The PAI-DLC simulator's reading of the API: clock skew and default windows, the actions, the
// CloudMonitor and GetJobMetrics metric tables, and the parameter parsers every handler shares.
import { SIM_TIME } from './fleet.js';

/** How far x-acs-date may be from the server's clock (Alibaba's documented 15 minutes). */
export const MAX_CLOCK_SKEW_MS = 15 * SIM_TIME.MIN;
export const LIST_DEFAULT_WINDOW_MS = 7 * SIM_TIME.DAY;
export const METRICS_DEFAULT_WINDOW_MS = SIM_TIME.HOUR;

export const ACTIONS: Record<string, string> = {
  listJobs: 'ListJobs',
  getJob: 'GetJob',
  getJobMetrics: 'GetJobMetrics',
  getPodLogs: 'GetPodLogs',
  stopJob: 'StopJob',
  listEcsSpecs: 'ListEcsSpecs',
  getMetrics: 'GetMetrics',
};

/**
 * The GetMetrics names of namespace acs_pai_dlc this simulator serves, and nothing else: the
 * job-wide duty cycle (JOB_GPU_ACCELERATOR_DUTTY_UTIL, sic) and the per-card GPU family (CARD_GPU_*;
 * the fact sheet's names, partly our reading). Per-card values: percent 0..100 for the
 * activity ratios, MiB/s for NVLink/PCIe, TFLOP/s for tensor throughput, each up to `max`.
 */
export const CMS_METRICS: Record<string, { family: 'JOB' | 'CARD'; max: number; floor: number }> = {
  JOB_GPU_ACCELERATOR_DUTTY_UTIL: { family: 'JOB', max: 100, floor: 0.15 },
  CARD_GPU_DUTY_CYCLE: { family: 'CARD', max: 100, floor: 0.15 },
  CARD_GPU_SM_UTIL: { family: 'CARD', max: 100, floor: 0.1 },
  CARD_GPU_PIP_TENSOR_ACTIVE: { family: 'CARD', max: 100, floor: 0.05 },
  CARD_GPU_DRAM_ACTIVE_UTIL: { family: 'CARD', max: 100, floor: 0.1 },
  CARD_GPU_TENSORTFLOPS_USED: { family: 'CARD', max: 250, floor: 0.05 },
  CARD_GPU_NVLINK_RECEIVE: { family: 'CARD', max: 200_000, floor: 0.02 },
  CARD_GPU_NVLINK_TRANSMIT: { family: 'CARD', max: 200_000, floor: 0.02 },
  CARD_GPU_PCIE_RECEIVE: { family: 'CARD', max: 20_000, floor: 0.02 },
  CARD_GPU_PCIE_TRANSMIT: { family: 'CARD', max: 20_000, floor: 0.02 },
};
export const CMS_PERIODS = new Set([15, 60, 900, 3600]);
export const CMS_DEFAULT_LENGTH = 1000;

/**
 * MetricType -> how its values look: Usage in percent 0..100, Rate in MB/s up to `max` (the unit
 * PAI-Studio documents for the same names; unconfirmed for DLC).
 */
export const METRIC_TYPES: Record<string, { percent: boolean; max: number; needsGpu: boolean }> = {
  GpuCoreUsage: { percent: true, max: 100, needsGpu: true },
  GpuMemoryUsage: { percent: true, max: 100, needsGpu: true },
  CpuCoreUsage: { percent: true, max: 100, needsGpu: false },
  MemoryUsage: { percent: true, max: 100, needsGpu: false },
  NetworkInputRate: { percent: false, max: 1250, needsGpu: false },
  NetworkOutputRate: { percent: false, max: 1250, needsGpu: false },
  DiskReadRate: { percent: false, max: 500, needsGpu: false },
  DiskWriteRate: { percent: false, max: 200, needsGpu: false },
};

export const TERMINAL = new Set(['Succeeded', 'Failed', 'Stopped']);

export function iso(ms: number | null): string {
  return ms === null ? '' : new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Parses TimeStep: "5m", "30s", "1h", or a bare number of minutes (the doc's "default 5, unit minutes"). */
export function parseTimeStep(text: string | null): number | null {
  if (text === null || text === '') return 5 * SIM_TIME.MIN;
  const m = /^(\d+)([smh]?)$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const unit = m[2] === 's' ? 1000 : m[2] === 'h' ? SIM_TIME.HOUR : SIM_TIME.MIN;
  return n > 0 ? n * unit : null;
}

export function parseIsoParam(text: string | null): number | null | 'invalid' {
  if (text === null || text === '') return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? 'invalid' : ms;
}
