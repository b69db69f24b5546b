// Two hubs sharing one bus and one poll lock (two replicas, in one process), on a clock the test
// moves: one polls, the other tries the lock once an interval and takes over at its first try
// after the poller goes, resuming from the cursor the poller's last sample carried.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryBus } from '../../src/live/bus.js';
import type { SamplePayload } from '../../src/live/events.js';
import { LiveHub } from '../../src/live/hub.js';
import { createLocalLock } from '../../src/live/lock.js';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { ManualTimers, nextStep, stepFeeds } from '../support/manual-timers.js';
import { eventually } from '../support/wait.js';
import { runningJobId, startSim, startTestRuntime, waitFor } from './helpers.js';

const INTERVAL_MS = 500;
let sim: BasetenSimulator;
let rt: Runtime;

beforeAll(async () => {
  sim = await startSim();
  rt = await startTestRuntime(sim, INTERVAL_MS / 1000);
});
afterAll(async () => {
  await rt?.close();
  await sim?.close();
});

describe('poll takeover between replicas', () => {
  it('the follower takes the poll at its first lock try after the leader stops, losing no point', async () => {
    const timers = new ManualTimers();
    const bus = createMemoryBus();
    const lock = createLocalLock();
    const logger = pino({ level: 'silent' });
    const hub = () => new LiveHub({ store: rt.store, bus, lock, logger, timers });
    const a = hub();
    const b = hub();
    const jobId = runningJobId(sim);
    const topic = `live:utilization:${jobId}`;
    const received = { a: [] as SamplePayload[], b: [] as SamplePayload[] };
    const drain = (hub: LiveHub, into: SamplePayload[]) => {
      const channel = hub.subscribe([{ kind: 'utilization', key: jobId }], { capacity: 64 });
      const done = (async () => {
        for await (const item of channel) if ((item as { type: string }).type === 'sample') into.push(item as SamplePayload);
      })();
      return { channel, done };
    };
    const aFirst = nextStep(a, topic);
    const drainingA = drain(a, received.a);
    await aFirst;
    expect(a.stats().leading).toEqual([topic]);
    const bFirst = nextStep(b, topic);
    const drainingB = drain(b, received.b);
    await bFirst;
    // B found the lock taken: it follows, hearing A's samples.
    expect(b.stats().leading).toEqual([]);
    for (let k = 0; k < 3; k++) {
      await stepFeeds([a, b], topic, timers, INTERVAL_MS);
    }
    expect(a.stats().polls[topic]).toBe(4);
    expect(b.stats().polls[topic]).toBe(0);
    // B joined after A's first poll: it hears the three since.
    await waitFor(() => received.b.length >= 3, 10_000, "B to hear A's samples");
    expect(received.b.map((x) => x.polledAt)).toEqual(received.a.slice(-3).map((x) => x.polledAt));
    const cursor = received.b.at(-1)!.cursor;

    // A goes: its last subscriber leaves, its feed stops and releases the lock.
    await drainingA.channel.return();
    await drainingA.done;
    await eventually(async () => !(await lock.holds(topic)), 10_000, 'A to release the poll lock');
    await stepFeeds(b, topic, timers, INTERVAL_MS);
    expect(b.stats().leading).toEqual([topic]);
    expect(b.stats().polls[topic]).toBe(1);
    await waitFor(() => received.b.length >= 4, 10_000, "B's own first sample");
    // It resumes from the newest point A published: none skipped.
    expect(cursor).not.toBeNull();
    expect(received.b[3]!.from).toBe(cursor);
    await drainingB.channel.return();
    await drainingB.done;
    await Promise.all([a.close(), b.close()]);
    expect(timers.pending()).toBe(0);
  });
});
