// Live fan-out on the wire: subscribers of the same jobUtilization operation get, per event, one
// payload serialised once and sent to every socket (server/ws.ts). Raw graphql-transport-ws
// sockets read the exact bytes; a plugin that changes results per subscriber (as a real one
// could) shows that such results are serialised on their own; the clock is the test's.
import type { Plugin } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { registerSecret } from '../../src/domain/secrets.js';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { ManualTimers, stepFeeds } from '../support/manual-timers.js';
import { ANCHOR } from '../support/runtime.js';
import { runningJobId, startSim, startTestRuntime, utilizationQuery, waitFor, wsUrl } from './helpers.js';

const INTERVAL_S = 15;
const timers = new ManualTimers(ANCHOR);
let sim: BasetenSimulator;
let rt: Runtime;
let jobId: string;
let topic: string;

/**
 * Changes the results of subscriptions whose connection says `tag`: `copy` replaces each result
 * with an equal copy (so graphql-ws serialises it itself: the unshared reference), any other tag
 * adds it to the result's extensions (a per-subscriber change the shared bytes must not hide).
 */
const perSubscriber: Plugin = {
  onSubscribe({ args }) {
    const tag = (args.contextValue as { connectionParams?: { tag?: string } }).connectionParams?.tag;
    if (!tag) return;
    return {
      onSubscribeResult: () => ({
        onNext: ({ result, setResult }) => setResult(tag === 'copy' ? { ...result } : { ...result, extensions: { tag } }),
      }),
    };
  },
};

interface RawSocket {
  ws: WebSocket;
  /** Every text frame the server sent, as received. */
  frames: string[];
  binaryFrames: number;
  subscribe(id: string, query?: string): void;
  /** The `next` frames of one operation. */
  nexts(id: string): string[];
}

async function rawSocket(connectionParams?: Record<string, unknown>): Promise<RawSocket> {
  const ws = new WebSocket(wsUrl(rt.url), 'graphql-transport-ws');
  const sock: RawSocket = {
    ws,
    frames: [],
    binaryFrames: 0,
    subscribe: (id, query = utilizationQuery(undefined, 50)) =>
      ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables: { id: jobId } } })),
    nexts: (id) => sock.frames.filter((f) => JSON.parse(f).id === id && JSON.parse(f).type === 'next'),
  };
  ws.on('message', (data, isBinary) => {
    if (isBinary) sock.binaryFrames++;
    sock.frames.push(String(data));
  });
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ type: 'connection_init', payload: connectionParams }));
  await waitFor(() => sock.frames.some((f) => JSON.parse(f).type === 'connection_ack'), 10_000, 'the connection ack');
  return sock;
}

/** The payload's text inside a `next` frame, checking the frame is exactly `{"id":…,"type":"next","payload":…}` for `id`. */
function payloadText(frame: string, id: string): string {
  const head = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
  expect(frame.startsWith(head)).toBe(true);
  expect(frame.endsWith('}')).toBe(true);
  const text = frame.slice(head.length, -1);
  expect(JSON.stringify({ id, type: 'next', payload: JSON.parse(text) })).toBe(frame);
  return text;
}

async function counters(): Promise<{ shared: number; own: number; payloads: number; secretFindings: number }> {
  const text = await rt.metrics.scrape();
  const read = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    shared: read(/graphql_ws_next_messages_total\{payload="shared"\} (\d+)/),
    own: read(/graphql_ws_next_messages_total\{payload="own"\} (\d+)/),
    payloads: read(/graphql_ws_shared_payloads_total (\d+)/),
    secretFindings: read(/secret_findings_total\{transport="graphql-ws"\} (\d+)/),
  };
}

/** One poll of the feed on the test's clock. */
async function poll(): Promise<void> {
  await stepFeeds(rt.live.hub, topic, timers, INTERVAL_S * 1000);
}

beforeAll(async () => {
  sim = await startSim({ anchorMs: ANCHOR, now: () => timers.now() });
  // Keep-alive far off: the paused socket below answers no ping, and on a busy machine the default
  // 12 s would end its operations while the test still reads their queues.
  rt = await startTestRuntime(sim, INTERVAL_S, {}, { liveTimers: timers, clock: () => timers.now(), plugins: [perSubscriber], ws: { keepAliveMs: 600_000 } });
  jobId = runningJobId(sim);
  topic = `live:utilization:${jobId}`;
});
afterAll(async () => {
  await rt?.close();
  await sim?.close();
});

describe('shared live payloads on the wire', () => {
  it('every subscriber of an event gets the same payload bytes, under its own id, equal to an unshared serialisation', async () => {
    const a = await rawSocket();
    const b = await rawSocket();
    const reference = await rawSocket({ tag: 'copy' });
    // Ids graphql-ws clients choose freely, one of which needs escaping in JSON.
    const ids: [RawSocket, string][] = [
      [a, 'a1'],
      [a, 'a2'],
      [b, 'b "quoted" \\ id'],
      [reference, 'ref'],
    ];
    a.subscribe('a1');
    await waitFor(() => a.nexts('a1').length >= 1, 10_000, 'the first sample');
    for (const [s, id] of ids.slice(1)) s.subscribe(id);
    await waitFor(() => ids.every(([s, id]) => s.nexts(id).length >= 1), 10_000, 'every catch-up');
    const before = await counters();

    await poll();
    await waitFor(() => ids.every(([s, id]) => s.nexts(id).length >= 2), 10_000, 'the poll on every subscriber');
    await poll();
    await waitFor(() => ids.every(([s, id]) => s.nexts(id).length >= 3), 10_000, 'the second poll on every subscriber');

    // Per event (the catch-ups differ: a1 joined before the first poll, the others after it).
    for (const k of [1, 2]) {
      const texts = ids.map(([s, id]) => payloadText(s.nexts(id)[k]!, id));
      for (const t of texts) expect(t).toBe(texts.at(-1));
      const sample = JSON.parse(texts[0]!).data.jobUtilization;
      // A real sample, with points.
      expect(sample.series.length).toBeGreaterThan(0);
      expect(sample.series.some((x: { points: unknown[] }) => x.points.length > 0)).toBe(true);
    }
    expect(a.binaryFrames + b.binaryFrames + reference.binaryFrames).toBe(0);
    // Three subscribers per event went out with the payload serialised once; the reference's own.
    const after = await counters();
    expect(after.shared - before.shared).toBe(6);
    expect(after.payloads - before.payloads).toBe(2);
    expect(after.own - before.own).toBe(2);
    for (const s of [a, b, reference]) s.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0, 10_000, 'cleanup');
  });

  it('subscribers joining between two polls share one catch-up', async () => {
    const a = await rawSocket();
    a.subscribe('first');
    await waitFor(() => a.nexts('first').length >= 1, 10_000, 'the first sample');
    const before = await counters();
    const b = await rawSocket();
    for (const id of ['j1', 'j2', 'j3']) b.subscribe(id);
    await waitFor(() => ['j1', 'j2', 'j3'].every((id) => b.nexts(id).length >= 1), 10_000, 'the catch-ups');
    const texts = ['j1', 'j2', 'j3'].map((id) => payloadText(b.nexts(id)[0]!, id));
    expect(new Set(texts).size).toBe(1);
    const after = await counters();
    expect(after.payloads - before.payloads).toBe(1);
    expect(after.shared - before.shared).toBe(3);
    a.ws.terminate();
    b.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0, 10_000, 'cleanup');
  });

  it('a joiner after a cache write gets a catch-up of its own, read after the write', async () => {
    const a = await rawSocket();
    a.subscribe('first');
    await waitFor(() => a.nexts('first').length >= 1, 10_000, 'the first sample');
    const b = await rawSocket();
    const c0 = await counters();
    b.subscribe('k1');
    await waitFor(() => b.nexts('k1').length >= 1, 10_000, 'the first catch-up');
    b.subscribe('k2');
    await waitFor(() => b.nexts('k2').length >= 1, 10_000, 'the second catch-up');
    const c1 = await counters();
    // No write between them: one catch-up for both.
    expect(c1.payloads - c0.payloads).toBe(1);
    // A query fills the cache with a window nobody asked before (a write the next catch-up must read after).
    const from = new Date(ANCHOR - 6 * 3600_000).toISOString();
    const to = new Date(ANCHOR - 5 * 3600_000).toISOString();
    const res = await fetch(`${rt.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          'query($id: ID!, $from: DateTime, $to: DateTime) { job(id: $id) { metrics(names: [GPU_UTILIZATION], from: $from, to: $to, maxPoints: 50) { id } } }',
        variables: { id: jobId, from, to },
      }),
    });
    expect(res.status).toBe(200);
    await rt.readThrough.settle();
    b.subscribe('k3');
    await waitFor(() => b.nexts('k3').length >= 1, 10_000, 'the catch-up after the write');
    const c2 = await counters();
    expect(c2.payloads - c1.payloads).toBe(1);
    a.ws.terminate();
    b.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0, 10_000, 'cleanup');
  });

  it('a result a plugin changes for one subscriber reaches that subscriber alone; the others share theirs', async () => {
    const plain = await rawSocket();
    const x = await rawSocket({ tag: 'x' });
    const y = await rawSocket({ tag: 'y' });
    const subs: [RawSocket, string][] = [
      [plain, 'p1'],
      [plain, 'p2'],
      [x, 'x1'],
      [y, 'y1'],
    ];
    for (const [s, id] of subs) s.subscribe(id);
    await waitFor(() => subs.every(([s, id]) => s.nexts(id).length >= 1), 10_000, 'every catch-up');
    await poll();
    await waitFor(() => subs.every(([s, id]) => s.nexts(id).length >= 2), 10_000, 'the poll on every subscriber');
    const payloads = subs.map(([s, id]) => JSON.parse(payloadText(s.nexts(id)[1]!, id)));
    expect(payloads.map((p) => p.extensions)).toEqual([undefined, undefined, { tag: 'x' }, { tag: 'y' }]);
    // The data is the one shared execution's, whoever's hook touched the envelope.
    for (const p of payloads) expect(p.data).toEqual(payloads[0].data);
    for (const s of [plain, x, y]) s.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0, 10_000, 'cleanup');
  });

  it('an unexpected error in a shared execution stays masked for every subscriber, and the stream goes on', async () => {
    const a = await rawSocket();
    const b = await rawSocket({ tag: 'copy' });
    const subs: [RawSocket, string][] = [
      [a, 'm1'],
      [a, 'm2'],
      [b, 'm3'],
    ];
    for (const [s, id] of subs) s.subscribe(id);
    await waitFor(() => subs.every(([s, id]) => s.nexts(id).length >= 1), 10_000, 'every catch-up');
    const before = await counters();
    // A sample with a time that is not one: serialising `from` throws a RangeError (a bug, not a domain error).
    const at = new Date(timers.now()).toISOString();
    rt.live.hub.bus.publish(topic, {
      type: 'sample',
      jobId,
      status: 'RUNNING',
      polledAt: at,
      from: 'not a time',
      to: at,
      intervalSeconds: INTERVAL_S,
      granularity: 'GPU',
      final: false,
      cursor: null,
      series: [],
    });
    await waitFor(() => subs.every(([s, id]) => s.nexts(id).length >= 2), 10_000, 'the failed event on every subscriber');
    for (const [s, id] of subs) {
      const frame = s.nexts(id)[1]!;
      const payload = JSON.parse(payloadText(frame, id));
      expect(payload.errors).toEqual([expect.objectContaining({ message: 'Unexpected error.', extensions: { code: 'INTERNAL' } })]);
      expect(frame).not.toContain('Invalid time value');
    }
    // Masking replaced the result for each subscriber: none of them went out as shared bytes.
    const after = await counters();
    expect(after.shared - before.shared).toBe(0);
    expect(after.own - before.own).toBe(3);
    // The next poll is shared again.
    await poll();
    await waitFor(() => subs.every(([s, id]) => s.nexts(id).length >= 3), 10_000, 'the next poll');
    expect((await counters()).shared - after.shared).toBe(2);
    for (const s of [a, b]) s.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0, 10_000, 'cleanup');
  });

  it('a paused socket drops its oldest samples with memory bounded while a reading one keeps up; completing and closing clean up', async () => {
    const slow = await rawSocket();
    const live = await rawSocket();
    slow.subscribe('s1');
    slow.subscribe('s2');
    live.subscribe('l1');
    await waitFor(() => [slow.nexts('s1'), slow.nexts('s2'), live.nexts('l1')].every((n) => n.length >= 1), 10_000, 'every catch-up');
    // Stop reading: the kernel buffers fill, graphql-ws waits on the send, the queues fill.
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const big = 'x'.repeat(20_000);
    const heapBefore = process.memoryUsage().heapUsed;
    const events = 1500;
    for (let i = 0; i < events; i++) {
      const at = new Date(timers.now() + i).toISOString();
      rt.live.hub.bus.publish(topic, {
        type: 'sample',
        jobId,
        status: 'RUNNING',
        polledAt: at,
        from: at,
        to: at,
        intervalSeconds: INTERVAL_S,
        granularity: 'GPU',
        final: false,
        cursor: null,
        series: [big],
      });
      // Lets the sockets write what they can between bursts (a turn of the loop, not a duration).
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    // Publishing delivers to the queues synchronously: the burst is over for them.
    const afterBurst = rt.live.hub.stats();
    expect(afterBurst.subscribers).toBe(3);
    expect(afterBurst.queued).toBeLessThanOrEqual(3 * rt.live.hub.options.sampleBuffer);
    // The reading socket gets the last event, and what it got is in order (a burst may drop
    // some for it too: its queue is as bounded as any).
    const last = new Date(timers.now() + events - 1).toISOString();
    const polledOf = (f: string) => JSON.parse(f).payload.data.jobUtilization.polledAt as string;
    await waitFor(() => live.nexts('l1').some((f) => polledOf(f) === last), 30_000, 'the last event on the reading socket');
    // The paused socket took what its buffers held (how much depends on the kernel's TCP
    // auto-tuning, which a busy machine changes); its two queues dropped the rest.
    const droppedForReader = events - (live.nexts('l1').length - 1);
    expect(afterBurst.dropped - droppedForReader).toBeGreaterThan(0);
    const polled = live.nexts('l1').slice(1).map(polledOf);
    expect(polled).toEqual([...polled].sort());
    global.gc?.();
    // 1500 events x 20 KB went past twice; what stays is the queues and the socket's buffers.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(40 * 1024 * 1024);

    // Completing one operation ends its subscription alone.
    slow.ws.send(JSON.stringify({ id: 's1', type: 'complete' }));
    live.ws.send(JSON.stringify({ id: 'l1', type: 'complete' }));
    await waitFor(() => rt.live.hub.stats().subscribers === 1, 10_000, 'the completed operations to end');
    slow.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0 && rt.live.hub.stats().feeds === 0, 10_000, 'cleanup after the socket died');
    live.ws.terminate();
  });

  // Last: the secret it registers stays registered for the rest of this process.
  it('a shared payload that quotes a secret reaches every subscriber masked, checked once', async () => {
    const a = await rawSocket();
    const b = await rawSocket();
    a.subscribe('q1');
    b.subscribe('q2');
    await waitFor(() => a.nexts('q1').length >= 1 && b.nexts('q2').length >= 1, 10_000, 'the catch-ups');
    // The job's id is in every sample (job { id }, the series ids): as if it were a credential.
    registerSecret(jobId);
    const before = await counters();
    await poll();
    await waitFor(() => a.nexts('q1').length >= 2 && b.nexts('q2').length >= 2, 10_000, 'the poll on both');
    const texts = [payloadText(a.nexts('q1')[1]!, 'q1'), payloadText(b.nexts('q2')[1]!, 'q2')];
    expect(texts[0]).toBe(texts[1]);
    expect(texts[0]).not.toContain(jobId);
    expect(texts[0]).toContain('*'.repeat(jobId.length));
    const after = await counters();
    expect(after.shared - before.shared).toBe(2);
    expect(after.secretFindings - before.secretFindings).toBe(1);
    for (const s of [a, b]) s.ws.terminate();
    await waitFor(() => rt.live.hub.stats().subscribers === 0, 10_000, 'cleanup');
  });
});
