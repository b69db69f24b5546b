// Which receivers hear of a transition: the routes of the providers file's `alerts:` entry, in
// order; a matching route's receivers are notified and, unless it says `continue: true`, the later
// routes are not looked at (Alertmanager's rule). A receiver is notified once per transition
// whatever the number of routes naming it, and of a resolution only with `sendResolved` (default).
import type { AlertsConfig, ReceiverSettings } from '../config/index.js';
import { findingMatches, type FindingMatchers, type MatchedFinding } from '../domain/alert-match.js';
import type { AlertJob, FindingRow, OutboxItem, Transition } from '../store/index.js';

export interface Route {
  receivers: readonly string[];
  matchers: FindingMatchers;
  continue: boolean;
}

export function routesOf(c: AlertsConfig | undefined): Route[] {
  return (c?.routes ?? []).map((r) => ({
    receivers: r.receivers,
    continue: r.continue ?? false,
    matchers: {
      kinds: r.match?.kinds,
      severities: r.match?.severities,
      providerIds: r.match?.providers,
      projectIds: r.match?.projects,
      owners: r.match?.owners,
      labels: Object.entries(r.match?.labels ?? {}).map(([name, value]) => ({ name, value })),
    },
  }));
}

export function matchedOf(f: FindingRow, job: AlertJob | null): MatchedFinding {
  return {
    kind: f.kind,
    severity: f.severity,
    providerId: f.providerId,
    projectId: f.projectId,
    jobId: f.jobId,
    owner: job?.owner ?? null,
    labels: job?.labels ?? null,
  };
}

/**
 * The idempotency key of one transition to one receiver: the same on every attempt and after any
 * restart (it is stored with the notification), different for each (finding, transition, receiver).
 */
export function idempotencyKey(findingId: number, event: Transition, receiver: string): string {
  return `finding-${findingId}-${event.toLowerCase()}-${receiver}`;
}

/** The notifications of one transition. */
export function route(routes: readonly Route[], receivers: readonly ReceiverSettings[], item: OutboxItem): { receiver: string; idempotencyKey: string }[] {
  const f = matchedOf(item.finding, item.job);
  const names = new Set<string>();
  for (const r of routes) {
    if (!findingMatches(r.matchers, f)) continue;
    for (const name of r.receivers) names.add(name);
    if (!r.continue) break;
  }
  return [...names]
    .filter((name) => {
      const receiver = receivers.find((x) => x.name === name);
      return receiver !== undefined && (item.event === 'FIRING' || receiver.sendResolved);
    })
    .map((receiver) => ({ receiver, idempotencyKey: idempotencyKey(item.finding.id, item.event, receiver) }));
}
