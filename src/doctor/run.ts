// `npm run doctor`: a first contact with real accounts. One read-only call per route per platform,
// through the same adapters (and so the same wire schemas and shape checks) the server runs, and
// per route: reachable, authenticated, permitted, the answer's shape, the server's clock skew (its
// Date header), the rate-limit headers seen, and for metrics whether any point came back. Secrets
// are read only by the adapters (registered, so every message is scrubbed) and never printed.
import type { ProviderConfig, SecretSource } from '../config/index.js';
import { UpstreamError } from '../domain/errors.js';
import { scrubSecrets } from '../domain/secrets.js';
import { TERMINAL_STATUSES, type JobRecord } from '../domain/types.js';
import type { ProviderAdapter } from '../providers/provider.js';
import { createAdapter } from '../providers/registry.js';
import { onShapeMismatch } from '../providers/shape-watch.js';

export interface RouteReport {
  provider: string;
  kind: string;
  route: 'jobs' | 'job' | 'metrics' | 'logs';
  ok: boolean;
  /** null = not known (the route was skipped, or failed before an answer). */
  reachable: boolean | null;
  authenticated: boolean | null;
  permitted: boolean | null;
  /** "ok", or what did not match the wire schema / an unconfirmed reading. */
  shape: string | null;
  /** The server's Date header minus our clock, in seconds (the last answer of the route). */
  clockSkewSeconds: number | null;
  /** Rate-limit header names the answers carried. */
  rateLimitHeaders: string[];
  /** Metrics only: points that came back. */
  points: number | null;
  /** Why the route failed (or was skipped), in words. */
  reason: string | null;
}

const RATE_HEADER = /ratelimit|retry-after|x-acs-retry-after/i;

interface Observed {
  responses: number;
  skew: number | null;
  rateHeaders: Set<string>;
}

/**
 * Watches the answers of the HTTP calls made while `work` runs (the adapters call the global
 * fetch): the doctor is its own process, run one route at a time, so every answer belongs to the
 * route under way.
 */
async function observing<T>(work: () => Promise<T>): Promise<{ out: T | null; error: unknown; seen: Observed; mismatches: string[] }> {
  const seen: Observed = { responses: 0, skew: null, rateHeaders: new Set() };
  const mismatches: string[] = [];
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const res = await original(input, init);
    seen.responses += 1;
    const date = Date.parse(res.headers.get('date') ?? '');
    if (!Number.isNaN(date)) seen.skew = Math.round((date - Date.now()) / 1000);
    res.headers.forEach((_v, name) => {
      if (RATE_HEADER.test(name)) seen.rateHeaders.add(name.toLowerCase());
    });
    return res;
  };
  const stop = onShapeMismatch((m) => mismatches.push(`${m.assumption}: ${m.detail}`));
  try {
    return { out: await work(), error: null, seen, mismatches };
  } catch (error) {
    return { out: null, error, seen, mismatches };
  } finally {
    stop();
    globalThis.fetch = original;
  }
}

function reportOf(provider: ProviderConfig, route: RouteReport['route'], r: Awaited<ReturnType<typeof observing>>): RouteReport {
  const base: RouteReport = {
    provider: provider.id,
    kind: provider.kind,
    route,
    ok: true,
    reachable: r.seen.responses > 0 ? true : null,
    authenticated: r.seen.responses > 0 ? true : null,
    permitted: r.seen.responses > 0 ? true : null,
    shape: r.mismatches.length > 0 ? `drift: ${r.mismatches.join('; ')}` : 'ok',
    clockSkewSeconds: r.seen.skew,
    rateLimitHeaders: [...r.seen.rateHeaders].sort(),
    points: null,
    reason: r.mismatches.length > 0 ? `the answer does not match what we read: ${r.mismatches[0]}` : null,
  };
  if (r.mismatches.length > 0) base.ok = false;
  // An answer without HTTP (Runicorn's storage folder) still reached its platform.
  if (r.error === null) return { ...base, reachable: true };
  const err = r.error;
  base.ok = false;
  const message = scrubSecrets(err instanceof Error ? err.message : String(err));
  if (!(err instanceof UpstreamError)) return { ...base, reason: message };
  const status = err.status;
  switch (err.code) {
    case 'UPSTREAM_UNAVAILABLE':
    case 'UPSTREAM_TIMEOUT':
      return { ...base, reachable: r.seen.responses > 0, authenticated: null, permitted: null, reason: `not reachable (${err.code}): ${message}` };
    case 'UPSTREAM_AUTH':
      return status === 403
        ? { ...base, authenticated: true, permitted: false, reason: `not permitted (HTTP 403): ${message}` }
        : { ...base, authenticated: false, permitted: null, reason: `not authenticated${status ? ` (HTTP ${status})` : ''}: ${message}` };
    case 'UPSTREAM_RATE_LIMITED':
      return { ...base, reason: `rate limited${status ? ` (HTTP ${status})` : ''}: ${message}` };
    case 'UPSTREAM_BAD_RESPONSE':
      return { ...base, shape: `does not match the wire schema: ${message}`, reason: `unexpected answer: ${message}` };
    default:
      return { ...base, reason: `${err.code}: ${message}` };
  }
}

const skipped = (provider: ProviderConfig, route: RouteReport['route'], reason: string): RouteReport => ({
  provider: provider.id,
  kind: provider.kind,
  route,
  ok: true,
  reachable: null,
  authenticated: null,
  permitted: null,
  shape: null,
  clockSkewSeconds: null,
  rateLimitHeaders: [],
  points: null,
  reason,
});

/** The job the later routes ask about: a running one where there is one (metrics and logs flow). */
function pick(jobs: readonly JobRecord[]): JobRecord | null {
  return jobs.find((j) => j.status === 'RUNNING' && j.gpuCount !== 0) ?? jobs.find((j) => j.status === 'RUNNING') ?? jobs[0] ?? null;
}

export async function checkProvider(config: ProviderConfig, env: SecretSource): Promise<RouteReport[]> {
  let adapter: ProviderAdapter;
  try {
    adapter = createAdapter(config, env);
  } catch (err) {
    return [{ ...skipped(config, 'jobs', ''), ok: false, reason: scrubSecrets((err as Error).message) }];
  }
  const signal = () => AbortSignal.timeout(((config.timeoutSeconds ?? 20) + 5) * 1000);
  const out: RouteReport[] = [];
  const listed = await observing(() => adapter.listJobs(null, signal()));
  out.push(reportOf(config, 'jobs', listed));
  const job = listed.out ? pick(listed.out.jobs) : null;
  if (!job) {
    const why = listed.out ? 'no job to ask about' : 'the job list failed';
    for (const route of ['job', 'metrics', 'logs'] as const) out.push(skipped(config, route, why));
    return finish(adapter, out);
  }
  const ref = {
    externalId: job.externalId,
    projectExternalId: job.projectExternalId,
    status: job.status,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
  };
  out.push(reportOf(config, 'job', await observing(() => adapter.getJob(ref, signal()))));
  const metrics = adapter.capabilities.systemMetrics;
  if (metrics.length === 0) out.push(skipped(config, 'metrics', 'the platform offers no system metrics'));
  else {
    const end = job.finishedAt && TERMINAL_STATUSES.has(job.status) ? job.finishedAt.getTime() : Date.now();
    const request = { from: new Date(end - 3600_000), to: new Date(end), metrics, stepSeconds: 60 };
    const r = await observing(() => adapter.fetchSystemMetrics(ref, request, signal()));
    const report = reportOf(config, 'metrics', r);
    if (r.out) {
      report.points = r.out.series.reduce((n, s) => n + s.points.length, 0);
      if (report.points === 0) {
        report.ok = false;
        const why = `no metric points came back for ${job.status.toLowerCase()} job ${job.externalId} over its last hour`;
        report.reason = report.reason ? `${why}; ${report.reason}` : why;
      }
    }
    out.push(report);
  }
  if (!adapter.capabilities.logs || !adapter.fetchLogs) out.push(skipped(config, 'logs', 'the platform serves no logs'));
  else out.push(reportOf(config, 'logs', await observing(() => adapter.fetchLogs!(ref, { after: null, since: null, limit: 5 }, signal()))));
  return finish(adapter, out);
}

async function finish(adapter: ProviderAdapter, out: RouteReport[]): Promise<RouteReport[]> {
  await adapter.close?.();
  return out;
}

const yesNo = (v: boolean | null) => (v === null ? '-' : v ? 'yes' : 'NO');

/** One line per route; nothing in it comes from a secret (messages are scrubbed). */
export function formatReport(reports: readonly RouteReport[]): string {
  const lines = reports.map((r) =>
    [
      `${r.ok ? 'OK  ' : 'FAIL'} ${r.provider} (${r.kind}) ${r.route}:`,
      `reachable=${yesNo(r.reachable)} authenticated=${yesNo(r.authenticated)} permitted=${yesNo(r.permitted)}`,
      `shape=${r.shape ?? '-'}`,
      `clockSkew=${r.clockSkewSeconds === null ? '-' : `${r.clockSkewSeconds}s`}`,
      `rateLimitHeaders=${r.rateLimitHeaders.length > 0 ? r.rateLimitHeaders.join(',') : '-'}`,
      ...(r.route === 'metrics' ? [`points=${r.points ?? '-'}`] : []),
      ...(r.reason ? [`— ${r.reason}`] : []),
    ].join(' '),
  );
  return scrubSecrets(lines.join('\n'));
}

/** Checks every provider (one after the other, so each answer is attributed to its route). */
export async function runDoctor(configs: readonly ProviderConfig[], env: SecretSource): Promise<{ reports: RouteReport[]; exitCode: number }> {
  const reports: RouteReport[] = [];
  for (const config of configs) reports.push(...(await checkProvider(config, env)));
  return { reports, exitCode: reports.every((r) => r.ok) ? 0 : 1 };
}
