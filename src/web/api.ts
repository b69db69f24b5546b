// The page's GraphQL client: queries over HTTP POST, subscriptions over graphql-ws, both on the
// same /graphql endpoint the page was served from.
import { createClient, type Client } from 'graphql-ws';

export interface JobSummary {
  id: string;
  name: string;
  status: string;
  gpuCount: number | null;
  provider: { kind: string; name: string; simulated: boolean };
}

export interface JobDetail {
  status: string;
  progress: { fraction: number | null; iteration: number | null; targetIteration: number | null; etaSeconds: number | null } | null;
}

export interface UtilizationPoint {
  timestamp: string;
  gpuUtilization: number | null;
  npuUtilization: number | null;
  gpuMemoryUsedBytes: number | null;
  gpuMemoryUtilization: number | null;
  npuMemoryUtilization: number | null;
}

export interface UtilizationSample {
  status: string;
  polledAt: string;
  granularity: 'GPU' | 'NODE' | 'JOB';
  final: boolean;
  gpus: { nodeName: string | null; index: number; points: UtilizationPoint[] }[];
  nodes: { name: string; points: UtilizationPoint[] }[];
}

const POINT_FIELDS = 'timestamp gpuUtilization npuUtilization gpuMemoryUsedBytes gpuMemoryUtilization npuMemoryUtilization';

const UTILIZATION = `subscription LiveUtilization($jobId: ID!) {
  jobUtilization(jobId: $jobId) {
    status polledAt granularity final
    gpus { nodeName index points { ${POINT_FIELDS} } }
    nodes { name points { ${POINT_FIELDS} } }
  }
}`;

async function query<T>(text: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: text, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  if (!body.data) throw new Error(body.errors?.map((e) => e.message).join('; ') ?? `HTTP ${res.status}`);
  return body.data;
}

const JOBS = `query LiveViewJobs($statuses: [JobStatus!]) {
  jobs(first: 100, filter: { statuses: $statuses }) { edges { node { id name status gpuCount provider { kind name simulated } } } }
}`;

/** The jobs worth watching live (running or about to), or the latest jobs when none is. */
export async function listJobs(): Promise<JobSummary[]> {
  type Jobs = { jobs: { edges: { node: JobSummary }[] } };
  const live = await query<Jobs>(JOBS, { statuses: ['RUNNING', 'PENDING'] });
  const jobs = live.jobs.edges.length > 0 ? live : await query<Jobs>(JOBS, { statuses: null });
  return jobs.jobs.edges.map((e) => e.node);
}

export async function jobDetail(id: string): Promise<JobDetail | null> {
  const data = await query<{ job: JobDetail | null }>(
    `query LiveViewJob($id: ID!) { job(id: $id) { status progress { fraction iteration targetIteration etaSeconds } } }`,
    { id },
  );
  return data.job;
}

/** graphql-ws reports a failed socket as its CloseEvent, a failed operation as GraphQL errors. */
function describeFailure(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (Array.isArray(err)) return err.map((e: { message?: string }) => e.message ?? String(e)).join('; ');
  const close = err as { code?: number; reason?: string };
  return close.code ? `the live connection closed (${close.code}${close.reason ? ` ${close.reason}` : ''})` : 'the live connection failed';
}

let socket: Client | null = null;

/** One shared graphql-ws connection; each subscription returns its unsubscribe function. */
export function subscribeUtilization(jobId: string, on: { sample(s: UtilizationSample): void; error(message: string): void; complete(): void }): () => void {
  socket ??= createClient({ url: `${location.origin.replace(/^http/, 'ws')}/graphql`, retryAttempts: 5 });
  return socket.subscribe<{ jobUtilization: UtilizationSample }>(
    { query: UTILIZATION, variables: { jobId } },
    {
      next: (msg) => {
        // An upstream failure arrives as a `next` with errors; the stream goes on after it.
        if (msg.errors?.length) on.error(msg.errors.map((e) => e.message).join('; '));
        if (msg.data?.jobUtilization) on.sample(msg.data.jobUtilization);
      },
      error: (err) => on.error(describeFailure(err)),
      complete: on.complete,
    },
  );
}
