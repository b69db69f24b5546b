// The alerts part of the providers file (`alerts:`): receivers (a JSON webhook, a Slack incoming
// webhook) and the routes that send findings to them (docs/findings.md, "Alerts"). Receiver URLs
// that carry a secret (every Slack webhook's does) are named by an environment variable, never
// written in the file; the delivery itself is src/alerts/.
import { z } from 'zod';
import { isValidProviderId } from '../domain/ids.js';
import { registerSecret } from '../domain/secrets.js';
import { envName, url } from './provider-kit.js';

const KINDS = ['STALLED', 'STRAGGLER', 'IDLE_ALLOCATION', 'NO_DATA', 'FAILED', 'RESTARTED'] as const;
const SEVERITIES = ['INFO', 'WARNING', 'CRITICAL'] as const;
const receiverName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, 'letters, digits, dot, dash and underscore, at most 63');

const receiverCommon = {
  name: receiverName,
  /** Also notify when a finding resolves (default true). */
  sendResolved: z.boolean().optional(),
  /** Per-attempt time-out of the HTTP call, seconds (default 10). */
  timeoutSeconds: z.number().positive().max(120).optional(),
};

const webhookReceiver = z
  .object({
    ...receiverCommon,
    type: z.literal('webhook'),
    url: url.optional(),
    urlEnv: envName.optional(),
    /** Sent as `Authorization: Bearer <value of this variable>`. */
    bearerTokenEnv: envName.optional(),
  })
  .strict()
  .refine((r) => (r.url === undefined) !== (r.urlEnv === undefined), { message: 'give exactly one of "url" or "urlEnv"', path: ['url'] });

const slackReceiver = z
  .object({
    ...receiverCommon,
    type: z.literal('slack'),
    /** The incoming webhook's URL holds its secret: only through the environment. */
    urlEnv: envName,
  })
  .strict();

export const alertMatchers = z
  .object({
    kinds: z.array(z.enum(KINDS)).min(1).optional(),
    severities: z.array(z.enum(SEVERITIES)).min(1).optional(),
    providers: z
      .array(z.string().refine(isValidProviderId, { message: 'must be a provider id' }))
      .min(1)
      .optional(),
    /** The API's Project.id (`<provider>:project:<id>`), as tokens' `projects` name them. */
    projects: z.array(z.string().min(1)).min(1).optional(),
    /** The job's owner as the platform reports it (Job.owner). */
    owners: z.array(z.string().min(1)).min(1).optional(),
    /** Every label given must equal the job's (Job.labels). */
    labels: z.record(z.string().min(1), z.string()).optional(),
  })
  .strict();
export type AlertMatchers = z.infer<typeof alertMatchers>;

export const alertRoute = z
  .object({
    receivers: z.array(receiverName).min(1),
    /** Every matcher given must hold; none = every finding. */
    match: alertMatchers.optional(),
    /** Go on to the next routes after this one matched (default false: the first matching route wins, as Alertmanager's). */
    continue: z.boolean().optional(),
  })
  .strict();

export const alertDelivery = z
  .object({
    /** First retry after about this many seconds (exponential backoff with decorrelated jitter). */
    initialBackoffSeconds: z.number().positive().max(3600).optional(),
    /** No wait between attempts is longer, a receiver's Retry-After included. */
    maxBackoffSeconds: z.number().positive().max(86_400).optional(),
    /** A notification not delivered this long after its first attempt is given up (FAILED). */
    giveUpAfterHours: z.number().positive().max(720).optional(),
    /** How often the delivering replica looks for due notifications. */
    intervalSeconds: z.number().positive().max(3600).optional(),
  })
  .strict();

export const alertsConfig = z
  .object({
    receivers: z.array(z.discriminatedUnion('type', [webhookReceiver, slackReceiver])).max(100),
    routes: z.array(alertRoute).max(1000),
    delivery: alertDelivery.optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    const names = new Set<string>();
    a.receivers.forEach((r, i) => {
      if (names.has(r.name)) ctx.addIssue({ code: 'custom', message: `duplicate receiver "${r.name}"`, path: ['receivers', i, 'name'] });
      names.add(r.name);
    });
    a.routes.forEach((route, i) => {
      route.receivers.forEach((name, j) => {
        if (!names.has(name)) ctx.addIssue({ code: 'custom', message: `no receiver named "${name}"`, path: ['routes', i, 'receivers', j] });
      });
    });
  });
export type AlertsConfig = z.infer<typeof alertsConfig>;

/** A receiver as delivery uses it: its URL and headers resolved from the environment. */
export interface ReceiverSettings {
  name: string;
  type: 'webhook' | 'slack';
  url: string;
  headers: Record<string, string>;
  sendResolved: boolean;
  timeoutMs: number;
}

/** The receivers with their secrets read from `env` (registered, so no log line or answer shows them). */
export function receiverSettings(c: AlertsConfig, env: Readonly<Record<string, string | undefined>>): ReceiverSettings[] {
  const need = (name: string, receiver: string): string => {
    const v = env[name];
    if (!v) throw new Error(`alerts receiver "${receiver}": environment variable ${name} is not set`);
    registerSecret(v);
    return v;
  };
  return c.receivers.map((r) => {
    const target = r.type === 'webhook' && r.url ? r.url : need(r.urlEnv!, r.name);
    if (!URL.canParse(target)) throw new Error(`alerts receiver "${r.name}": ${r.urlEnv ?? 'url'} is not a URL`);
    const headers: Record<string, string> = {};
    if (r.type === 'webhook' && r.bearerTokenEnv) headers.authorization = `Bearer ${need(r.bearerTokenEnv, r.name)}`;
    return { name: r.name, type: r.type, url: target, headers, sendResolved: r.sendResolved ?? true, timeoutMs: (r.timeoutSeconds ?? 10) * 1000 };
  });
}
