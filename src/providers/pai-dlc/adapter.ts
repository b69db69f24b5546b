// Alibaba Cloud PAI-DLC adapter (fact sheet: docs/platforms/pai-dlc.md). Project = workspace,
// Job = DLC job, Node = pod. Metrics are per pod: GetJobMetrics (one call per MetricType) for
// pay-as-you-go jobs on public ECS resources, CloudMonitor's GetMetrics for every other job.
import type { SecretSource } from '../../config/provider-kit.js';
import type { PaiDlcConfig } from './config.js';
import { DomainError } from '../../domain/errors.js';
import type { JobPage, ProjectRecord } from '../../domain/types.js';
import type { AdapterOptions } from '../platform.js';
import type { JobDetailResult, ProviderAdapter } from '../provider.js';
import { reportShapeMismatch } from '../shape-watch.js';
import { CMS_PERIODS, mapJob, mapNodes, PAI_DLC_METRICS } from './mapping.js';
import { PAGE_SIZE, paiDlcContext } from './context.js';
import { listQuery, lookbackStart, visibleJob } from './jobs.js';
import { fetchSystemMetrics } from './metrics.js';
import { fetchLogs } from './logs.js';
import { listJobsResponse } from './wire.js';

export { PAI_DLC_VERSION } from './client.js';
export { LIST_LOOKBACK_DAYS, LOG_MAX_LINES } from './context.js';

export function createPaiDlcAdapter(config: PaiDlcConfig, secrets: SecretSource, options: AdapterOptions = {}): ProviderAdapter {
  const now = options.now ?? Date.now;
  const dlc = paiDlcContext(config, secrets, now, options.timers);
  const { providerId, call, ctx, ecsSpecCache } = dlc;

  const adapter: ProviderAdapter = {
    id: providerId,
    kind: 'PAI_DLC',
    capabilities: {
      systemMetrics: PAI_DLC_METRICS,
      perGpuSeries: true,
      trainingMetrics: false,
      progress: false,
      logs: true,
      // CloudMonitor's shortest period (mapping.ts CMS_PERIODS).
      sampleSeconds: CMS_PERIODS[0],
    },

    // PAI-DLC has no workspace listing of its own (that is the AI Workspace API): workspaces are
    // what the visible jobs name.
    async listProjects(signal) {
      const seen = new Map<string, ProjectRecord>();
      let cursor: string | null = null;
      do {
        const page: JobPage = await adapter.listJobs(cursor, signal);
        for (const job of page.jobs) {
          if (job.projectExternalId && !seen.has(job.projectExternalId)) {
            seen.set(job.projectExternalId, { externalId: job.projectExternalId, name: job.projectName ?? job.projectExternalId });
          }
        }
        cursor = page.nextCursor;
      } while (cursor);
      if (config.workspaceId && !seen.has(config.workspaceId)) {
        seen.set(config.workspaceId, { externalId: config.workspaceId, name: config.workspaceId });
      }
      return [...seen.values()];
    },

    // Cursor = "<page>|<StartTime>": the window is fixed for the whole walk so pages do not shift.
    async listJobs(cursor, signal) {
      const [pageText, startFromCursor] = cursor ? cursor.split('|') : [];
      const pageNumber = pageText ? Number(pageText) : 1;
      if (!Number.isInteger(pageNumber) || pageNumber < 1) throw new DomainError('BAD_INPUT', `not a PAI-DLC page cursor: ${cursor}`);
      const startTime = startFromCursor || lookbackStart(now());
      const res = await call({ action: 'ListJobs', path: '/api/v1/jobs', query: listQuery(dlc, pageNumber, startTime), signal }, listJobsResponse);
      const items = res.Jobs ?? [];
      const total = Number(res.TotalCount ?? 0);
      if (!config.workspaceId) {
        // ShowOwn=true should give one submitter; several mean the flag was not honoured (unconfirmed default).
        const users = new Set(items.map((j) => j.UserId).filter(Boolean));
        if (users.size > 1)
          reportShapeMismatch({ providerId, assumption: 'pai-dlc.listjobs.show-own', detail: `ShowOwn=true listed jobs of ${users.size} users` });
      }
      const jobs = items.filter((j) => !config.workspaceId || String(j.WorkspaceId ?? '') === config.workspaceId).map((j) => mapJob(j, ecsSpecCache, ctx));
      const more = items.length > 0 && pageNumber * PAGE_SIZE < total;
      return { jobs, nextCursor: more ? `${pageNumber + 1}|${startTime}` : null };
    },

    async getJob(ref, signal) {
      const job = await visibleJob(dlc, ref.externalId, signal);
      if (!job) return null;
      const result: JobDetailResult = { ...mapJob(job, ecsSpecCache, ctx), nodes: mapNodes(job, ecsSpecCache) };
      return result;
    },

    fetchSystemMetrics: (ref, request, signal) => fetchSystemMetrics(dlc, ref, request, signal),
    fetchLogs: (ref, request, signal) => fetchLogs(dlc, ref, request, signal),
  };
  return adapter;
}
