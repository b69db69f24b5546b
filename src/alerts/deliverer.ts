// Alert delivery: on an interval, one replica (a leased loop, src/lease/, as the findings evaluator's)
// routes the outbox's transitions to their receivers' notifications and sends the notifications
// that are due. Each attempt is claimed in the store first (one sender per attempt), and every
// outcome is stored: a restart, or another replica taking over, goes on where it stopped, with the
// same idempotency key, so a receiver that dedupes by it sees each notification once.
//
// Retries: exponential backoff with decorrelated jitter (cockatiel's), from initialBackoff up to
// maxBackoff; a receiver's Retry-After on 429 or 503 is honoured up to maxBackoff. Network errors,
// time-outs, 408, 429 and 5xx are retried; any other 4xx, or a redirect, is a refusal that no
// retry would change (FAILED at once). A notification not delivered within giveUpAfter of its first attempt is FAILED.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { ExponentialBackoff, type IBackoff } from 'cockatiel';
import type { Logger } from 'pino';
import type { ReceiverSettings } from '../config/index.js';
import { silences } from '../domain/alert-match.js';
import { scrubSecrets } from '../domain/secrets.js';
import { LeasedWorker, type LeaseStore } from '../lease/index.js';
import type { LiveTimers } from '../live/index.js';
import type { AlertsStore, DueNotification, NotificationState, NotificationUpdate, SilenceRow } from '../store/index.js';
import { slackPayload, webhookPayload } from './payload.js';
import { matchedOf, route, type Route } from './routing.js';

export interface DeliverySettings {
  /** How often the delivering replica looks for due notifications (and a follower for the lease), ms. */
  intervalMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  giveUpAfterMs: number;
}

export const DEFAULT_DELIVERY: DeliverySettings = {
  intervalMs: 10_000,
  initialBackoffMs: 10_000,
  maxBackoffMs: 5 * 60_000,
  giveUpAfterMs: 24 * 3_600_000,
};

const LEASE_NAME = 'alerts:deliver';
/** Outbox rows routed, and notifications looked at, per step: a backlog drains over several steps. */
const BATCH = 200;
/** Characters of a receiver's answer kept as lastError. */
const ERROR_CHARS = 300;

/** What became of one notification in a step (the metric's `outcome` label). */
export type Outcome = 'delivered' | 'retry' | 'failed' | 'silenced' | 'suppressed' | 'waiting';

export interface DeliveryStep {
  at: Date;
  routed: number;
  outcomes: { receiver: string; idempotencyKey: string; outcome: Outcome }[];
}

export interface AlertDelivererEvents {
  /** A step ended (or a lease try did): tests wait on it. */
  stepped: [DeliveryStep | null];
}

export interface AlertDelivererDeps {
  /** The store's door gives both (Store); a test may lease on its own clock. */
  store: { alerts: AlertsStore; collection: LeaseStore };
  logger: Logger;
  timers: LiveTimers;
  receivers: readonly ReceiverSettings[];
  routes: readonly Route[];
  settings?: Partial<DeliverySettings>;
  holder?: string;
  /** Told of every outcome (the server counts them on /metrics). */
  onOutcome?: (receiver: string, outcome: Outcome) => void;
}

export class AlertDeliverer extends LeasedWorker<DeliveryStep> {
  readonly events = new EventEmitter<AlertDelivererEvents>();
  readonly settings: DeliverySettings;
  private readonly backoff: ExponentialBackoff<unknown>;
  /** Steps this replica ran as the deliverer (tests read it). */
  steps = 0;

  constructor(private readonly deps: AlertDelivererDeps) {
    const settings = { ...DEFAULT_DELIVERY, ...deps.settings };
    super({
      name: LEASE_NAME,
      holder: deps.holder ?? randomUUID(),
      store: deps.store.collection,
      timers: deps.timers,
      intervalMs: settings.intervalMs,
      logger: deps.logger,
      doing: 'alerts: delivery step',
    });
    this.settings = settings;
    this.backoff = new ExponentialBackoff({ initialDelay: settings.initialBackoffMs, maxDelay: settings.maxBackoffMs });
  }

  protected step(): Promise<DeliveryStep> {
    return this.deliver();
  }

  protected stepped(result: DeliveryStep | null): void {
    this.events.emit('stepped', result);
  }

  /** One step: route the outbox, then decide and send each due notification. */
  async deliver(): Promise<DeliveryStep> {
    const store = this.deps.store.alerts;
    const now = new Date(this.deps.timers.now());
    const routed = await store.routeOutbox(BATCH, now, (item) => route(this.deps.routes, this.deps.receivers, item));
    const due = await store.due(now, BATCH);
    const outcomes: DeliveryStep['outcomes'] = [];
    if (due.length > 0) {
      const active = await store.silences(now, true);
      // Receivers in parallel; one receiver's notifications in order (a finding's firing before its resolution).
      const byReceiver = new Map<string, DueNotification[]>();
      for (const n of due) byReceiver.set(n.receiver, [...(byReceiver.get(n.receiver) ?? []), n]);
      await Promise.all(
        [...byReceiver].map(async ([name, list]) => {
          const receiver = this.deps.receivers.find((r) => r.name === name) ?? null;
          // What this step did to each finding's firing notification, for its resolution's turn.
          const firing = new Map<number, NotificationState>();
          let down = false;
          for (const n of list) {
            const outcome = down ? 'waiting' : await this.handle(n, receiver, active, now, firing);
            if (outcome === 'retry') down = true;
            outcomes.push({ receiver: name, idempotencyKey: n.idempotencyKey, outcome });
            if (outcome !== 'waiting') this.deps.onOutcome?.(name, outcome);
          }
        }),
      );
    }
    this.steps++;
    return { at: now, routed, outcomes };
  }

  private async handle(
    n: DueNotification,
    receiver: ReceiverSettings | null,
    active: readonly SilenceRow[],
    now: Date,
    firing: Map<number, NotificationState>,
  ): Promise<Outcome> {
    const store = this.deps.store.alerts;
    const later = new Date(now.getTime() + this.settings.intervalMs);
    const decide = async (u: NotificationUpdate, outcome: Outcome): Promise<Outcome> => {
      await store.update(n.id, u);
      if (n.event === 'FIRING') firing.set(n.findingId, u.state);
      return outcome;
    };
    if (!receiver) return decide({ state: 'FAILED', nextAttemptAt: now, lastError: `receiver "${n.receiver}" is no longer configured` }, 'failed');
    if (n.state === 'PENDING' && n.firstAttemptAt && now.getTime() - n.firstAttemptAt.getTime() > this.settings.giveUpAfterMs) {
      return decide(
        { state: 'FAILED', nextAttemptAt: now, lastError: `${n.lastError ?? 'not delivered'} (given up after ${this.settings.giveUpAfterMs / 3_600_000} h)` },
        'failed',
      );
    }
    const matched = matchedOf(n.finding, n.job);
    const silencing = active.filter((s) => silences(s, matched, now));
    if (silencing.length > 0) {
      // Looked at again when the last of its silences ends (or is expired: an expiry makes it due at once).
      const until = new Date(Math.max(...silencing.map((s) => s.endsAt.getTime())));
      return decide({ state: 'SILENCED', nextAttemptAt: until }, n.state === 'SILENCED' ? 'waiting' : 'silenced');
    }
    if (n.event === 'FIRING') {
      if (n.finding.endedAt && n.state === 'SILENCED')
        return decide({ state: 'SUPPRESSED', nextAttemptAt: now, lastError: 'resolved while silenced' }, 'suppressed');
      if (n.ack) return decide({ state: 'SUPPRESSED', nextAttemptAt: now, lastError: `acknowledged by ${n.ack.by} before it was delivered` }, 'suppressed');
    } else {
      // A receiver hears of an end only after hearing of the start: it waits while the firing one is on its way.
      const state = firing.get(n.findingId) ?? n.firingState;
      if (state === 'PENDING' || state === 'SILENCED') {
        await store.update(n.id, { state: n.state, nextAttemptAt: later });
        return 'waiting';
      }
      if (state !== 'DELIVERED') return decide({ state: 'SUPPRESSED', nextAttemptAt: now, lastError: 'the receiver was not told it fired' }, 'suppressed');
    }
    const outcome = await this.send(n, receiver, now);
    // A resolution later in this step goes out right after its firing did.
    if (n.event === 'FIRING') firing.set(n.findingId, outcome === 'delivered' ? 'DELIVERED' : outcome === 'failed' ? 'FAILED' : 'PENDING');
    return outcome;
  }

  private async send(n: DueNotification, receiver: ReceiverSettings, now: Date): Promise<Outcome> {
    const store = this.deps.store.alerts;
    const hold = receiver.timeoutMs + this.settings.intervalMs;
    if (!(await store.claim(n, now, hold))) return 'waiting';
    const attempts = n.attempts + 1;
    const body = JSON.stringify(receiver.type === 'slack' ? slackPayload(n) : webhookPayload(n));
    let status: number | null = null;
    let error: string;
    let retryAfterMs: number | null = null;
    try {
      const res = await fetch(receiver.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'training-graph-alerts/1',
          'idempotency-key': n.idempotencyKey,
          ...receiver.headers,
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(receiver.timeoutMs),
      });
      status = res.status;
      const text = await res.text().catch(() => '');
      if (res.ok) {
        await store.update(n.id, { state: 'DELIVERED', nextAttemptAt: now, lastStatus: status, lastError: null, deliveredAt: now });
        return 'delivered';
      }
      error = `HTTP ${status}${text ? `: ${text.slice(0, ERROR_CHARS)}` : ''}`;
      if (status === 429 || status === 503) retryAfterMs = retryAfter(res.headers.get('retry-after'), now.getTime());
      // A refusal no retry changes: any 4xx but 408 and 429, and a redirect (not followed: a receiver's URL is configured, not discovered).
      if ((status >= 300 && status < 400) || (status >= 400 && status < 500 && status !== 408 && status !== 429)) {
        await store.update(n.id, { state: 'FAILED', nextAttemptAt: now, lastStatus: status, lastError: scrubSecrets(error) });
        this.deps.logger.warn({ receiver: receiver.name, status, key: n.idempotencyKey }, 'alerts: the receiver refused a notification');
        return 'failed';
      }
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      error = e.name === 'TimeoutError' ? `no answer within ${receiver.timeoutMs / 1000} s` : (e.cause?.code ?? e.cause?.message ?? e.message);
    }
    const wait = Math.min(this.settings.maxBackoffMs, Math.max(this.delayAfter(attempts), retryAfterMs ?? 0));
    await store.update(n.id, { state: 'PENDING', nextAttemptAt: new Date(now.getTime() + wait), lastStatus: status, lastError: scrubSecrets(error) });
    return 'retry';
  }

  /** The backoff after the `attempts`-th failed attempt (cockatiel's exponential backoff with decorrelated jitter). */
  private delayAfter(attempts: number): number {
    let b: IBackoff<unknown> = this.backoff.next();
    for (let i = 1; i < attempts && b.duration < this.settings.maxBackoffMs; i++) b = b.next(undefined);
    return b.duration;
  }
}

/** Retry-After as a wait in ms: delta-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or unreadable. */
export function retryAfter(value: string | null, nowMs: number): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const when = Date.parse(v);
  return Number.isNaN(when) ? null : Math.max(0, when - nowMs);
}
