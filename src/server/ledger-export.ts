// The ledger as a file: GET /export/ledger.csv?from=&to=[&group=job|provider|project|owner|model][&providers=a,b]
// runs the fleet's ledger question through the same app (argument checks, limits, token scope,
// error codes) and writes one CSV row per job (the window's jobs by waste, up to the page cap) or
// per group, formula-guarded as the series export is (csvCell).
import type http from 'node:http';
import { csvCell } from './export.js';
import type { App } from './yoga.js';

export const LEDGER_EXPORT_PATH = '/export/ledger.csv';

const GROUPS = {
  job: 'ranked(by: WASTE, first: $first)',
  provider: 'utilization { byProvider',
  project: 'utilization { byProject',
  owner: 'utilization { byOwner',
  model: 'utilization { byGpuModel',
} as const;
type Group = keyof typeof GROUPS;

const FIGURES = `jobCount allocatedGpuHours usedGpuHours wasteGpuHours
  cost { amount idleAmount currency unpricedJobCount reason }
  energy { kwh measuredKwh estimatedKwh coverage estimated reason }
  usefulWork { mfu achievedTflops tensorActive smActive acceleratorModel reason }`;

const query = (group: Group) => {
  const key =
    group === 'job'
      ? 'job { id name owner gpuType provider { id } project { id } }'
      : group === 'provider'
        ? 'provider { id }'
        : group === 'project'
          ? 'project { id name }'
          : group === 'owner'
            ? 'owner'
            : 'gpuModel';
  const rows = group === 'job' ? `${GROUPS.job} { ${key} ${FIGURES} }` : `${GROUPS[group]} { ${key} ${FIGURES} } }`;
  return `query LedgerExport($from: DateTime!, $to: DateTime!, $filter: JobFilter${group === 'job' ? ', $first: Int' : ''}) {
    fleet(from: $from, to: $to, filter: $filter) { total: utilization { total { ${FIGURES} } } rows: ${rows} problems { job { id } code message } } }`;
};

/** The columns after each row's own key columns; the same for jobs and groups. */
export const LEDGER_FIGURE_COLUMNS = [
  'job_count',
  'held_gpu_hours',
  'used_gpu_hours',
  'waste_gpu_hours',
  'cost',
  'idle_cost',
  'currency',
  'unpriced_jobs',
  'cost_reason',
  'kwh',
  'measured_kwh',
  'estimated_kwh',
  'energy_coverage',
  'energy_estimated',
  'energy_reason',
  'mfu',
  'achieved_tflops',
  'tensor_active',
  'sm_active',
  'accelerator_model',
  'work_reason',
] as const;

const KEY_COLUMNS: Record<Group, readonly string[]> = {
  job: ['job_id', 'job_name', 'provider', 'project', 'owner', 'gpu_type'],
  provider: ['provider'],
  project: ['project', 'project_name'],
  owner: ['owner'],
  model: ['gpu_type'],
};

interface Figures {
  jobCount: number;
  allocatedGpuHours: number;
  usedGpuHours: number;
  wasteGpuHours: number;
  cost: { amount: number | null; idleAmount: number | null; currency: string | null; unpricedJobCount: number; reason: string | null };
  energy: { kwh: number | null; measuredKwh: number | null; estimatedKwh: number | null; coverage: number | null; estimated: boolean; reason: string | null };
  usefulWork: {
    mfu: number | null;
    achievedTflops: number | null;
    tensorActive: number | null;
    smActive: number | null;
    acceleratorModel: string | null;
    reason: string | null;
  };
}
type Row = Figures & {
  job?: { id: string; name: string; owner: string | null; gpuType: string | null; provider: { id: string }; project: { id: string } };
  provider?: { id: string } | null;
  project?: { id: string; name: string } | null;
  owner?: string | null;
  gpuModel?: string | null;
};

function keyCells(group: Group, r: Row): unknown[] {
  switch (group) {
    case 'job':
      return [r.job?.id, r.job?.name, r.job?.provider.id, r.job?.project.id, r.job?.owner, r.job?.gpuType];
    case 'provider':
      return [r.provider?.id];
    case 'project':
      return [r.project?.id, r.project?.name];
    case 'owner':
      return [r.owner];
    default:
      return [r.gpuModel];
  }
}

function figureCells(r: Figures): unknown[] {
  const { cost: c, energy: e, usefulWork: w } = r;
  return [
    r.jobCount,
    r.allocatedGpuHours,
    r.usedGpuHours,
    r.wasteGpuHours,
    c.amount,
    c.idleAmount,
    c.currency,
    c.unpricedJobCount,
    c.reason,
    e.kwh,
    e.measuredKwh,
    e.estimatedKwh,
    e.coverage,
    String(e.estimated),
    e.reason,
    w.mfu,
    w.achievedTflops,
    w.tensorActive,
    w.smActive,
    w.acceleratorModel,
    w.reason,
  ];
}

function refuse(res: http.ServerResponse, status: number, message: string, code: string, argument?: string) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code, ...(argument ? { argument } : {}) } }] }));
}

/** True when the request was the ledger export (answered here), false for any other path. */
export function serveLedgerExport(req: http.IncomingMessage, res: http.ServerResponse, app: App, maxRows: number): boolean {
  if ((req.method !== 'GET' && req.method !== 'HEAD') || !req.url?.includes('ledger')) return false;
  const url = URL.parse(req.url, 'http://x');
  if (!url || url.pathname !== LEDGER_EXPORT_PATH) return false;
  void answerLedgerExport(req, res, app, url, maxRows).catch((err) => {
    if (!res.headersSent) refuse(res, 500, 'the export failed', 'INTERNAL');
    else res.destroy(err as Error);
  });
  return true;
}

/** Answers GET /export/ledger.csv; `maxRows` is the page cap (the ranked jobs a row each). */
export async function answerLedgerExport(req: http.IncomingMessage, res: http.ServerResponse, app: App, url: URL, maxRows: number): Promise<void> {
  const allowed = new Set(['from', 'to', 'group', 'providers']);
  for (const key of url.searchParams.keys()) {
    if (!allowed.has(key)) return refuse(res, 400, `unknown parameter "${key}"; this export takes ${[...allowed].join(', ')}`, 'BAD_INPUT', key);
  }
  const group = (url.searchParams.get('group') ?? 'job') as Group;
  if (!Object.hasOwn(GROUPS, group)) return refuse(res, 400, `"group" must be one of ${Object.keys(GROUPS).join(', ')}`, 'BAD_INPUT', 'group');
  for (const key of ['from', 'to'] as const)
    if (!url.searchParams.get(key)) return refuse(res, 400, `"${key}" is required (an ISO-8601 instant)`, 'BAD_INPUT', key);
  const providers = url.searchParams.get('providers');
  const variables = {
    from: url.searchParams.get('from'),
    to: url.searchParams.get('to'),
    ...(group === 'job' ? { first: maxRows } : {}),
    filter: providers
      ? {
          providerIds: providers
            .split(',')
            .map((p) => p.trim())
            .filter(Boolean),
        }
      : null,
  };
  const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json' });
  if (req.headers.authorization) headers.set('authorization', req.headers.authorization);
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  const gql = await app.fetch('http://training-graph/graphql', {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: query(group), variables }),
    signal: abort.signal,
  });
  const body = (await gql.json()) as {
    data?: {
      fleet: {
        total: { total: Figures };
        rows: Row[] | { [k: string]: Row[] };
        problems: { job: { id: string } | null; code: string; message: string }[];
      } | null;
    } | null;
    errors?: { message: string; extensions?: { code?: string; argument?: string; http?: { status?: number } } }[];
  };
  const fleet = body.data?.fleet;
  if (!fleet || body.errors?.length) {
    const e = body.errors?.[0];
    const code = e?.extensions?.code ?? 'INTERNAL';
    const status =
      e?.extensions?.http?.status ??
      (code === 'BAD_INPUT' || code === 'GRAPHQL_VALIDATION_FAILED' ? 400 : code === 'UNAUTHENTICATED' ? 401 : gql.status >= 400 ? gql.status : 502);
    // A variable that does not parse (a malformed instant) is the argument's fault.
    const variable = e ? /^Variable "\$(\w+)" got invalid value/.exec(e.message) : null;
    return refuse(
      res,
      variable ? 400 : status,
      e?.message ?? 'the ledger could not be read',
      variable ? 'BAD_INPUT' : code,
      variable?.[1] ?? e?.extensions?.argument,
    );
  }
  const rows = Array.isArray(fleet.rows) ? fleet.rows : (Object.values(fleet.rows)[0] ?? []);
  const lines = [
    [...KEY_COLUMNS[group], ...LEDGER_FIGURE_COLUMNS].join(','),
    ...rows.map((r) => [...keyCells(group, r), ...figureCells(r)].map(csvCell).join(',')),
    // The whole window, in the key columns' first: "total".
    [csvCell('total'), ...KEY_COLUMNS[group].slice(1).map(() => ''), ...figureCells(fleet.total.total).map(csvCell)].join(','),
  ];
  res.writeHead(200, {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `inline; filename="ledger-${group}.csv"`,
    ...(group === 'job' && rows.length < fleet.total.total.jobCount
      ? { 'x-ledger-truncated': `${rows.length} of ${fleet.total.total.jobCount} jobs (the page cap), most waste first; the total row counts them all` }
      : {}),
    ...(fleet.problems.length
      ? { 'x-ledger-problems': `${fleet.problems.length} jobs could not be counted or were counted from a stale cache (${fleet.problems[0]!.code})` }
      : {}),
  });
  if (req.method === 'HEAD') return void res.end();
  res.end(`${lines.join('\n')}\n`);
}
