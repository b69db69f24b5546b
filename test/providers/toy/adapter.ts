// The toy platform's adapter: its jobs are its config's, in one project, with no metrics to fetch.
import type { SecretSource } from '../../../src/config/provider-kit.js';
import type { JobRecord } from '../../../src/domain/types.js';
import type { ProviderAdapter } from '../../../src/providers/provider.js';
import type { ToyConfig } from './config.js';
import { mapStatus } from './mapping.js';

export function createToyAdapter(config: ToyConfig, _secrets: SecretSource): ProviderAdapter {
  const jobs: JobRecord[] = config.jobs.map((j) => ({
    externalId: j.name,
    projectExternalId: 'toys',
    name: j.name,
    status: mapStatus(j.status),
    rawStatus: j.status,
    createdAt: null,
    startedAt: null,
    finishedAt: null,
    gpuType: null,
    gpuCount: null,
  }));
  return {
    id: config.id,
    kind: 'TOY' as never,
    capabilities: { systemMetrics: [], perGpuSeries: false, trainingMetrics: false, progress: false, logs: false },
    listProjects: async () => [{ externalId: 'toys', name: 'Toys' }],
    listJobs: async () => ({ jobs, nextCursor: null }),
    getJob: async (ref) => {
      const job = jobs.find((j) => j.externalId === ref.externalId);
      return job ? { ...job, nodes: [] } : null;
    },
    fetchSystemMetrics: async (_job, request) => ({ series: [], covered: request.metrics, from: request.from, to: request.to }),
  };
}
