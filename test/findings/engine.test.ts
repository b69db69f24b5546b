// Findings over the Baseten simulator on the test's clock: a stalled job, a straggler rank and an
// idle node each fire exactly once and resolve exactly once while the collector keeps the store
// current, the evidence's numbers are what Job.metrics answers for the same window, and healthy
// jobs raise nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ManualTimers } from '../support/manual-timers.js';
import { startClockedBaseten } from '../support/clocked-baseten.js';
import { startRuntimeOn } from '../support/runtime.js';
import { gql } from '../collect/helpers.js';
import { client } from '../live/helpers.js';
import { eventually } from '../support/wait.js';
import { recordFindingEvents, runFindingsFor, type SeenEvent } from './helpers.js';

const SUBSCRIBED_FIELDS = 'id kind state startedAt endedAt job { id } gpu { id } evidence { id from to observedMax series { id count avg max } }';

const START = Date.UTC(2026, 10, 20, 12, 0, 0);
const MINUTE = 60_000;

describe('findings on the simulated clock', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let timers: ManualTimers;
  let events: SeenEvent[];
  let jobs: { stalled: string; straggler: string; idle: string; healthy: string; stragglerGpu: string };
  const heard: any[] = [];
  let unsubscribe = () => {};

  beforeAll(async () => {
    timers = new ManualTimers(START);
    sim = await startClockedBaseten(
      'findings-engine',
      timers,
      { jobsPerProject: 4, nodesPerJob: 2, gpusPerNode: 4 },
      {
        anomalies: [
          { runningJob: 0, kind: 'stall', fromMs: START + 10 * MINUTE, toMs: START + 30 * MINUTE },
          { runningJob: 1, kind: 'straggler', node: 1, rank: 2, fromMs: START + 10 * MINUTE, toMs: START + 35 * MINUTE },
          { runningJob: 2, kind: 'idle', node: 1, fromMs: START + 10 * MINUTE, toMs: START + 55 * MINUTE },
        ],
      },
    );
    const [a, b, c, d] = sim.fleet.jobs.map((j) => `bt:job:${j.id}`);
    jobs = { stalled: a!, straggler: b!, idle: c!, healthy: d!, stragglerGpu: `bt:gpu:${sim.fleet.jobs[1]!.id}#node-1#2` };
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', pollIntervalSeconds: 60 }], {
      env: { BT_KEY: sim.apiKey },
      clock: () => timers.now(),
      liveTimers: timers,
      config: { collect: { enabled: true }, findings: { enabled: true, intervalSeconds: 60 } },
    });
    events = recordFindingEvents(rt);
    // A subscriber over graphql-ws, known to be listening once a marker published on the bus reaches it.
    unsubscribe = client(rt.url).subscribe(
      { query: `subscription { findings(filter: { providerIds: ["bt"] }) { ${SUBSCRIBED_FIELDS} } }` },
      { next: (r: any) => heard.push(r.data?.findings ?? r), error: (e) => heard.push({ error: e }), complete: () => {} },
    );
    const marker = { id: 0, fingerprint: 'marker', kind: 'RESTARTED', severity: 'INFO', providerId: 'bt', projectId: 'bt:project:x', jobId: 'bt:job:marker' };
    await eventually(
      () => {
        rt.live.hub.bus.publish('findings', {
          type: 'finding',
          event: 'FIRING',
          finding: {
            ...marker,
            nodeId: null,
            gpuId: null,
            summary: '',
            startedAt: new Date(START).toISOString(),
            endedAt: null,
            lastSeenAt: new Date(START).toISOString(),
            holdUntil: null,
            evidence: {},
          },
        });
        return heard.length > 0;
      },
      30_000,
      'the subscription to listen',
    );
    heard.length = 0;
    events.length = 0;
    await runFindingsFor(rt, timers, 70 * MINUTE, MINUTE);
  }, 600_000);

  afterAll(async () => {
    unsubscribe();
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it('a stall, a straggler rank and an idle node each fire once and resolve once, and nothing else fires', () => {
    const of = (kind: string) => events.filter((e) => e.kind === kind).map((e) => `${e.event} ${e.jobId} ${e.gpuId ?? ''}`);
    expect(of('STALLED')).toEqual([`FIRING ${jobs.stalled} `, `RESOLVED ${jobs.stalled} `]);
    expect(of('STRAGGLER')).toEqual([`FIRING ${jobs.straggler} ${jobs.stragglerGpu}`, `RESOLVED ${jobs.straggler} ${jobs.stragglerGpu}`]);
    expect(of('IDLE_ALLOCATION')).toEqual([`FIRING ${jobs.idle} `, `RESOLVED ${jobs.idle} `]);
    expect(events.filter((e) => !['STALLED', 'STRAGGLER', 'IDLE_ALLOCATION'].includes(e.kind))).toEqual([]);
    expect(events.some((e) => e.jobId === jobs.healthy)).toBe(false);
  });

  it('fires within one evaluation of the threshold and resolves within one evaluation of the recovery', () => {
    const at = (kind: string, event: string) => {
      const e = events.find((x) => x.kind === kind && x.event === event)!;
      return new Date(e.evidence.to ?? 0).getTime();
    };
    // STALLED: 15 minutes below 5% from +10 min; the collector's data of a minute is seen the minute after.
    expect(at('STALLED', 'FIRING') - START).toBeGreaterThanOrEqual(25 * MINUTE);
    expect(at('STALLED', 'FIRING') - START).toBeLessThanOrEqual(27 * MINUTE);
    expect(at('IDLE_ALLOCATION', 'FIRING') - START).toBeGreaterThanOrEqual(40 * MINUTE);
    expect(at('IDLE_ALLOCATION', 'FIRING') - START).toBeLessThanOrEqual(42 * MINUTE);
  });

  it("the evidence's numbers equal Job.metrics' summaries for the same window", async () => {
    const fired = events.filter((e) => e.event === 'FIRING');
    expect(fired).toHaveLength(3);
    for (const f of fired) {
      const ev = f.evidence;
      const res = await gql(
        rt,
        `query($id: ID!, $from: DateTime!, $to: DateTime!) { job(id: $id) { metrics(names: [GPU_UTILIZATION], scope: GPU, from: $from, to: $to) {
          gpu { id } summary { count avg max } } } }`,
        { id: f.jobId, from: new Date(ev.from).toISOString(), to: new Date(ev.to).toISOString() },
      );
      expect(res.errors).toBeUndefined();
      const byGpu = new Map<string, { count: number; avg: number; max: number }>(res.data.job.metrics.map((s: any) => [s.gpu.id, s.summary]));
      expect(ev.series.length).toBeGreaterThan(0);
      for (const s of ev.series) {
        const summary = byGpu.get(s.gpuId)!;
        expect(summary, `${f.kind} ${s.gpuId}`).toBeDefined();
        expect({ count: s.count, avg: s.avg, max: s.max }, `${f.kind} ${s.gpuId}`).toEqual({ count: summary.count, avg: summary.avg, max: summary.max });
      }
    }
  }, 120_000);

  it('the graph answers them: Job.findings and the fleet-wide connection, with state and evidence', async () => {
    const res = await gql(
      rt,
      `{ findings(first: 10) { totalCount edges { node { kind severity state job { id } gpu { id index } startedAt endedAt
          evidence { from to jobMedian limit observedMax series { gpu { id } count avg max } } } } pageInfo { hasNextPage } } }`,
    );
    expect(res.errors).toBeUndefined();
    const nodes = res.data.findings.edges.map((e: any) => e.node);
    expect(res.data.findings.totalCount).toBe(3);
    expect(nodes.map((n: any) => n.state)).toEqual(['RESOLVED', 'RESOLVED', 'RESOLVED']);
    const straggler = nodes.find((n: any) => n.kind === 'STRAGGLER');
    expect(straggler.gpu).toEqual({ id: jobs.stragglerGpu, index: 2 });
    expect(straggler.evidence.observedMax).toBeLessThan(straggler.evidence.limit);
    const job = await gql(rt, `query($id: ID!) { job(id: $id) { findings { kind state } } }`, { id: jobs.idle });
    expect(job.data.job.findings).toEqual([{ kind: 'IDLE_ALLOCATION', state: 'RESOLVED' }]);
    const page = await gql(
      rt,
      `{ findings(first: 1, filter: { kinds: [STALLED, STRAGGLER] }) { edges { cursor node { kind } } pageInfo { hasNextPage endCursor } } }`,
    );
    expect(page.data.findings.pageInfo.hasNextPage).toBe(true);
    const next = await gql(
      rt,
      `query($after: String) { findings(first: 5, after: $after, filter: { kinds: [STALLED, STRAGGLER] }) { edges { node { kind } } } }`,
      {
        after: page.data.findings.pageInfo.endCursor,
      },
    );
    expect([page.data.findings.edges[0].node.kind, ...next.data.findings.edges.map((e: any) => e.node.kind)].sort()).toEqual(['STALLED', 'STRAGGLER']);
  });

  it('the subscription heard each firing and resolution once, the same Finding the query answers', async () => {
    // Markers published while waiting for the subscription may arrive late: their job is not cached.
    const real = () => heard.filter((h) => h.error || h.job !== null);
    await eventually(() => real().length >= 6, 30_000, 'six finding events');
    const heardReal = real();
    expect(heardReal.filter((h) => h.error)).toEqual([]);
    expect(heardReal.map((h) => `${h.state} ${h.kind}`)).toEqual(events.filter((e) => e.jobId !== 'bt:job:marker').map((e) => `${e.event} ${e.kind}`));
    const res = await gql(rt, `{ findings(first: 10) { edges { node { ${SUBSCRIBED_FIELDS} } } } }`);
    const byId = new Map(res.data.findings.edges.map((e: any) => [e.node.id, e.node]));
    for (const h of heardReal.filter((x) => x.state === 'RESOLVED')) expect(h).toEqual(byId.get(h.id));
    expect(new Set(heardReal.map((h) => h.id)).size).toBe(3);
  });

  it('Query.node answers a finding, its evidence and a compared series by their ids', async () => {
    const res = await gql(rt, `{ findings(first: 1, filter: { kinds: [STRAGGLER] }) { edges { node { id evidence { id series { id count } } } } } }`);
    const f = res.data.findings.edges[0].node;
    const again = await gql(
      rt,
      `query($a: ID!, $b: ID!, $c: ID!) { a: node(id: $a) { id ... on Finding { kind } } b: node(id: $b) { id ... on FindingEvidence { series { id } } }
        c: node(id: $c) { id ... on FindingSeriesEvidence { count } } }`,
      { a: f.id, b: f.evidence.id, c: f.evidence.series[0].id },
    );
    expect(again.errors, JSON.stringify(again.errors)).toBeUndefined();
    expect(again.data).toEqual({
      a: { id: f.id, kind: 'STRAGGLER' },
      b: { id: f.evidence.id, series: [{ id: f.evidence.series[0].id }] },
      c: { id: f.evidence.series[0].id, count: f.evidence.series[0].count },
    });
    const forged = await gql(rt, `query($a: ID!) { node(id: $a) { id } }`, { a: f.id.replace(/:finding:\d+:/, ':finding:999999:') });
    expect(forged.data.node).toBeNull();
  });
});
