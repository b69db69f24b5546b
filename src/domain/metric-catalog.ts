// The canonical metric catalog: what each SystemMetric means, its unit, the finest scope any
// platform reports it at, and each platform's own name for it. Adapters map through this table
// so a metric means the same thing whichever platform it came from.
import type { MetricScope, MetricUnit, ProviderKind, SystemMetric } from './types.js';

export interface MetricDefinition {
  name: SystemMetric;
  unit: MetricUnit;
  /** The finest scope a platform may report; a platform reports its own scope on each series. */
  finestScope: MetricScope;
  description: string;
  /**
   * Each platform's raw names for this metric (and the unit each arrives in); absent = not
   * offered. A platform with several routes to one metric names each (`route`): adapters take their
   * raw names from here, never from a literal of their own.
   */
  raw: Partial<Record<ProviderKind, readonly RawName[]>>;
}

export interface RawName {
  name: string;
  unit: string;
  /** Which of the platform's routes uses this name, where it has more than one. */
  route?: string;
}

/** What a metric means, whichever platform reports it. */
type Meaning = Omit<MetricDefinition, 'name' | 'raw'>;

const MEANINGS: Record<SystemMetric, Meaning> = {
  GPU_UTILIZATION: { unit: 'RATIO', finestScope: 'GPU', description: 'Fraction of time the GPU was busy, 0..1' },
  GPU_MEMORY_USED: { unit: 'BYTES', finestScope: 'GPU', description: 'GPU memory in use' },
  GPU_MEMORY_UTILIZATION: { unit: 'RATIO', finestScope: 'GPU', description: 'GPU memory in use over GPU memory available, 0..1' },
  CPU_USAGE: { unit: 'CORES', finestScope: 'NODE', description: 'CPU cores in use' },
  CPU_UTILIZATION: { unit: 'RATIO', finestScope: 'NODE', description: 'CPU in use over CPU available, 0..1 (where a platform gives only a percentage)' },
  MEMORY_USED: { unit: 'BYTES', finestScope: 'NODE', description: 'Host memory in use' },
  MEMORY_UTILIZATION: { unit: 'RATIO', finestScope: 'NODE', description: 'Host memory in use over memory available, 0..1' },
  NETWORK_RECEIVE_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'NODE', description: 'Network bytes received per second' },
  NETWORK_TRANSMIT_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'NODE', description: 'Network bytes sent per second' },
  DISK_READ_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'NODE', description: 'Disk bytes read per second' },
  DISK_WRITE_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'NODE', description: 'Disk bytes written per second' },
  STORAGE_USED: { unit: 'BYTES', finestScope: 'NODE', description: 'Local (ephemeral) storage in use' },
  STORAGE_UTILIZATION: { unit: 'RATIO', finestScope: 'NODE', description: 'Local (ephemeral) storage in use over its limit, 0..1' },
  NPU_UTILIZATION: { unit: 'RATIO', finestScope: 'NODE', description: 'Fraction of time the NPU (Ascend) was busy, 0..1' },
  NPU_MEMORY_UTILIZATION: { unit: 'RATIO', finestScope: 'NODE', description: 'NPU memory in use over NPU memory available, 0..1' },
  GPU_POWER: { unit: 'WATTS', finestScope: 'GPU', description: 'GPU (socket) power draw, in watts' },
  GPU_TEMPERATURE: { unit: 'CELSIUS', finestScope: 'GPU', description: 'GPU (core) temperature, in degrees Celsius' },
  MODEL_FLOPS_PER_GPU: {
    unit: 'FLOPS',
    finestScope: 'JOB',
    description:
      "Floating-point operations per second the training loop achieves per GPU, as the framework reports it (model FLOPs, not the hardware's counters)",
  },
  RDMA_RECEIVE_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'NODE', description: 'RDMA (RoCE) bytes received per second' },
  RDMA_TRANSMIT_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'NODE', description: 'RDMA (RoCE) bytes sent per second' },
  GPU_SM_ACTIVE: {
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the streaming multiprocessors had work resident, averaged over the GPU, 0..1 (DCGM SM active)',
  },
  GPU_TENSOR_ACTIVE: {
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the tensor (matrix) pipes were active, 0..1 (DCGM tensor pipe active)',
  },
  GPU_DRAM_ACTIVE: {
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the GPU memory interface was busy moving data, 0..1 (DCGM DRAM active; bandwidth, not capacity)',
  },
  GPU_NVLINK_RECEIVE_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'GPU', description: 'Bytes per second the GPU received over NVLink' },
  GPU_NVLINK_TRANSMIT_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'GPU', description: 'Bytes per second the GPU sent over NVLink' },
  GPU_PCIE_RECEIVE_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'GPU', description: 'Bytes per second the GPU received over PCIe' },
  GPU_PCIE_TRANSMIT_RATE: { unit: 'BYTES_PER_SECOND', finestScope: 'GPU', description: 'Bytes per second the GPU sent over PCIe' },
  GPU_TENSOR_FLOPS: {
    unit: 'FLOPS',
    finestScope: 'GPU',
    description:
      "Floating-point operations per second the GPU's tensor pipes performed, as the hardware counters measure them (not the model FLOPs a framework reports)",
  },
};
/**
 * Each platform's raw names by metric: a platform's names read together, as its adapter takes them.
 * Where one raw name stands for two metrics (Baseten's gpu_memory_usage_bytes), a raw name's
 * metric is the first of them in MEANINGS' order (canonicalMetricFor).
 */
const RAW_NAMES: Partial<Record<ProviderKind, Partial<Record<SystemMetric, readonly RawName[]>>>> = {
  BASETEN: {
    GPU_UTILIZATION: [{ name: 'gpu_utilization', unit: 'fraction 0-1, per rank' }],
    GPU_MEMORY_USED: [{ name: 'gpu_memory_usage_bytes', unit: 'bytes, per rank' }],
    // Derived: the rank's gpu_memory_usage_bytes over instance_type.gpu_memory_limit_mib.
    GPU_MEMORY_UTILIZATION: [{ name: 'gpu_memory_usage_bytes', unit: 'bytes, per rank, over the instance type GPU memory limit' }],
    CPU_USAGE: [{ name: 'cpu_usage', unit: 'cores' }],
    MEMORY_USED: [{ name: 'cpu_memory_usage_bytes', unit: 'bytes' }],
    STORAGE_USED: [
      { name: 'ephemeral_storage.usage_bytes', unit: 'bytes, per node', route: 'per node' },
      { name: 'cache.usage_bytes', unit: 'bytes, the job read-write cache volume', route: 'cache' },
    ],
    STORAGE_UTILIZATION: [
      { name: 'ephemeral_storage.utilization', unit: 'fraction 0-1, per node', route: 'per node' },
      { name: 'cache.utilization', unit: 'fraction 0-1, the job read-write cache volume', route: 'cache' },
    ],
  },
  MODELARTS: {
    GPU_UTILIZATION: [{ name: 'gpuUtil', unit: 'percent, task average' }],
    GPU_MEMORY_UTILIZATION: [{ name: 'gpuMemUsage', unit: 'percent, task average' }],
    CPU_UTILIZATION: [{ name: 'cpuUsage', unit: 'percent' }],
    MEMORY_UTILIZATION: [{ name: 'memUsage', unit: 'percent' }],
    NPU_UTILIZATION: [{ name: 'npuUtil', unit: 'percent' }],
    NPU_MEMORY_UTILIZATION: [{ name: 'npuMemUsage', unit: 'percent' }],
  },
  PAI_DLC: {
    // "DUTTY" (sic) is how real callers of GetMetrics spell it; the job-wide duty cycle.
    GPU_UTILIZATION: [
      { name: 'GpuCoreUsage', unit: 'percent, pod average', route: 'GetJobMetrics' },
      { name: 'JOB_GPU_ACCELERATOR_DUTTY_UTIL', unit: 'percent, job average (unconfirmed scale)', route: 'CloudMonitor job' },
      { name: 'CARD_GPU_DUTY_CYCLE', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' },
    ],
    GPU_MEMORY_UTILIZATION: [{ name: 'GpuMemoryUsage', unit: 'percent, pod average', route: 'GetJobMetrics' }],
    CPU_UTILIZATION: [{ name: 'CpuCoreUsage', unit: 'percent', route: 'GetJobMetrics' }],
    MEMORY_UTILIZATION: [{ name: 'MemoryUsage', unit: 'percent', route: 'GetJobMetrics' }],
    NETWORK_RECEIVE_RATE: [{ name: 'NetworkInputRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
    NETWORK_TRANSMIT_RATE: [{ name: 'NetworkOutputRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
    DISK_READ_RATE: [{ name: 'DiskReadRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
    DISK_WRITE_RATE: [{ name: 'DiskWriteRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
    // The GPU profiling family PAI-DLC reports per card through GetMetrics (CARD_GPU_*, exported to
    // Alibaba's managed Prometheus as AliyunPaidlc_CARD_GPU_*). Only CARD_GPU_DRAM_ACTIVE_UTIL is seen
    // through GetMetrics itself; the other GetMetrics names are the Prometheus names without their
    // "AliyunPaidlc_" prefix (our reading, unconfirmed: a wrong name answers empty, which the adapter
    // reports). Primus-Lens' API, as read for its fact sheet, offers none of these.
    GPU_SM_ACTIVE: [{ name: 'CARD_GPU_SM_UTIL', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' }],
    GPU_TENSOR_ACTIVE: [{ name: 'CARD_GPU_PIP_TENSOR_ACTIVE', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' }],
    GPU_DRAM_ACTIVE: [{ name: 'CARD_GPU_DRAM_ACTIVE_UTIL', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' }],
    GPU_NVLINK_RECEIVE_RATE: [{ name: 'CARD_GPU_NVLINK_RECEIVE', unit: 'MiB/s, per card', route: 'CloudMonitor card' }],
    GPU_NVLINK_TRANSMIT_RATE: [{ name: 'CARD_GPU_NVLINK_TRANSMIT', unit: 'MiB/s, per card', route: 'CloudMonitor card' }],
    GPU_PCIE_RECEIVE_RATE: [{ name: 'CARD_GPU_PCIE_RECEIVE', unit: 'MiB/s, per card', route: 'CloudMonitor card' }],
    GPU_PCIE_TRANSMIT_RATE: [{ name: 'CARD_GPU_PCIE_TRANSMIT', unit: 'MiB/s, per card', route: 'CloudMonitor card' }],
    GPU_TENSOR_FLOPS: [{ name: 'CARD_GPU_TENSORTFLOPS_USED', unit: 'TFLOP/s, per card (unit our reading of the name)', route: 'CloudMonitor card' }],
  },
  PRIMUS_LENS: {
    GPU_UTILIZATION: [
      { name: 'GPU Utilization', unit: 'percent, per node', route: 'workload metrics' },
      { name: 'gpu_utilization_by_device', unit: 'percent, per device', route: 'unified' },
      { name: 'gpu_utilization', unit: 'percent, per device of the node (node-wide)', route: 'node gpuMetrics' },
    ],
    GPU_MEMORY_UTILIZATION: [{ name: 'GPU Memory Utilization', unit: 'percent, per node', route: 'workload metrics' }],
    CPU_USAGE: [{ name: 'pod_cpu_usage', unit: 'cores, per pod (summed per node)', route: 'unified' }],
    MEMORY_USED: [{ name: 'pod_memory_usage', unit: 'bytes, per pod working set (summed per node)', route: 'unified' }],
    DISK_READ_RATE: [{ name: 'pod_read_bytes', unit: 'bytes/s, per pod and container filesystem reads (summed per node)', route: 'unified' }],
    DISK_WRITE_RATE: [{ name: 'pod_write_bytes', unit: 'bytes/s, per pod and container filesystem writes (summed per node)', route: 'unified' }],
    GPU_POWER: [
      { name: 'GPU Power', unit: 'W, per node', route: 'workload metrics' },
      { name: 'gpu_power_by_device', unit: 'W, per device', route: 'unified' },
    ],
    // Lens' TrainingPerformance graph holds a series labelled "tflops" (and one labelled "iteration").
    // Per GPU is our reading (unconfirmed): the values sit where one accelerator's achieved TFLOP/s
    // do (hundreds), and the adapter reports a value above any accelerator's peak as a mismatch.
    MODEL_FLOPS_PER_GPU: [{ name: 'TrainingPerformance', unit: 'TFLOP/s per GPU, series labelled "tflops"', route: 'workload metrics' }],
    RDMA_RECEIVE_RATE: [{ name: 'rdma_rx_bandwidth_by_node', unit: 'bytes/s, per node', route: 'unified' }],
    RDMA_TRANSMIT_RATE: [{ name: 'rdma_tx_bandwidth_by_node', unit: 'bytes/s, per node', route: 'unified' }],
  },
  RUNICORN: {
    GPU_UTILIZATION: [{ name: 'util_gpu', unit: 'percent, host snapshot', route: 'gpu telemetry' }],
    GPU_MEMORY_USED: [{ name: 'mem_used_mib', unit: 'MiB, host snapshot', route: 'gpu telemetry' }],
    GPU_MEMORY_UTILIZATION: [{ name: 'mem_used_pct', unit: 'percent, host snapshot', route: 'gpu telemetry' }],
    GPU_POWER: [{ name: 'power_w', unit: 'W, host snapshot', route: 'gpu telemetry' }],
    GPU_TEMPERATURE: [{ name: 'temp_c', unit: '°C, host snapshot', route: 'gpu telemetry' }],
  },
};

const defs: MetricDefinition[] = (Object.keys(MEANINGS) as SystemMetric[]).map((name) => ({
  name,
  ...MEANINGS[name],
  raw: Object.fromEntries(Object.entries(RAW_NAMES).flatMap(([kind, names]) => (names[name] ? [[kind, names[name]]] : []))),
}));

export const METRIC_CATALOG: ReadonlyMap<SystemMetric, MetricDefinition> = new Map(defs.map((d) => [d.name, d]));

export function metricDefinition(name: SystemMetric): MetricDefinition {
  const def = METRIC_CATALOG.get(name);
  if (!def) throw new Error(`metric ${name} is missing from the catalog`);
  return def;
}

/**
 * A platform's raw name for a metric on one of its routes (the only route when it has one). Throws
 * when the catalog has none: an adapter asking for a name the catalog lacks is a programming error,
 * found at start-up since the adapters build their tables when their module loads.
 */
export function rawName(metric: SystemMetric, kind: ProviderKind, route?: string): string {
  const names = metricDefinition(metric).raw[kind] ?? [];
  const found = route === undefined ? (names.length === 1 ? names[0] : undefined) : names.find((n) => n.route === route);
  if (!found) throw new Error(`the metric catalog has no ${kind} name for ${metric}${route === undefined ? '' : ` on route "${route}"`}`);
  return found.name;
}

/** The canonical metric a platform's raw name stands for, if any (on the given route, when given). */
export function canonicalMetricFor(kind: ProviderKind, raw: string, route?: string): SystemMetric | null {
  for (const def of defs) if (def.raw[kind]?.some((n) => n.name === raw && (route === undefined || n.route === route))) return def.name;
  return null;
}

/**
 * Which way a training metric improves, by the words its name is made of ("val_acc" -> MAX,
 * "train/loss" -> MIN): the conventions of W&B and MLflow users. A name with none of these words
 * has no mode, so no "best" value is computed for it (a best is never guessed).
 */
export const SUMMARY_MODE_WORDS = {
  MIN: ['loss', 'error', 'err', 'perplexity', 'ppl', 'mse', 'mae', 'rmse', 'wer', 'cer', 'nll'],
  MAX: ['acc', 'accuracy', 'f1', 'auc', 'bleu', 'rouge', 'precision', 'recall', 'map', 'iou', 'dice', 'reward', 'top1', 'top5'],
} as const;

/** A case-insensitive POSIX regex (Postgres `~*`, and JavaScript) matching a name that has one of the mode's words. */
export function summaryModePattern(mode: keyof typeof SUMMARY_MODE_WORDS): string {
  return `(^|[^a-z0-9])(${SUMMARY_MODE_WORDS[mode].join('|')})([^a-z0-9]|$)`;
}
