// The interface every platform adapter implements. Adapters speak HTTP to one platform and
// return domain records in canonical units; they know nothing of GraphQL or the store.
import type {
  SeriesPoint,
  JobDetail,
  JobPage,
  JobRef,
  LogPage,
  LogRequest,
  MetricFetchRequest,
  MetricFetchResult,
  NodeRecord,
  ProgressRecord,
  ProjectRecord,
  ProviderKind,
  SeriesData,
  SystemMetric,
  TrainingFetchRequest,
} from '../domain/types.js';

export interface ProviderCapabilities {
  /** The system metrics this platform can report at all. */
  systemMetrics: readonly SystemMetric[];
  /** True when the platform has real per-GPU series (Baseten ranks, Lens gpu_id); false = node aggregates only. */
  perGpuSeries: boolean;
  /**
   * True when the job detail never lists nodes and only metrics reveal them (Baseten's
   * per_node_metrics): the store learns topology from the window's own metrics call.
   */
  nodesOnlyInMetrics?: boolean;
  trainingMetrics: boolean;
  /**
   * True when fetchTrainingMetrics asked `from` a time onwards (no `to`) gets only the points
   * logged since from the platform (Lens' range on the point's timestamp): a running job's training
   * metrics are then collected from its last stored point instead of whole every sweep. Where the
   * platform answers whole anyway (Runicorn's table), the adapter filters, and keeps a point without
   * a time (it cannot be placed, and may be new).
   */
  trainingSince?: boolean;
  progress: boolean;
  logs: boolean;
  /**
   * The finest spacing of the system series' points the platform gives, in seconds (ModelArts'
   * 60 s interval, CMS's 15 s period); absent where an API takes any step (1 s is assumed). Bounds
   * the points a window can hold in the query-cost estimate.
   */
  sampleSeconds?: number;
}

export interface JobDetailResult extends Omit<JobDetail, 'nodes'> {
  /** null when the platform only reveals nodes through metrics (Baseten's per_node_metrics). */
  nodes: NodeRecord[] | null;
}

export interface SystemMetricsResult extends MetricFetchResult {
  /** Nodes (and GPUs) seen in this answer; the store merges them into the job's topology. */
  nodes?: NodeRecord[];
}

export interface ProviderAdapter {
  readonly id: string;
  readonly kind: ProviderKind;
  readonly capabilities: ProviderCapabilities;

  listProjects(signal: AbortSignal): Promise<ProjectRecord[]>;
  /** One page of all jobs the credentials can see; `cursor` is the adapter's own (null = first page). */
  listJobs(cursor: string | null, signal: AbortSignal): Promise<JobPage>;
  /** null when the platform says the job does not exist. */
  getJob(ref: Pick<JobRef, 'externalId' | 'projectExternalId'>, signal: AbortSignal): Promise<JobDetailResult | null>;
  fetchSystemMetrics(job: JobRef, request: MetricFetchRequest, signal: AbortSignal): Promise<SystemMetricsResult>;

  fetchTrainingMetrics?(job: JobRef, request: TrainingFetchRequest, signal: AbortSignal): Promise<SeriesData[]>;
  fetchProgress?(job: JobRef, signal: AbortSignal): Promise<ProgressRecord | null>;
  fetchLogs?(job: JobRef, request: LogRequest, signal: AbortSignal): Promise<LogPage>;
  close?(): Promise<void>;
}

/**
 * A training metric as a platform logs it: one job-wide series keyed by step, its name as written
 * (training metrics have no canonical unit), from `source`, in `stage` where the platform has one.
 */
export function trainingSeries(name: string, source: string, stage: string | null, meta: Record<string, unknown>, points: SeriesPoint[] = []): SeriesData {
  return {
    kind: 'training',
    name,
    rawName: name,
    unit: 'NONE',
    scope: 'JOB',
    nodeExternalId: null,
    gpuIndex: null,
    source,
    stage,
    keyedBy: 'step',
    meta,
    points,
  };
}
