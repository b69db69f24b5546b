// What alert delivery (src/alerts/) asks of the store: the outbox the findings statements fill
// (src/store/findings.ts, in the statement that records each transition), the notifications it is
// routed into (one per transition and receiver, each with its idempotency key and delivery state),
// silences and acknowledgements. Each step is a bounded number of statements whatever the backlog.
import { sql, type SQL } from 'drizzle-orm';
import type { FindingMatchers } from '../domain/alert-match.js';
import type { Db } from './db.js';
import { findingOf, type FindingRow } from './findings.js';
import { rowsOf, textArray, toDate } from './sql-util.js';

export const NOTIFICATION_STATES = ['PENDING', 'DELIVERED', 'SILENCED', 'SUPPRESSED', 'FAILED'] as const;
export type NotificationState = (typeof NOTIFICATION_STATES)[number];
export type Transition = 'FIRING' | 'RESOLVED';

/** What a notification says of the finding's job (routes and silences match on it too). */
export interface AlertJob {
  id: string;
  name: string;
  status: string;
  owner: string | null;
  labels: Record<string, string | null>;
  consoleUrl: string | null;
}

export interface AckRow {
  findingId: number;
  by: string;
  at: Date;
  comment: string;
}

/** A transition waiting to be routed. */
export interface OutboxItem {
  event: Transition;
  at: Date;
  finding: FindingRow;
  /** null when the job is no longer cached. */
  job: AlertJob | null;
}

export interface NotificationRow {
  id: number;
  findingId: number;
  event: Transition;
  receiver: string;
  idempotencyKey: string;
  state: NotificationState;
  attempts: number;
  createdAt: Date;
  nextAttemptAt: Date;
  firstAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
}

/** A notification due now, with what deciding and sending it needs. */
export interface DueNotification extends NotificationRow {
  /** The transition's instant (the finding's start or end). */
  at: Date;
  finding: FindingRow;
  job: AlertJob | null;
  ack: AckRow | null;
  /** RESOLVED only: the state of this receiver's notification that the finding fired (null: none); it is told of the end only after that one is delivered. */
  firingState: NotificationState | null;
}

/** What a silence matches: the findings' matchers (every list given must hold one of its values, every label must equal the job's). */
export type SilenceMatchers = FindingMatchers;

export interface SilenceRow {
  id: number;
  matchers: SilenceMatchers;
  /** The creator's token scope: the silence matches nothing outside it (null = everything). */
  scope: { providers: string[] | null; projects: string[] | null } | null;
  startsAt: Date;
  endsAt: Date;
  comment: string;
  createdBy: string;
  createdAt: Date;
  expiredBy: string | null;
}

/** The outcome of one attempt (or decision) on a notification. */
export interface NotificationUpdate {
  state: NotificationState;
  nextAttemptAt: Date;
  lastStatus?: number | null;
  lastError?: string | null;
  deliveredAt?: Date | null;
}

const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;
const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as Record<string, unknown>;

function jobOf(v: unknown): AlertJob | null {
  if (!v) return null;
  const j = json(v);
  return {
    id: String(j.id),
    name: String(j.name),
    status: String(j.status),
    owner: (j.owner as string | null) ?? null,
    labels: (j.labels as Record<string, string | null> | null) ?? {},
    consoleUrl: (j.console_url as string | null) ?? null,
  };
}

function ackOf(v: unknown): AckRow | null {
  if (!v) return null;
  const a = json(v);
  return { findingId: Number(a.finding_id), by: String(a.by), at: toDate(a.at)!, comment: String(a.comment) };
}

function notificationOf(r: Record<string, unknown>): NotificationRow {
  return {
    id: Number(r.id),
    findingId: Number(r.finding_id),
    event: r.event as Transition,
    receiver: String(r.receiver),
    idempotencyKey: String(r.idempotency_key),
    state: r.state as NotificationState,
    attempts: Number(r.attempts),
    createdAt: toDate(r.created_at)!,
    nextAttemptAt: toDate(r.next_attempt_at)!,
    firstAttemptAt: toDate(r.first_attempt_at),
    lastAttemptAt: toDate(r.last_attempt_at),
    lastStatus: r.last_status === null || r.last_status === undefined ? null : Number(r.last_status),
    lastError: (r.last_error as string | null) ?? null,
    deliveredAt: toDate(r.delivered_at),
  };
}

function silenceOf(r: Record<string, unknown>): SilenceRow {
  return {
    id: Number(r.id),
    matchers: json(r.matchers) as SilenceMatchers,
    scope: r.scope ? (json(r.scope) as SilenceRow['scope']) : null,
    startsAt: toDate(r.starts_at)!,
    endsAt: toDate(r.ends_at)!,
    comment: String(r.comment),
    createdBy: String(r.created_by),
    createdAt: toDate(r.created_at)!,
    expiredBy: (r.expired_by as string | null) ?? null,
  };
}

/** The job columns a notification carries, as one JSON value. */
const JOB_JSON = sql`case when j.id is null then null else jsonb_build_object('id', j.id, 'name', j.name, 'status', j.status, 'owner', j.owner,
  'labels', j.labels, 'console_url', j.console_url) end`;

export class AlertsStore {
  constructor(private readonly db: Db) {}

  private rows<T>(query: SQL): Promise<T[]> {
    return rowsOf<T>(this.db, query);
  }

  /**
   * Routes up to `limit` outbox rows, oldest first, in one transaction: `route` names each one's
   * notifications (receiver and idempotency key), they are inserted (a key already there is kept
   * as is) and the rows deleted. A crash before the commit leaves the rows for the next try.
   * Returns how many rows were routed.
   */
  async routeOutbox(limit: number, now: Date, route: (item: OutboxItem) => { receiver: string; idempotencyKey: string }[]): Promise<number> {
    return this.db.transaction(async (tx) => {
      const db = tx as unknown as Db;
      const rows = await rowsOf<Record<string, unknown>>(
        db,
        sql`select o.id as outbox_id, o.event as outbox_event, o.at as outbox_at, to_jsonb(f) as finding, ${JOB_JSON} as job
          from alert_outbox o join findings f on f.id = o.finding_id left join jobs j on j.id = f.job_id
          order by o.id limit ${limit} for update of o skip locked`,
      );
      if (rows.length === 0) return 0;
      const out: Record<string, unknown>[] = [];
      for (const r of rows) {
        const item: OutboxItem = { event: r.outbox_event as Transition, at: toDate(r.outbox_at)!, finding: findingOf(json(r.finding)), job: jobOf(r.job) };
        for (const n of route(item)) out.push({ finding_id: item.finding.id, event: item.event, receiver: n.receiver, idempotency_key: n.idempotencyKey });
      }
      if (out.length > 0) {
        await db.execute(sql`insert into alert_notifications (finding_id, event, receiver, idempotency_key, state, attempts, created_at, next_attempt_at)
          select n.finding_id, n.event, n.receiver, n.idempotency_key, 'PENDING', 0, ${at(now)}, ${at(now)}
          from jsonb_to_recordset(${JSON.stringify(out)}::jsonb) as n(finding_id bigint, event text, receiver text, idempotency_key text)
          on conflict (idempotency_key) do nothing`);
      }
      await db.execute(
        sql`delete from alert_outbox where id in (select jsonb_array_elements_text(${JSON.stringify(rows.map((r) => Number(r.outbox_id)))}::jsonb)::bigint)`,
      );
      return rows.length;
    });
  }

  /** Transitions not routed yet (tests, and what /metrics shows). */
  outboxSize(): Promise<number> {
    return this.rows<{ n: number }>(sql`select count(*)::int as n from alert_outbox`).then((r) => Number(r[0]?.n ?? 0));
  }

  /** Up to `limit` notifications due at `now` (pending or silenced), oldest due first, with their finding, job and acknowledgement. */
  async due(now: Date, limit: number): Promise<DueNotification[]> {
    const rows = await this.rows<Record<string, unknown>>(
      sql`select n.*, to_jsonb(f) as finding, ${JOB_JSON} as job, to_jsonb(a) as ack,
          case when n.event = 'FIRING' then f.started_at else coalesce(f.ended_at, f.started_at) end as transition_at,
          (select s.state from alert_notifications s where s.finding_id = n.finding_id and s.receiver = n.receiver and s.event = 'FIRING' limit 1) as firing_state
        from alert_notifications n join findings f on f.id = n.finding_id left join jobs j on j.id = f.job_id
          left join finding_acks a on a.finding_id = n.finding_id
        where n.state in ('PENDING', 'SILENCED') and n.next_attempt_at <= ${at(now)}
        order by n.next_attempt_at, n.id limit ${limit}`,
    );
    return rows.map((r) => ({
      ...notificationOf(r),
      at: toDate(r.transition_at)!,
      finding: findingOf(json(r.finding)),
      job: jobOf(r.job),
      ack: ackOf(r.ack),
      firingState: (r.firing_state as NotificationState | null) ?? null,
    }));
  }

  /**
   * Claims an attempt: counts it and moves the notification's next try `holdMs` on, only if no one
   * else did since it was read (same attempts, still due). One sender per attempt, even should two
   * replicas both believe they deliver; a sender that dies mid-attempt is retried after `holdMs`.
   */
  async claim(n: NotificationRow, now: Date, holdMs: number): Promise<boolean> {
    const rows = await this.rows<{ id: number }>(
      sql`update alert_notifications set attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, ${at(now)}), last_attempt_at = ${at(now)},
          next_attempt_at = ${at(new Date(now.getTime() + holdMs))}
        where id = ${n.id} and attempts = ${n.attempts} and state in ('PENDING', 'SILENCED') and next_attempt_at <= ${at(now)}
        returning id`,
    );
    return rows.length > 0;
  }

  /** Records an attempt's outcome, or a decision (silenced, suppressed). */
  async update(id: number, u: NotificationUpdate): Promise<void> {
    await this.db.execute(sql`update alert_notifications set state = ${u.state}, next_attempt_at = ${at(u.nextAttemptAt)}
      ${u.lastStatus !== undefined ? sql`, last_status = ${u.lastStatus}` : sql``}
      ${u.lastError !== undefined ? sql`, last_error = ${u.lastError}` : sql``}
      ${u.deliveredAt !== undefined ? sql`, delivered_at = ${u.deliveredAt ? at(u.deliveredAt) : null}` : sql``}
      where id = ${id}`);
  }

  /** Every notification of these findings (one statement), oldest first. */
  async ofFindings(findingIds: readonly number[]): Promise<NotificationRow[]> {
    if (findingIds.length === 0) return [];
    const rows = await this.rows<Record<string, unknown>>(
      sql`select * from alert_notifications where finding_id in (select jsonb_array_elements_text(${JSON.stringify(findingIds)}::jsonb)::bigint)
        order by id`,
    );
    return rows.map(notificationOf);
  }

  /** Notifications per receiver and state (what /metrics shows). */
  async stateCounts(): Promise<{ receiver: string; state: NotificationState; n: number }[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`select receiver, state, count(*)::int as n from alert_notifications group by receiver, state`);
    return rows.map((r) => ({ receiver: String(r.receiver), state: r.state as NotificationState, n: Number(r.n) }));
  }

  async createSilence(s: Omit<SilenceRow, 'id' | 'expiredBy'>): Promise<SilenceRow> {
    const [row] = await this.rows<Record<string, unknown>>(
      sql`insert into alert_silences (matchers, scope, starts_at, ends_at, comment, created_by, created_at)
        values (${JSON.stringify(s.matchers)}::jsonb, ${s.scope ? JSON.stringify(s.scope) : null}::jsonb, ${at(s.startsAt)}, ${at(s.endsAt)},
          ${s.comment}, ${s.createdBy}, ${at(s.createdAt)})
        returning *`,
    );
    return silenceOf(row!);
  }

  /** Ends a silence now (if it has not ended); returns it as it is after, or null when there is no such silence. */
  async expireSilence(id: number, by: string, now: Date): Promise<SilenceRow | null> {
    // Notifications it held are looked at again at once (another silence may still hold them).
    await this.db.execute(sql`with ended as (
        update alert_silences set ends_at = greatest(starts_at, ${at(now)}), expired_by = ${by} where id = ${id} and ends_at > ${at(now)} returning id
      )
      update alert_notifications set next_attempt_at = ${at(now)} where state = 'SILENCED' and next_attempt_at > ${at(now)} and exists (select 1 from ended)`);
    const [row] = await this.silencesByIds([id]);
    return row ?? null;
  }

  async silencesByIds(ids: readonly number[]): Promise<SilenceRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.rows<Record<string, unknown>>(
      sql`select * from alert_silences where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::bigint) order by id`,
    );
    return rows.map(silenceOf);
  }

  /** Silences in force at `now`, or (`activeOnly` false) also those not begun or ended within the last `keepMs`; newest first, at most `limit`. */
  async silences(now: Date, activeOnly: boolean, limit = 1000, keepMs = 7 * 86_400_000): Promise<SilenceRow[]> {
    const rows = await this.rows<Record<string, unknown>>(
      activeOnly
        ? sql`select * from alert_silences where starts_at <= ${at(now)} and ends_at > ${at(now)} order by id desc limit ${limit}`
        : sql`select * from alert_silences where ends_at > ${at(new Date(now.getTime() - keepMs))} order by id desc limit ${limit}`,
    );
    return rows.map(silenceOf);
  }

  /** Records (or replaces) a finding's acknowledgement; false when there is no such finding. */
  async acknowledge(findingId: number, by: string, comment: string, now: Date): Promise<AckRow | null> {
    const [row] = await this.rows<Record<string, unknown>>(
      sql`insert into finding_acks (finding_id, by, at, comment) select f.id, ${by}, ${at(now)}, ${comment} from findings f where f.id = ${findingId}
        on conflict (finding_id) do update set by = excluded.by, at = excluded.at, comment = excluded.comment
        returning *`,
    );
    return row ? ackOf(row) : null;
  }

  async acksOf(findingIds: readonly number[]): Promise<AckRow[]> {
    if (findingIds.length === 0) return [];
    const rows = await this.rows<Record<string, unknown>>(
      sql`select * from finding_acks where finding_id in (select jsonb_array_elements_text(${JSON.stringify(findingIds)}::jsonb)::bigint)`,
    );
    return rows.map((r) => ackOf(r)!);
  }

  /** Jobs' owner and labels, for matching silences against findings outside a notification (Finding.silencedBy). */
  async jobsOf(jobIds: readonly string[]): Promise<AlertJob[]> {
    if (jobIds.length === 0) return [];
    const rows = await this.rows<Record<string, unknown>>(sql`select ${JOB_JSON} as job from jobs j where j.id = any(${textArray(jobIds)})`);
    return rows.map((r) => jobOf(r.job)!);
  }
}
