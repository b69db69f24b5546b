// Where live events travel: in process when there is one replica, through Redis (yoga's redis
// event target) when REDIS_URL is set, so a subscriber on any replica sees what any replica polled.
// Payloads are plain JSON (dates as ISO strings) so both transports carry exactly the same thing.
import type { TypedEventTarget } from '@graphql-yoga/typed-event-target';
import type { Logger } from 'pino';

export type Listener = (payload: unknown) => void;

export interface EventBus {
  readonly kind: 'memory' | 'redis';
  publish(topic: string, payload: unknown): void;
  /** Returns the function that removes the listener. */
  on(topic: string, listener: Listener): () => void;
  close(): Promise<void>;
}

export function createMemoryBus(): EventBus {
  const topics = new Map<string, Set<Listener>>();
  return {
    kind: 'memory',
    publish(topic, payload) {
      const listeners = topics.get(topic);
      if (!listeners) return;
      for (const l of [...listeners]) l(payload);
    },
    on(topic, listener) {
      let set = topics.get(topic);
      if (!set) topics.set(topic, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && topics.get(topic) === set) topics.delete(topic);
      };
    },
    async close() {
      topics.clear();
    },
  };
}

export async function createRedisBus(redisUrl: string, logger: Logger): Promise<EventBus> {
  // Loaded only with REDIS_URL: a single replica never needs a Redis client in memory.
  const [{ Redis }, { createRedisEventTarget }] = await Promise.all([import('ioredis'), import('@graphql-yoga/redis-event-target')]);
  // A subscribed ioredis connection can do nothing else, hence two. Through a Redis restart ioredis
  // reconnects with backoff, re-subscribes its channels, and holds publishes in its offline queue
  // (maxRetriesPerRequest: null: they wait rather than fail), so events are late, not lost.
  const options = { maxRetriesPerRequest: null, lazyConnect: true } as const;
  const publishClient = new Redis(redisUrl, options);
  const subscribeClient = new Redis(redisUrl, options);
  for (const [role, client] of [
    ['publish', publishClient],
    ['subscribe', subscribeClient],
  ] as const) {
    // Without a listener ioredis prints every failed reconnect attempt; one line per outage is enough.
    let down = false;
    client.on('error', (err: Error) => {
      if (down) return;
      down = true;
      logger.warn({ err, role }, 'live: Redis unreachable; reconnecting, events are held until it is back');
    });
    client.on('ready', () => {
      if (!down) return;
      down = false;
      logger.info({ role }, 'live: Redis reconnected');
    });
  }
  await Promise.all([publishClient.connect(), subscribeClient.connect()]);
  const target = createRedisEventTarget<CustomEvent>({ publishClient, subscribeClient }) as TypedEventTarget<CustomEvent>;
  return {
    kind: 'redis',
    publish(topic, payload) {
      target.dispatchEvent(new CustomEvent(topic, { detail: payload }));
    },
    on(topic, listener) {
      const handler = (event: CustomEvent) => listener(event.detail);
      target.addEventListener(topic, handler);
      return () => target.removeEventListener(topic, handler);
    },
    async close() {
      await Promise.allSettled([publishClient.quit(), subscribeClient.quit()]);
      publishClient.disconnect();
      subscribeClient.disconnect();
    },
  };
}
