// Alert delivery in the graph (src/alerts/ delivers, src/store/alerts.ts keeps the state):
// Finding.notifications, Finding.acknowledgement and Finding.silencedBy; Query.silences; and the
// mutations silenceFindings, expireSilence and acknowledgeFinding, each recording who (the API
// token's name) and when. With tokens configured only a token whose entry says `write: true` may
// call them, and a silence matches nothing outside what its creator's token sees.
import DataLoader from 'dataloader';
import { silences, type FindingMatchers } from '../domain/alert-match.js';
import { DomainError } from '../domain/errors.js';
import { parseValueId, silenceValueId, valueId } from '../domain/value-ids.js';
import type { AckRow, Loaders, NotificationRow, SilenceRow } from '../store/index.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { FindingKindEnum, FindingRef, FindingSeverityEnum, FindingStateEnum, findingId, findingOfJob, type FindingView } from './finding.js';
import { NodeInterfaceRef } from './refs.js';

/** The longest a silence may last, in days (a longer one is a route to change, not a silence). */
const MAX_SILENCE_DAYS = 90;
const MAX_COMMENT = 1000;
const MAX_LIST = 100;
/** Who did it when no API tokens are configured (the server then listens on loopback only, or behind ALLOW_OPEN). */
const NO_TOKEN = 'anonymous';

export const NotificationStateEnum = builder.enumType('AlertNotificationState', {
  description: 'Where one notification (one transition of a finding to one receiver) stands',
  values: {
    PENDING: { value: 'PENDING', description: 'Not delivered yet: due at nextAttemptAt (a retry after a failure, with backoff)' },
    DELIVERED: { value: 'DELIVERED', description: 'The receiver answered 2xx at deliveredAt' },
    SILENCED: { value: 'SILENCED', description: 'Held by a silence until nextAttemptAt (its end); looked at again then' },
    SUPPRESSED: {
      value: 'SUPPRESSED',
      description:
        'Not sent and never will be: acknowledged before delivery, resolved while silenced, or a resolution whose firing was not delivered (lastError says which)',
    },
    FAILED: {
      value: 'FAILED',
      description:
        'Given up: the receiver refused it (a 4xx other than 408 and 429), it was not delivered within giveUpAfterHours (default 24) of its first attempt, or the receiver is no longer configured',
    },
  },
});

interface LabelPair {
  name: string;
  value: string;
}

/** A notification as the graph holds it (every answer type is a Node: its id names its finding). */
export interface NotificationView {
  row: NotificationRow;
  finding: FindingView;
  id?: string;
}
export interface AckView {
  ack: AckRow;
  finding: FindingView;
  id?: string;
}
export interface SilenceView {
  s: SilenceRow;
  id?: string;
}
export interface MatchersView {
  silence: SilenceView;
  id?: string;
}
export interface SilenceLabelView {
  matchers: MatchersView;
  index: number;
  name: string;
  value: string;
  id?: string;
}

const notificationId = (v: NotificationView) => v.id ?? valueId('notification', findingId(v.finding), String(v.row.id));
const ackId = (v: AckView) => v.id ?? valueId('acknowledgement', findingId(v.finding));
const silenceId = (v: SilenceView) => v.id ?? silenceValueId(v.s.id);
const matchersId = (v: MatchersView) => v.id ?? valueId('silencematchers', silenceId(v.silence));
const labelId = (v: SilenceLabelView) => v.id ?? valueId('silencelabel', matchersId(v.matchers), String(v.index));

const NotificationRef = builder.objectRef<NotificationView>('AlertNotification');
NotificationRef.implement({
  interfaces: [NodeInterfaceRef],
  description: "One notification of a finding's firing or resolution to one receiver of the providers file's `alerts:`, and how its delivery goes",
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `<provider>:notification:<number>:<finding id>`; stable', resolve: notificationId }),
    receiver: t.string({ description: 'The receiver (its name in `alerts.receivers`)', resolve: (v) => v.row.receiver }),
    event: t.field({
      type: FindingStateEnum,
      description: 'Which transition it tells: FIRING (the finding began) or RESOLVED (it ended)',
      resolve: (v) => v.row.event,
    }),
    state: t.field({ type: NotificationStateEnum, description: 'Where its delivery stands', resolve: (v) => v.row.state }),
    idempotencyKey: t.string({
      description: 'Sent as the Idempotency-Key header and in the body, the same on every attempt: a receiver dedupes by it',
      resolve: (v) => v.row.idempotencyKey,
    }),
    attempts: t.int({ description: 'HTTP attempts made so far (a count; 0 before the first)', resolve: (v) => v.row.attempts }),
    createdAt: t.field({ type: 'DateTime', description: 'When the transition was routed to this receiver', resolve: (v) => v.row.createdAt }),
    lastAttemptAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the last attempt began; null before the first',
      resolve: (v) => v.row.lastAttemptAt,
    }),
    nextAttemptAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'PENDING: when the next attempt is due; SILENCED: when the silence ends; null otherwise',
      resolve: (v) => (v.row.state === 'PENDING' || v.row.state === 'SILENCED' ? v.row.nextAttemptAt : null),
    }),
    lastStatus: t.int({
      nullable: true,
      description: "The receiver's HTTP status at the last attempt; null before one, or when it could not be reached",
      resolve: (v) => v.row.lastStatus,
    }),
    lastError: t.string({
      nullable: true,
      description: 'Why the last attempt failed, or why it is not sent (at most 300 characters of the answer); null after a delivery',
      resolve: (v) => v.row.lastError,
    }),
    deliveredAt: t.field({ type: 'DateTime', nullable: true, description: 'When the receiver took it; null until then', resolve: (v) => v.row.deliveredAt }),
  }),
});

const AckRef = builder.objectRef<AckView>('FindingAcknowledgement');
AckRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'Someone took a finding on (Mutation.acknowledgeFinding): who, when and why; its firing notification is then not sent if not sent yet',
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `<provider>:acknowledgement:<finding id>`; stable', resolve: ackId }),
    by: t.string({ description: "Who: the API token's name (`anonymous` with no tokens configured)", resolve: (v) => v.ack.by }),
    at: t.field({ type: 'DateTime', description: 'When', resolve: (v) => v.ack.at }),
    comment: t.string({ description: 'Why, as written (1..1000 characters)', resolve: (v) => v.ack.comment }),
  }),
});

const SilenceLabelRef = builder.objectRef<SilenceLabelView>('SilenceLabel');
SilenceLabelRef.implement({
  interfaces: [NodeInterfaceRef],
  description: "A label a silenced finding's job must have, with this value",
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `*:silencelabel:<position>:<matchers id>`; stable', resolve: labelId }),
    name: t.string({ description: 'The label key', resolve: (l) => l.name }),
    value: t.string({ description: 'Its exact value', resolve: (l) => l.value }),
  }),
});

const matchersOfView = (v: MatchersView): FindingMatchers => v.silence.s.matchers;
const labelsOf = (v: MatchersView): SilenceLabelView[] =>
  (matchersOfView(v).labels ?? []).map((l, index) => ({ matchers: v, index, name: l.name, value: l.value }));

const SilenceMatchersRef = builder.objectRef<MatchersView>('SilenceMatchers');
SilenceMatchersRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'What a silence matches: every condition given must hold; an absent one holds for any finding',
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `*:silencematchers:<silence id>`; stable', resolve: matchersId }),
    kinds: t.field({
      type: [FindingKindEnum],
      nullable: true,
      description: 'Finding kinds; null: any',
      resolve: (v) => (matchersOfView(v).kinds?.length ? (matchersOfView(v).kinds as never) : null),
    }),
    severities: t.field({
      type: [FindingSeverityEnum],
      nullable: true,
      description: 'Severities; null: any',
      resolve: (v) => (matchersOfView(v).severities?.length ? (matchersOfView(v).severities as never) : null),
    }),
    providerIds: t.idList({ nullable: true, description: 'Providers; null: any', resolve: (v) => listOrNull(matchersOfView(v).providerIds) }),
    projectIds: t.idList({ nullable: true, description: 'Projects (Project.id); null: any', resolve: (v) => listOrNull(matchersOfView(v).projectIds) }),
    jobIds: t.idList({ nullable: true, description: 'Jobs (Job.id); null: any', resolve: (v) => listOrNull(matchersOfView(v).jobIds) }),
    owners: t.stringList({ nullable: true, description: "Jobs' owners (Job.owner); null: any", resolve: (v) => listOrNull(matchersOfView(v).owners) }),
    labels: t.field({ type: [SilenceLabelRef], description: 'Labels the job must have; empty: any', resolve: labelsOf }),
  }),
});
const listOrNull = (l: readonly string[] | null | undefined) => (l?.length ? [...l] : null);

const SilenceRef = builder.objectRef<SilenceView>('Silence');
SilenceRef.implement({
  interfaces: [NodeInterfaceRef],
  description:
    'While it lasts, notifications of the findings it matches are held (SILENCED), the findings still shown (Finding.silencedBy); held ones go out when it ends if still due',
  fields: (t) => ({
    id: t.id({ description: 'Global id (a Node id): `*:silence:<number>`; stable; what expireSilence takes', resolve: silenceId }),
    matchers: t.field({ type: SilenceMatchersRef, description: 'What it matches', resolve: (v) => ({ silence: v }) }),
    startsAt: t.field({ type: 'DateTime', description: 'When it begins', resolve: (v) => v.s.startsAt }),
    endsAt: t.field({
      type: 'DateTime',
      description: 'When it ends (or ended: expired early, the instant expireSilence was called)',
      resolve: (v) => v.s.endsAt,
    }),
    active: t.boolean({ description: 'In force now', resolve: (v, _a, ctx) => isActive(v.s, ctx.store.now()) }),
    comment: t.string({ description: 'Why, as written (1..1000 characters)', resolve: (v) => v.s.comment }),
    createdBy: t.string({ description: "Who made it: the API token's name (`anonymous` with no tokens configured)", resolve: (v) => v.s.createdBy }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was made', resolve: (v) => v.s.createdAt }),
    expiredBy: t.string({
      nullable: true,
      description: 'Who ended it early with expireSilence; null when it ran (or runs) its course',
      resolve: (v) => v.s.expiredBy,
    }),
  }),
});

const isActive = (s: SilenceRow, now: Date) => s.startsAt.getTime() <= now.getTime() && s.endsAt.getTime() > now.getTime();

/** Per request (or live event): every asked finding's notifications and acknowledgement in one statement each, the silences in force in one. */
interface AlertReads {
  notifications: DataLoader<number, NotificationRow[]>;
  acks: DataLoader<number, AckRow | null>;
  active: Promise<SilenceRow[]> | null;
}
const reads = new WeakMap<Loaders, AlertReads>();
function alertReads(ctx: Context): AlertReads {
  const loaders = ctx.store.loaders;
  let r = reads.get(loaders);
  if (!r) {
    const store = ctx.store.alerts;
    r = {
      notifications: new DataLoader(async (ids: readonly number[]) => {
        const rows = await store.ofFindings(ids);
        return ids.map((id) => rows.filter((n) => n.findingId === id));
      }),
      acks: new DataLoader(async (ids: readonly number[]) => {
        const rows = await store.acksOf(ids);
        return ids.map((id) => rows.find((a) => a.findingId === id) ?? null);
      }),
      active: null,
    };
    reads.set(loaders, r);
  }
  return r;
}

/**
 * Whether the caller may see a silence: with a scoped token, only a silence confined (by its
 * matchers or its creator's scope) to providers and projects the token sees.
 */
function visible(ctx: Context, s: SilenceRow): boolean {
  const a = ctx.access;
  if (!a) return true;
  const within = (named: readonly string[] | null | undefined, scope: readonly string[] | null | undefined) =>
    named?.length && scope ? named.filter((x) => scope.includes(x)) : named?.length ? [...named] : scope ? [...scope] : null;
  const providers = within(s.matchers.providerIds, s.scope?.providers);
  const projects = within(s.matchers.projectIds, s.scope?.projects);
  const tokenProviders = a.providerIds();
  const tokenProjects = a.projectIds();
  if (tokenProjects && !projects?.every((p) => tokenProjects.includes(p))) return false;
  if (!tokenProviders) return true;
  return Boolean(providers?.every((p) => tokenProviders.includes(p)) || projects?.every((p) => tokenProviders.includes(p.split(':')[0]!)));
}

async function activeSilences(ctx: Context): Promise<SilenceRow[]> {
  const r = alertReads(ctx);
  r.active ??= ctx.store.alerts.silences(ctx.store.now(), true);
  return r.active;
}

builder.objectFields(FindingRef, (t) => ({
  notifications: t.field({
    type: [NotificationRef],
    directives: { cost: { weight: 2 }, listSize: { assumedSize: 4 } },
    description:
      "Its notifications to the receivers the providers file's `alerts:` routes it to, oldest first (one per transition and receiver); empty when none matched",
    resolve: async (f, _a, ctx) => (await alertReads(ctx).notifications.load(f.n)).map((row) => ({ row, finding: f })),
  }),
  acknowledgement: t.field({
    type: AckRef,
    nullable: true,
    description: 'Who acknowledged it, when and why (Mutation.acknowledgeFinding); null when no one has',
    resolve: async (f, _a, ctx) => {
      const ack = await alertReads(ctx).acks.load(f.n);
      return ack ? { ack, finding: f } : null;
    },
  }),
  silencedBy: t.field({
    type: [SilenceRef],
    description: 'The silences in force now that match it (its notifications are held meanwhile); empty when none',
    resolve: async (f, _a, ctx) => {
      const [all, job] = await Promise.all([activeSilences(ctx), ctx.store.loaders.jobById.load(f.jobId).catch(() => null)]);
      const matched = { ...f, owner: job?.owner ?? null, labels: job?.labels ?? null };
      const now = ctx.store.now();
      return all.filter((s) => visible(ctx, s) && silences(s, matched, now)).map((s) => ({ s }));
    },
  }),
}));

builder.queryFields((t) => ({
  silences: t.field({
    type: [SilenceRef],
    directives: { cost: { weight: 2 }, listSize: { assumedSize: 20 } },
    description:
      'Silences the caller may see, newest first, at most 1000: those in force now (default), or also those ended within the last 7 days and those not begun',
    args: {
      active: t.arg.boolean({ required: false, description: 'true (default): only silences in force now; false: also ended (last 7 days) and future ones' }),
    },
    resolve: async (_r, args, ctx) =>
      (await ctx.store.alerts.silences(ctx.store.now(), args.active !== false)).filter((s) => visible(ctx, s)).map((s) => ({ s })),
  }),
}));

interface MatchersInput {
  kinds?: string[] | null;
  severities?: string[] | null;
  providerIds?: (string | number)[] | null;
  projectIds?: (string | number)[] | null;
  jobIds?: (string | number)[] | null;
  owners?: string[] | null;
  labels?: { name: string; value: string }[] | null;
}

const SilenceLabelInputRef = builder.inputRef<LabelPair>('SilenceLabelInput').implement({
  description: 'A label the job must have, with this exact value (Job.labels)',
  fields: (t) => ({
    name: t.string({ required: true, description: 'The label key, 1..200 characters' }),
    value: t.string({ required: true, description: 'Its exact value, at most 1000 characters' }),
  }),
});

const SilenceMatchersInputRef = builder.inputRef<MatchersInput>('SilenceMatchersInput').implement({
  description: `What a silence matches: every condition given must hold, at least one must be given; each list at most ${MAX_LIST} entries`,
  fields: (t) => ({
    kinds: t.field({ type: [FindingKindEnum], required: false, description: 'Only these finding kinds' }),
    severities: t.field({ type: [FindingSeverityEnum], required: false, description: 'Only these severities' }),
    providerIds: t.idList({ required: false, description: 'Only these providers (Provider.id)' }),
    projectIds: t.idList({ required: false, description: 'Only these projects (Project.id)' }),
    jobIds: t.idList({ required: false, description: 'Only these jobs (Job.id)' }),
    owners: t.stringList({ required: false, description: 'Only jobs of these owners (Job.owner)' }),
    labels: t.field({ type: [SilenceLabelInputRef], required: false, description: 'Only jobs with all of these labels' }),
  }),
});

/** Who calls a mutation; FORBIDDEN for a token without `write: true`. */
function writer(ctx: Context): string {
  if (ctx.access && !ctx.access.mayWrite) {
    throw new DomainError('FORBIDDEN', 'this API token may not silence or acknowledge findings (its entry needs `write: true`)');
  }
  return ctx.access?.name ?? NO_TOKEN;
}

function checkComment(comment: string): string {
  const c = comment.trim();
  if (c.length === 0 || c.length > MAX_COMMENT) throw new DomainError('BAD_INPUT', `"comment" must be 1..${MAX_COMMENT} characters`, { argument: 'comment' });
  return c;
}

function matchersOf(m: MatchersInput): FindingMatchers {
  const list = (key: keyof MatchersInput, v: readonly (string | number)[] | null | undefined) => {
    if (!v || v.length === 0) return undefined;
    if (v.length > MAX_LIST) throw new DomainError('BAD_INPUT', `"matchers.${key}" takes at most ${MAX_LIST} entries`, { argument: `matchers.${key}` });
    return v.map(String);
  };
  for (const l of m.labels ?? []) {
    if (l.name.length === 0 || l.name.length > 200 || l.value.length > 1000) {
      throw new DomainError('BAD_INPUT', '"matchers.labels" names are 1..200 characters, values at most 1000', { argument: 'matchers.labels' });
    }
  }
  const out: FindingMatchers = {
    kinds: list('kinds', m.kinds),
    severities: list('severities', m.severities),
    providerIds: list('providerIds', m.providerIds),
    projectIds: list('projectIds', m.projectIds),
    jobIds: list('jobIds', m.jobIds),
    owners: list('owners', m.owners),
    labels: m.labels?.length
      ? (list(
          'labels',
          m.labels.map((l) => l.name),
        ),
        m.labels.map((l) => ({ name: l.name, value: l.value })))
      : undefined,
  };
  if (Object.values(out).every((v) => v === undefined)) {
    throw new DomainError('BAD_INPUT', '"matchers" needs at least one condition (a silence of everything is a route to change)', { argument: 'matchers' });
  }
  return JSON.parse(JSON.stringify(out)) as FindingMatchers;
}

/** A silence by its id, if the caller may see it; null otherwise (or for an id that is not a silence's). */
async function silenceById(ctx: Context, id: string): Promise<SilenceRow | null> {
  const m = /^\*:silence:(\d{1,15})$/.exec(id);
  if (!m) return null;
  const [row] = await ctx.store.alerts.silencesByIds([Number(m[1])]);
  return row && visible(ctx, row) ? row : null;
}

/** Query.node: a silence (`*:silence:<n>`). */
export async function silenceNode(ctx: Context, n: string): Promise<SilenceView | null> {
  const s = await silenceById(ctx, silenceValueId(Number(n)));
  return s ? { s } : null;
}

/** Query.node: one of a finding's notifications, by its number. */
export async function notificationNode(ctx: Context, finding: FindingView, n: string): Promise<NotificationView | null> {
  const row = (await alertReads(ctx).notifications.load(finding.n)).find((r) => String(r.id) === n);
  return row ? { row, finding } : null;
}

/** Query.node: a finding's acknowledgement. */
export async function ackNode(ctx: Context, finding: FindingView): Promise<AckView | null> {
  const ack = await alertReads(ctx).acks.load(finding.n);
  return ack ? { ack, finding } : null;
}

/** Query.node: a silence's matchers, and one of their labels. */
export const matchersNode = (silence: SilenceView): MatchersView => ({ silence });
export const silenceLabelNode = (matchers: MatchersView, part: string): SilenceLabelView | null =>
  labelsOf(matchers).find((l) => String(l.index) === part) ?? null;

builder.mutationType({ description: 'What can be changed: silences and acknowledgements of findings (each records who and when)' });

builder.mutationFields((t) => ({
  silenceFindings: t.field({
    type: SilenceRef,
    description: `Holds the notifications of the findings that match, from startsAt (default now) until \`until\` (at most ${MAX_SILENCE_DAYS} days on); the findings are still shown, with Finding.silencedBy. A token with a scope silences only within it`,
    args: {
      matchers: t.arg({ type: SilenceMatchersInputRef, required: true, description: 'What it matches (at least one condition)' }),
      until: t.arg({ type: 'DateTime', required: true, description: `When it ends: after startsAt, at most ${MAX_SILENCE_DAYS} days from now` }),
      comment: t.arg.string({ required: true, description: `Why (1..${MAX_COMMENT} characters)` }),
      startsAt: t.arg({ type: 'DateTime', required: false, description: 'When it begins; default now' }),
    },
    resolve: async (_r, args, ctx) => {
      const by = writer(ctx);
      const now = ctx.store.now();
      const startsAt = args.startsAt ?? now;
      if (args.until.getTime() <= Math.max(startsAt.getTime(), now.getTime())) {
        throw new DomainError('BAD_INPUT', '"until" must be later than now and than startsAt', { argument: 'until' });
      }
      if (args.until.getTime() > now.getTime() + MAX_SILENCE_DAYS * 86_400_000) {
        throw new DomainError('BAD_INPUT', `"until" is at most ${MAX_SILENCE_DAYS} days from now`, { argument: 'until' });
      }
      const a = ctx.access;
      const s = await ctx.store.alerts.createSilence({
        matchers: matchersOf(args.matchers as MatchersInput),
        scope: a ? { providers: a.providerIds(), projects: a.projectIds() } : null,
        startsAt,
        endsAt: args.until,
        comment: checkComment(args.comment),
        createdBy: by,
        createdAt: now,
      });
      return { s };
    },
  }),
  expireSilence: t.field({
    type: SilenceRef,
    description:
      'Ends a silence now; the notifications it held go out at the next delivery step if no other silence holds them. Ending an ended silence changes nothing',
    args: { id: t.arg.id({ required: true, description: 'Silence.id' }) },
    resolve: async (_r, args, ctx) => {
      const by = writer(ctx);
      const s = await silenceById(ctx, String(args.id));
      if (!s) throw new DomainError('NOT_FOUND', `no silence ${String(args.id).slice(0, 80)}`);
      return { s: (await ctx.store.alerts.expireSilence(s.id, by, ctx.store.now())) ?? s };
    },
  }),
  acknowledgeFinding: t.field({
    type: FindingRef,
    description:
      'Records that someone took the finding on (who, when, why; a later call replaces it). Its firing notification is not sent if not sent yet; its resolution still is, to receivers told of the firing',
    args: {
      id: t.arg.id({ required: true, description: 'Finding.id' }),
      comment: t.arg.string({ required: true, description: `Why (1..${MAX_COMMENT} characters)` }),
    },
    resolve: async (_r, args, ctx) => {
      const by = writer(ctx);
      const comment = checkComment(args.comment);
      const parsed = parseValueId(String(args.id));
      if (parsed.kind !== 'finding' || !parsed.ownerId || !parsed.part || !/^\d{1,15}$/.test(parsed.part)) {
        throw new DomainError('BAD_ID', `"${String(args.id).slice(0, 80)}" is not a Finding id`);
      }
      const job = await ctx.store.loaders.jobById.load(parsed.ownerId).catch(() => null);
      const finding: FindingView | null = job ? await findingOfJob(ctx, job.id, Number(parsed.part)) : null;
      if (!finding) throw new DomainError('NOT_FOUND', `no finding ${String(args.id).slice(0, 80)}`);
      await ctx.store.alerts.acknowledge(finding.n, by, comment, ctx.store.now());
      return finding;
    },
  }),
}));
