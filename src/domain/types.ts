// The domain contract shared by providers, store, live and schema. Plain data only:
// nothing here knows about HTTP, SQL or GraphQL.

// The platform kinds are read off the list of platform modules (src/providers/platforms.ts): a
// type-only import, so the domain still loads nothing outside itself.
export type { ProviderKind } from '../providers/platforms.js';

export const JOB_STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'UNKNOWN'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** A job in one of these states never changes again, so its complete metrics are immutable. */
export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);

/** What a job's accelerators are: gpuCount counts them whatever their kind. */
export const ACCELERATOR_KINDS = ['GPU', 'NPU', 'NONE'] as const;

/**
 * Where a job's start time comes from: the platform's own start (PLATFORM), the job's creation
 * standing in where the platform has no start field (CREATION, a lower bound), or the first metric
 * point the cache holds for a job whose platform gives no start (FIRST_METRIC).
 */
export const START_SOURCES = ['PLATFORM', 'CREATION', 'FIRST_METRIC'] as const;
export type StartSource = (typeof START_SOURCES)[number];
export type AcceleratorKind = (typeof ACCELERATOR_KINDS)[number];

export const METRIC_UNITS = ['RATIO', 'BYTES', 'CORES', 'BYTES_PER_SECOND', 'COUNT', 'NONE', 'WATTS', 'FLOPS', 'CELSIUS'] as const;
export type MetricUnit = (typeof METRIC_UNITS)[number];

export const METRIC_SCOPES = ['JOB', 'NODE', 'GPU'] as const;
export type MetricScope = (typeof METRIC_SCOPES)[number];

export const AGGREGATIONS = ['AVG', 'MIN', 'MAX', 'LAST'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export const SYSTEM_METRICS = [
  'GPU_UTILIZATION',
  'GPU_MEMORY_USED',
  'GPU_MEMORY_UTILIZATION',
  'CPU_USAGE',
  'CPU_UTILIZATION',
  'MEMORY_USED',
  'MEMORY_UTILIZATION',
  'NETWORK_RECEIVE_RATE',
  'NETWORK_TRANSMIT_RATE',
  'DISK_READ_RATE',
  'DISK_WRITE_RATE',
  'STORAGE_USED',
  'STORAGE_UTILIZATION',
  'NPU_UTILIZATION',
  'NPU_MEMORY_UTILIZATION',
  'GPU_POWER',
  'RDMA_RECEIVE_RATE',
  'RDMA_TRANSMIT_RATE',
  'MODEL_FLOPS_PER_GPU',
  'GPU_TEMPERATURE',
  'GPU_SM_ACTIVE',
  'GPU_TENSOR_ACTIVE',
  'GPU_DRAM_ACTIVE',
  'GPU_NVLINK_RECEIVE_RATE',
  'GPU_NVLINK_TRANSMIT_RATE',
  'GPU_PCIE_RECEIVE_RATE',
  'GPU_PCIE_TRANSMIT_RATE',
  'GPU_TENSOR_FLOPS',
] as const;
export type SystemMetric = (typeof SYSTEM_METRICS)[number];

/** What an adapter reports for a project (a Baseten project, a ModelArts workspace, ...). */
export interface ProjectRecord {
  externalId: string;
  name: string;
  createdAt?: Date | null;
}

/** What an adapter reports for a job, in canonical units. */
export interface JobRecord {
  externalId: string;
  projectExternalId: string;
  /** Used when the project list does not name the project (e.g. PAI-DLC workspaces seen only on jobs). */
  projectName?: string;
  name: string;
  status: JobStatus;
  rawStatus: string | null;
  createdAt: Date | null;
  startedAt: Date | null;
  /** What startedAt is (see START_SOURCES); undefined = the platform's own start where startedAt is set. */
  startedAtSource?: StartSource;
  finishedAt: Date | null;
  /** The accelerator model (a GPU or an NPU model, per acceleratorKind). */
  gpuType: string | null;
  /** Accelerators (GPUs or NPUs, per acceleratorKind) of the whole job (all nodes), or null when the platform does not say. */
  gpuCount: number | null;
  /** GPU, NPU, or NONE (a CPU-only job); undefined/null when the platform does not say. */
  acceleratorKind?: AcceleratorKind | null;
  /** Why the job failed or stopped, in the platform's words; null when it gave none. */
  failureReason?: string | null;
  /** The job's page in the platform's own console, where one can be built. */
  consoleUrl?: string | null;
  /** Restarts (new incarnations of the job or of a node) the platform reports; null when it does not say. */
  restartCount?: number | null;
  /** Who launched the job (a user name or e-mail, as the platform names people); undefined/null = not said. */
  owner?: string | null;
  /**
   * The job's labels as the platform keeps them (ModelArts annotations, Runicorn tags); a tag
   * without a value has value null. undefined = this answer does not carry labels (keep the known
   * ones); [] = the platform says there are none.
   */
  labels?: readonly JobLabel[] | null;
  /** What the job was launched with (hyperparameters, algorithm parameters, environment), as JSON. */
  config?: Record<string, unknown> | null;
  /** The container image the job runs. */
  image?: string | null;
  /** The command the job runs. */
  command?: string | null;
  /**
   * Summary values the platform itself reports beside the job (Runicorn's best metric). Values
   * computed from the training series are added by the store; these are never invented from them.
   */
  reportedSummary?: readonly ReportedSummary[] | null;
}

export interface JobLabel {
  key: string;
  value: string | null;
}

/** Which way a training metric improves: MAX (accuracy) or MIN (loss). */
export type SummaryMode = 'MAX' | 'MIN';

export interface ReportedSummary {
  /** The metric's name as the platform logs it (e.g. "val_acc"). */
  name: string;
  bestValue: number | null;
  bestStep: number | null;
  mode: SummaryMode | null;
}

export interface GpuRecord {
  index: number;
  model: string | null;
  memoryTotalBytes: number | null;
}

/** A compute node of a job: a Baseten node, a ModelArts task, a PAI-DLC pod, a Lens pod, a Runicorn host. */
export interface NodeRecord {
  /** Unique within the job; the platform's own name for it. */
  externalId: string;
  name: string;
  gpus: GpuRecord[];
}

export interface JobDetail extends JobRecord {
  nodes: NodeRecord[];
}

/** A reference to a stored job, handed back to the adapter for follow-up calls. */
export interface JobRef {
  externalId: string;
  projectExternalId: string;
  status: JobStatus;
  createdAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export type PointKey = 'time' | 'step';

export interface SeriesPoint {
  timestamp: Date | null;
  step: number | null;
  /** null marks a gap the platform reported (e.g. ModelArts -1, NaN): stored, never treated as a value. */
  value: number | null;
}

/**
 * A series' points as columns, what an adapter that reads many points gives beside (instead of)
 * a SeriesPoint each: epoch ms, step and value per point, in the platform's order, with no object
 * or Date per point. NaN stands for null (no time, no step, a gap): values are finite or null, so
 * nothing is lost. The arrays are only read once handed over (series may share them).
 */
export interface PointColumns {
  readonly length: number;
  readonly ts: Float64Array;
  /** null when no point has a step (time-keyed series). */
  readonly step: Float64Array | null;
  readonly value: Float64Array;
}

/** Where a series sits and what it means; a series is unique by (job, node, gpu, kind, name, source). */
export interface SeriesData {
  kind: 'system' | 'training';
  /** SystemMetric for kind 'system'; the platform's metric name (loss, lr, ...) for 'training'. */
  name: string;
  rawName: string | null;
  unit: MetricUnit;
  scope: MetricScope;
  /** Node externalId for NODE and GPU scope. */
  nodeExternalId: string | null;
  gpuIndex: number | null;
  /** Where the numbers came from: the platform ('baseten', ...) or a training source ('wandb', 'log', ...). */
  source: string;
  /** Training stage (train / eval / warmup) where the platform labels points with one; part of the series' identity. */
  stage: string | null;
  /** How points are keyed: by time (system metrics) or by step (training metrics). */
  keyedBy: PointKey;
  /** Facts a client needs to read the series honestly: derived values, inferred timestamps, stage, ... */
  meta: Record<string, unknown>;
  points: SeriesPoint[];
  /**
   * The same points as columns, when the adapter read them so (Baseten): the store reads these and
   * never `points`, which are then made only when something asks for them (seriesWithColumns).
   */
  columns?: PointColumns;
}

/** A series whose points are the columns; `points` is made from them on first use. */
export function seriesWithColumns(series: Omit<SeriesData, 'points' | 'columns'>, columns: PointColumns): SeriesData {
  let points: SeriesPoint[] | null = null;
  // `columns` is not enumerable: a copy of the series ({ ...s }) or a comparison sees the points only.
  return Object.defineProperties({ ...series } as SeriesData, {
    columns: { value: columns, enumerable: false },
    points: { enumerable: true, get: () => (points ??= pointsOfColumns(columns)) },
  });
}

export function pointsOfColumns(c: PointColumns): SeriesPoint[] {
  const out: SeriesPoint[] = new Array(c.length);
  const num = (x: number) => (Number.isNaN(x) ? null : x);
  for (let i = 0; i < c.length; i++) {
    const ts = c.ts[i]!;
    out[i] = { timestamp: Number.isNaN(ts) ? null : new Date(ts), step: c.step ? num(c.step[i]!) : null, value: num(c.value[i]!) };
  }
  return out;
}

export interface MetricFetchRequest {
  from: Date;
  to: Date;
  metrics: readonly SystemMetric[];
  /** A step the caller would like; adapters may round to what the platform supports. */
  stepSeconds: number;
}

export interface MetricFetchResult {
  series: SeriesData[];
  /** The metrics this answer is complete for, even where no point came back. */
  covered: readonly SystemMetric[];
  /** The time range this answer is complete for (a platform without ranges reports its own window). */
  from: Date;
  to: Date;
}

export interface TrainingFetchRequest {
  from: Date | null;
  to: Date | null;
  names: readonly string[] | null;
}

export interface ProgressRecord {
  iteration: number | null;
  targetIteration: number | null;
  /** Iterations per second over the recent window. */
  rate: number | null;
  updatedAt: Date | null;
}

export interface LogLineRecord {
  timestamp: Date | null;
  message: string;
  node: string | null;
  level: string | null;
  /** A cursor that resumes strictly after this line. */
  cursor: string;
}

/** Lines a platform is known to hold but did not deliver (e.g. dropped at a replay cap). */
export interface LogGap {
  /** The cursor of the line before the missing ones; null = before the first line. */
  after: string | null;
  /** How many lines are missing there. */
  lines: number;
  reason: string;
}

export interface LogPage {
  lines: LogLineRecord[];
  nextCursor: string | null;
  /** Lines within this page's range that exist but could not be read; absent = none. */
  gaps?: LogGap[];
}

export interface LogRequest {
  after: string | null;
  since: Date | null;
  limit: number;
}

export interface JobPage {
  jobs: JobRecord[];
  nextCursor: string | null;
}
