// Findings for the job and fleet views: read once, then followed through the findings
// subscription. Through the page's one GraphQL client (api.ts).
import { gpuLabel, type Handlers, query, subscribe } from './api.js';

// ---- findings: what the server's evaluator found in running jobs (docs/findings.md)

export interface FindingItem {
  id: string;
  kind: string;
  severity: 'INFO' | 'WARNING' | 'CRITICAL';
  state: 'FIRING' | 'RESOLVED';
  summary: string;
  jobId: string | null;
  /** "node #index" for a GPU, the node's name for a node, null for the whole job. */
  where: string | null;
  startedAt: string;
  endedAt: string | null;
  /** The window that shows it and the numbers compared, as the evidence has them. */
  evidence: { from: string | null; to: string | null; threshold: number | null; observedMax: number | null; jobMedian: number | null };
}

export interface FindingFilterInput {
  providerIds?: string[] | null;
  projectId?: string | null;
  jobIds?: string[] | null;
  states?: ('FIRING' | 'RESOLVED')[] | null;
}

const FINDING_FIELDS = `id kind severity state summary startedAt endedAt job { id } node { name } gpu { index node { name } }
  evidence { from to threshold observedMax jobMedian }`;

interface FindingWire {
  id: string;
  kind: string;
  severity: FindingItem['severity'];
  state: FindingItem['state'];
  summary: string;
  startedAt: string;
  endedAt: string | null;
  job: { id: string } | null;
  node: { name: string } | null;
  gpu: { index: number; node: { name: string } | null } | null;
  evidence: FindingItem['evidence'];
}

function findingItem(f: FindingWire): FindingItem {
  return {
    id: f.id,
    kind: f.kind,
    severity: f.severity,
    state: f.state,
    summary: f.summary,
    jobId: f.job?.id ?? null,
    where: f.gpu ? gpuLabel(f.gpu.node?.name ?? f.node?.name, f.gpu.index) : (f.node?.name ?? null),
    startedAt: f.startedAt,
    endedAt: f.endedAt,
    evidence: f.evidence,
  };
}

/** Findings the filter selects, newest first: at most 500 (a fleet's open findings are few). */
export async function findings(filter: FindingFilterInput): Promise<FindingItem[]> {
  const data = await query<{ findings: { edges: { node: FindingWire }[] } }>(
    `query LiveViewFindings($filter: FindingFilter) { findings(filter: $filter, first: 500) { edges { node { ${FINDING_FIELDS} } } } }`,
    { filter },
  );
  return data.findings.edges.map((e) => findingItem(e.node));
}

/** Each finding the filter selects as it fires and as it resolves (the findings subscription). */
export function subscribeFindings(filter: FindingFilterInput, on: Handlers<FindingItem>): () => void {
  return subscribe<FindingItem>(
    `subscription LiveFindings($filter: FindingFilter) { findings(filter: $filter) { ${FINDING_FIELDS} } }`,
    { filter },
    (data) => (data.findings ? findingItem(data.findings as FindingWire) : undefined),
    on,
  );
}
