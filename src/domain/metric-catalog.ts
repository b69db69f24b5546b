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

const defs: MetricDefinition[] = [
  {
    name: 'GPU_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the GPU was busy, 0..1',
    raw: {
      BASETEN: [{ name: 'gpu_utilization', unit: 'fraction 0-1, per rank' }],
      MODELARTS: [{ name: 'gpuUtil', unit: 'percent, task average' }],
      PAI_DLC: [
        { name: 'GpuCoreUsage', unit: 'percent, pod average', route: 'GetJobMetrics' },
        // "DUTTY" (sic) is how real callers of GetMetrics spell it; the job-wide duty cycle.
        { name: 'JOB_GPU_ACCELERATOR_DUTTY_UTIL', unit: 'percent, job average (unconfirmed scale)', route: 'CloudMonitor job' },
        { name: 'CARD_GPU_DUTY_CYCLE', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' },
      ],
      PRIMUS_LENS: [
        { name: 'GPU Utilization', unit: 'percent, per node', route: 'workload metrics' },
        { name: 'gpu_utilization_by_device', unit: 'percent, per device', route: 'unified' },
        { name: 'gpu_utilization', unit: 'percent, per device of the node (node-wide)', route: 'node gpuMetrics' },
      ],
      RUNICORN: [{ name: 'util_gpu', unit: 'percent, host snapshot', route: 'gpu telemetry' }],
    },
  },
  {
    name: 'GPU_MEMORY_USED',
    unit: 'BYTES',
    finestScope: 'GPU',
    description: 'GPU memory in use',
    raw: {
      BASETEN: [{ name: 'gpu_memory_usage_bytes', unit: 'bytes, per rank' }],
      RUNICORN: [{ name: 'mem_used_mib', unit: 'MiB, host snapshot', route: 'gpu telemetry' }],
    },
  },
  {
    name: 'GPU_MEMORY_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'GPU memory in use over GPU memory available, 0..1',
    raw: {
      // Derived: the rank's gpu_memory_usage_bytes over instance_type.gpu_memory_limit_mib.
      BASETEN: [{ name: 'gpu_memory_usage_bytes', unit: 'bytes, per rank, over the instance type GPU memory limit' }],
      MODELARTS: [{ name: 'gpuMemUsage', unit: 'percent, task average' }],
      PAI_DLC: [{ name: 'GpuMemoryUsage', unit: 'percent, pod average', route: 'GetJobMetrics' }],
      PRIMUS_LENS: [{ name: 'GPU Memory Utilization', unit: 'percent, per node', route: 'workload metrics' }],
      RUNICORN: [{ name: 'mem_used_pct', unit: 'percent, host snapshot', route: 'gpu telemetry' }],
    },
  },
  {
    name: 'CPU_USAGE',
    unit: 'CORES',
    finestScope: 'NODE',
    description: 'CPU cores in use',
    raw: {
      BASETEN: [{ name: 'cpu_usage', unit: 'cores' }],
      PRIMUS_LENS: [{ name: 'pod_cpu_usage', unit: 'cores, per pod (summed per node)', route: 'unified' }],
    },
  },
  {
    name: 'CPU_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'NODE',
    description: 'CPU in use over CPU available, 0..1 (where a platform gives only a percentage)',
    raw: {
      MODELARTS: [{ name: 'cpuUsage', unit: 'percent' }],
      PAI_DLC: [{ name: 'CpuCoreUsage', unit: 'percent', route: 'GetJobMetrics' }],
    },
  },
  {
    name: 'MEMORY_USED',
    unit: 'BYTES',
    finestScope: 'NODE',
    description: 'Host memory in use',
    raw: {
      BASETEN: [{ name: 'cpu_memory_usage_bytes', unit: 'bytes' }],
      PRIMUS_LENS: [{ name: 'pod_memory_usage', unit: 'bytes, per pod working set (summed per node)', route: 'unified' }],
    },
  },
  {
    name: 'MEMORY_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'NODE',
    description: 'Host memory in use over memory available, 0..1',
    raw: {
      MODELARTS: [{ name: 'memUsage', unit: 'percent' }],
      PAI_DLC: [{ name: 'MemoryUsage', unit: 'percent', route: 'GetJobMetrics' }],
    },
  },
  {
    name: 'NETWORK_RECEIVE_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'NODE',
    description: 'Network bytes received per second',
    raw: {
      PAI_DLC: [{ name: 'NetworkInputRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
    },
  },
  {
    name: 'NETWORK_TRANSMIT_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'NODE',
    description: 'Network bytes sent per second',
    raw: {
      PAI_DLC: [{ name: 'NetworkOutputRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
    },
  },
  {
    name: 'DISK_READ_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'NODE',
    description: 'Disk bytes read per second',
    raw: {
      PAI_DLC: [{ name: 'DiskReadRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
      PRIMUS_LENS: [{ name: 'pod_read_bytes', unit: 'bytes/s, per pod and container filesystem reads (summed per node)', route: 'unified' }],
    },
  },
  {
    name: 'DISK_WRITE_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'NODE',
    description: 'Disk bytes written per second',
    raw: {
      PAI_DLC: [{ name: 'DiskWriteRate', unit: 'MB/s (PAI-Studio documents it; unconfirmed for DLC)', route: 'GetJobMetrics' }],
      PRIMUS_LENS: [{ name: 'pod_write_bytes', unit: 'bytes/s, per pod and container filesystem writes (summed per node)', route: 'unified' }],
    },
  },
  {
    name: 'STORAGE_USED',
    unit: 'BYTES',
    finestScope: 'NODE',
    description: 'Local (ephemeral) storage in use',
    raw: {
      BASETEN: [
        { name: 'ephemeral_storage.usage_bytes', unit: 'bytes, per node', route: 'per node' },
        { name: 'cache.usage_bytes', unit: 'bytes, the job read-write cache volume', route: 'cache' },
      ],
    },
  },
  {
    name: 'STORAGE_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'NODE',
    description: 'Local (ephemeral) storage in use over its limit, 0..1',
    raw: {
      BASETEN: [
        { name: 'ephemeral_storage.utilization', unit: 'fraction 0-1, per node', route: 'per node' },
        { name: 'cache.utilization', unit: 'fraction 0-1, the job read-write cache volume', route: 'cache' },
      ],
    },
  },
  {
    name: 'NPU_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'NODE',
    description: 'Fraction of time the NPU (Ascend) was busy, 0..1',
    raw: { MODELARTS: [{ name: 'npuUtil', unit: 'percent' }] },
  },
  {
    name: 'NPU_MEMORY_UTILIZATION',
    unit: 'RATIO',
    finestScope: 'NODE',
    description: 'NPU memory in use over NPU memory available, 0..1',
    raw: { MODELARTS: [{ name: 'npuMemUsage', unit: 'percent' }] },
  },
  {
    name: 'GPU_POWER',
    unit: 'WATTS',
    finestScope: 'GPU',
    description: 'GPU (socket) power draw, in watts',
    raw: {
      PRIMUS_LENS: [
        { name: 'GPU Power', unit: 'W, per node', route: 'workload metrics' },
        { name: 'gpu_power_by_device', unit: 'W, per device', route: 'unified' },
      ],
      RUNICORN: [{ name: 'power_w', unit: 'W, host snapshot', route: 'gpu telemetry' }],
    },
  },
  {
    name: 'GPU_TEMPERATURE',
    unit: 'CELSIUS',
    finestScope: 'GPU',
    description: 'GPU (core) temperature, in degrees Celsius',
    raw: { RUNICORN: [{ name: 'temp_c', unit: '°C, host snapshot', route: 'gpu telemetry' }] },
  },
  {
    name: 'MODEL_FLOPS_PER_GPU',
    unit: 'FLOPS',
    finestScope: 'JOB',
    description:
      "Floating-point operations per second the training loop achieves per GPU, as the framework reports it (model FLOPs, not the hardware's counters)",
    // Lens' TrainingPerformance graph holds a series labelled "tflops" (and one labelled "iteration").
    // Per GPU is our reading (unconfirmed): the values sit where one accelerator's achieved TFLOP/s
    // do (hundreds), and the adapter reports a value above any accelerator's peak as a mismatch.
    raw: { PRIMUS_LENS: [{ name: 'TrainingPerformance', unit: 'TFLOP/s per GPU, series labelled "tflops"', route: 'workload metrics' }] },
  },
  {
    name: 'RDMA_RECEIVE_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'NODE',
    description: 'RDMA (RoCE) bytes received per second',
    raw: { PRIMUS_LENS: [{ name: 'rdma_rx_bandwidth_by_node', unit: 'bytes/s, per node', route: 'unified' }] },
  },
  {
    name: 'RDMA_TRANSMIT_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'NODE',
    description: 'RDMA (RoCE) bytes sent per second',
    raw: { PRIMUS_LENS: [{ name: 'rdma_tx_bandwidth_by_node', unit: 'bytes/s, per node', route: 'unified' }] },
  },
  // The GPU profiling family PAI-DLC reports per card through GetMetrics (CARD_GPU_*, exported to
  // Alibaba's managed Prometheus as AliyunPaidlc_CARD_GPU_*). Only CARD_GPU_DRAM_ACTIVE_UTIL is seen
  // through GetMetrics itself; the other GetMetrics names are the Prometheus names without their
  // "AliyunPaidlc_" prefix (our reading, unconfirmed: a wrong name answers empty, which the adapter
  // reports). Primus-Lens' API, as read for its fact sheet, offers none of these.
  {
    name: 'GPU_SM_ACTIVE',
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the streaming multiprocessors had work resident, averaged over the GPU, 0..1 (DCGM SM active)',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_SM_UTIL', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_TENSOR_ACTIVE',
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the tensor (matrix) pipes were active, 0..1 (DCGM tensor pipe active)',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_PIP_TENSOR_ACTIVE', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_DRAM_ACTIVE',
    unit: 'RATIO',
    finestScope: 'GPU',
    description: 'Fraction of time the GPU memory interface was busy moving data, 0..1 (DCGM DRAM active; bandwidth, not capacity)',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_DRAM_ACTIVE_UTIL', unit: 'percent, per card (unconfirmed scale)', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_NVLINK_RECEIVE_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'GPU',
    description: 'Bytes per second the GPU received over NVLink',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_NVLINK_RECEIVE', unit: 'MiB/s, per card', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_NVLINK_TRANSMIT_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'GPU',
    description: 'Bytes per second the GPU sent over NVLink',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_NVLINK_TRANSMIT', unit: 'MiB/s, per card', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_PCIE_RECEIVE_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'GPU',
    description: 'Bytes per second the GPU received over PCIe',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_PCIE_RECEIVE', unit: 'MiB/s, per card', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_PCIE_TRANSMIT_RATE',
    unit: 'BYTES_PER_SECOND',
    finestScope: 'GPU',
    description: 'Bytes per second the GPU sent over PCIe',
    raw: { PAI_DLC: [{ name: 'CARD_GPU_PCIE_TRANSMIT', unit: 'MiB/s, per card', route: 'CloudMonitor card' }] },
  },
  {
    name: 'GPU_TENSOR_FLOPS',
    unit: 'FLOPS',
    finestScope: 'GPU',
    description:
      "Floating-point operations per second the GPU's tensor pipes performed, as the hardware counters measure them (not the model FLOPs a framework reports)",
    raw: { PAI_DLC: [{ name: 'CARD_GPU_TENSORTFLOPS_USED', unit: 'TFLOP/s, per card (unit our reading of the name)', route: 'CloudMonitor card' }] },
  },
];

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
