// Alert delivery in the graph (src/alerts/ delivers, src/store/alerts.ts keeps the state):
// Finding.notifications, Finding.acknowledgement and Finding.silencedBy; Query.silences; and the
// mutations silenceFindings, expireSilence and acknowledgeFinding, each recording who (the API
// token's name) and when. With tokens configured only a token whose entry says `write: true` may
// call them, and a silence matches nothing outside what its creator's token sees.
import DataLoader from 'dataloader';
import { silences, type FindingMatchers } from '../domain/alert-match.js';
import { DomainError } from '../domain/errors.js';
import { parseValueId } from '../domain/value-ids.js';
import type { AckRow, Loaders, NotificationRow, SilenceRow } from '../store/index.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { FindingKindEnum, FindingRef, FindingSeverityEnum, FindingStateEnum, findingOfJob, type FindingView } from './finding.js';

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
        'Given up: the receiver refused it (a 4xx other than 408 and 429), it was not delivered within giveUpAfterHours (default 24), or the receiver is no longer configured',
    },
  },
});

const NotificationRef = builder.objectRef<NotificationRow>('AlertNotification');
NotificationRef.implement({
  description: "One notification of a finding's firing or resolution to one receiver of the providers file's `alerts:`, and how its delivery goes",
  fields: (t) => ({
    receiver: t.string({ description: 'The receiver (its name in `alerts.receivers`)', resolve: (n) => n.receiver }),
    event: t.field({
      type: FindingStateEnum,
      description: 'Which transition it tells: FIRING (the finding began) or RESOLVED (it ended)',
      resolve: (n) => n.event,
    }),
    state: t.field({ type: NotificationStateEnum, description: 'Where its delivery stands', resolve: (n) => n.state }),
    idempotencyKey: t.string({
      description: 'Sent as the Idempotency-Key header and in the body, the same on every attempt: a receiver dedupes by it',
      resolve: (n) => n.idempotencyKey,
    }),
    attempts: t.int({ description: 'HTTP attempts made so far (a count; 0 before the first)', resolve: (n) => n.attempts }),
    createdAt: t.field({ type: 'DateTime', description: 'When the transition was routed to this receiver', resolve: (n) => n.createdAt }),
    lastAttemptAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the last attempt began; null before the first',
      resolve: (n) => n.lastAttemptAt,
    }),
    nextAttemptAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'PENDING: when the next attempt is due; SILENCED: when the silence ends; null otherwise',
      resolve: (n) => (n.state === 'PENDING' || n.state === 'SILENCED' ? n.nextAttemptAt : null),
    }),
    lastStatus: t.int({
      nullable: true,
      description: "The receiver's HTTP status at the last attempt; null before one, or when it could not be reached",
      resolve: (n) => n.lastStatus,
    }),
    lastError: t.string({
      nullable: true,
      description: 'Why the last attempt failed, or why it is not sent (at most 300 characters of the answer); null after a delivery',
      resolve: (n) => n.lastError,
    }),
    deliveredAt: t.field({ type: 'DateTime', nullable: true, description: 'When the receiver took it; null until then', resolve: (n) => n.deliveredAt }),
  }),
});

const AckRef = builder.objectRef<AckRow>('FindingAcknowledgement');
AckRef.implement({
  description: 'Someone took a finding on (Mutation.acknowledgeFinding): who, when and why; its firing notification is then not sent if not sent yet',
  fields: (t) => ({
    by: t.string({ description: "Who: the API token's name (`anonymous` with no tokens configured)", resolve: (a) => a.by }),
    at: t.field({ type: 'DateTime', description: 'When', resolve: (a) => a.at }),
    comment: t.string({ description: 'Why, as written (1..1000 characters)', resolve: (a) => a.comment }),
  }),
});

interface LabelPair {
  name: string;
  value: string;
}
const SilenceLabelRef = builder.objectRef<LabelPair>('SilenceLabel');
SilenceLabelRef.implement({
  description: "A label a silenced finding's job must have, with this value",
  fields: (t) => ({
    name: t.string({ description: 'The label key', resolve: (l) => l.name }),
    value: t.string({ description: 'Its exact value', resolve: (l) => l.value }),
  }),
});

const SilenceMatchersRef = builder.objectRef<FindingMatchers>('SilenceMatchers');
SilenceMatchersRef.implement({
  description: 'What a silence matches: every condition given must hold; an absent one holds for any finding',
  fields: (t) => ({
    kinds: t.field({
      type: [FindingKindEnum],
      nullable: true,
      description: 'Finding kinds; null: any',
      resolve: (m) => (m.kinds?.length ? (m.kinds as never) : null),
    }),
    severities: t.field({
      type: [FindingSeverityEnum],
      nullable: true,
      description: 'Severities; null: any',
      resolve: (m) => (m.severities?.length ? (m.severities as never) : null),
    }),
    providerIds: t.idList({ nullable: true, description: 'Providers; null: any', resolve: (m) => (m.providerIds?.length ? [...m.providerIds] : null) }),
    projectIds: t.idList({
      nullable: true,
      description: 'Projects (Project.id); null: any',
      resolve: (m) => (m.projectIds?.length ? [...m.projectIds] : null),
    }),
    jobIds: t.idList({ nullable: true, description: 'Jobs (Job.id); null: any', resolve: (m) => (m.jobIds?.length ? [...m.jobIds] : null) }),
    owners: t.stringList({ nullable: true, description: "Jobs' owners (Job.owner); null: any", resolve: (m) => (m.owners?.length ? [...m.owners] : null) }),
    labels: t.field({ type: [SilenceLabelRef], description: 'Labels the job must have; empty: any', resolve: (m) => [...(m.labels ?? [])] }),
  }),
});

const SilenceRef = builder.objectRef<SilenceRow>('Silence');
SilenceRef.implement({
  description:
    'While it lasts, notifications of the findings it matches are held (SILENCED), the findings still shown (Finding.silencedBy); held ones go out when it ends if still due',
  fields: (t) => ({
    id: t.id({ description: 'Its id (`silence:<number>`), for expireSilence', resolve: (s) => `silence:${s.id}` }),
    matchers: t.field({ type: SilenceMatchersRef, description: 'What it matches', resolve: (s) => s.matchers }),
    startsAt: t.field({ type: 'DateTime', description: 'When it begins', resolve: (s) => s.startsAt }),
    endsAt: t.field({
      type: 'DateTime',
      description: 'When it ends (or ended: expired early, the instant expireSilence was called)',
      resolve: (s) => s.endsAt,
    }),
    active: t.boolean({ description: 'In force now', resolve: (s, _a, ctx) => isActive(s, ctx.store.now()) }),
    comment: t.string({ description: 'Why, as written (1..1000 characters)', resolve: (s) => s.comment }),
    createdBy: t.string({ description: "Who made it: the API token's name (`anonymous` with no tokens configured)", resolve: (s) => s.createdBy }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was made', resolve: (s) => s.createdAt }),
    expiredBy: t.string({
      nullable: true,
      description: 'Who ended it early with expireSilence; null when it ran (or runs) its course',
      resolve: (s) => s.expiredBy,
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
    resolve: (f, _a, ctx) => alertReads(ctx).notifications.load(f.n),
  }),
  acknowledgement: t.field({
    type: AckRef,
    nullable: true,
    description: 'Who acknowledged it, when and why (Mutation.acknowledgeFinding); null when no one has',
    resolve: (f, _a, ctx) => alertReads(ctx).acks.load(f.n),
  }),
  silencedBy: t.field({
    type: [SilenceRef],
    description: 'The silences in force now that match it (its notifications are held meanwhile); empty when none',
    resolve: async (f, _a, ctx) => {
      const [all, job] = await Promise.all([activeSilences(ctx), ctx.store.loaders.jobById.load(f.jobId).catch(() => null)]);
      const matched = { ...f, owner: job?.owner ?? null, labels: job?.labels ?? null };
      const now = ctx.store.now();
      return all.filter((s) => visible(ctx, s) && silences(s, matched, now));
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
    resolve: async (_r, args, ctx) => (await ctx.store.alerts.silences(ctx.store.now(), args.active !== false)).filter((s) => visible(ctx, s)),
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

async function silenceById(ctx: Context, id: string): Promise<SilenceRow> {
  const m = /^silence:(\d{1,15})$/.exec(id);
  if (!m) throw new DomainError('BAD_ID', `"${id.slice(0, 80)}" is not a silence id (silence:<number>)`);
  const [row] = await ctx.store.alerts.silencesByIds([Number(m[1])]);
  if (!row || !visible(ctx, row)) throw new DomainError('NOT_FOUND', `no silence ${id}`);
  return row;
}

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
      return ctx.store.alerts.createSilence({
        matchers: matchersOf(args.matchers as MatchersInput),
        scope: a ? { providers: a.providerIds(), projects: a.projectIds() } : null,
        startsAt,
        endsAt: args.until,
        comment: checkComment(args.comment),
        createdBy: by,
        createdAt: now,
      });
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
      return (await ctx.store.alerts.expireSilence(s.id, by, ctx.store.now())) ?? s;
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
