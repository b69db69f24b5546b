// The simulated ModelArts fleet: a deterministic set of training jobs whose times hang off one
// anchor, so tests can pin every timestamp. This module is the ground truth tests compare to;
// the HTTP layer (server.ts) renders it in ModelArts' own shapes.
import { hashSeed, seededRandom, wave } from '../kit.js';

export type Phase = 'Creating' | 'Pending' | 'Running' | 'Failed' | 'Completed' | 'Terminating' | 'Terminated' | 'Abnormal';

export const ALL_PHASES: readonly Phase[] = ['Creating', 'Pending', 'Running', 'Failed', 'Completed', 'Terminating', 'Terminated', 'Abnormal'];

export type Accelerator =
  | { kind: 'none' }
  | { kind: 'gpu'; unitNum: number; productName: string; memory: string }
  | { kind: 'npu'; unitNum: number; productName: string; memory: string };

export interface FlavorSpec {
  flavorId: string;
  flavorName: string;
  flavorType: 'CPU' | 'GPU' | 'Ascend';
  cpuCores: number;
  memoryGb: number;
  accelerator: Accelerator;
}

/** One simulated training job; times are epoch ms, `durationMs` only for jobs that have ended. */
export interface SimJob {
  id: string;
  name: string;
  workspaceId: string;
  userName: string;
  phase: Phase;
  secondaryPhase: string;
  createTime: number;
  /** 0 when the job never started, as the API reports it. */
  startTime: number;
  /** Fixed run length of jobs that have ended; running jobs' duration grows with now(). */
  endedAfterMs: number | null;
  nodeCount: number;
  flavor: FlavorSpec;
  engine: { name: string; version: string };
  /** Ms after the start at which the job was restarted (a task failed and the run began again). */
  restartsAfterMs?: number[];
  /** The failing task's exit message for jobs that failed. */
  failureMessage?: string;
}

export const FLAVORS = {
  v100x8: {
    flavorId: 'modelarts.vm.gpu.v100x8',
    flavorName: 'GPU: 8*NVIDIA-V100(32GB) | CPU: 64 vCPUs 512GB',
    flavorType: 'GPU',
    cpuCores: 64,
    memoryGb: 512,
    accelerator: { kind: 'gpu', unitNum: 8, productName: 'NVIDIA-V100', memory: '32GB' },
  },
  a100x4: {
    flavorId: 'modelarts.vm.gpu.a100x4',
    flavorName: 'GPU: 4*NVIDIA-A100(80GB) | CPU: 48 vCPUs 384GB',
    flavorType: 'GPU',
    cpuCores: 48,
    memoryGb: 384,
    accelerator: { kind: 'gpu', unitNum: 4, productName: 'NVIDIA-A100', memory: '80GB' },
  },
  a100x8: {
    flavorId: 'modelarts.vm.gpu.a100x8',
    flavorName: 'GPU: 8*NVIDIA-A100(80GB) | CPU: 96 vCPUs 768GB',
    flavorType: 'GPU',
    cpuCores: 96,
    memoryGb: 768,
    accelerator: { kind: 'gpu', unitNum: 8, productName: 'NVIDIA-A100', memory: '80GB' },
  },
  t4x1: {
    flavorId: 'modelarts.vm.gpu.t4',
    flavorName: 'GPU: 1*NVIDIA-T4(16GB) | CPU: 8 vCPUs 32GB',
    flavorType: 'GPU',
    cpuCores: 8,
    memoryGb: 32,
    accelerator: { kind: 'gpu', unitNum: 1, productName: 'NVIDIA-T4', memory: '16GB' },
  },
  p100x2: {
    flavorId: 'modelarts.vm.gpu.p100x2',
    flavorName: 'GPU: 2*NVIDIA-P100(16GB) | CPU: 16 vCPUs 128GB',
    flavorType: 'GPU',
    cpuCores: 16,
    memoryGb: 128,
    accelerator: { kind: 'gpu', unitNum: 2, productName: 'NVIDIA-P100', memory: '16GB' },
  },
  cpu8: {
    flavorId: 'modelarts.vm.cpu.8u',
    flavorName: 'CPU: 8 vCPUs 32GB',
    flavorType: 'CPU',
    cpuCores: 8,
    memoryGb: 32,
    accelerator: { kind: 'none' },
  },
  snt9x8: {
    flavorId: 'modelarts.bm.npu.arm.8snt9b3.d',
    flavorName: 'Ascend: 8*ascend-snt9b(64GB) | ARM: 192 vCPUs 1536GB',
    flavorType: 'Ascend',
    cpuCores: 192,
    memoryGb: 1536,
    accelerator: { kind: 'npu', unitNum: 8, productName: 'Ascend-snt9b', memory: '64GB' },
  },
} as const satisfies Record<string, FlavorSpec>;

export const DEFAULT_WORKSPACE = '0';
/** A second workspace, 32 hex digits like the platform's own workspace ids. */
export const VISION_WORKSPACE = 'b3f6a9d2c8e14f07a5d1e6c3b2a49f80';

const HOUR = 3_600_000;
const MINUTE = 60_000;

/** A UUID-shaped id that depends only on the seed and the job's key, never on time or order. */
function stableUuid(seed: number, key: string): string {
  const rand = seededRandom(hashSeed(`${seed}:${key}`));
  const hex = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

interface JobSeed {
  key: string;
  name: string;
  phase: Phase;
  secondaryPhase?: string;
  workspaceId?: string;
  flavor: FlavorSpec;
  nodeCount: number;
  /** Created this long before the anchor. */
  createdBeforeAnchorMs: number;
  /** Started this long after creation; null = never started. */
  startDelayMs: number | null;
  endedAfterMs?: number;
  restartsAfterMs?: number[];
  failureMessage?: string;
}

const NAMED_JOBS: JobSeed[] = [
  { key: 'bert', name: 'bert-ft', phase: 'Running', flavor: FLAVORS.v100x8, nodeCount: 2, createdBeforeAnchorMs: 3 * HOUR, startDelayMs: MINUTE },
  {
    key: 'llama',
    name: 'llama-sft',
    phase: 'Running',
    workspaceId: VISION_WORKSPACE,
    flavor: FLAVORS.a100x4,
    nodeCount: 1,
    createdBeforeAnchorMs: 5 * HOUR,
    startDelayMs: 4 * MINUTE,
  },
  { key: 'etl', name: 'cpu-feature-etl', phase: 'Running', flavor: FLAVORS.cpu8, nodeCount: 1, createdBeforeAnchorMs: 2 * HOUR, startDelayMs: 30_000 },
  {
    key: 'pangu',
    name: 'pangu-ascend-pretrain',
    phase: 'Running',
    flavor: FLAVORS.snt9x8,
    nodeCount: 2,
    createdBeforeAnchorMs: 6 * HOUR,
    startDelayMs: 3 * MINUTE,
    restartsAfterMs: [2 * HOUR],
  },
  // Starts exactly at the anchor: with now() under a minute past the anchor its metrics answer 204.
  {
    key: 'fresh',
    name: 'fresh-start-probe',
    phase: 'Running',
    flavor: FLAVORS.t4x1,
    nodeCount: 1,
    createdBeforeAnchorMs: 2 * MINUTE,
    startDelayMs: 2 * MINUTE,
  },
  { key: 'creating', name: 'yolo-creating', phase: 'Creating', flavor: FLAVORS.t4x1, nodeCount: 1, createdBeforeAnchorMs: 1 * MINUTE, startDelayMs: null },
  {
    key: 'pending',
    name: 'gpt-queued',
    phase: 'Pending',
    secondaryPhase: 'Queuing',
    flavor: FLAVORS.a100x8,
    nodeCount: 4,
    createdBeforeAnchorMs: 20 * MINUTE,
    startDelayMs: null,
  },
  {
    key: 'resnet',
    name: 'resnet50-imagenet',
    phase: 'Completed',
    workspaceId: VISION_WORKSPACE,
    flavor: FLAVORS.t4x1,
    nodeCount: 1,
    createdBeforeAnchorMs: 10 * HOUR,
    startDelayMs: 2 * MINUTE,
    endedAfterMs: 2 * HOUR + 17 * MINUTE,
  },
  {
    key: 'gpt',
    name: 'gpt-pretrain-4n',
    phase: 'Failed',
    flavor: FLAVORS.a100x8,
    nodeCount: 4,
    createdBeforeAnchorMs: 8 * HOUR,
    startDelayMs: 5 * MINUTE,
    endedAfterMs: 47 * MINUTE + 30_000,
    failureMessage: 'RuntimeError: CUDA out of memory.',
  },
  {
    key: 'stopping',
    name: 'diffusion-stopping',
    phase: 'Terminating',
    flavor: FLAVORS.p100x2,
    nodeCount: 1,
    createdBeforeAnchorMs: 1 * HOUR,
    startDelayMs: MINUTE,
  },
  {
    key: 'stopped',
    name: 'whisper-stopped',
    phase: 'Terminated',
    flavor: FLAVORS.p100x2,
    nodeCount: 1,
    createdBeforeAnchorMs: 4 * HOUR,
    startDelayMs: MINUTE,
    endedAfterMs: 33 * MINUTE,
  },
  {
    key: 'abnormal',
    name: 'moe-abnormal',
    phase: 'Abnormal',
    secondaryPhase: 'Lost',
    flavor: FLAVORS.v100x8,
    nodeCount: 3,
    createdBeforeAnchorMs: 7 * HOUR,
    startDelayMs: 2 * MINUTE,
    endedAfterMs: 61 * MINUTE,
  },
  {
    key: 'createfailed',
    name: 'bad-image',
    phase: 'Failed',
    secondaryPhase: 'CreateFailed',
    flavor: FLAVORS.t4x1,
    nodeCount: 1,
    createdBeforeAnchorMs: 9 * HOUR,
    startDelayMs: null,
    endedAfterMs: 0,
  },
];

function jobFromSeed(seed: number, anchorMs: number, s: JobSeed): SimJob {
  const createTime = anchorMs - s.createdBeforeAnchorMs;
  return {
    id: stableUuid(seed, s.key),
    name: s.name,
    workspaceId: s.workspaceId ?? DEFAULT_WORKSPACE,
    userName: 'alice',
    phase: s.phase,
    secondaryPhase: s.secondaryPhase ?? s.phase,
    createTime,
    startTime: s.startDelayMs === null ? 0 : createTime + s.startDelayMs,
    endedAfterMs: s.endedAfterMs ?? null,
    nodeCount: s.nodeCount,
    flavor: s.flavor,
    ...(s.restartsAfterMs ? { restartsAfterMs: s.restartsAfterMs } : {}),
    ...(s.failureMessage ? { failureMessage: s.failureMessage } : {}),
    engine: { name: 'PyTorch', version: 'pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64' },
  };
}

/** History jobs (finished days ago) so the job list spans several pages. */
function historyJobs(seed: number, anchorMs: number, count: number): SimJob[] {
  const flavors: FlavorSpec[] = [FLAVORS.t4x1, FLAVORS.p100x2, FLAVORS.v100x8, FLAVORS.cpu8];
  const endPhases: Phase[] = ['Completed', 'Completed', 'Failed', 'Terminated'];
  return Array.from({ length: count }, (_, i) => {
    const rand = seededRandom(hashSeed(`${seed}:history:${i}`));
    const createTime = anchorMs - 12 * HOUR - i * 2 * HOUR - Math.floor(rand() * 30) * MINUTE;
    return {
      id: stableUuid(seed, `history-${i}`),
      name: `sweep-lr-${String(i).padStart(3, '0')}`,
      workspaceId: i % 5 === 4 ? VISION_WORKSPACE : DEFAULT_WORKSPACE,
      userName: i % 3 === 0 ? 'bob' : 'alice',
      phase: endPhases[i % endPhases.length]!,
      secondaryPhase: endPhases[i % endPhases.length]!,
      createTime,
      startTime: createTime + (1 + Math.floor(rand() * 5)) * MINUTE,
      endedAfterMs: (20 + Math.floor(rand() * 90)) * MINUTE + Math.floor(rand() * 60) * 1000,
      nodeCount: 1 + (i % 2),
      flavor: flavors[i % flavors.length]!,
      engine: { name: 'PyTorch', version: 'pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64' },
    };
  });
}

export function buildFleet(seed: number, anchorMs: number, historyCount: number): SimJob[] {
  return [...NAMED_JOBS.map((s) => jobFromSeed(seed, anchorMs, s)), ...historyJobs(seed, anchorMs, historyCount)];
}

/** The task names ModelArts reports in status.tasks: one per node once the job has started. */
export function taskNames(job: SimJob): string[] {
  if (job.startTime === 0) return [];
  return Array.from({ length: job.nodeCount }, (_, i) => `worker-${i}`);
}

/** When the job stopped running (epoch ms), or null while it runs or if it never started. */
export function endTime(job: SimJob): number | null {
  if (job.startTime === 0 || job.endedAfterMs === null) return null;
  return job.startTime + job.endedAfterMs;
}

export const METRIC_NAMES = ['cpuUsage', 'memUsage', 'gpuUtil', 'gpuMemUsage', 'npuUtil', 'npuMemUsage'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

/** The number of one-minute averages the metrics API returns (the documented example has 15). */
export const METRIC_WINDOW = 15;

function hasDevice(job: SimJob, metric: MetricName): boolean {
  if (metric === 'gpuUtil' || metric === 'gpuMemUsage') return job.flavor.accelerator.kind === 'gpu';
  if (metric === 'npuUtil' || metric === 'npuMemUsage') return job.flavor.accelerator.kind === 'npu';
  return true;
}

const METRIC_RANGES: Record<MetricName, [number, number]> = {
  cpuUsage: [5, 60],
  memUsage: [10, 45],
  gpuUtil: [40, 99],
  gpuMemUsage: [30, 92],
  npuUtil: [35, 97],
  npuMemUsage: [25, 88],
};

/**
 * The one-minute average (percent) of `metric` on `task` for the minute starting at `minuteStartMs`,
 * or -1 when there is no sample: the minute is not wholly inside the run, or the device is absent.
 */
export function metricValue(job: SimJob, task: string, metric: MetricName, minuteStartMs: number, nowMs: number): number {
  if (!hasDevice(job, metric) || job.startTime === 0) return -1;
  const runEnd = Math.min(endTime(job) ?? nowMs, nowMs);
  if (minuteStartMs < job.startTime || minuteStartMs + MINUTE > runEnd) return -1;
  const [lo, hi] = METRIC_RANGES[metric];
  const v = 100 * wave(hashSeed(`${job.id}/${task}/${metric}`), minuteStartMs, lo / 100, hi / 100);
  return Math.round(v * 1000) / 1000;
}

/**
 * The start (epoch ms) of the minute the last array element averages: the most recent complete
 * minute before now, or before the job stopped running.
 */
export function lastMetricMinute(job: SimJob, nowMs: number): number {
  const reference = Math.min(endTime(job) ?? nowMs, nowMs);
  return Math.floor(reference / MINUTE) * MINUTE - MINUTE;
}

export function metricSeries(job: SimJob, task: string, nowMs: number): { metric: MetricName; value: number[] }[] {
  const last = lastMetricMinute(job, nowMs);
  return METRIC_NAMES.map((metric) => ({
    metric,
    value: Array.from({ length: METRIC_WINDOW }, (_, i) => metricValue(job, task, metric, last - (METRIC_WINDOW - 1 - i) * MINUTE, nowMs)),
  }));
}

/** The task's full log as it stands at nowMs: one line per simulated step, ISO time first. */
export function taskLog(job: SimJob, task: string, nowMs: number): string {
  if (job.startTime === 0) return '';
  const runEnd = Math.min(endTime(job) ?? nowMs, nowMs);
  // The formats ModelArts logs mix: the platform's own service lines, Python logging's default,
  // and ISO-8601 (all UTC here).
  const plain = (ms: number, sep: string) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '').replace('.', sep);
  const lines: string[] = [
    `[ModelArts Service Log]${plain(job.startTime, ',')} - INFO - prepare environment for ${task}`,
    `${plain(job.startTime, ',')} - root - INFO - [${task}] starting ${job.engine.name} job ${job.name}`,
  ];
  const stepEveryMs = 20_000;
  for (let t = job.startTime + stepEveryMs, step = 1; t <= runEnd; t += stepEveryMs, step++) {
    const loss = (2.5 * Math.exp(-step / 200) + 0.05 * seededRandom(hashSeed(`${job.id}/${task}/${step}`))()).toFixed(4);
    lines.push(`${new Date(t).toISOString()} INFO [${task}] step=${step * 10} loss=${loss}`);
  }
  if (endTime(job) !== null && runEnd === endTime(job)) {
    const exitCode = job.phase === 'Completed' ? 0 : 1;
    lines.push(`${new Date(runEnd).toISOString()} ${exitCode === 0 ? 'INFO' : 'ERROR'} [${task}] process exited with code ${exitCode}`);
  }
  return `${lines.join('\n')}\n`;
}
