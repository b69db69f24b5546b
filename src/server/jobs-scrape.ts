// GET /metrics/jobs: one Prometheus scrape target for the accelerators of every running job on
// every platform (beside /metrics, the service's own). The latest utilization, memory and power
// of each GPU or NPU, in canonical units under base-unit names, labelled by provider, project,
// job, node, gpu, model and kind; and what each node of those jobs holds (its accelerator count,
// so per-node series can be counted in GPUs). Read from the cache the live pollers keep fresh: the scrape
// itself never calls a platform. Scoped by the API token like every other read.
import type http from 'node:http';
import type { TokenStore } from '../config/index.js';
import type { Store } from '../store/index.js';
import { SCRAPE_FAMILIES as FAMILIES, scrapeLabels } from '../domain/scrape-families.js';
import { authenticateHttp } from './access.js';

/** A reading older than this (seconds) is left out: Prometheus would otherwise repeat a dead value. */
export const JOBS_SCRAPE_MAX_AGE_SECONDS = 300;
/** At most this many series per scrape; beyond it the answer is cut (in a stable order) and says so. */
export const JOBS_SCRAPE_MAX_SERIES = 10_000;

/** Accelerators each node of a shown job holds (count): sum by job_id is the graph's Job.gpuCount. */
const NODE_ACCELERATORS = {
  family: 'training_graph_node_accelerators',
  help: "Accelerators (GPUs or NPUs) a node of a running job holds, as its topology lists them; sum by (job_id) is the job's gpuCount",
};

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

export interface JobsScrapeDeps {
  store: Store;
  tokens: TokenStore | null;
  /** For tests and benches: the cap on series per scrape. */
  maxSeries?: number;
}

export async function serveJobsScrape(req: http.IncomingMessage, res: http.ServerResponse, deps: JobsScrapeDeps): Promise<void> {
  const auth = authenticateHttp(deps.tokens, req);
  if ('refusal' in auth) {
    // authenticate()'s own refusal, so the scrape target and the graph say the same thing.
    const { refusal } = auth;
    res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
    res.end(JSON.stringify({ errors: [{ message: refusal.message, extensions: { code: refusal.extensions.code ?? 'UNAUTHENTICATED' } }] }));
    return;
  }
  const { scope } = auth;
  const providerIds = scope ? scope.visibleProviders(deps.store.providers.ids()) : deps.store.providers.ids();
  const cap = deps.maxSeries ?? JOBS_SCRAPE_MAX_SERIES;
  const now = deps.store.now();
  const { rows, stale } = await deps.store.latestReadings({
    names: Object.keys(FAMILIES),
    providerIds,
    projectIds: scope?.projectIds() ?? null,
    since: new Date(now.getTime() - JOBS_SCRAPE_MAX_AGE_SECONDS * 1000),
    limit: cap,
  });
  const truncated = rows.length > cap;
  const openMetrics = String(req.headers.accept ?? '').includes('application/openmetrics-text');
  const byFamily = new Map<string, string[]>();
  for (const r of rows.slice(0, cap)) {
    const { family } = FAMILIES[r.name]!;
    const labels = scrapeLabels(r);
    const text = Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    // Prometheus text stamps in ms, OpenMetrics in seconds.
    const stamp = openMetrics ? (r.ts.getTime() / 1000).toFixed(3) : String(r.ts.getTime());
    const lines = byFamily.get(family) ?? [];
    lines.push(`${family}{${text}} ${r.value} ${stamp}`);
    byFamily.set(family, lines);
  }
  // What each node holds, beside its series: ModelArts and PAI-DLC report per node only, and
  // sum by (job_id) of this gauge is the job's gpuCount in the graph.
  const jobsShown = new Map<string, (typeof rows)[number]>();
  for (const r of rows.slice(0, cap)) if (!jobsShown.has(r.jobId)) jobsShown.set(r.jobId, r);
  const holdings = await deps.store.nodeAccelerators([...jobsShown.keys()]);
  for (const h of holdings) {
    const r = jobsShown.get(h.jobId)!;
    const labels = {
      provider: r.providerId,
      project: r.projectName ?? '',
      job: r.jobName,
      job_id: r.jobId,
      node: h.node,
      model: h.model ?? r.model ?? '',
      kind: r.acceleratorKind ?? (r.name.startsWith('NPU_') ? 'NPU' : 'GPU'),
    };
    const text = Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    const lines = byFamily.get(NODE_ACCELERATORS.family) ?? [];
    lines.push(`${NODE_ACCELERATORS.family}{${text}} ${h.accelerators}`);
    byFamily.set(NODE_ACCELERATORS.family, lines);
  }
  const out: string[] = [];
  const helpOf = new Map([...Object.values(FAMILIES), NODE_ACCELERATORS].map((f) => [f.family, f.help]));
  for (const [family, lines] of [...byFamily].sort(([a], [b]) => (a < b ? -1 : 1))) {
    out.push(`# HELP ${family} ${helpOf.get(family)}`, `# TYPE ${family} gauge`, ...lines);
  }
  out.push(
    `# HELP training_graph_scrape_truncated 1 when more than ${cap} series matched and the answer was cut (in provider, job, node, gpu order)`,
    '# TYPE training_graph_scrape_truncated gauge',
    `training_graph_scrape_truncated ${truncated ? 1 : 0}`,
    `# HELP training_graph_scrape_stale_series Series left out because their latest reading is older than ${JOBS_SCRAPE_MAX_AGE_SECONDS} s (no live poller keeps them fresh)`,
    '# TYPE training_graph_scrape_stale_series gauge',
    `training_graph_scrape_stale_series ${stale}`,
  );
  if (openMetrics) out.push('# EOF');
  res.writeHead(200, {
    'content-type': openMetrics ? 'application/openmetrics-text; version=1.0.0; charset=utf-8' : 'text/plain; version=0.0.4; charset=utf-8',
  });
  res.end(`${out.join('\n')}\n`);
}
