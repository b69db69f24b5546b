// PAI-DLC adapter: jobs and their pods as the API pages them (ListJobs' query, GetJob, ECS specs).
import { UpstreamError } from '../../domain/errors.js';
import { ecsSpecsNeeded } from './mapping.js';
import { percentEncode } from './signer.js';
import { getJobResponse, listEcsSpecsResponse, type WireJob, type WirePod } from './wire.js';
import { isoSeconds, LIST_LOOKBACK_DAYS, PAGE_SIZE, type PaiDlcContext } from './context.js';

export async function ensureEcsSpecs(dlc: PaiDlcContext, instanceTypes: string[], signal: AbortSignal): Promise<void> {
  const { call, ecsSpecCache } = dlc;
  const missing = instanceTypes.filter((t) => !ecsSpecCache.has(t));
  if (missing.length === 0) return;
  const res = await call(
    {
      action: 'ListEcsSpecs',
      path: '/api/v1/ecsspecs',
      query: { InstanceTypes: missing.join(','), PageNumber: '1', PageSize: String(PAGE_SIZE) },
      signal,
    },
    listEcsSpecsResponse,
  );
  for (const spec of res.EcsSpecs ?? []) ecsSpecCache.set(spec.InstanceType, spec);
}

export async function getWireJob(dlc: PaiDlcContext, jobId: string, signal: AbortSignal): Promise<WireJob | null> {
  const { call } = dlc;
  try {
    return await call({ action: 'GetJob', path: `/api/v1/jobs/${percentEncode(jobId)}`, query: { NeedDetail: 'true' }, signal }, getJobResponse);
  } catch (err) {
    if (err instanceof UpstreamError && err.code === 'UPSTREAM_NOT_FOUND') return null;
    throw err;
  }
}

/** The job as the adapter's view needs it: outside the configured workspace it does not exist. */
export async function visibleJob(dlc: PaiDlcContext, jobId: string, signal: AbortSignal): Promise<WireJob | null> {
  const { config } = dlc;
  const job = await getWireJob(dlc, jobId, signal);
  if (!job) return null;
  if (config.workspaceId && String(job.WorkspaceId ?? '') !== config.workspaceId) return null;
  await ensureEcsSpecs(dlc, ecsSpecsNeeded(job), signal);
  return job;
}

/**
 * The listing the real API gives. ListJobs spans one workspace unless FromAllWorkspaces is set,
 * and the official model says FromAllWorkspaces "must be used together with ShowOwn=true": across
 * workspaces only the caller's own jobs are listed. So with a workspace configured we list all of
 * its jobs (ShowOwn=false); without one, the caller's jobs in every workspace.
 */
export function listQuery(dlc: PaiDlcContext, pageNumber: number, startTime: string): Record<string, string> {
  const { config } = dlc;
  return {
    PageNumber: String(pageNumber),
    PageSize: String(PAGE_SIZE),
    StartTime: startTime,
    // Oldest first, so jobs created during a walk land on later pages instead of shifting earlier ones.
    SortBy: 'GmtCreateTime',
    Order: 'asc',
    ...(config.workspaceId ? { WorkspaceId: config.workspaceId, ShowOwn: 'false' } : { ShowOwn: 'true', FromAllWorkspaces: 'true' }),
  };
}

/** `nowMs`: the server's clock (a test's in tests), which the year back is counted from. */
export function lookbackStart(nowMs: number): string {
  return isoSeconds(new Date(nowMs - LIST_LOOKBACK_DAYS * 86_400_000));
}

/** Every pod incarnation (earlier ones from HistoryPods first), in a stable order for log cursors. */
export function incarnationsOf(job: WireJob): { pod: WirePod; podId: string; key: string }[] {
  const out: { pod: WirePod; podId: string; key: string }[] = [];
  const pods = [...(job.Pods ?? [])].filter((p) => p.PodId).sort((a, b) => (a.PodId! < b.PodId! ? -1 : a.PodId! > b.PodId! ? 1 : 0));
  for (const pod of pods) {
    const history = [...(pod.HistoryPods ?? [])].sort((a, b) =>
      (a.GmtStartTime ?? a.GmtCreateTime ?? '').localeCompare(b.GmtStartTime ?? b.GmtCreateTime ?? ''),
    );
    for (const h of [...history, pod]) out.push({ pod: h, podId: pod.PodId!, key: h.PodUid || `${pod.PodId}@${h.GmtCreateTime ?? ''}` });
  }
  return out;
}
