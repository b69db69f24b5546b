// Alert delivery in a running server (both databases): the alerts entry of the providers file, the
// mutations with who and when (a token without `write: true` is refused), Finding.notifications,
// acknowledgement and silencedBy, the figures on /metrics, and a receiver that is down across a
// server restart getting its notification once afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertsConfig } from '../../src/config/index.js';
import { loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import type { FindingCandidate } from '../../src/store/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startRuntimeOn } from '../support/runtime.js';
import { HANG_MS } from '../support/wait.js';
import { evaluationsSettled } from '../findings/helpers.js';
import { TestReceiver } from './receivers.js';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const INTERVAL = 10_000;
const WRITER = 'writer-token-0123456789';
const READER = 'reader-token-0123456789';
const SCOPED = 'scoped-token-0123456789';

describe('alerts in the graph', () => {
  const timers = new ManualTimers(START);
  // The findings evaluator's own clock, never moved: the test fires its findings itself, and an
  // evaluation of the simulator's fleet at a step of the delivery clock would fire more (its failed
  // jobs) whenever it happened to finish before the step settled.
  const evaluatorTimers = new ManualTimers(START);
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let dir: string;
  let rt: Runtime;
  let hook: TestReceiver;

  const start = () =>
    startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY' }], {
      env: { BT_KEY: sim.apiKey, HOOK_URL: hook.url },
      clock: () => timers.now(),
      liveTimers: timers,
      alertTimers: timers,
      findingsTimers: evaluatorTimers,
      config: {
        findings: { enabled: true, intervalSeconds: 60 },
        alerts: alertsConfig.parse({
          receivers: [{ name: 'ops', type: 'webhook', urlEnv: 'HOOK_URL' }],
          // Only the kinds the test fires itself: listing the simulator's jobs raises FAILED for its
          // failed ones as their status is learned (an event, not a step), which would be sent too.
          routes: [{ receivers: ['ops'], match: { kinds: ['STALLED', 'IDLE_ALLOCATION', 'NO_DATA'] } }],
          delivery: { intervalSeconds: INTERVAL / 1000, initialBackoffSeconds: 10, maxBackoffSeconds: 60 },
        }),
        security: loadSecurityConfig({
          API_TOKENS: JSON.stringify([
            { name: 'writer', token: WRITER, write: true },
            { name: 'reader', token: READER },
            { name: 'scoped', token: SCOPED, providers: ['elsewhere'], write: true },
          ]),
        }),
      },
    });

  beforeAll(async () => {
    sim = await startBasetenSimulator({ seed: 'alerts-graph', anchorMs: START, now: () => timers.now(), rateLimit: false });
    hook = await new TestReceiver().up();
    dir = mkdtempSync(path.join(tmpdir(), 'alerts-graph-'));
    db = await createTestDatabase(dir);
    rt = await start();
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    await hook?.close();
    await sim?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function gql(token: string, query: string, variables?: Record<string, unknown>): Promise<any> {
    const res = await rt.app.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    return res.json();
  }

  async function settled() {
    const d = rt.alerts!;
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

  /**
   * The server's first steps over: the evaluator's (a firing it makes steps delivery at once) and
   * delivery's own, due at start. On a busy machine either could still be under way when the test
   * fires, and then send the test's finding before the step the test counts on.
   */
  async function startSettled() {
    await evaluationsSettled(rt);
    await settled();
  }

  async function steps(n: number) {
    await settled();
    for (let i = 0; i < n; i++) {
      timers.advance(INTERVAL);
      await settled();
    }
  }

  let jobId: string;
  const candidate = (kind: FindingCandidate['kind']): FindingCandidate => ({
    fingerprint: `${kind}|${jobId}`,
    kind,
    severity: 'WARNING',
    providerId: 'bt',
    projectId: 'bt:project:x',
    jobId,
    nodeId: null,
    gpuId: null,
    summary: `${kind} seen`,
    startedAt: new Date(timers.now()),
    holdUntil: null,
    evidence: {},
  });
  const fire = async (kind: FindingCandidate['kind']) => {
    const [row] = await rt.store.findings.fire([candidate(kind)], new Date(timers.now()));
    return row!;
  };

  const FINDINGS = `{ findings { edges { node { id kind notifications { receiver event state attempts idempotencyKey lastStatus deliveredAt nextAttemptAt }
    acknowledgement { by at comment } silencedBy { id comment } } } } }`;
  const byKind = async (kind: string) => ((await gql(READER, FINDINGS)).data.findings.edges as any[]).map((e) => e.node).find((n) => n.kind === kind);

  it('shows each notification, silences and acknowledges with who and when, refuses a token without write', async () => {
    const jobs = await gql(READER, '{ jobs(first: 1) { edges { node { id } } } }');
    jobId = jobs.data.jobs.edges[0].node.id;
    await startSettled();
    await fire('STALLED');
    await steps(1);
    expect(hook.requests.map((r) => r.body.finding.kind)).toEqual(['STALLED']);
    const stalled = await byKind('STALLED');
    expect(stalled.notifications).toEqual([
      {
        receiver: 'ops',
        event: 'FIRING',
        state: 'DELIVERED',
        attempts: 1,
        idempotencyKey: hook.requests[0]!.key,
        lastStatus: 200,
        deliveredAt: new Date(timers.now()).toISOString(),
        nextAttemptAt: null,
      },
    ]);

    const refused = await gql(READER, 'mutation($id: ID!) { acknowledgeFinding(id: $id, comment: "mine") { id } }', { id: stalled.id });
    expect(refused.errors[0].extensions.code).toBe('FORBIDDEN');
    const acked = await gql(WRITER, 'mutation($id: ID!) { acknowledgeFinding(id: $id, comment: "on it") { id acknowledgement { by at comment } } }', {
      id: stalled.id,
    });
    expect(acked.data.acknowledgeFinding.acknowledgement).toEqual({ by: 'writer', at: new Date(timers.now()).toISOString(), comment: 'on it' });

    const noMatcher = await gql(WRITER, 'mutation($u: DateTime!) { silenceFindings(matchers: {}, until: $u, comment: "all") { id } }', {
      u: new Date(timers.now() + 3_600_000).toISOString(),
    });
    expect(noMatcher.errors[0].extensions.code).toBe('BAD_INPUT');
    const until = new Date(timers.now() + 3_600_000).toISOString();
    const made = await gql(
      WRITER,
      'mutation($u: DateTime!) { silenceFindings(matchers: { kinds: [IDLE_ALLOCATION] }, until: $u, comment: "expected idle") { id active createdBy createdAt matchers { kinds } } }',
      { u: until },
    );
    const silence = made.data.silenceFindings;
    expect(silence).toMatchObject({
      active: true,
      createdBy: 'writer',
      createdAt: new Date(timers.now()).toISOString(),
      matchers: { kinds: ['IDLE_ALLOCATION'] },
    });

    await fire('IDLE_ALLOCATION');
    await steps(3);
    expect(hook.requests).toHaveLength(1);
    const idle = await byKind('IDLE_ALLOCATION');
    expect(idle.silencedBy).toEqual([{ id: silence.id, comment: 'expected idle' }]);
    expect(idle.notifications[0]).toMatchObject({ state: 'SILENCED', attempts: 0, nextAttemptAt: until });
    expect((await gql(READER, '{ silences { id } }')).data.silences).toEqual([{ id: silence.id }]);

    // A token scoped to other providers neither sees nor expires a silence that reaches beyond them.
    expect((await gql(SCOPED, '{ silences { id } }')).data.silences).toEqual([]);
    const notYours = await gql(SCOPED, 'mutation($id: ID!) { expireSilence(id: $id) { id } }', { id: silence.id });
    expect(notYours.errors[0].extensions.code).toBe('NOT_FOUND');

    const expired = await gql(WRITER, 'mutation($id: ID!) { expireSilence(id: $id) { active expiredBy endsAt } }', { id: silence.id });
    expect(expired.data.expireSilence).toEqual({ active: false, expiredBy: 'writer', endsAt: new Date(timers.now()).toISOString() });
    await steps(1);
    expect(hook.requests.map((r) => r.body.finding.kind)).toEqual(['STALLED', 'IDLE_ALLOCATION']);
    expect((await byKind('IDLE_ALLOCATION')).silencedBy).toEqual([]);
    expect((await gql(READER, '{ silences { id } }')).data.silences).toEqual([]);

    // Every new type is a Relay Node: Query.node answers each by its id, the same object.
    const other = await gql(
      WRITER,
      'mutation($u: DateTime!) { silenceFindings(matchers: { labels: [{ name: "team", value: "llm" }] }, until: $u, comment: "x") { id matchers { id labels { id name value } } } }',
      { u: until },
    );
    const made2 = other.data.silenceFindings;
    const idle2 = (
      (await gql(READER, '{ findings { edges { node { kind notifications { id receiver } acknowledgement { id by } } } } }')).data.findings.edges as any[]
    )
      .map((e) => e.node)
      .find((n) => n.kind === 'STALLED');
    const nodes = await gql(
      READER,
      `query($ids: [ID!]!) { nodes(ids: $ids) { id __typename ... on AlertNotification { receiver } ... on FindingAcknowledgement { by }
        ... on Silence { comment } ... on SilenceMatchers { labels { name } } ... on SilenceLabel { value } } }`,
      { ids: [idle2.notifications[0].id, idle2.acknowledgement.id, made2.id, made2.matchers.id, made2.matchers.labels[0].id] },
    );
    expect(nodes.data.nodes).toEqual([
      { id: idle2.notifications[0].id, __typename: 'AlertNotification', receiver: 'ops' },
      { id: idle2.acknowledgement.id, __typename: 'FindingAcknowledgement', by: 'writer' },
      { id: made2.id, __typename: 'Silence', comment: 'x' },
      { id: made2.matchers.id, __typename: 'SilenceMatchers', labels: [{ name: 'team' }] },
      { id: made2.matchers.labels[0].id, __typename: 'SilenceLabel', value: 'llm' },
    ]);
    await gql(WRITER, 'mutation($id: ID!) { expireSilence(id: $id) { id } }', { id: made2.id });

    const metrics = await fetch(`${rt.url}/metrics`, { headers: { authorization: `Bearer ${WRITER}` } }).then((r) => r.text());
    expect(metrics).toContain('training_graph_alert_notifications{receiver="ops",state="DELIVERED"} 2');
    expect(metrics).toContain('training_graph_alert_notification_outcomes_total{receiver="ops",outcome="delivered"} 2');
    expect(metrics).toContain('training_graph_alert_notification_outcomes_total{receiver="ops",outcome="silenced"} 1');
    expect(metrics).toMatch(/training_graph_alert_delivery_leading 1/);
  }, 120_000);

  it('a receiver down across a server restart gets the notification once after it returns', async () => {
    await hook.down();
    const before = hook.requests.length;
    await fire('NO_DATA');
    await steps(3);
    const pending = await byKind('NO_DATA');
    expect(pending.notifications[0]).toMatchObject({ state: 'PENDING', lastStatus: null });
    expect(pending.notifications[0].attempts).toBeGreaterThanOrEqual(1);
    await rt.close();
    timers.advance(60_000);
    rt = await start();
    await steps(3);
    await hook.up();
    await steps(8);
    // Every notification sent arrived once, the one held across the restart included.
    const key = pending.notifications[0].idempotencyKey;
    expect(hook.requests.slice(before).filter((r) => r.key === key)).toHaveLength(1);
    expect([...hook.counts().values()].every((n) => n === 1)).toBe(true);
    expect((await byKind('NO_DATA')).notifications[0].state).toBe('DELIVERED');
  }, 120_000);
});
