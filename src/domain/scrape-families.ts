// The Prometheus view of the accelerator series: which system metric is exposed under which
// family (a base-unit name) and with which labels. One table for every Prometheus-facing reader:
// the scrape target (/metrics/jobs) and the query API (src/promql) name a series the same way, so a
// dashboard written against one works against the other.

/** Canonical system metric -> exposed family and its help. GPU and NPU readings share a family (the `kind` label tells them apart). */
export const SCRAPE_FAMILIES: Readonly<Record<string, { family: string; help: string }>> = {
  GPU_UTILIZATION: { family: 'training_graph_accelerator_utilization_ratio', help: 'Accelerator (GPU or NPU) utilization, 0..1' },
  NPU_UTILIZATION: { family: 'training_graph_accelerator_utilization_ratio', help: 'Accelerator (GPU or NPU) utilization, 0..1' },
  GPU_MEMORY_USED: { family: 'training_graph_accelerator_memory_used_bytes', help: 'Accelerator memory in use, bytes' },
  GPU_MEMORY_UTILIZATION: { family: 'training_graph_accelerator_memory_utilization_ratio', help: 'Accelerator memory in use over its total, 0..1' },
  NPU_MEMORY_UTILIZATION: { family: 'training_graph_accelerator_memory_utilization_ratio', help: 'Accelerator memory in use over its total, 0..1' },
  GPU_POWER: { family: 'training_graph_accelerator_power_watts', help: 'Accelerator power draw, watts' },
  // The profiling counters the ledger's efficiency reads (PAI-DLC's card metrics): DCGM's SM active
  // and tensor pipe active, and the tensor pipes' measured throughput.
  GPU_SM_ACTIVE: { family: 'training_graph_accelerator_sm_active_ratio', help: 'Fraction of time the streaming multiprocessors had work resident, 0..1' },
  GPU_TENSOR_ACTIVE: { family: 'training_graph_accelerator_tensor_active_ratio', help: 'Fraction of time the tensor (matrix) pipes were active, 0..1' },
  GPU_TENSOR_FLOPS: {
    family: 'training_graph_accelerator_tensor_flops',
    help: "Floating-point operations per second the accelerator's tensor pipes performed (hardware counters), FLOP/s",
  },
};

/** What a series' labels are made of (a store row of an accelerator series). */
export interface ScrapeLabelSource {
  name: string;
  scope: string;
  providerId: string;
  jobId: string;
  jobName: string;
  projectName: string | null;
  nodeName: string | null;
  gpuIndex: number | null;
  model: string | null;
  acceleratorKind: string | null;
}

/** The labels of one series, in exposition order; a missing part is the empty string (which Prometheus treats as no label). */
export function scrapeLabels(r: ScrapeLabelSource): Record<string, string> {
  return {
    provider: r.providerId,
    project: r.projectName ?? '',
    job: r.jobName,
    job_id: r.jobId,
    node: r.nodeName ?? '',
    gpu: r.gpuIndex === null ? '' : String(r.gpuIndex),
    model: r.model ?? '',
    kind: r.acceleratorKind ?? (r.name.startsWith('NPU_') ? 'NPU' : 'GPU'),
    scope: r.scope,
  };
}
