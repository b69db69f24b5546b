// Redis dies under two replicas that share it for live events, and comes back empty (it keeps
// nothing on disk). Neither replica is restarted and no subscriber resubscribes: the poller's
// samples must reach the subscribers of both replicas again, through the restarted Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'graphql-ws';
import type { Runtime } from '../../src/server/runtime.js';
import type { BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { client, runningJobId, startSim, startTestRuntime, subscribeUtilization, waitFor, type Subscriber } from '../live/helpers.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-services.js';

const INTERVAL_S = 0.5;

// Redis mode needs Postgres for the poll lock, so this runs in the real-Postgres pass.
describe.runIf(REAL_POSTGRES_URL)('Redis killed and started again under two replicas [needs TEST_DATABASE_URL]', () => {
  let sim: BasetenSimulator;
  let redis: PrivateRedis;
  let database: TestDatabase;
  const replicas: Runtime[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    sim = await startSim();
    redis = await startPrivateRedis();
    database = await createTestDatabase();
    for (let i = 0; i < 2; i++) replicas.push(await startTestRuntime(sim, INTERVAL_S, { redisUrl: redis.url, databaseUrl: database.databaseUrl }));
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.dispose()));
    for (const r of replicas) await r.close();
    await redis?.destroy();
    await database?.drop();
    await sim?.close();
  });

  it("both replicas' subscribers get samples again, on the same streams, with one poller", async () => {
    const jobId = runningJobId(sim);
    const subs: Subscriber[] = replicas.map((r) => {
      const c = client(r.url);
      clients.push(c);
      return subscribeUtilization(c, jobId);
    });
    await waitFor(() => subs.every((s) => s.samples.length >= 2), 15_000, 'samples on both replicas');
    const leaders = () => replicas.filter((r) => r.live.hub.stats().leading.length > 0).length;
    expect(leaders()).toBe(1);

    // Redis stays down while the poller polls twice more (waited for as its steps, not a duration).
    const leader = replicas.find((r) => r.live.hub.stats().leading.length > 0)!;
    const topic = `live:utilization:${jobId}`;
    const pollsBefore = leader.live.hub.stats().polls[topic]!;
    await redis.kill();
    await waitFor(() => leader.live.hub.stats().polls[topic]! >= pollsBefore + 2, 30_000, 'two polls while Redis is down');
    await redis.start();
    const restartedAt = new Date().toISOString();

    // ioredis reconnects with backoff and re-subscribes; samples polled after the restart arrive.
    await waitFor(
      () => subs.every((s) => s.samples.filter((x) => x.polledAt > restartedAt).length >= 2),
      20_000,
      'samples polled after the restart on both replicas',
    );
    for (const s of subs) {
      expect(s.completed).toBe(false);
      expect(s.errors).toEqual([]);
    }
    // Still one poller: the lock lives in Postgres, which never went away.
    expect(leaders()).toBe(1);
    // The subscriber of the replica that does not poll only hears through Redis: both see the same
    // polls (waited for: each replica delivers on its own time).
    const common = () => {
      const polled = subs.map((s) => s.samples.filter((x) => x.polledAt > restartedAt).map((x) => x.polledAt));
      return polled[0]!.filter((p) => polled[1]!.includes(p)).length;
    };
    await waitFor(() => common() >= 2, 20_000, 'two polls after the restart heard on both replicas');
    expect(common()).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
