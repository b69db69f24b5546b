// The page's GraphQL client: queries over HTTP POST, subscriptions over graphql-ws, both on the
// same /graphql endpoint the page was served from. Everything the views draw goes through here, in
// the page's own shapes (series of [x, value] keyed by a line label), so a change of the API's
// wire shapes changes this file only.
import { createClient, type Client } from 'graphql-ws';

export interface GraphQLErrorShape {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string };
}

export interface Answer<T> {
  data: T | null;
  errors: GraphQLErrorShape[];
}

export class ApiError extends Error {}

export async function request<T>(text: string, variables: Record<string, unknown> = {}): Promise<Answer<T>> {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: text, variables }),
  });
  const body = (await res.json().catch(() => ({}))) as { data?: T | null; errors?: GraphQLErrorShape[] };
  if (!body.data && !body.errors) throw new ApiError(`HTTP ${res.status}`);
  return { data: body.data ?? null, errors: body.errors ?? [] };
}

/** Data or an error: for queries whose parts are useless alone. */
export async function query<T>(text: string, variables: Record<string, unknown> = {}): Promise<T> {
  const answer = await request<T>(text, variables);
  if (!answer.data) throw new ApiError(answer.errors.map((e) => e.message).join('; ') || 'no data');
  return answer.data;
}

/** The errors of an answer at a path under `prefix` (e.g. ['job', 'logs']). */
export function errorsAt(errors: GraphQLErrorShape[], ...prefix: (string | number)[]): string | null {
  const hits = errors.filter((e) => prefix.every((p, i) => e.path?.[i] === p));
  return hits.length ? hits.map((e) => e.message).join('; ') : null;
}

export interface ProviderInfo {
  id: string;
  kind: string;
  name: string;
  simulated: boolean;
  perGpuSeries: boolean;
  systemMetrics: string[];
}

export interface JobSummary {
  id: string;
  name: string;
  status: string;
  gpuCount: number | null;
  provider: { id: string; kind: string; name: string; simulated: boolean };
}

export interface Progress {
  fraction: number | null;
  iteration: number | null;
  targetIteration: number | null;
  rate: number | null;
  etaSeconds: number | null;
  updatedAt: string | null;
}

export interface JobDetail {
  id: string;
  name: string;
  status: string;
  rawStatus: string | null;
  createdAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  gpuCount: number | null;
  gpuType: string | null;
  /** The next four only where the server's schema has the field (see optionalJobFields). */
  failureReason?: string | null;
  consoleUrl?: string | null;
  restartCount?: number | null;
  acceleratorKind?: 'GPU' | 'NPU' | 'NONE' | null;
  provider: ProviderInfo;
  project: { id: string; name: string };
  progress: Progress | null;
}

const PROVIDER_FIELDS = 'id kind name simulated perGpuSeries systemMetrics';

/** Seconds of an ISO-8601 duration of days, hours, minutes and seconds (what Duration fields answer). */
export function durationSeconds(iso: string): number {
  const m = /^P(?:([\d.]+)D)?(?:T(?:([\d.]+)H)?(?:([\d.]+)M)?(?:([\d.]+)S)?)?$/.exec(iso);
  if (!m) return NaN;
  return Number(m[1] ?? 0) * 86_400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
}

/** `remaining` (a Duration) as the seconds the views show. */
export function withEta<P extends { remaining?: string | null }>(p: P | null): (Omit<P, 'remaining'> & { etaSeconds: number | null }) | null {
  if (!p) return null;
  const { remaining, ...rest } = p;
  return { ...rest, etaSeconds: remaining ? durationSeconds(remaining) : null };
}

let jobFields: Promise<Set<string>> | null = null;

const OPTIONAL_JOB_FIELDS = new Set(['failureReason', 'consoleUrl', 'restartCount', 'acceleratorKind']);

/**
 * Job fields this page shows when the server has them (they came with a later server version than
 * the page's first): asked of the schema once; with introspection turned off, none.
 */
export function optionalJobFields(): Promise<Set<string>> {
  jobFields ??= query<{ __type: { fields: { name: string }[] } | null }>(`query LiveViewJobFields { __type(name: "Job") { fields { name } } }`)
    .then((d) => new Set((d.__type?.fields ?? []).map((f) => f.name).filter((n) => OPTIONAL_JOB_FIELDS.has(n))))
    .catch(() => new Set<string>());
  return jobFields;
}

const JOBS = `query LiveViewJobs {
  jobs(first: 100) { nodes { id name status gpuCount provider { id kind name simulated } } }
}`;

/** Jobs for the picker, newest first as the API lists them. */
export async function listJobs(): Promise<JobSummary[]> {
  const data = await query<{ jobs: { nodes: (JobSummary | null)[] } }>(JOBS);
  return data.jobs.nodes.filter((j): j is JobSummary => j !== null);
}

/** The job, or null when the server knows no job with that id. */
export async function jobDetail(id: string): Promise<JobDetail | null> {
  const extra = [...(await optionalJobFields())].join(' ');
  const data = await query<{ job: (Omit<JobDetail, 'progress'> & { progress: (Omit<Progress, 'etaSeconds'> & { remaining: string | null }) | null }) | null }>(
    `query LiveViewJob($id: ID!) { job(id: $id) {
      id name status rawStatus createdAt startedAt finishedAt gpuCount gpuType ${extra}
      provider { ${PROVIDER_FIELDS} } project { id name }
      progress { fraction iteration targetIteration rate remaining updatedAt }
    } }`,
    { id },
  );
  return data.job ? { ...data.job, progress: withEta(data.job.progress) } : null;
}

/** Which chart a system metric goes to. */
export type ChartKind = 'utilization' | 'memoryBytes' | 'memoryRatio';

/** A line: its label (a GPU "node #index", a node name, or "job") and its points. */
export interface Line {
  label: string;
  /** What the line stands for: one GPU, a node aggregate or the whole job. */
  scope: 'GPU' | 'NODE' | 'JOB';
  points: [x: number, value: number | null][];
}

export type ChartLines = Record<ChartKind, Line[]>;

const METRIC_CHART: Record<string, ChartKind> = {
  GPU_UTILIZATION: 'utilization',
  NPU_UTILIZATION: 'utilization',
  GPU_MEMORY_USED: 'memoryBytes',
  GPU_MEMORY_UTILIZATION: 'memoryRatio',
  NPU_MEMORY_UTILIZATION: 'memoryRatio',
};
export const SCOPE_RANK: Record<string, number> = { GPU: 0, NODE: 1, JOB: 2 };

export const gpuLabel = (nodeName: string | null | undefined, index: number) => `${nodeName ?? 'gpu'} #${index}`;

interface SeriesWire {
  name: string;
  scope: 'GPU' | 'NODE' | 'JOB';
  node: { name: string } | null;
  gpu: { index: number; node: { name: string } | null } | null;
  points: { timestamp: string | null; value: number | null }[];
}

export interface History {
  lines: ChartLines;
  /** The finest scope found, per chart. */
  scope: 'GPU' | 'NODE' | 'JOB' | null;
  /** Why part of the history is missing (an upstream error), or null. */
  error: string | null;
}

/**
 * Accelerator series of a job over [from, to], downsampled by the store: per chart, only the
 * finest scope the platform has (per-GPU lines, else per node, else the job).
 */
export async function jobHistory(id: string, from: string | null, to: string | null, maxPoints = 300): Promise<History> {
  const ask = () =>
    request<{ job: { metrics: SeriesWire[] | null } | null }>(
      // nodes: reading the topology stores it, so a series' node resolves (see below).
      `query LiveViewHistory($id: ID!, $from: DateTime, $to: DateTime, $maxPoints: Int) { job(id: $id) {
        nodes { id }
        metrics(names: [GPU_UTILIZATION, NPU_UTILIZATION, GPU_MEMORY_USED, GPU_MEMORY_UTILIZATION, NPU_MEMORY_UTILIZATION], from: $from, to: $to, maxPoints: $maxPoints) {
          name scope node { name } gpu { index node { name } } points { timestamp value }
        }
      } }`,
      { id, from, to, maxPoints },
    );
  const orphan = (s: SeriesWire) => (s.scope === 'NODE' && !s.node) || (s.scope === 'GPU' && !s.gpu);
  let answer = await ask();
  // On a cold cache a NODE or GPU series can come back before its node is stored, with node null;
  // asked again it has it. A line without its node would be drawn under a wrong name, so ask once more.
  if ((answer.data?.job?.metrics ?? []).some(orphan)) answer = await ask();
  const series = (answer.data?.job?.metrics ?? []).filter((s) => !orphan(s));
  const lines: ChartLines = { utilization: [], memoryBytes: [], memoryRatio: [] };
  let finest: History['scope'] = null;
  for (const kind of Object.keys(lines) as ChartKind[]) {
    const mine = series.filter((s) => METRIC_CHART[s.name] === kind && s.points.length > 0);
    const best = Math.min(...mine.map((s) => SCOPE_RANK[s.scope]!));
    for (const s of mine.filter((s) => SCOPE_RANK[s.scope] === best)) {
      const label = s.gpu ? gpuLabel(s.gpu.node?.name ?? s.node?.name, s.gpu.index) : (s.node?.name ?? 'job');
      lines[kind].push({ label, scope: s.scope, points: s.points.filter((p) => p.timestamp).map((p) => [Date.parse(p.timestamp!), p.value]) });
      if (finest === null || SCOPE_RANK[s.scope]! < SCOPE_RANK[finest]!) finest = s.scope;
    }
  }
  return { lines, scope: finest, error: errorsAt(answer.errors, 'job', 'metrics') };
}

export interface TrainingSeries {
  name: string;
  stage: string | null;
  source: string;
  points: [step: number, value: number | null][];
}

/** Training metrics by step; `error` says why they could not be read. */
export async function trainingMetrics(id: string, maxPoints = 400): Promise<{ series: TrainingSeries[]; error: string | null }> {
  const answer = await request<{
    job: { trainingMetrics: { name: string; stage: string | null; source: string; points: { step: number | null; value: number | null }[] }[] | null } | null;
  }>(
    `query LiveViewTraining($id: ID!, $maxPoints: Int) { job(id: $id) { trainingMetrics(maxPoints: $maxPoints) { name stage source points { step value } } } }`,
    { id, maxPoints },
  );
  const series = (answer.data?.job?.trainingMetrics ?? []).map((s) => ({
    name: s.name,
    stage: s.stage,
    source: s.source,
    points: s.points.filter((p) => p.step !== null).map((p) => [p.step!, p.value] as [number, number | null]),
  }));
  return { series, error: errorsAt(answer.errors, 'job', 'trainingMetrics') ?? (answer.data ? null : answer.errors.map((e) => e.message).join('; ') || null) };
}

export interface LogEntry {
  timestamp: string | null;
  message: string;
  node: string | null;
  level: string | null;
}

/** Log lines of a finished job from `since` on: the last `keep` of them, reading at most `maxPages` pages. */
export async function logTail(
  id: string,
  since: string | null,
  keep = 300,
  maxPages = 5,
): Promise<{ lines: LogEntry[]; error: string | null; complete: boolean }> {
  let lines: LogEntry[] = [];
  let after: string | null = null;
  for (let page = 0; page < maxPages; page++) {
    const answer: Answer<{ job: { logs: { lines: LogEntry[]; nextCursor: string | null } | null } | null }> = await request(
      `query LiveViewLogs($id: ID!, $since: DateTime, $after: String) { job(id: $id) { logs(first: 1000, since: $since, after: $after) { lines { timestamp message node level } nextCursor } } }`,
      { id, since, after },
    );
    const error = errorsAt(answer.errors, 'job', 'logs');
    if (error) return { lines: lines.slice(-keep), error, complete: false };
    const logs = answer.data?.job?.logs;
    lines = [...lines, ...(logs?.lines ?? [])].slice(-keep);
    after = logs?.nextCursor ?? null;
    if (!after || !logs?.lines.length) return { lines, error: null, complete: true };
  }
  return { lines, error: null, complete: false };
}

/** graphql-ws reports a failed socket as its CloseEvent, a failed operation as GraphQL errors. */
function describeFailure(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (Array.isArray(err)) return err.map((e: { message?: string }) => e.message ?? String(e)).join('; ');
  const close = err as { code?: number; reason?: string };
  return close.code ? `the live connection closed (${close.code}${close.reason ? ` ${close.reason}` : ''})` : 'the live connection failed';
}

let socket: Client | null = null;

export interface Handlers<T> {
  next(value: T): void;
  /** An upstream failure (the stream goes on) or the end of the stream with an error. */
  error(message: string): void;
  complete(): void;
}

/**
 * One subscription on the shared graphql-ws connection. The returned function ends it; after
 * that, nothing reaches `on` any more, not even the `complete` graphql-ws still calls after a
 * dispose (that late call used to clear the handle of the next job's subscription).
 */
export function subscribe<T>(
  text: string,
  variables: Record<string, unknown>,
  pick: (data: Record<string, unknown>) => T | undefined,
  on: Handlers<T>,
): () => void {
  socket ??= createClient({ url: `${location.origin.replace(/^http/, 'ws')}/graphql`, retryAttempts: 5 });
  let open = true;
  const dispose = socket.subscribe<Record<string, unknown>>(
    { query: text, variables },
    {
      next: (msg) => {
        if (!open) return;
        // An upstream failure arrives as a `next` with errors; the stream goes on after it.
        if (msg.errors?.length) on.error(msg.errors.map((e) => e.message).join('; '));
        const value = msg.data ? pick(msg.data) : undefined;
        if (value !== undefined) on.next(value);
      },
      // Terminal in graphql-ws: no complete follows that should say otherwise.
      error: (err) => {
        if (!open) return;
        open = false;
        on.error(describeFailure(err));
      },
      complete: () => {
        if (!open) return;
        open = false;
        on.complete();
      },
    },
  );
  return () => {
    if (!open) return;
    open = false;
    dispose();
  };
}

export interface LiveSample {
  status: string;
  polledAt: number;
  intervalSeconds: number;
  granularity: 'GPU' | 'NODE' | 'JOB';
  final: boolean;
  lines: ChartLines;
}

// The subscription sends MetricSeries, the same objects (and ids) Job.metrics answers for the same
// arguments, each over the job's whole window. The charts already hold the history (jobHistory),
// so only the points of this poll's window are added: at the cap's resolution they are the raw
// points (a job with more than 10,000 points since its start gets bucketed ones).
const UTILIZATION = `subscription LiveUtilization($jobId: ID!, $maxPoints: Int) {
  jobUtilization(jobId: $jobId, maxPoints: $maxPoints,
    names: [GPU_UTILIZATION, NPU_UTILIZATION, GPU_MEMORY_USED, GPU_MEMORY_UTILIZATION, NPU_MEMORY_UTILIZATION]) {
    job { status } polledAt from interval granularity final
    series { id name scope node { name } gpu { index node { name } } points { timestamp value } }
  }
}`;

interface SampleWire {
  job: { status: string } | null;
  polledAt: string;
  from: string;
  interval: string;
  granularity: 'GPU' | 'NODE' | 'JOB';
  final: boolean;
  series: (SeriesWire & { id: string })[];
}

/** A job's samples as they are polled, in the same line labels as jobHistory. */
export function subscribeUtilization(jobId: string, on: Handlers<LiveSample>, maxPoints = 5_000): () => void {
  return subscribe<LiveSample>(
    UTILIZATION,
    { jobId, maxPoints },
    (data) => {
      const s = data.jobUtilization as SampleWire | undefined;
      if (!s) return undefined;
      const lines: ChartLines = { utilization: [], memoryBytes: [], memoryRatio: [] };
      const since = Date.parse(s.from);
      // Every scope the sample has; the view keeps the finest per chart, as jobHistory does.
      for (const x of s.series) {
        const kind = METRIC_CHART[x.name];
        const points = x.points
          .filter((p) => p.timestamp && p.value !== null)
          .map((p) => [Date.parse(p.timestamp!), p.value] as [number, number | null])
          .filter(([x]) => x >= since);
        if (!kind || points.length === 0) continue;
        const label = x.gpu ? gpuLabel(x.gpu.node?.name ?? x.node?.name, x.gpu.index) : (x.node?.name ?? 'job');
        lines[kind].push({ label, scope: x.scope, points });
      }
      return {
        status: s.job?.status ?? 'UNKNOWN',
        polledAt: Date.parse(s.polledAt),
        intervalSeconds: durationSeconds(s.interval),
        granularity: s.granularity,
        final: s.final,
        lines,
      };
    },
    on,
  );
}

/** A job's log lines as they arrive (from about a minute back). */
export function subscribeLogs(jobId: string, on: Handlers<LogEntry>): () => void {
  return subscribe<LogEntry>(
    `subscription LiveLogs($jobId: ID!) { jobLogs(jobId: $jobId) { timestamp message node level } }`,
    { jobId },
    (data) => data.jobLogs as LogEntry | undefined,
    on,
  );
}

/** Status changes of jobs on the given platforms (all when null). */
export function subscribeStatusChanges(providerIds: string[] | null, on: Handlers<{ id: string; status: string }>): () => void {
  return subscribe<{ id: string; status: string }>(
    `subscription LiveStatus($filter: JobFilter) { jobStatusChanged(filter: $filter) { id status } }`,
    { filter: providerIds ? { providerIds } : null },
    (data) => data.jobStatusChanged as { id: string; status: string } | undefined,
    on,
  );
}
