// What a receiver is sent (docs/findings.md, "Alerts", documents both and a test pins them):
// the generic webhook's versioned JSON, and a Slack incoming webhook's message (text and blocks).
// A notification's body is the same on every attempt: it holds nothing of the attempt (no send
// time), so a receiver that dedupes by the idempotency key may also compare bodies.
import { valueId } from '../domain/value-ids.js';
import type { DueNotification } from '../store/index.js';

/** The webhook payload's version: a change to its fields that could break a reader makes a new one. */
export const WEBHOOK_PAYLOAD_VERSION = '1';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export interface WebhookPayload {
  version: typeof WEBHOOK_PAYLOAD_VERSION;
  idempotencyKey: string;
  receiver: string;
  /** FIRING or RESOLVED: which transition this notification tells. */
  event: 'FIRING' | 'RESOLVED';
  /** When the transition happened: the finding's start (FIRING) or end (RESOLVED). */
  at: string;
  finding: {
    id: string;
    kind: string;
    severity: string;
    state: 'FIRING' | 'RESOLVED';
    summary: string;
    startedAt: string;
    endedAt: string | null;
    providerId: string;
    projectId: string;
    jobId: string;
    nodeId: string | null;
    gpuId: string | null;
    evidence: Record<string, unknown>;
  };
  job: { id: string; name: string; status: string; owner: string | null; labels: Record<string, string | null>; consoleUrl: string | null } | null;
  acknowledgement: { by: string; at: string; comment: string } | null;
}

export function webhookPayload(n: DueNotification): WebhookPayload {
  const f = n.finding;
  const endedAt = n.event === 'RESOLVED' ? f.endedAt : null;
  return {
    version: WEBHOOK_PAYLOAD_VERSION,
    idempotencyKey: n.idempotencyKey,
    receiver: n.receiver,
    event: n.event,
    at: n.at.toISOString(),
    finding: {
      id: valueId('finding', f.jobId, String(f.id)),
      kind: f.kind,
      severity: f.severity,
      state: n.event,
      summary: f.summary,
      startedAt: f.startedAt.toISOString(),
      endedAt: iso(endedAt),
      providerId: f.providerId,
      projectId: f.projectId,
      jobId: f.jobId,
      nodeId: f.nodeId,
      gpuId: f.gpuId,
      evidence: f.evidence,
    },
    job: n.job ? { id: n.job.id, name: n.job.name, status: n.job.status, owner: n.job.owner, labels: n.job.labels, consoleUrl: n.job.consoleUrl } : null,
    acknowledgement: n.ack ? { by: n.ack.by, at: n.ack.at.toISOString(), comment: n.ack.comment } : null,
  };
}

const SEVERITY_MARK: Record<string, string> = { CRITICAL: ':red_circle:', WARNING: ':large_orange_circle:', INFO: ':large_blue_circle:' };

/** Slack's incoming-webhook message: `text` (the notification line and fallback) and Block Kit `blocks`. */
export function slackPayload(n: DueNotification): { text: string; blocks: unknown[] } {
  const f = n.finding;
  const jobName = n.job?.name ?? f.jobId;
  const mark = n.event === 'RESOLVED' ? ':white_check_mark:' : (SEVERITY_MARK[f.severity] ?? '');
  const title = `${n.event === 'RESOLVED' ? 'Resolved' : 'Firing'}: ${f.kind} ${f.severity} on ${jobName}`;
  const fields = [
    { type: 'mrkdwn', text: `*Job*\n${n.job?.consoleUrl ? `<${n.job.consoleUrl}|${mrkdwn(jobName)}>` : mrkdwn(jobName)}` },
    { type: 'mrkdwn', text: `*Provider*\n${mrkdwn(f.providerId)}` },
    { type: 'mrkdwn', text: `*Started*\n${f.startedAt.toISOString()}` },
    { type: 'mrkdwn', text: n.event === 'RESOLVED' ? `*Ended*\n${iso(f.endedAt) ?? n.at.toISOString()}` : `*Owner*\n${mrkdwn(n.job?.owner ?? 'unknown')}` },
  ];
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: title.slice(0, 150) } },
    { type: 'section', text: { type: 'mrkdwn', text: `${mark} ${mrkdwn(f.summary)}` }, fields },
  ];
  if (n.ack) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `Acknowledged by ${mrkdwn(n.ack.by)}: ${mrkdwn(n.ack.comment)}` } });
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `idempotency key ${n.idempotencyKey}` }] });
  return { text: `${mark} ${title}: ${f.summary}`, blocks };
}

/** Slack's mrkdwn control characters (https://api.slack.com/reference/surfaces/formatting#escaping). */
function mrkdwn(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
