// The fleet queries the tests in this folder ask (and the benchmark times); two of them, each
// within the server's static cost limit.
export const IDLE_QUERY = `query($filter: JobFilter, $from: DateTime!, $to: DateTime!, $threshold: Float!, $min: Duration!) {
  fleet(filter: $filter, from: $from, to: $to) {
    jobCount
    idleGpus(threshold: $threshold, forAtLeast: $min) {
      job { id } provider { id kind } scope aggregate gpuCount node { id } gpu { id } model
      intervals { from to duration gpuHours avgUtilization maxUtilization } idleDuration idleGpuHours
    }
    problems { job { id } code stale }
  }
}`;

export const USAGE_QUERY = `query($filter: JobFilter, $from: DateTime!, $to: DateTime!) {
  fleet(filter: $filter, from: $from, to: $to) {
    jobCount
    utilization {
      total { jobCount allocatedGpuHours coveredGpuHours usedGpuHours wasteGpuHours coverage utilization efficiency }
      byProvider { provider { id } jobCount allocatedGpuHours coveredGpuHours usedGpuHours coverage }
      byProject { project { id } jobCount allocatedGpuHours usedGpuHours }
      byGpuModel { gpuModel jobCount allocatedGpuHours usedGpuHours }
    }
    jobs { job { id } allocatedGpuHours coveredGpuHours usedGpuHours wasteGpuHours coverage }
  }
}`;
