// Baseten training API adapter (fact sheet: docs/platforms/baseten.md).
import type { SecretSource } from '../../config/provider-kit.js';
import type { BasetenConfig } from './config.js';
import { DomainError, UpstreamError } from '../../domain/errors.js';
import type { JobPage, JobRef, LogPage, LogRequest, MetricFetchRequest, ProjectRecord } from '../../domain/types.js';
import { epochNanosStringToDate, isoToDate } from '../../domain/units.js';
import type { AdapterOptions } from '../platform.js';
import type { JobDetailResult, ProviderAdapter, SystemMetricsResult } from '../provider.js';
import { reportShapeMismatch } from '../shape-watch.js';
import { createBasetenClient } from './client.js';
import { mapJob, mapMetrics, withQueueContext } from './mapping.js';
import { jobResponse, logsResponse, metricsResponse, projectsResponse, queueContextResponse, searchResponse } from './wire.js';

const LOG_WINDOW_MS = 7 * 24 * 3600 * 1000; // the current spec's maximum log window
const MAX_LOG_LIMIT = 1000;

export { classifyBasetenError } from './client.js';

export function createBasetenAdapter(config: BasetenConfig, secrets: SecretSource, options: AdapterOptions = {}): ProviderAdapter {
  const client = createBasetenClient(config, secrets, options.timers);
  const providerId = client.providerId;
  const call = client.call;

  /**
   * The queue-context diagnostic: the job's requested GPUs (gpu_count x node count, before any node
   * reports) and its status events while pending. The spec marks it unstable and for org admins:
   * any failure leaves those facts unknown rather than failing the job.
   */
  async function queueContextOf(jobId: string, signal: AbortSignal) {
    try {
      return await call('GET', `/v1/training/jobs/${enc(jobId)}/queue_context`, queueContextResponse, { signal, notFoundIsNull: true });
    } catch (err) {
      if (signal.aborted) throw err;
      if (err instanceof UpstreamError && (err.code === 'UPSTREAM_AUTH' || err.code === 'UPSTREAM_BAD_RESPONSE')) {
        if (err.code === 'UPSTREAM_BAD_RESPONSE') reportShapeMismatch({ providerId, assumption: 'baseten.queue-context-shape', detail: err.message });
        return null;
      }
      throw err;
    }
  }

  async function getWireJob(ref: Pick<JobRef, 'externalId' | 'projectExternalId'>, signal: AbortSignal) {
    if (ref.projectExternalId) {
      const res = await call('GET', `/v1/training_projects/${enc(ref.projectExternalId)}/jobs/${enc(ref.externalId)}`, jobResponse, {
        signal,
        notFoundIsNull: true,
      });
      return res?.training_job ?? null;
    }
    // The CLI resolves a bare job id to its project the same way.
    const res = await call('POST', '/v1/training_jobs/search', searchResponse, { body: { job_id: ref.externalId }, signal });
    return res?.training_jobs.find((j) => j.id === ref.externalId) ?? null;
  }

  return {
    id: providerId,
    kind: 'BASETEN',
    capabilities: {
      systemMetrics: ['GPU_UTILIZATION', 'GPU_MEMORY_USED', 'GPU_MEMORY_UTILIZATION', 'CPU_USAGE', 'MEMORY_USED', 'STORAGE_USED', 'STORAGE_UTILIZATION'],
      perGpuSeries: true,
      nodesOnlyInMetrics: true,
      trainingMetrics: false,
      progress: false,
      logs: true,
    },

    async listProjects(signal): Promise<ProjectRecord[]> {
      const res = await call('GET', '/v1/training_projects', projectsResponse, { signal });
      return (res?.training_projects ?? []).map((p) => ({ externalId: p.id, name: p.name, createdAt: isoToDate(p.created_at) }));
    },

    // Search is org-wide and unpaginated: one page holds every job.
    async listJobs(_cursor, signal): Promise<JobPage> {
      const res = await call('POST', '/v1/training_jobs/search', searchResponse, {
        body: { order_by: [{ field: 'created_at', order: 'desc' }] },
        signal,
      });
      return { jobs: (res?.training_jobs ?? []).map(mapJob), nextCursor: null };
    },

    async getJob(ref, signal): Promise<JobDetailResult | null> {
      const job = await getWireJob(ref, signal);
      if (!job) return null;
      const context = await queueContextOf(job.id, signal);
      // There is no node list endpoint: nodes appear with per_node_metrics.
      return { ...withQueueContext(mapJob(job), job, context), nodes: null };
    },

    async fetchSystemMetrics(job, request: MetricFetchRequest, signal): Promise<SystemMetricsResult> {
      const res = await call('GET', `/v1/training_projects/${enc(job.projectExternalId)}/jobs/${enc(job.externalId)}/metrics`, metricsResponse, {
        query: {
          start_epoch_millis: String(request.from.getTime()),
          end_epoch_millis: String(request.to.getTime()),
          step_seconds: String(Math.max(1, Math.round(request.stepSeconds))),
        },
        signal,
      });
      if (!res) throw new UpstreamError('UPSTREAM_NOT_FOUND', providerId, `job ${job.externalId} not found`);
      const { series, nodes } = mapMetrics(res, res.training_job);
      // One call answers every metric Baseten has, so the whole catalog entry is covered.
      return { series, nodes, covered: this.capabilities.systemMetrics, from: request.from, to: request.to };
    },

    async fetchLogs(job, request: LogRequest, signal): Promise<LogPage> {
      const cursor = decodeLogCursor(request.after);
      const now = Date.now();
      let startMs = cursor
        ? Number(cursor.ns / 1_000_000n)
        : (request.since?.getTime() ?? job.startedAt?.getTime() ?? job.createdAt?.getTime() ?? now - 3600_000);
      const limit = Math.min(Math.max(1, request.limit), MAX_LOG_LIMIT);
      // A page resumes at the cursor's millisecond, so lines already returned come back first:
      // ask for that many more and cut the page to `limit` after dropping them.
      const upstreamLimit = Math.min(MAX_LOG_LIMIT, limit + (cursor ? cursor.seenAtNs + 1 : 0));
      // Pages are time windows of at most 7 days; walk forward until a window has lines.
      for (let hop = 0; hop < 8 && startMs <= now; hop++) {
        const endMs = Math.min(startMs + LOG_WINDOW_MS, now);
        const res = await call('GET', `/v1/training_projects/${enc(job.projectExternalId)}/jobs/${enc(job.externalId)}/logs`, logsResponse, {
          query: { start_epoch_millis: String(startMs), end_epoch_millis: String(endMs), direction: 'asc', limit: String(upstreamLimit) },
          signal,
        });
        const lines = (res?.logs ?? [])
          .filter((l) => /^[0-9]+$/.test(l.timestamp))
          .map((l) => ({ ...l, ns: BigInt(l.timestamp) }))
          .sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0));
        // Lines sharing the cursor's nanosecond were partly returned before: skip that many.
        const fresh = (hop === 0 && cursor ? dropSeen(lines, cursor) : lines).slice(0, limit);
        if (fresh.length > 0) {
          let prevNs = cursor && hop === 0 ? cursor.ns : -1n;
          let seenAtNs = cursor && hop === 0 ? cursor.seenAtNs : 0;
          const out = fresh.map((l) => {
            seenAtNs = l.ns === prevNs ? seenAtNs + 1 : 1;
            prevNs = l.ns;
            return {
              timestamp: epochNanosStringToDate(l.timestamp),
              message: l.message,
              node: l.replica ?? null,
              level: l.level ?? null,
              cursor: encodeLogCursor(l.ns, seenAtNs),
            };
          });
          return { lines: out, nextCursor: out[out.length - 1]!.cursor };
        }
        if (endMs >= now) break;
        startMs = endMs + 1;
      }
      return { lines: [], nextCursor: request.after };
    },
  };
}

function dropSeen<T extends { ns: bigint }>(lines: T[], cursor: LogCursor): T[] {
  let skip = cursor.seenAtNs;
  return lines.filter((l) => {
    if (l.ns < cursor.ns) return false;
    if (l.ns === cursor.ns && skip > 0) {
      skip--;
      return false;
    }
    return true;
  });
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

interface LogCursor {
  ns: bigint;
  seenAtNs: number;
}

function encodeLogCursor(ns: bigint, seenAtNs: number): string {
  return `${ns.toString()}.${seenAtNs}`;
}

function decodeLogCursor(cursor: string | null): LogCursor | null {
  if (!cursor) return null;
  const m = /^([0-9]+)\.([0-9]+)$/.exec(cursor);
  if (!m) throw new DomainError('BAD_INPUT', 'malformed log cursor');
  return { ns: BigInt(m[1]!), seenAtNs: Number(m[2]) };
}
