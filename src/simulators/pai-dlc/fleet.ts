// The simulated PAI-DLC account: workspaces, users, ECS specs and a deterministic fleet of jobs in
// every Status. Times are kept as epoch ms and rendered to the API's ISO strings by the server.
import { hashSeed, seededRandom } from '../kit.js';

export const PAI_DLC_STATUSES = [
  'Creating',
  'Queuing',
  'Bidding',
  'EnvPreparing',
  'SanityChecking',
  'Running',
  'Restarting',
  'Stopping',
  'SucceededReserving',
  'FailedReserving',
  'Succeeded',
  'Failed',
  'Stopped',
] as const;
export type PaiDlcStatus = (typeof PAI_DLC_STATUSES)[number];

export interface SimWorkspace {
  WorkspaceId: string;
  WorkspaceName: string;
}

export interface SimUser {
  UserId: string;
  Username: string;
}

/** One row of ListEcsSpecs: the hardware behind an `EcsSpec` name (public resources). */
export interface SimEcsSpec {
  InstanceType: string;
  AcceleratorType: 'GPU' | 'CPU';
  Cpu: number;
  Gpu: number;
  GpuType: string;
  /** GiB per GPU card (ListEcsSpecs' GpuMemory; 0 for CPU specs). */
  GpuMemory: number;
  /** GiB */
  Memory: number;
}

export interface SimResourceConfig {
  CPU: string;
  GPU: string;
  GPUType: string;
  Memory: string;
  SharedMemory: string;
}

export interface SimJobSpec {
  Type: string;
  PodCount: number;
  Image: string;
  EcsSpec?: string;
  ResourceConfig?: SimResourceConfig;
}

export interface SimPod {
  PodId: string;
  PodUid: string;
  Type: string;
  Status: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  SubStatus: 'Normal' | 'Evicted';
  Ip: string;
  NodeName: string;
  createdMs: number;
  startedMs: number | null;
  finishedMs: number | null;
  /** GPUs of this pod (from its JobSpec), so metrics know whether GPU series exist. */
  gpus: number;
  HistoryPods: SimPod[];
}

export interface SimJob {
  JobId: string;
  DisplayName: string;
  JobType: string;
  Status: PaiDlcStatus;
  ReasonCode: string;
  ReasonMessage: string;
  workspace: SimWorkspace;
  user: SimUser;
  ResourceType: 'ECS' | 'Lingjun';
  /** Quota id for jobs on resource quotas; empty for public (pay-as-you-go) resources. */
  ResourceId: string;
  createdMs: number;
  runningMs: number | null;
  finishedMs: number | null;
  restartsUsed: number;
  restartsMax: number;
  JobSpecs: SimJobSpec[];
  Pods: SimPod[];
  /**
   * Pay-as-you-go jobs on general-purpose (ECS) resources keep GetJobMetrics; every other kind moved
   * to CloudMonitor, and the old API answers them with an empty PodMetrics (the deprecation note).
   */
  metricsViaGetJobMetrics: boolean;
}

export interface PaiDlcFleet {
  /** workspaces[0] is the account's default workspace (what ListJobs lists without WorkspaceId; unconfirmed). */
  workspaces: SimWorkspace[];
  users: SimUser[];
  /** The user the simulator's credentials belong to (what ShowOwn=true filters on). */
  callerUserId: string;
  /**
   * The Alibaba Cloud account (main) id: alice is the account itself, bob a RAM sub-user of it.
   * CloudMonitor files every job's metrics under this id.
   */
  accountId: string;
  ecsSpecs: SimEcsSpec[];
  jobs: SimJob[];
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

export const SIM_ECS_SPECS: SimEcsSpec[] = [
  { InstanceType: 'ecs.gn7i-c8g1.2xlarge', AcceleratorType: 'GPU', Cpu: 8, Gpu: 1, GpuType: 'NVIDIA A10', GpuMemory: 24, Memory: 30 },
  { InstanceType: 'ecs.gn7i-c32g1.32xlarge', AcceleratorType: 'GPU', Cpu: 128, Gpu: 4, GpuType: 'NVIDIA A10', GpuMemory: 24, Memory: 752 },
  { InstanceType: 'ecs.gn6v-c10g1.20xlarge', AcceleratorType: 'GPU', Cpu: 82, Gpu: 8, GpuType: 'Tesla-V100-16G', GpuMemory: 16, Memory: 336 },
  { InstanceType: 'ecs.gn6i-c4g1.xlarge', AcceleratorType: 'GPU', Cpu: 4, Gpu: 1, GpuType: 'Tesla-T4-16G', GpuMemory: 16, Memory: 15 },
  { InstanceType: 'ecs.g6.xlarge', AcceleratorType: 'CPU', Cpu: 4, Gpu: 0, GpuType: '', GpuMemory: 0, Memory: 16 },
];

interface JobTemplate {
  name: string;
  type: string;
  status: PaiDlcStatus;
  workspace: 0 | 1;
  /** 0 = the caller, 1 = a teammate (hidden from ShowOwn=true). */
  user: 0 | 1;
  /** Minutes before the anchor the job was created. */
  createdAgoMin: number;
  /** Minutes from creation to Running; null = never ran. */
  queueMin: number | null;
  /** Minutes it ran before finishing; null = still going. */
  runMin: number | null;
  specs: SimJobSpec[];
  lingjun?: boolean;
  restarts?: number;
  reason?: [string, string];
}

const IMAGE = 'dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/pytorch-training:2.1-gpu-py310-cu121-ubuntu22.04';

const ecs = (type: string, count: number, spec: string): SimJobSpec => ({ Type: type, PodCount: count, Image: IMAGE, EcsSpec: spec });
const quota = (type: string, count: number, gpu: number, gpuType: string): SimJobSpec => ({
  Type: type,
  PodCount: count,
  Image: IMAGE,
  ResourceConfig: { CPU: String(gpu * 12 || 8), GPU: String(gpu), GPUType: gpuType, Memory: `${gpu * 96 || 32}Gi`, SharedMemory: `${gpu * 32 || 8}Gi` },
});

const TEMPLATES: JobTemplate[] = [
  {
    name: 'resnet-ddp',
    type: 'PyTorchJob',
    status: 'Running',
    workspace: 0,
    user: 0,
    createdAgoMin: 300,
    queueMin: 3,
    runMin: null,
    specs: [ecs('Worker', 4, 'ecs.gn6v-c10g1.20xlarge')],
  },
  {
    name: 'bert-finetune',
    type: 'PyTorchJob',
    status: 'Running',
    workspace: 1,
    user: 0,
    createdAgoMin: 180,
    queueMin: 2,
    runMin: null,
    specs: [quota('Worker', 2, 2, 'Tesla-V100-16G')],
  },
  {
    name: 'llm-pretrain-lingjun',
    type: 'PyTorchJob',
    status: 'Running',
    workspace: 1,
    user: 0,
    createdAgoMin: 2 * 24 * 60,
    queueMin: 20,
    runMin: null,
    specs: [quota('Master', 1, 8, 'NVIDIA-A100-SXM4-80GB'), quota('Worker', 3, 8, 'NVIDIA-A100-SXM4-80GB')],
    lingjun: true,
  },
  {
    name: 'tf-ps-ctr',
    type: 'TFJob',
    status: 'Running',
    workspace: 0,
    user: 1,
    createdAgoMin: 95,
    queueMin: 4,
    runMin: null,
    specs: [ecs('PS', 1, 'ecs.g6.xlarge'), ecs('Worker', 2, 'ecs.gn7i-c8g1.2xlarge')],
  },
  {
    name: 'yolo-restart',
    type: 'PyTorchJob',
    status: 'Restarting',
    workspace: 0,
    user: 0,
    createdAgoMin: 240,
    queueMin: 5,
    runMin: null,
    specs: [ecs('Worker', 2, 'ecs.gn7i-c32g1.32xlarge')],
    restarts: 2,
  },
  {
    name: 'mpi-allreduce',
    type: 'MPIJob',
    status: 'Stopping',
    workspace: 0,
    user: 0,
    createdAgoMin: 400,
    queueMin: 6,
    runMin: null,
    specs: [ecs('Launcher', 1, 'ecs.g6.xlarge'), ecs('Worker', 2, 'ecs.gn6i-c4g1.xlarge')],
  },
  {
    name: 'sd-creating',
    type: 'PyTorchJob',
    status: 'Creating',
    workspace: 0,
    user: 0,
    createdAgoMin: 1,
    queueMin: null,
    runMin: null,
    specs: [ecs('Worker', 1, 'ecs.gn7i-c8g1.2xlarge')],
  },
  {
    name: 'llama-queued',
    type: 'PyTorchJob',
    status: 'Queuing',
    workspace: 1,
    user: 0,
    createdAgoMin: 45,
    queueMin: null,
    runMin: null,
    specs: [quota('Worker', 2, 8, 'NVIDIA-A100-SXM4-80GB')],
    lingjun: true,
  },
  {
    name: 'spot-bidding',
    type: 'PyTorchJob',
    status: 'Bidding',
    workspace: 1,
    user: 1,
    createdAgoMin: 30,
    queueMin: null,
    runMin: null,
    specs: [quota('Worker', 1, 8, 'NVIDIA-H800-80GB')],
    lingjun: true,
  },
  {
    name: 'xgb-envprep',
    type: 'XGBoostJob',
    status: 'EnvPreparing',
    workspace: 0,
    user: 0,
    createdAgoMin: 8,
    queueMin: null,
    runMin: null,
    specs: [ecs('Worker', 1, 'ecs.gn6i-c4g1.xlarge')],
  },
  {
    name: 'sanity-a100',
    type: 'PyTorchJob',
    status: 'SanityChecking',
    workspace: 1,
    user: 0,
    createdAgoMin: 12,
    queueMin: null,
    runMin: null,
    specs: [quota('Worker', 2, 8, 'NVIDIA-A100-SXM4-80GB')],
    lingjun: true,
  },
  {
    name: 'vit-done-reserving',
    type: 'PyTorchJob',
    status: 'SucceededReserving',
    workspace: 0,
    user: 0,
    createdAgoMin: 600,
    queueMin: 3,
    runMin: 320,
    specs: [ecs('Worker', 1, 'ecs.gn7i-c8g1.2xlarge')],
    reason: ['JobSucceeded', 'Job succeeded, resources are reserved.'],
  },
  {
    name: 'gpt-crash-reserving',
    type: 'PyTorchJob',
    status: 'FailedReserving',
    workspace: 1,
    user: 0,
    createdAgoMin: 500,
    queueMin: 5,
    runMin: 40,
    specs: [quota('Worker', 1, 4, 'Tesla-V100-16G')],
    reason: ['JobFailed', 'Worker exited with code 1, resources are reserved.'],
  },
  {
    name: 'mnist-succeeded',
    type: 'TFJob',
    status: 'Succeeded',
    workspace: 0,
    user: 0,
    createdAgoMin: 1_440,
    queueMin: 2,
    runMin: 95,
    specs: [ecs('Chief', 1, 'ecs.gn7i-c8g1.2xlarge'), ecs('Worker', 2, 'ecs.gn7i-c8g1.2xlarge')],
    reason: ['JobSucceeded', 'Job succeeded.'],
  },
  {
    name: 'oom-failed',
    type: 'PyTorchJob',
    status: 'Failed',
    workspace: 0,
    user: 1,
    createdAgoMin: 2_000,
    queueMin: 4,
    runMin: 17,
    specs: [ecs('Worker', 1, 'ecs.gn6i-c4g1.xlarge')],
    reason: ['JobFailed', 'Pod worker-0 OOMKilled.'],
  },
  {
    name: 'sweep-stopped',
    type: 'PyTorchJob',
    status: 'Stopped',
    workspace: 1,
    user: 0,
    createdAgoMin: 3_000,
    queueMin: 3,
    runMin: 60,
    specs: [ecs('Worker', 2, 'ecs.gn7i-c8g1.2xlarge')],
    reason: ['JobStoppedByUser', 'Job stopped by user.'],
  },
  // Older than the 7-day default window of ListJobs: invisible unless StartTime is sent.
  {
    name: 'imagenet-baseline-2w',
    type: 'PyTorchJob',
    status: 'Succeeded',
    workspace: 0,
    user: 0,
    createdAgoMin: 14 * 24 * 60,
    queueMin: 10,
    runMin: 720,
    specs: [ecs('Worker', 2, 'ecs.gn6v-c10g1.20xlarge')],
    reason: ['JobSucceeded', 'Job succeeded.'],
  },
  {
    name: 'ray-tune-40d',
    type: 'RayJob',
    status: 'Stopped',
    workspace: 1,
    user: 1,
    createdAgoMin: 40 * 24 * 60,
    queueMin: 6,
    runMin: 200,
    specs: [ecs('Head', 1, 'ecs.g6.xlarge'), ecs('Worker', 2, 'ecs.gn6i-c4g1.xlarge')],
    reason: ['JobStoppedByUser', 'Job stopped by user.'],
  },
];

/** Enough extra succeeded jobs that paging with the maximum page size (100) needs two pages. */
const FILLER_JOBS = 110;

function hex(rand: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}

function uuid(rand: () => number): string {
  const h = hex(rand, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

function gpusOf(spec: SimJobSpec): number {
  if (spec.ResourceConfig) return Number(spec.ResourceConfig.GPU);
  return SIM_ECS_SPECS.find((e) => e.InstanceType === spec.EcsSpec)?.Gpu ?? 0;
}

function podStatusFor(job: PaiDlcStatus): SimPod['Status'] {
  switch (job) {
    case 'Running':
    case 'Restarting':
    case 'Stopping':
    case 'SucceededReserving':
    case 'FailedReserving':
      return 'Running';
    case 'Succeeded':
      return 'Succeeded';
    case 'Failed':
      return 'Failed';
    default:
      return 'Succeeded';
  }
}

function buildJob(t: JobTemplate, index: number, seed: number, anchorMs: number, workspaces: SimWorkspace[], users: SimUser[]): SimJob {
  const rand = seededRandom(hashSeed(`${seed}:${t.name}:${index}`));
  const JobId = `dlc${hex(rand, 13)}`;
  const createdMs = anchorMs - t.createdAgoMin * MIN;
  const runningMs = t.queueMin === null ? null : createdMs + t.queueMin * MIN;
  const finishedMs = runningMs !== null && t.runMin !== null ? runningMs + t.runMin * MIN : null;
  const podFinished = ['Succeeded', 'Failed', 'Stopped'].includes(t.status);
  const pods: SimPod[] = [];
  if (runningMs !== null) {
    for (const spec of t.specs) {
      for (let i = 0; i < spec.PodCount; i++) {
        const podCreated = runningMs - MIN;
        const incarnation = (startedMs: number, finished: number | null, status: SimPod['Status']): SimPod => ({
          PodId: `${JobId}-${spec.Type.toLowerCase()}-${i}`,
          PodUid: uuid(rand),
          Type: spec.Type,
          Status: status,
          SubStatus: 'Normal',
          Ip: `10.0.${Math.floor(rand() * 250)}.${Math.floor(rand() * 250) + 2}`,
          NodeName: `cn-hangzhou.10.1.${Math.floor(rand() * 250)}.${Math.floor(rand() * 250) + 2}`,
          createdMs: podCreated,
          startedMs,
          finishedMs: finished,
          gpus: gpusOf(spec),
          HistoryPods: [],
        });
        if (t.restarts) {
          // Each restart ends an incarnation 20 minutes in; the current one started after the last.
          const history: SimPod[] = [];
          for (let r = 0; r < t.restarts; r++) {
            const start = runningMs + r * 25 * MIN;
            history.push(incarnation(start, start + 20 * MIN, 'Failed'));
          }
          const current = incarnation(runningMs + t.restarts * 25 * MIN, null, 'Running');
          current.HistoryPods = history;
          pods.push(current);
        } else {
          const status = t.status === 'Stopped' ? 'Failed' : podStatusFor(t.status);
          pods.push(incarnation(runningMs, podFinished ? finishedMs : null, status));
        }
      }
    }
  }
  return {
    JobId,
    DisplayName: t.name,
    JobType: t.type,
    Status: t.status,
    ReasonCode: t.reason?.[0] ?? '',
    ReasonMessage: t.reason?.[1] ?? '',
    workspace: workspaces[t.workspace]!,
    user: users[t.user]!,
    ResourceType: t.lingjun ? 'Lingjun' : 'ECS',
    ResourceId: t.specs.some((s) => s.ResourceConfig) ? `quota${hex(rand, 12)}` : '',
    createdMs,
    runningMs,
    finishedMs,
    restartsUsed: t.restarts ?? 0,
    restartsMax: 10,
    JobSpecs: t.specs,
    Pods: pods,
    metricsViaGetJobMetrics: !t.lingjun && !t.specs.some((s) => s.ResourceConfig),
  };
}

/** The same seed and anchor always give the same fleet; every time is at or before the anchor. */
export function buildFleet(seed: number, anchorMs: number): PaiDlcFleet {
  const workspaces: SimWorkspace[] = [
    { WorkspaceId: '12345', WorkspaceName: 'vision' },
    { WorkspaceId: '67890', WorkspaceName: 'nlp' },
  ];
  const users: SimUser[] = [
    { UserId: '1557702098194904', Username: 'alice' },
    { UserId: '2033881765432111', Username: 'bob' },
  ];
  const fillers: JobTemplate[] = Array.from({ length: FILLER_JOBS }, (_, i) => ({
    name: `hparam-sweep-${String(i).padStart(3, '0')}`,
    type: 'PyTorchJob',
    status: 'Succeeded',
    workspace: (i % 2) as 0 | 1,
    user: 0,
    createdAgoMin: 6 * 24 * 60 - i * 37,
    queueMin: 2,
    runMin: 25,
    specs: [ecs('Worker', 1, 'ecs.gn6i-c4g1.xlarge')],
    reason: ['JobSucceeded', 'Job succeeded.'],
  }));
  const jobs = [...TEMPLATES, ...fillers].map((t, i) => buildJob(t, i, seed, anchorMs, workspaces, users));
  return { workspaces, users, callerUserId: users[0]!.UserId, accountId: users[0]!.UserId, ecsSpecs: SIM_ECS_SPECS, jobs };
}

export const SIM_TIME = { MIN, HOUR, DAY };
