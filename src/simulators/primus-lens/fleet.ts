// The simulated Primus-Lens fleet: clusters, workloads, pods on nodes, and the ground truth of
// every number the server answers (GPU utilization per device and node, training metrics by
// iteration, iteration times). Written from the fact sheet alone; shares nothing with the adapter.
import { hashSeed, seededRandom, wave } from '../kit.js';

export type LensStatus = 'Running' | 'Pending' | 'Done' | 'Failed' | 'Deleted';
export type TrainingSource = 'log' | 'wandb' | 'tensorflow';

export const CLUSTERS = ['gpu-cluster-a', 'gpu-cluster-b'] as const;
export const GPUS_PER_NODE = 8;
const MI300X = 'AMD_Instinct_MI300X_OAM';
const MI325X = 'AMD_Instinct_MI325X_OAM';

export interface SimPod {
  podUid: string;
  podName: string;
  namespace: string;
  /** '' while the pod is not scheduled (Pending). */
  nodeName: string;
  ip: string | null;
  gpuAllocated: number;
  /** The node's device id (gpu_id) of the pod's first GPU; it holds firstDevice..firstDevice+gpuAllocated-1. */
  firstDevice: number;
  gpuModel: string;
  phase: string;
  createdAtMs: number;
  /** null while the pod still runs. */
  endedAtMs: number | null;
  restartCount: number;
  image: string;
}

export interface SimWorkload {
  uid: string;
  name: string;
  namespace: string;
  kind: string;
  apiVersion: string;
  cluster: string;
  status: LensStatus;
  startMs: number;
  /** null while Running or Pending. */
  endMs: number | null;
  pods: SimPod[];
  sources: TrainingSource[];
  /** Iterations per second while it trains (the known rate tests check). */
  iterationsPerSecond: number;
  targetIteration: number | null;
  /** Every how many iterations a point is logged. */
  logEvery: number;
}

export interface SimFleet {
  anchorMs: number;
  workloads: SimWorkload[];
}

interface WorkloadSpec {
  status: LensStatus;
  cluster: (typeof CLUSTERS)[number];
  namespace: string;
  kind: 'PyTorchJob' | 'Job' | 'RayJob';
  name: string;
  /** GPUs of each pod (1-4 pods x 1-8 GPUs). */
  podGpus: number[];
  sources: TrainingSource[];
  targetIteration: number | null;
  /** Pods alternate between two GPU models (a heterogeneous workload). */
  mixedModels?: boolean;
  /** The first pod was restarted once (a second pod record with the same name). */
  restarted?: boolean;
  /** Its one pod runs on the node of this workload's first pod, on the next free devices. */
  shareNodeWith?: string;
}

// Every status appears in the default cluster; whole-node (8 GPU) and partial-node pods both occur.
const SPECS: WorkloadSpec[] = [
  {
    status: 'Running',
    cluster: 'gpu-cluster-a',
    namespace: 'team-llm',
    kind: 'PyTorchJob',
    name: 'llama3-8b-pretrain',
    podGpus: [8, 8],
    sources: ['log', 'wandb'],
    targetIteration: 20000,
  },
  {
    status: 'Running',
    cluster: 'gpu-cluster-a',
    namespace: 'team-vision',
    kind: 'PyTorchJob',
    name: 'vit-h-finetune',
    podGpus: [4],
    sources: ['tensorflow'],
    targetIteration: null,
  },
  // Shares vit-h-finetune's node (devices 4-7): node-wide data there covers two workloads.
  {
    status: 'Running',
    cluster: 'gpu-cluster-a',
    namespace: 'team-vision',
    kind: 'Job',
    name: 'vit-h-probe',
    podGpus: [4],
    sources: [],
    targetIteration: null,
    shareNodeWith: 'vit-h-finetune',
  },
  { status: 'Pending', cluster: 'gpu-cluster-a', namespace: 'research', kind: 'Job', name: 'sweep-lr-07', podGpus: [2], sources: [], targetIteration: null },
  {
    status: 'Done',
    cluster: 'gpu-cluster-a',
    namespace: 'team-llm',
    kind: 'PyTorchJob',
    name: 'mixtral-sft',
    podGpus: [8, 8, 8, 8],
    sources: ['log'],
    targetIteration: 6000,
    mixedModels: true,
  },
  {
    status: 'Failed',
    cluster: 'gpu-cluster-a',
    namespace: 'team-llm',
    kind: 'RayJob',
    name: 'rlhf-ppo',
    podGpus: [8, 2],
    sources: ['wandb'],
    targetIteration: 10000,
    restarted: true,
  },
  { status: 'Deleted', cluster: 'gpu-cluster-a', namespace: 'research', kind: 'Job', name: 'eval-mmlu', podGpus: [1], sources: [], targetIteration: null },
  {
    status: 'Done',
    cluster: 'gpu-cluster-a',
    namespace: 'team-vision',
    kind: 'Job',
    name: 'clip-eval',
    podGpus: [2, 2, 2],
    sources: ['tensorflow'],
    targetIteration: 3000,
  },
  {
    status: 'Running',
    cluster: 'gpu-cluster-a',
    namespace: 'research',
    kind: 'PyTorchJob',
    name: 'moe-ablation-3',
    podGpus: [8, 8, 8],
    sources: ['log'],
    targetIteration: 50000,
  },
  {
    status: 'Failed',
    cluster: 'gpu-cluster-a',
    namespace: 'team-vision',
    kind: 'PyTorchJob',
    name: 'sd-xl-train',
    podGpus: [6],
    sources: ['log', 'tensorflow'],
    targetIteration: 8000,
  },
  {
    status: 'Pending',
    cluster: 'gpu-cluster-a',
    namespace: 'team-llm',
    kind: 'PyTorchJob',
    name: 'llama3-70b-sft',
    podGpus: [8, 8, 8, 8],
    sources: [],
    targetIteration: null,
  },
  { status: 'Done', cluster: 'gpu-cluster-a', namespace: 'research', kind: 'Job', name: 'tokenizer-build', podGpus: [1], sources: [], targetIteration: null },
  {
    status: 'Deleted',
    cluster: 'gpu-cluster-a',
    namespace: 'team-llm',
    kind: 'PyTorchJob',
    name: 'llama3-8b-pretrain-old',
    podGpus: [8],
    sources: ['log'],
    targetIteration: 20000,
  },
  {
    status: 'Running',
    cluster: 'gpu-cluster-b',
    namespace: 'team-llm',
    kind: 'PyTorchJob',
    name: 'qwen-14b-cpt',
    podGpus: [8, 8],
    sources: ['log'],
    targetIteration: 30000,
  },
  { status: 'Done', cluster: 'gpu-cluster-b', namespace: 'research', kind: 'Job', name: 'data-dedup', podGpus: [3], sources: [], targetIteration: null },
  {
    status: 'Failed',
    cluster: 'gpu-cluster-b',
    namespace: 'team-vision',
    kind: 'RayJob',
    name: 'detr-sweep',
    podGpus: [4, 4],
    sources: ['wandb', 'tensorflow'],
    targetIteration: 12000,
  },
];

const HOUR = 3_600_000;
const API_VERSION: Record<WorkloadSpec['kind'], string> = { PyTorchJob: 'kubeflow.org/v1', Job: 'batch/v1', RayJob: 'ray.io/v1' };

function uuidFrom(seed: number, text: string): string {
  const rnd = seededRandom(hashSeed(`${seed}:${text}`));
  const hex = Array.from({ length: 32 }, () => Math.floor(rnd() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** `replicas` repeats the spec list (names suffixed `-r<n>`) for fleets large enough to page through. */
export function buildFleet(seed: number, anchorMs: number, replicas = 1): SimFleet {
  const rnd = seededRandom(hashSeed(`primus-lens:${seed}`));
  const nodeCounter = new Map<string, number>();
  const nextNode = (cluster: string) => {
    const n = (nodeCounter.get(cluster) ?? 0) + 1;
    nodeCounter.set(cluster, n);
    return `gpu-node-${String(n).padStart(2, '0')}`;
  };

  const devicesUsed = new Map<string, number>();
  const firstNodeOf = new Map<string, string>();
  const specs = Array.from({ length: replicas }, (_, r) => SPECS.map((spec) => (r === 0 ? spec : { ...spec, name: `${spec.name}-r${r}` }))).flat();
  const workloads = specs.map((spec, i): SimWorkload => {
    const uid = uuidFrom(seed, `${spec.cluster}/${spec.namespace}/${spec.name}`);
    let startMs: number;
    let endMs: number | null = null;
    let iterationsPerSecond: number;
    switch (spec.status) {
      case 'Running': {
        startMs = anchorMs - Math.round((2 + rnd() * 6) * HOUR);
        // Planned for 36 h, so the target lies well after any pinned test clock.
        iterationsPerSecond = spec.targetIteration ? spec.targetIteration / (36 * 3600) : 0.2 + rnd() * 0.8;
        break;
      }
      case 'Pending':
        startMs = anchorMs - Math.round((5 + rnd() * 25) * 60_000);
        iterationsPerSecond = 0;
        break;
      case 'Done': {
        startMs = anchorMs - Math.round((26 + rnd() * 10) * HOUR);
        const hours = 2 + rnd() * 6;
        iterationsPerSecond = spec.targetIteration ? spec.targetIteration / (hours * 3600) : 0;
        // A Done run ends on its target iteration (the extra millisecond absorbs float rounding).
        endMs = startMs + Math.ceil(hours * HOUR) + 1;
        break;
      }
      case 'Failed': {
        startMs = anchorMs - Math.round((18 + rnd() * 6) * HOUR);
        iterationsPerSecond = spec.targetIteration ? spec.targetIteration / (10 * 3600) : 0;
        endMs = startMs + Math.round((1 + rnd() * 3) * HOUR);
        break;
      }
      case 'Deleted':
        startMs = anchorMs - Math.round((40 + rnd() * 8) * HOUR);
        iterationsPerSecond = spec.targetIteration ? spec.targetIteration / (12 * 3600) : 0;
        endMs = startMs + 2 * HOUR;
        break;
    }
    const phase = { Running: 'Running', Pending: 'Pending', Done: 'Succeeded', Failed: 'Failed', Deleted: 'Failed' }[spec.status];
    const pods: SimPod[] = spec.podGpus.map((gpus, p) => {
      const role = spec.kind === 'PyTorchJob' ? (p === 0 ? 'master-0' : `worker-${p - 1}`) : `${p}`;
      const scheduled = spec.status !== 'Pending';
      const nodeName = !scheduled
        ? ''
        : spec.shareNodeWith && firstNodeOf.has(spec.shareNodeWith)
          ? firstNodeOf.get(spec.shareNodeWith)!
          : nextNode(spec.cluster);
      if (p === 0 && nodeName) firstNodeOf.set(spec.name, nodeName);
      const firstDevice = devicesUsed.get(`${spec.cluster}/${nodeName}`) ?? 0;
      if (nodeName) devicesUsed.set(`${spec.cluster}/${nodeName}`, firstDevice + gpus);
      return {
        podUid: uuidFrom(seed, `${uid}/pod/${p}`),
        podName: `${spec.name}-${role}`,
        namespace: spec.namespace,
        nodeName,
        firstDevice,
        ip: scheduled ? `10.${(i % 250) + 1}.${p + 1}.${10 + p}` : null,
        gpuAllocated: gpus,
        gpuModel: spec.mixedModels && p % 2 === 1 ? MI325X : MI300X,
        phase,
        createdAtMs: startMs + 5_000,
        endedAtMs: endMs,
        restartCount: spec.restarted && p === 0 ? 1 : 0,
        image: `registry.example.com/${spec.namespace}/train:2025.11`,
      };
    });
    if (spec.restarted && pods[0]) {
      // The first incarnation of the restarted pod: same name and node, its own uid, ended early.
      const first = pods[0];
      const crashedAt = startMs + Math.round(0.5 * HOUR);
      pods.unshift({ ...first, podUid: uuidFrom(seed, `${uid}/pod/0/previous`), phase: 'Failed', endedAtMs: crashedAt, restartCount: 0 });
      first.createdAtMs = crashedAt + 10_000;
    }
    return {
      uid,
      name: spec.name,
      namespace: spec.namespace,
      kind: spec.kind,
      apiVersion: API_VERSION[spec.kind],
      cluster: spec.cluster,
      status: spec.status,
      startMs,
      endMs,
      pods,
      sources: spec.sources,
      iterationsPerSecond,
      targetIteration: spec.targetIteration,
      logEvery: spec.targetIteration && spec.targetIteration <= 6000 ? 10 : 50,
    };
  });
  return { anchorMs, workloads };
}

// ---- ground truth -------------------------------------------------------------------------

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;

/** Whether the workload's pods were on their nodes at `tMs` (Lens only has samples then). */
export function isActiveAt(w: SimWorkload, tMs: number, nowMs: number): boolean {
  if (w.status === 'Pending') return false;
  return tMs >= w.startMs && tMs <= Math.min(w.endMs ?? nowMs, nowMs);
}

/** Utilization in percent of device `gpuId` on `node` while it serves workload `w`. */
export function deviceGpuUtilizationPercent(w: SimWorkload, node: string, gpuId: number, tSec: number): number {
  return round(100 * wave(hashSeed(`${w.uid}/${node}/${gpuId}/util`), tSec * 1000, 0.55, 0.99), 2);
}

/** The latest incarnation of each pod name (a restarted pod keeps its name, gets a new uid). */
export function latestPods(w: SimWorkload): SimPod[] {
  const byName = new Map<string, SimPod>();
  for (const p of w.pods) byName.set(p.podName, p);
  return [...byName.values()];
}

/** The GPUs (ids 0..n-1) a workload holds on a node. */
export function workloadGpusOnNode(w: SimWorkload, node: string): number {
  return latestPods(w)
    .filter((p) => p.nodeName === node)
    .reduce((n, p) => n + p.gpuAllocated, 0);
}

export function workloadNodes(w: SimWorkload): string[] {
  return [...new Set(w.pods.map((p) => p.nodeName).filter((n) => n !== ''))];
}

/** The node's device ids (gpu_id) a workload holds on a node. */
export function workloadDevicesOnNode(w: SimWorkload, node: string): number[] {
  return latestPods(w)
    .filter((p) => p.nodeName === node)
    .flatMap((p) => Array.from({ length: p.gpuAllocated }, (_, i) => p.firstDevice + i))
    .filter((g) => g < GPUS_PER_NODE);
}

/** The per-node "GPU Utilization" value: the mean over the workload's devices on that node. */
export function nodeGpuUtilizationPercent(w: SimWorkload, node: string, tSec: number): number {
  const devices = workloadDevicesOnNode(w, node);
  let sum = 0;
  for (const g of devices) sum += deviceGpuUtilizationPercent(w, node, g, tSec);
  return devices.length === 0 ? 0 : round(sum / devices.length, 2);
}

/** Power in watts of device `gpuId` on `node` while it serves workload `w`. */
export function deviceGpuPowerWatts(w: SimWorkload, node: string, gpuId: number, tSec: number): number {
  return round(300 + 450 * wave(hashSeed(`${w.uid}/${node}/${gpuId}/power`), tSec * 1000, 0.3, 1), 1);
}

/** A pod's CPU cores in use, working-set bytes, filesystem read/write bytes/s and its node's RDMA bytes/s. */
export function podCpuCores(w: SimWorkload, pod: string, tSec: number): number {
  return round(4 + 28 * wave(hashSeed(`${w.uid}/${pod}/cpu`), tSec * 1000, 0.2, 0.9), 3);
}
export function podMemoryBytes(w: SimWorkload, pod: string, tSec: number): number {
  return Math.round(64e9 + 128e9 * wave(hashSeed(`${w.uid}/${pod}/mem`), tSec * 1000, 0.3, 0.9));
}
export function podFsBytesPerSecond(w: SimWorkload, pod: string, op: 'read' | 'write', tSec: number): number {
  return Math.round(5e6 + 200e6 * wave(hashSeed(`${w.uid}/${pod}/fs-${op}`), tSec * 1000, 0, 1));
}
export function nodeRdmaBytesPerSecond(w: SimWorkload, node: string, dir: 'rx' | 'tx', tSec: number): number {
  return Math.round(1e9 + 20e9 * wave(hashSeed(`${w.uid}/${node}/rdma-${dir}`), tSec * 1000, 0.2, 1));
}

export function nodeGpuMemoryUtilizationPercent(w: SimWorkload, node: string, tSec: number): number {
  return round(100 * wave(hashSeed(`${w.uid}/${node}/mem`), tSec * 1000, 0.4, 0.85), 2);
}

export function nodeGpuPowerWatts(w: SimWorkload, node: string, tSec: number): number {
  return round(300 + 450 * wave(hashSeed(`${w.uid}/${node}/power`), tSec * 1000, 0.3, 1), 1);
}

export const SOURCE_METRICS: Record<TrainingSource, string[]> = {
  log: ['loss', 'lr', 'tflops', 'samples_per_second'],
  wandb: ['loss', 'lr', 'grad_norm'],
  tensorflow: ['loss', 'accuracy'],
};

// Sources write the same iteration a little apart (a log line first, wandb's sync later).
const SOURCE_DELAY_MS: Record<TrainingSource, number> = { log: 0, tensorflow: 800, wandb: 1500 };

export interface TrainingPoint {
  metric: string;
  /** NaN where the source logged NaN (Lens drops those). */
  value: number;
  timestampMs: number;
  iteration: number;
  source: TrainingSource;
}

/** The highest iteration the workload has reached at `nowMs`. */
export function currentIteration(w: SimWorkload, nowMs: number): number {
  if (w.iterationsPerSecond <= 0) return 0;
  const until = Math.min(w.endMs ?? nowMs, nowMs);
  const reached = Math.floor(((until - w.startMs) / 1000) * w.iterationsPerSecond);
  return Math.max(0, w.targetIteration === null ? reached : Math.min(reached, w.targetIteration));
}

/** The iterations with a logged point, in order, as of `nowMs`. */
export function loggedIterations(w: SimWorkload, nowMs: number): number[] {
  const last = currentIteration(w, nowMs);
  const out: number[] = [];
  for (let it = w.logEvery; it <= last; it += w.logEvery) out.push(it);
  return out;
}

export function iterationTimestampMs(w: SimWorkload, iteration: number, source: TrainingSource): number {
  return w.startMs + Math.round((iteration / w.iterationsPerSecond) * 1000) + SOURCE_DELAY_MS[source];
}

export function trainingValue(w: SimWorkload, source: TrainingSource, metric: string, iteration: number): number {
  const horizon = w.targetIteration ?? 20000;
  const noise = seededRandom(hashSeed(`${w.uid}/${source}/${metric}/${iteration}`))();
  switch (metric) {
    case 'loss':
      return round(2.4 * Math.exp((-3 * iteration) / horizon) + 0.35 + 0.05 * (noise - 0.5), 4);
    case 'lr': {
      const warmup = Math.min(1, iteration / (horizon * 0.05));
      return round(3e-4 * warmup * (0.5 + 0.5 * Math.cos((Math.PI * iteration) / horizon)), 8);
    }
    case 'tflops':
      return round(380 + 60 * noise, 1);
    case 'samples_per_second':
      return round(900 + 150 * noise, 1);
    // wandb logs NaN for the gradient norm of skipped (overflowing) steps.
    case 'grad_norm':
      return iteration % (13 * w.logEvery) === 0 ? Number.NaN : round(0.8 + noise, 4);
    case 'accuracy':
      return round(Math.min(0.99, 0.3 + 0.6 * (1 - Math.exp((-3 * iteration) / horizon)) + 0.02 * noise), 4);
    default:
      return 0;
  }
}

/** Every training point of a source up to `nowMs`, NaN included (the server drops them). */
export function trainingPoints(w: SimWorkload, source: TrainingSource, nowMs: number): TrainingPoint[] {
  if (!w.sources.includes(source)) return [];
  const out: TrainingPoint[] = [];
  for (const iteration of loggedIterations(w, nowMs)) {
    const timestampMs = iterationTimestampMs(w, iteration, source);
    if (timestampMs > nowMs) continue;
    for (const metric of SOURCE_METRICS[source]) {
      out.push({ metric, value: trainingValue(w, source, metric, iteration), timestampMs, iteration, source });
    }
  }
  return out;
}

export function gpuAllocationHours(w: SimWorkload, nowMs: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of w.pods) {
    if (p.nodeName === '') continue;
    const hours = (Math.min(p.endedAtMs ?? nowMs, nowMs) - p.createdAtMs) / HOUR;
    if (hours <= 0) continue;
    out[p.gpuModel] = round((out[p.gpuModel] ?? 0) + hours * p.gpuAllocated, 2);
  }
  return out;
}
