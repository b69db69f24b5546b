// The Baseten simulator's synthetic fleet: projects and training jobs derived from a seed, with
// every job time placed relative to an anchor so tests can pin the clock. This is the ground
// truth the simulator serves and that tests compare adapters against; written from the fact
// sheet (docs/platforms/baseten.md) only, never from the adapter.
import { startOfUtcDay, hashSeed, seededRandom, wave } from '../kit.js';

export const JOB_STATUSES = [
  'TRAINING_JOB_PENDING',
  'TRAINING_JOB_CREATED',
  'TRAINING_JOB_DEPLOYING',
  'TRAINING_JOB_RUNNING',
  'TRAINING_JOB_COMPLETED',
  'TRAINING_JOB_DEPLOY_FAILED',
  'TRAINING_JOB_FAILED',
  'TRAINING_JOB_STOPPED',
  // In the CLI source but not in the docs table; served so clients learn to tolerate it.
  'TRAINING_JOB_QUEUED',
] as const;
export type BasetenJobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL_JOB_STATUSES: ReadonlySet<BasetenJobStatus> = new Set([
  'TRAINING_JOB_COMPLETED',
  'TRAINING_JOB_DEPLOY_FAILED',
  'TRAINING_JOB_FAILED',
  'TRAINING_JOB_STOPPED',
]);

/** Per-node hardware, exactly the InstanceType resource of the fact sheet. */
export interface InstanceType {
  id: string;
  name: string;
  memory_limit_mib: number;
  millicpu_limit: number;
  gpu_count: number;
  gpu_type: string | null;
  gpu_memory_limit_mib: number | null;
}

export interface FleetProject {
  id: string;
  name: string;
  teamName: string | null;
  createdAtMs: number;
}

export interface FleetJob {
  id: string;
  name: string | null;
  projectId: string;
  /** Mutable: POST .../stop moves an active job to TRAINING_JOB_STOPPED. */
  status: BasetenJobStatus;
  errorMessage: string | null;
  instanceType: InstanceType;
  /** Configured node count (not a field of the job resource; it shows as per_node_metrics length). */
  nodeCount: number;
  /** GPUs per node (= instanceType.gpu_count). */
  gpusPerNode: number;
  createdAtMs: number;
  /** When deployment began (logs start here); null while pending/created/queued. */
  deployingAtMs: number | null;
  /** When training began (metrics start here); null if it never ran. */
  startedAtMs: number | null;
  /** When it reached a terminal status; null while active. */
  finishedAtMs: number | null;
  updatedAtMs: number;
  priority: number;
  availabilityModel: 'dedicated' | 'spot';
  checkpointSyncStatus: 'SYNCING' | 'COMPLETED' | null;
  /** undefined = the `user` field is null; null = a user without an e-mail. */
  userEmail: string | null | undefined;
  /** Size of each node's ephemeral disk (not exposed by the API; utilization = usage / this). */
  ephemeralCapacityBytes: number;
  /** Size of the job's read-write cache, or null when the job has none (`cache: null`). */
  cacheCapacityBytes: number | null;
  /** Trouble the job's GPU utilization shows in a span (stall, straggler, idle); none by default. */
  anomalies?: JobAnomaly[];
}

/**
 * What a findings demo or test makes a running job's GPUs do for a while: `stall` drops every GPU
 * below 3%; `straggler` drops one rank (node, rank) to 5-12%; `idle` leaves one node's GPUs below 2%.
 */
export interface JobAnomaly {
  kind: 'stall' | 'straggler' | 'idle';
  fromMs: number;
  toMs: number;
  node?: number;
  rank?: number;
}

/** An anomaly for the `runningJob`-th running job of the fleet (in fleet order). */
export interface AnomalySpec extends JobAnomaly {
  runningJob: number;
}

/**
 * The demo's three anomalies around the simulator's start `t0`, each already under way (so the
 * findings evaluator sees them at its first evaluations) and over within the hour: a stall of the
 * second running job, a straggler rank (node 1, rank 5) of the first, and an idle node (node 1)
 * of the third. With the default fleet: 1 GPU, 2x8 GPUs, 2x4 GPUs.
 */
export function demoAnomalies(t0: number): AnomalySpec[] {
  return [
    { runningJob: 1, kind: 'stall', fromMs: t0 - 20 * MINUTE, toMs: t0 + 40 * MINUTE },
    { runningJob: 0, kind: 'straggler', node: 1, rank: 5, fromMs: t0 - 15 * MINUTE, toMs: t0 + 45 * MINUTE },
    { runningJob: 2, kind: 'idle', node: 1, fromMs: t0 - 35 * MINUTE, toMs: t0 + 60 * MINUTE },
  ];
}

export interface FleetShape {
  projects?: number;
  jobsPerProject?: number;
  /** Projects with no jobs at all (`latest_job: null`); default 1. */
  emptyProjects?: number;
  /** Every job gets this many nodes; default a mix of 1-3. */
  nodesPerJob?: number;
  /** Every job gets this many GPUs per node (1-8); default a mix of 1, 2, 4, 8. */
  gpusPerNode?: number;
  /** Statuses handed out to jobs in turn; default a cycle that covers every status. */
  statuses?: BasetenJobStatus[];
}

export interface FleetOptions {
  seed?: number | string;
  /** All job times are derived from it; default the start of the current UTC day (by `now`). */
  anchorMs?: number;
  now?: () => number;
  fleet?: FleetShape;
  /** Anomalies of running jobs' GPU utilization (findings demos and tests); none by default. */
  anomalies?: AnomalySpec[];
}

export interface BasetenFleet {
  seed: number;
  anchorMs: number;
  now: () => number;
  projects: FleetProject[];
  jobs: FleetJob[];
}

export const METRIC_NAMES = [
  'gpu_utilization',
  'gpu_memory_usage_bytes',
  'cpu_usage',
  'cpu_memory_usage_bytes',
  'ephemeral_storage.usage_bytes',
  'ephemeral_storage.utilization',
  'cache.usage_bytes',
  'cache.utilization',
] as const;
export type BasetenMetricName = (typeof METRIC_NAMES)[number];

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// Three projects x four jobs by default: the cycle below then covers every status once and
// gives three running jobs (two multi-node) to watch.
const DEFAULT_STATUS_CYCLE: BasetenJobStatus[] = [
  'TRAINING_JOB_RUNNING',
  'TRAINING_JOB_COMPLETED',
  'TRAINING_JOB_FAILED',
  'TRAINING_JOB_RUNNING',
  'TRAINING_JOB_PENDING',
  'TRAINING_JOB_STOPPED',
  'TRAINING_JOB_DEPLOYING',
  'TRAINING_JOB_CREATED',
  'TRAINING_JOB_DEPLOY_FAILED',
  'TRAINING_JOB_QUEUED',
  'TRAINING_JOB_COMPLETED',
  'TRAINING_JOB_RUNNING',
];
const DEFAULT_NODE_CYCLE = [2, 1, 3, 1, 1, 2];
const DEFAULT_GPU_CYCLE = [8, 4, 2, 1, 8];

interface GpuModel {
  type: string;
  gpuMemoryMib: number;
  hostMemoryMibPerGpu: number;
  millicpuPerGpu: number;
}
// Per-GPU shares chosen so 8x H100 matches the fact sheet's example instance type.
const GPU_MODELS: GpuModel[] = [
  { type: 'H100', gpuMemoryMib: 81920, hostMemoryMibPerGpu: 245760, millicpuPerGpu: 24000 },
  { type: 'A100', gpuMemoryMib: 81920, hostMemoryMibPerGpu: 147456, millicpuPerGpu: 12000 },
  { type: 'H200', gpuMemoryMib: 143360, hostMemoryMibPerGpu: 262144, millicpuPerGpu: 24000 },
  { type: 'A10G', gpuMemoryMib: 24576, hostMemoryMibPerGpu: 32768, millicpuPerGpu: 8000 },
];

const PROJECT_NAMES = ['llama-ft', 'whisper-distill', 'qwen-rlhf', 'sdxl-lora', 'mistral-dpo', 'embed-contrastive', 'gpt-oss-sft'];
const TEAMS = ['ml-research', null, 'applied-ai'];
const USERS = ['alice@example.com', 'bob@example.com', null, undefined];

const FAILURE_MESSAGES = [
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB on GPU 3',
  'RuntimeError: NCCL communicator was aborted on rank 5',
  'Process exited with code 137 (OOMKilled)',
];
const DEPLOY_FAILURE_MESSAGES = [
  'Failed to pull image: manifest unknown for registry.example.com/train:latest',
  'Insufficient capacity for the requested instance type',
];

export function instanceTypeFor(gpuType: string, gpuCount: number): InstanceType {
  const model = GPU_MODELS.find((m) => m.type === gpuType) ?? GPU_MODELS[0]!;
  return {
    id: `${model.type}x${gpuCount}`,
    name: `${gpuCount}x ${model.type}`,
    memory_limit_mib: model.hostMemoryMibPerGpu * gpuCount,
    millicpu_limit: model.millicpuPerGpu * gpuCount,
    gpu_count: gpuCount,
    gpu_type: model.type,
    gpu_memory_limit_mib: model.gpuMemoryMib,
  };
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function opaqueId(rng: () => number, taken: Set<string>): string {
  for (;;) {
    let id = ID_ALPHABET[Math.floor(rng() * 26)]!;
    while (id.length < 7) id += ID_ALPHABET[Math.floor(rng() * ID_ALPHABET.length)]!;
    if (!taken.has(id)) {
      taken.add(id);
      return id;
    }
  }
}

function pick<T>(rng: () => number, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}

/** A whole-second time between lo and hi ms after `base`. */
function secondsAfter(rng: () => number, base: number, loMs: number, hiMs: number): number {
  return Math.floor((base + loMs + rng() * (hiMs - loMs)) / 1000) * 1000;
}

interface Lifecycle {
  createdAtMs: number;
  deployingAtMs: number | null;
  startedAtMs: number | null;
  finishedAtMs: number | null;
}

function lifecycleFor(status: BasetenJobStatus, rng: () => number, anchorMs: number): Lifecycle {
  // createdAt carries milliseconds so clients parse fractional ISO seconds; the phase
  // boundaries are whole seconds (log lines at boundaries then never share a millisecond).
  const createdWithMs = (sec: number) => sec + Math.floor(rng() * 1000);
  switch (status) {
    case 'TRAINING_JOB_PENDING':
    case 'TRAINING_JOB_QUEUED':
    case 'TRAINING_JOB_CREATED':
      return { createdAtMs: createdWithMs(secondsAfter(rng, anchorMs, -60 * MINUTE, -5 * MINUTE)), deployingAtMs: null, startedAtMs: null, finishedAtMs: null };
    case 'TRAINING_JOB_DEPLOYING': {
      const deployingAtMs = secondsAfter(rng, anchorMs, -15 * MINUTE, -5 * MINUTE);
      return { createdAtMs: createdWithMs(deployingAtMs - 10 * MINUTE), deployingAtMs, startedAtMs: null, finishedAtMs: null };
    }
    case 'TRAINING_JOB_RUNNING': {
      const startedAtMs = secondsAfter(rng, anchorMs, -8 * HOUR, -2 * HOUR);
      const deployingAtMs = secondsAfter(rng, startedAtMs, -8 * MINUTE, -2 * MINUTE);
      return { createdAtMs: createdWithMs(secondsAfter(rng, deployingAtMs, -10 * MINUTE, -1 * MINUTE)), deployingAtMs, startedAtMs, finishedAtMs: null };
    }
    case 'TRAINING_JOB_DEPLOY_FAILED': {
      const finishedAtMs = secondsAfter(rng, anchorMs, -3 * DAY, -6 * HOUR);
      const deployingAtMs = secondsAfter(rng, finishedAtMs, -10 * MINUTE, -3 * MINUTE);
      return { createdAtMs: createdWithMs(deployingAtMs - 5 * MINUTE), deployingAtMs, startedAtMs: null, finishedAtMs };
    }
    default: {
      // COMPLETED, FAILED, STOPPED: ran for 1-8 hours and ended before the anchor.
      const finishedAtMs = secondsAfter(rng, anchorMs, -5 * DAY, -3 * HOUR);
      const startedAtMs = secondsAfter(rng, finishedAtMs, -8 * HOUR, -1 * HOUR);
      const deployingAtMs = secondsAfter(rng, startedAtMs, -8 * MINUTE, -2 * MINUTE);
      return { createdAtMs: createdWithMs(secondsAfter(rng, deployingAtMs, -30 * MINUTE, -1 * MINUTE)), deployingAtMs, startedAtMs, finishedAtMs };
    }
  }
}

export function createBasetenFleet(options: FleetOptions = {}): BasetenFleet {
  const now = options.now ?? Date.now;
  const seed = typeof options.seed === 'string' ? hashSeed(options.seed) : (options.seed ?? 1) >>> 0;
  const anchorMs = options.anchorMs ?? startOfUtcDay(now());
  const shape = options.fleet ?? {};
  const projectCount = shape.projects ?? 3;
  const jobsPerProject = shape.jobsPerProject ?? 4;
  const emptyProjects = shape.emptyProjects ?? 1;
  const statuses = shape.statuses && shape.statuses.length > 0 ? shape.statuses : DEFAULT_STATUS_CYCLE;
  if (shape.gpusPerNode !== undefined && (shape.gpusPerNode < 1 || shape.gpusPerNode > 8)) {
    throw new Error('gpusPerNode must be 1-8');
  }
  const rng = seededRandom(seed);
  const ids = new Set<string>();
  const projects: FleetProject[] = [];
  const jobs: FleetJob[] = [];

  for (let p = 0; p < projectCount + emptyProjects; p++) {
    const baseName = PROJECT_NAMES[p % PROJECT_NAMES.length]!;
    const project: FleetProject = {
      id: opaqueId(rng, ids),
      name: p < PROJECT_NAMES.length ? baseName : `${baseName}-${Math.floor(p / PROJECT_NAMES.length) + 1}`,
      teamName: TEAMS[p % TEAMS.length]!,
      createdAtMs: 0,
    };
    projects.push(project);
    const jobCount = p < projectCount ? jobsPerProject : 0;
    for (let j = 0; j < jobCount; j++) {
      const index = p * jobsPerProject + j;
      const status = statuses[index % statuses.length]!;
      const gpusPerNode = shape.gpusPerNode ?? DEFAULT_GPU_CYCLE[index % DEFAULT_GPU_CYCLE.length]!;
      const nodeCount = shape.nodesPerJob ?? DEFAULT_NODE_CYCLE[index % DEFAULT_NODE_CYCLE.length]!;
      const instanceType = instanceTypeFor(pick(rng, GPU_MODELS).type, gpusPerNode);
      const life = lifecycleFor(status, rng, anchorMs);
      const failed = status === 'TRAINING_JOB_FAILED' || status === 'TRAINING_JOB_DEPLOY_FAILED';
      jobs.push({
        id: opaqueId(rng, ids),
        // One job in seven has no name: the field is nullable.
        name: index % 7 === 6 ? null : `${project.name}-run-${j + 1}`,
        projectId: project.id,
        status,
        errorMessage: failed ? pick(rng, status === 'TRAINING_JOB_FAILED' ? FAILURE_MESSAGES : DEPLOY_FAILURE_MESSAGES) : null,
        instanceType,
        nodeCount,
        gpusPerNode,
        ...life,
        updatedAtMs: life.finishedAtMs ?? life.startedAtMs ?? life.deployingAtMs ?? life.createdAtMs,
        priority: index % 5 === 4 ? 10 : 0,
        availabilityModel: index % 4 === 3 ? 'spot' : 'dedicated',
        checkpointSyncStatus: status === 'TRAINING_JOB_COMPLETED' ? 'COMPLETED' : status === 'TRAINING_JOB_RUNNING' ? 'SYNCING' : null,
        userEmail: USERS[index % USERS.length],
        ephemeralCapacityBytes: 512 * GIB * Math.max(1, gpusPerNode / 2),
        cacheCapacityBytes: rng() < 0.5 ? 2048 * GIB : null,
      });
    }
    const own = jobs.filter((job) => job.projectId === project.id);
    project.createdAtMs = own.length > 0 ? Math.min(...own.map((job) => job.createdAtMs)) - 7 * DAY : anchorMs - 30 * DAY;
  }
  const running = jobs.filter((j) => j.status === 'TRAINING_JOB_RUNNING');
  for (const { runningJob, ...anomaly } of options.anomalies ?? []) {
    const job = running[runningJob];
    if (!job) throw new Error(`anomaly for running job ${runningJob}: the fleet has ${running.length} running jobs`);
    (job.anomalies ??= []).push(anomaly);
  }
  return { seed, anchorMs, now, projects, jobs };
}

/** Node ids as in the Python client's fixtures (`node-0` is the leader); real format unconfirmed. */
export function nodeIds(job: FleetJob): string[] {
  return Array.from({ length: job.nodeCount }, (_, i) => `node-${i}`);
}

/** Rank keys of one node: local GPU indexes 0..gpusPerNode-1 (unconfirmed whether ranks are global). */
export function rankKeys(job: FleetJob): string[] {
  return Array.from({ length: job.gpusPerNode }, (_, i) => String(i));
}

/** The span in which the job reports metrics at time nowMs, or null if it never started. */
export function reportingSpan(job: FleetJob, nowMs: number): { fromMs: number; toMs: number } | null {
  if (job.startedAtMs === null || job.startedAtMs > nowMs) return null;
  return { fromMs: job.startedAtMs, toMs: Math.min(job.finishedAtMs ?? nowMs, nowMs) };
}

/** The span in which the job writes logs (deployment onwards), or null before deployment. */
export function loggingSpan(job: FleetJob, nowMs: number): { fromMs: number; toMs: number } | null {
  const from = job.deployingAtMs ?? job.startedAtMs;
  if (from === null || from > nowMs) return null;
  return { fromMs: from, toMs: Math.min(job.finishedAtMs ?? nowMs, nowMs) };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * The value of one metric point: pure in (job, node, metric, rank, timestamp), so repeated
 * fetches agree and tests can recompute any point. `nodeIndex` and `rank` are ignored where the
 * metric has no such dimension (cache is job level; only the GPU maps have ranks). Units follow
 * the fact sheet: fractions 0-1, bytes, CPU cores. The caller decides whether the job reported
 * at that time (see reportingSpan).
 */
export function metricValue(job: FleetJob, nodeIndex: number, metric: BasetenMetricName, rank: number, timestampMs: number): number {
  const seedFor = (what: string) => hashSeed(`${job.id}|${nodeIndex}|${what}|${rank}`);
  const it = job.instanceType;
  const hoursRunning = Math.max(0, timestampMs - (job.startedAtMs ?? timestampMs)) / HOUR;
  switch (metric) {
    case 'gpu_utilization': {
      const a = job.anomalies?.find(
        (x) => timestampMs >= x.fromMs && timestampMs < x.toMs && (x.node === undefined || x.node === nodeIndex) && (x.rank === undefined || x.rank === rank),
      );
      if (a) {
        const [lo, hi] = a.kind === 'stall' ? [0, 0.03] : a.kind === 'idle' ? [0, 0.02] : [0.05, 0.12];
        return round(wave(seedFor(metric), timestampMs, lo, hi), 4);
      }
      return round(wave(seedFor(metric), timestampMs, 0.35, 0.99), 4);
    }
    case 'gpu_memory_usage_bytes':
      return Math.floor((it.gpu_memory_limit_mib ?? 0) * MIB * wave(seedFor(metric), timestampMs, 0.45, 0.93));
    case 'cpu_usage':
      return round((it.millicpu_limit / 1000) * wave(seedFor(metric), timestampMs, 0.04, 0.4), 3);
    case 'cpu_memory_usage_bytes':
      return Math.floor(it.memory_limit_mib * MIB * wave(seedFor(metric), timestampMs, 0.1, 0.6));
    case 'ephemeral_storage.usage_bytes': {
      // Grows as checkpoints and data shards land, then levels off below the disk size.
      const fill = Math.min(0.85, 0.05 + 0.03 * hoursRunning) + 0.04 * wave(seedFor(metric), timestampMs, 0, 1);
      return Math.floor(job.ephemeralCapacityBytes * fill);
    }
    case 'ephemeral_storage.utilization':
      return round(metricValue(job, nodeIndex, 'ephemeral_storage.usage_bytes', 0, timestampMs) / job.ephemeralCapacityBytes, 4);
    case 'cache.usage_bytes': {
      const capacity = job.cacheCapacityBytes ?? 0;
      const fill = Math.min(0.9, 0.02 + 0.05 * hoursRunning) + 0.02 * wave(hashSeed(`${job.id}|cache`), timestampMs, 0, 1);
      return Math.floor(capacity * fill);
    }
    case 'cache.utilization':
      return job.cacheCapacityBytes === null ? 0 : round(metricValue(job, 0, 'cache.usage_bytes', 0, timestampMs) / job.cacheCapacityBytes, 4);
  }
}
