// Whether a finding is one an alert route or a silence names: the one rule routing (src/alerts/),
// delivery and the graph (Finding.silencedBy) share, so what is shown silenced is what is not sent.
// Plain data in, a boolean out: every list given must hold the finding's value, every label given
// must equal the job's; an empty matcher matches every finding.

/** The finding and job facts matchers read. */
export interface MatchedFinding {
  kind: string;
  severity: string;
  providerId: string;
  projectId: string;
  jobId: string;
  /** The job's owner and labels as cached; null when the job is no longer cached. */
  owner: string | null;
  labels: Readonly<Record<string, string | null>> | null;
}

export interface FindingMatchers {
  kinds?: readonly string[] | null;
  severities?: readonly string[] | null;
  providerIds?: readonly string[] | null;
  projectIds?: readonly string[] | null;
  jobIds?: readonly string[] | null;
  owners?: readonly string[] | null;
  labels?: readonly { name: string; value: string }[] | null;
}

const holds = (list: readonly string[] | null | undefined, value: string | null) => !list || list.length === 0 || (value !== null && list.includes(value));

export function findingMatches(m: FindingMatchers, f: MatchedFinding): boolean {
  return (
    holds(m.kinds, f.kind) &&
    holds(m.severities, f.severity) &&
    holds(m.providerIds, f.providerId) &&
    holds(m.projectIds, f.projectId) &&
    holds(m.jobIds, f.jobId) &&
    holds(m.owners, f.owner) &&
    (m.labels ?? []).every((l) => f.labels?.[l.name] === l.value)
  );
}

/** A silence as matching needs it: its matchers, its creator's scope, its time span. */
export interface SilenceLike {
  matchers: FindingMatchers;
  scope: { providers: readonly string[] | null; projects: readonly string[] | null } | null;
  startsAt: Date;
  endsAt: Date;
}

/** In force at `now` and matching the finding, within what its creator could see. */
export function silences(s: SilenceLike, f: MatchedFinding, now: Date): boolean {
  if (s.startsAt.getTime() > now.getTime() || s.endsAt.getTime() <= now.getTime()) return false;
  if (s.scope?.providers && !s.scope.providers.includes(f.providerId)) return false;
  if (s.scope?.projects && !s.scope.projects.includes(f.projectId)) return false;
  return findingMatches(s.matchers, f);
}
