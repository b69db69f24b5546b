// Alert delivery end to end below the graph, on both databases: findings fire and resolve through
// the findings statements (which fill the outbox), deliverers on a clock the test moves send to real
// HTTP receivers on loopback. Exact webhook payload, Slack's shape, a receiver down for 5 minutes
// across a restart, two replicas, Retry-After, silences and acknowledgements.
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertDeliverer, idempotencyKey, routesOf, type DeliverySettings } from '../../src/alerts/index.js';
import { alertsConfig, receiverSettings } from '../../src/config/index.js';
import { AlertsStore, FindingsStore, type FindingCandidate, type FindingRow } from '../../src/store/index.js';
import { useTestRepository } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { HANG_MS } from '../support/wait.js';
import { TestReceiver } from './receivers.js';

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const INTERVAL = 10 * SECOND;
const SETTINGS: Partial<DeliverySettings> = { intervalMs: INTERVAL, initialBackoffMs: 10 * SECOND, maxBackoffMs: 2 * MINUTE };
const logger = pino({ level: 'silent' });

describe('alert delivery', () => {
  const t = useTestRepository();
  let timers: ManualTimers;
  let hook: TestReceiver;
  let slack: TestReceiver;
  const running: AlertDeliverer[] = [];

  const exec = (q: ReturnType<typeof sql>) => t.db.db.execute(q);
  const findings = () => new FindingsStore(t.db.db);
  const alerts = () => new AlertsStore(t.db.db);

  beforeEach(async () => {
    timers = new ManualTimers(T0);
    hook = await new TestReceiver().up();
    slack = await new TestReceiver().up();
    for (const table of ['alert_notifications', 'alert_outbox', 'alert_silences', 'finding_acks', 'finding_events', 'findings', 'jobs', 'collect_leases']) {
      await exec(sql.raw(`delete from ${table}`));
    }
    await exec(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, owner, labels, console_url, started_at, sort_at, seen_at) values
      ('bt:job:run-1', 'bt', 'bt:project:llm', 'run-1', 'llama-ft-run-1', 'RUNNING', 'alice', '{"team": "llm"}'::jsonb, 'https://console.example.com/run-1',
        ${new Date(T0 - 3_600_000).toISOString()}::timestamptz, now(), now()),
      ('bt:job:run-2', 'bt', 'bt:project:eval', 'run-2', 'eval-run-2', 'RUNNING', 'bob', '{}'::jsonb, null,
        ${new Date(T0 - 3_600_000).toISOString()}::timestamptz, now(), now())`);
  });

  afterEach(async () => {
    for (const d of running.splice(0)) await d.stop();
    await hook.close();
    await slack.close();
  });

  /** A deliverer as the server makes one, leasing on the test's clock. */
  function deliverer(config: unknown, holder: string, env: Record<string, string> = {}, settings: Partial<DeliverySettings> = {}): AlertDeliverer {
    const c = alertsConfig.parse(config);
    const repo = t.repo;
    const d = new AlertDeliverer({
      store: {
        alerts: alerts(),
        collection: {
          tryLease: (name, h, ttlMs) => repo.tryLease(name, h, new Date(timers.now()), new Date(timers.now() + ttlMs)),
          releaseLease: (name, h) => repo.releaseLease(name, h),
        },
      },
      logger,
      timers,
      receivers: receiverSettings(c, { HOOK_URL: hook.url, SLACK_URL: slack.url, ...env }),
      routes: routesOf(c),
      settings: { ...SETTINGS, ...settings },
      holder,
    });
    running.push(d);
    return d.start();
  }

  const webhookOnly = () => ({
    receivers: [{ name: 'ops', type: 'webhook', urlEnv: 'HOOK_URL', bearerTokenEnv: 'HOOK_TOKEN' }],
    routes: [{ receivers: ['ops'] }],
  });

  async function settled(...ds: AlertDeliverer[]) {
    for (const d of ds) {
      while (d.busy()) {
        await new Promise<void>((resolve, reject) => {
          const hang = setTimeout(() => reject(new Error('timed out waiting for a delivery step')), HANG_MS);
          d.events.once('stepped', () => {
            clearTimeout(hang);
            resolve();
          });
        });
      }
    }
  }

  /** Moves the clock `ms` on, one interval at a time, letting each step finish. */
  async function runFor(ms: number, ...ds: AlertDeliverer[]) {
    await settled(...ds);
    for (let done = 0; done < ms; done += INTERVAL) {
      timers.advance(Math.min(INTERVAL, ms - done));
      await settled(...ds);
    }
  }

  function candidate(kind: FindingCandidate['kind'], jobId: string, extra: Partial<FindingCandidate> = {}): FindingCandidate {
    return {
      fingerprint: `${kind}|${jobId}|${extra.gpuId ?? ''}`,
      kind,
      severity: kind === 'STALLED' ? 'CRITICAL' : 'WARNING',
      providerId: 'bt',
      projectId: jobId === 'bt:job:run-1' ? 'bt:project:llm' : 'bt:project:eval',
      jobId,
      nodeId: null,
      gpuId: null,
      summary: `${kind} of ${jobId}`,
      startedAt: new Date(timers.now() - 15 * MINUTE),
      holdUntil: null,
      evidence: { from: new Date(timers.now() - 15 * MINUTE).toISOString(), threshold: 0.05, observedMax: 0.02 },
      ...extra,
    };
  }

  /** Fires these findings now, through the findings statement that records the transition (and fills the outbox). */
  const fire = async (...cs: FindingCandidate[]): Promise<FindingRow[]> => {
    const rows = await findings().fire(cs, new Date(timers.now()));
    // In the candidates' order (the statement returns its rows in no particular one).
    return cs.map((c) => rows.find((r) => r.fingerprint === c.fingerprint)!);
  };
  /** Resolves every open finding but those still seen. */
  const resolveAllBut = (...seen: FindingCandidate[]) =>
    findings().resolve(
      seen.map((c) => c.fingerprint),
      new Date(timers.now()),
    );
  const notifications = async (f: FindingRow) => alerts().ofFindings([f.id]);

  it('sends the webhook its versioned payload, exactly, with the idempotency key as a header and in the body', async () => {
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    await settled(d);
    const [f] = await fire(candidate('STALLED', 'bt:job:run-1'));
    await runFor(INTERVAL, d);
    expect(hook.requests).toHaveLength(1);
    const key = idempotencyKey(f!.id, 'FIRING', 'ops');
    const [r] = hook.requests;
    expect(r!.headers['idempotency-key']).toBe(key);
    expect(r!.headers['content-type']).toBe('application/json');
    expect(r!.headers.authorization).toBe('Bearer hook-token-0123456789');
    expect(r!.body).toEqual({
      version: '1',
      idempotencyKey: key,
      receiver: 'ops',
      event: 'FIRING',
      at: new Date(T0 - 15 * MINUTE).toISOString(),
      finding: {
        id: `bt:finding:${f!.id}:bt:job:run-1`,
        kind: 'STALLED',
        severity: 'CRITICAL',
        state: 'FIRING',
        summary: 'STALLED of bt:job:run-1',
        startedAt: new Date(T0 - 15 * MINUTE).toISOString(),
        endedAt: null,
        providerId: 'bt',
        projectId: 'bt:project:llm',
        jobId: 'bt:job:run-1',
        nodeId: null,
        gpuId: null,
        evidence: { from: new Date(T0 - 15 * MINUTE).toISOString(), threshold: 0.05, observedMax: 0.02 },
      },
      job: {
        id: 'bt:job:run-1',
        name: 'llama-ft-run-1',
        status: 'RUNNING',
        owner: 'alice',
        labels: { team: 'llm' },
        consoleUrl: 'https://console.example.com/run-1',
      },
      acknowledgement: null,
    });

    timers.advance(MINUTE);
    await resolveAllBut();
    await runFor(INTERVAL, d);
    expect(hook.requests).toHaveLength(2);
    const resolved = hook.requests[1]!;
    expect(resolved.key).toBe(idempotencyKey(f!.id, 'RESOLVED', 'ops'));
    expect(resolved.body.event).toBe('RESOLVED');
    const endedAt = new Date(T0 + INTERVAL + MINUTE).toISOString();
    expect(resolved.body.at).toBe(endedAt);
    expect(resolved.body.finding).toMatchObject({ state: 'RESOLVED', startedAt: new Date(T0 - 15 * MINUTE).toISOString(), endedAt });
    const ns = await notifications(f!);
    expect(ns.map((n) => [n.event, n.state, n.attempts, n.lastStatus])).toEqual([
      ['FIRING', 'DELIVERED', 1, 200],
      ['RESOLVED', 'DELIVERED', 1, 200],
    ]);
  });

  it('sends Slack an incoming-webhook message: text and blocks, the key in a context block; routes pick receivers by matchers', async () => {
    const d = deliverer(
      {
        receivers: [
          { name: 'ops', type: 'webhook', urlEnv: 'HOOK_URL' },
          { name: 'llm-slack', type: 'slack', urlEnv: 'SLACK_URL', sendResolved: false },
        ],
        routes: [
          { receivers: ['llm-slack'], match: { owners: ['alice'], labels: { team: 'llm' }, kinds: ['STRAGGLER', 'STALLED'] } },
          { receivers: ['ops'], match: { severities: ['CRITICAL'] } },
        ],
      },
      'a',
    );
    const [stalled, idle] = await fire(candidate('STALLED', 'bt:job:run-1'), candidate('IDLE_ALLOCATION', 'bt:job:run-2'));
    const [critical2] = await fire(candidate('STALLED', 'bt:job:run-2'));
    await runFor(INTERVAL, d);
    // run-1's STALLED matches the first route (which stops there), run-2's STALLED the second, run-2's idle allocation none.
    expect(slack.requests.map((r) => r.key)).toEqual([idempotencyKey(stalled!.id, 'FIRING', 'llm-slack')]);
    expect(hook.requests.map((r) => r.key)).toEqual([idempotencyKey(critical2!.id, 'FIRING', 'ops')]);
    expect(await notifications(idle!)).toEqual([]);
    const body = slack.requests[0]!.body;
    expect(body.text).toContain('Firing: STALLED CRITICAL on llama-ft-run-1');
    expect(body.blocks.map((b: any) => b.type)).toEqual(['header', 'section', 'context']);
    expect(body.blocks[0].text).toEqual({ type: 'plain_text', text: 'Firing: STALLED CRITICAL on llama-ft-run-1' });
    expect(body.blocks[1].fields[0].text).toBe('*Job*\n<https://console.example.com/run-1|llama-ft-run-1>');
    expect(body.blocks[2].elements[0].text).toBe(`idempotency key ${idempotencyKey(stalled!.id, 'FIRING', 'llm-slack')}`);
    // sendResolved: false: Slack hears nothing of the end; the webhook does.
    timers.advance(MINUTE);
    await resolveAllBut();
    await runFor(INTERVAL, d);
    expect(slack.requests).toHaveLength(1);
    expect(hook.requests.map((r) => r.key)).toEqual([idempotencyKey(critical2!.id, 'FIRING', 'ops'), idempotencyKey(critical2!.id, 'RESOLVED', 'ops')]);
  });

  it('a receiver down for 5 minutes, with a restart in between, gets every notification once after it returns', async () => {
    await hook.down();
    let a = deliverer(webhookOnly(), 'replica-before', { HOOK_TOKEN: 'hook-token-0123456789' });
    const [f1, f2] = await fire(candidate('STALLED', 'bt:job:run-1'), candidate('IDLE_ALLOCATION', 'bt:job:run-2'));
    await runFor(2 * MINUTE, a);
    const tried = await notifications(f1!);
    expect(tried[0]!.state).toBe('PENDING');
    expect(tried[0]!.attempts).toBeGreaterThanOrEqual(2);
    expect(tried[0]!.lastError).toMatch(/UND_ERR_SOCKET|ECONNRESET|ECONNREFUSED/);
    // The server stops; meanwhile the evaluator (another process) resolves f2: the outbox keeps it.
    await a.stop();
    running.splice(running.indexOf(a), 1);
    timers.advance(MINUTE);
    await resolveAllBut(candidate('STALLED', 'bt:job:run-1'));
    expect(await alerts().outboxSize()).toBe(1);
    a = deliverer(webhookOnly(), 'replica-after', { HOOK_TOKEN: 'hook-token-0123456789' });
    await runFor(2 * MINUTE, a);
    expect(hook.requests).toHaveLength(0);
    // Back after 5 minutes down; within the backoff's cap (2 min here) plus an interval, all arrive.
    await hook.up();
    await runFor(2 * MINUTE + INTERVAL, a);
    const expected = [idempotencyKey(f1!.id, 'FIRING', 'ops'), idempotencyKey(f2!.id, 'FIRING', 'ops'), idempotencyKey(f2!.id, 'RESOLVED', 'ops')];
    expect([...hook.counts()].sort()).toEqual([...expected].sort().map((k) => [k, 1]));
    // f2's end came after its start.
    const keys = hook.requests.map((r) => r.key);
    expect(keys.indexOf(expected[2]!)).toBeGreaterThan(keys.indexOf(expected[1]!));
    await runFor(5 * MINUTE, a);
    expect(hook.requests).toHaveLength(3);
    const states = [...(await notifications(f1!)), ...(await notifications(f2!))].map((n) => n.state);
    expect(states).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);
  });

  it('two replicas: one delivers, each notification is sent once', async () => {
    const a = deliverer(webhookOnly(), 'replica-a', { HOOK_TOKEN: 'hook-token-0123456789' });
    const b = deliverer(webhookOnly(), 'replica-b', { HOOK_TOKEN: 'hook-token-0123456789' });
    await settled(a, b);
    const fired = await fire(candidate('STALLED', 'bt:job:run-1'), candidate('IDLE_ALLOCATION', 'bt:job:run-2'), candidate('NO_DATA', 'bt:job:run-2'));
    await runFor(MINUTE, a, b);
    expect([a.leading, b.leading].sort()).toEqual([false, true]);
    expect([...hook.counts()].sort()).toEqual(fired.map((f) => [idempotencyKey(f.id, 'FIRING', 'ops'), 1]).sort());
    // The leader stops: the other takes over within two intervals and sends what comes next, once.
    const [leader, other] = a.leading ? [a, b] : [b, a];
    await leader.stop();
    await resolveAllBut();
    await runFor(MINUTE, other);
    expect(other.leading).toBe(true);
    expect(hook.requests).toHaveLength(6);
    expect(new Set(hook.requests.map((r) => r.key)).size).toBe(6);
  });

  it('honours Retry-After on 429 and 503, up to the cap', async () => {
    let n = 0;
    hook.answer = () =>
      ++n === 1 ? { status: 429, headers: { 'retry-after': '90' } } : n === 2 ? { status: 503, headers: { 'retry-after': '3600' } } : { status: 200 };
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    await settled(d);
    const [f] = await fire(candidate('STALLED', 'bt:job:run-1'));
    await runFor(INTERVAL, d);
    expect(hook.requests).toHaveLength(1);
    let [row] = await notifications(f!);
    expect(row!.nextAttemptAt.getTime() - row!.lastAttemptAt!.getTime()).toBe(90 * SECOND);
    expect(row!.lastStatus).toBe(429);
    await runFor(80 * SECOND, d);
    expect(hook.requests).toHaveLength(1);
    await runFor(20 * SECOND, d);
    expect(hook.requests).toHaveLength(2);
    [row] = await notifications(f!);
    // 3600 s asked, the cap (2 minutes here) kept.
    expect(row!.nextAttemptAt.getTime() - row!.lastAttemptAt!.getTime()).toBe(2 * MINUTE);
    await runFor(2 * MINUTE + INTERVAL, d);
    expect(hook.requests).toHaveLength(3);
    expect(new Set(hook.requests.map((r) => r.key)).size).toBe(1);
    [row] = await notifications(f!);
    expect([row!.state, row!.attempts]).toEqual(['DELIVERED', 3]);
  });

  it('backs off exponentially while the receiver is down, up to the cap', async () => {
    await hook.down();
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    // The deliverer's first step ends before the finding fires, so the first attempt is made by
    // the first step the clock moves to, and every attempt is read right after the step that made
    // it (a step makes one attempt a notification). Fired while that first step ran, the finding
    // was seen by it or not, by chance: a read after it then found no row (seen once), and a read
    // after the next step could find the second attempt in place of the first (seen once: 30 s).
    await settled(d);
    const [f] = await fire(candidate('STALLED', 'bt:job:run-1'));
    const attempts: number[] = [];
    for (let i = 0; i < 61; i++) {
      await runFor(INTERVAL, d);
      const [row] = await notifications(f!);
      if (row!.lastAttemptAt && attempts.at(-1) !== row!.lastAttemptAt.getTime()) attempts.push(row!.lastAttemptAt.getTime());
    }
    // 10 minutes of steps every 10 s: without backoff 60 attempts; with it (10 s doubling, jittered, capped at 2 min) far fewer.
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!);
    expect(attempts.length).toBeGreaterThanOrEqual(5);
    expect(attempts.length).toBeLessThanOrEqual(20);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(2 * MINUTE + INTERVAL);
    // The waits grow: the first (after one failure) is one or two steps, the longest far more.
    expect(gaps[0]).toBeLessThanOrEqual(2 * INTERVAL);
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(5 * INTERVAL);
  });

  it('a 4xx other than 408 and 429 fails at once', async () => {
    hook.answer = () => ({ status: 400, body: 'bad payload' });
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    const [f] = await fire(candidate('STALLED', 'bt:job:run-1'));
    await runFor(5 * MINUTE, d);
    expect(hook.requests).toHaveLength(1);
    const [row] = await notifications(f!);
    expect([row!.state, row!.lastStatus, row!.lastError]).toEqual(['FAILED', 400, 'HTTP 400: bad payload']);
  });

  it('gives up giveUpAfter after the first attempt, not counting the time a silence held it', async () => {
    await hook.down();
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' }, { giveUpAfterMs: 5 * MINUTE });
    const now = () => new Date(timers.now());
    await alerts().createSilence({
      matchers: { jobIds: ['bt:job:run-2'] },
      scope: null,
      startsAt: now(),
      endsAt: new Date(timers.now() + 10 * MINUTE),
      comment: 'held longer than the give-up time',
      createdBy: 'alice',
      createdAt: now(),
    });
    const [f, held] = await fire(candidate('STALLED', 'bt:job:run-1'), candidate('IDLE_ALLOCATION', 'bt:job:run-2'));
    // The last attempt before 5 minutes is followed by one at most the cap (2 minutes) later, where it gives up.
    await runFor(9 * MINUTE, d);
    const [row] = await notifications(f!);
    expect(row!.state).toBe('FAILED');
    expect(row!.lastError).toMatch(/(UND_ERR_SOCKET|ECONNRESET|ECONNREFUSED) \(given up after 0\.0833\d* h\)/);
    expect((await notifications(held!))[0]!.state).toBe('SILENCED');
    // Released at 10 minutes, routed 10 minutes ago but never tried: its first attempt delivers it.
    await hook.up();
    await runFor(2 * MINUTE, d);
    expect(hook.requests.map((r) => r.key)).toEqual([idempotencyKey(held!.id, 'FIRING', 'ops')]);
    expect((await notifications(held!)).map((n) => [n.state, n.attempts])).toEqual([['DELIVERED', 1]]);
  });

  it('a silence holds matching notifications (shown SILENCED) until it is expired; one that runs out releases them too', async () => {
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    const store = alerts();
    const now = () => new Date(timers.now());
    const silence = await store.createSilence({
      matchers: { kinds: ['STALLED'] },
      scope: null,
      startsAt: now(),
      endsAt: new Date(timers.now() + 60 * MINUTE),
      comment: 'known hang, being debugged',
      createdBy: 'alice',
      createdAt: now(),
    });
    const shortOne = await store.createSilence({
      matchers: { jobIds: ['bt:job:run-2'], labels: [] },
      scope: null,
      startsAt: now(),
      endsAt: new Date(timers.now() + 3 * MINUTE),
      comment: 'maintenance',
      createdBy: 'bob',
      createdAt: now(),
    });
    const [stalled, idle, other] = await fire(
      candidate('STALLED', 'bt:job:run-1'),
      candidate('IDLE_ALLOCATION', 'bt:job:run-2'),
      candidate('NO_DATA', 'bt:job:run-1'),
    );
    await runFor(MINUTE, d);
    expect(hook.requests.map((r) => r.key)).toEqual([idempotencyKey(other!.id, 'FIRING', 'ops')]);
    expect((await notifications(stalled!))[0]!.state).toBe('SILENCED');
    expect((await notifications(idle!))[0]!.state).toBe('SILENCED');
    // The short silence runs out at 3 minutes: the idle allocation goes out then, once.
    await runFor(2 * MINUTE + INTERVAL, d);
    expect(hook.requests.map((r) => r.key)).toEqual([idempotencyKey(other!.id, 'FIRING', 'ops'), idempotencyKey(idle!.id, 'FIRING', 'ops')]);
    await runFor(5 * MINUTE, d);
    expect(hook.requests).toHaveLength(2);
    const expired = await store.expireSilence(silence.id, 'carol', now());
    expect(expired!.expiredBy).toBe('carol');
    expect(expired!.endsAt.getTime()).toBe(timers.now());
    await runFor(INTERVAL, d);
    expect(hook.requests.map((r) => r.key)).toEqual([
      idempotencyKey(other!.id, 'FIRING', 'ops'),
      idempotencyKey(idle!.id, 'FIRING', 'ops'),
      idempotencyKey(stalled!.id, 'FIRING', 'ops'),
    ]);
    expect(shortOne.id).not.toBe(silence.id);
  });

  it('a finding resolved while silenced is not sent at all once the silence ends', async () => {
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    const now = () => new Date(timers.now());
    await alerts().createSilence({
      matchers: { providerIds: ['bt'] },
      scope: null,
      startsAt: now(),
      endsAt: new Date(timers.now() + 5 * MINUTE),
      comment: 'deploy',
      createdBy: 'alice',
      createdAt: now(),
    });
    const [f] = await fire(candidate('STALLED', 'bt:job:run-1'));
    await runFor(MINUTE, d);
    await resolveAllBut();
    await runFor(10 * MINUTE, d);
    expect(hook.requests).toHaveLength(0);
    expect((await notifications(f!)).map((n) => [n.event, n.state])).toEqual([
      ['FIRING', 'SUPPRESSED'],
      ['RESOLVED', 'SUPPRESSED'],
    ]);
  });

  it('an acknowledgement is recorded (who, when, why); a finding acknowledged before delivery is not sent, its ack travels in later payloads', async () => {
    const d = deliverer(webhookOnly(), 'a', { HOOK_TOKEN: 'hook-token-0123456789' });
    await settled(d);
    const [early] = await fire(candidate('STALLED', 'bt:job:run-1'));
    const ack = await alerts().acknowledge(early!.id, 'alice', 'looking at it', new Date(timers.now()));
    expect(ack).toEqual({ findingId: early!.id, by: 'alice', at: new Date(T0), comment: 'looking at it' });
    expect(await alerts().acknowledge(early!.id + 1000, 'alice', 'no such finding', new Date(timers.now()))).toBeNull();
    await runFor(INTERVAL, d);
    expect(hook.requests).toHaveLength(0);
    expect((await notifications(early!))[0]).toMatchObject({ state: 'SUPPRESSED', lastError: 'acknowledged by alice before it was delivered' });

    const [late] = await fire(candidate('IDLE_ALLOCATION', 'bt:job:run-2'));
    await runFor(INTERVAL, d);
    timers.advance(MINUTE);
    await alerts().acknowledge(late!.id, 'bob', 'idle on purpose', new Date(timers.now()));
    await resolveAllBut(candidate('STALLED', 'bt:job:run-1'));
    await runFor(INTERVAL, d);
    expect(hook.requests.map((r) => [r.body.event, r.body.acknowledgement])).toEqual([
      ['FIRING', null],
      ['RESOLVED', { by: 'bob', at: new Date(T0 + 2 * INTERVAL + MINUTE).toISOString(), comment: 'idle on purpose' }],
    ]);
  });
});
