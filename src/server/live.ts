// Wires the live hub for one server: the bus (Redis when REDIS_URL is set, else in process) and
// the poll lock (a Postgres advisory lock when replicas share Postgres and Redis, else local).
import type { Logger } from 'pino';
import type { AppConfig } from '../config/index.js';
import {
  createMemoryBus,
  createRedisBus,
  type EventBus,
  LiveHub,
  type LiveOptions,
  type LiveTimers,
  createAdvisoryLock,
  createLocalLock,
  type PollLock,
} from '../live/index.js';
import type { Store } from '../store/index.js';

export interface LiveRuntime {
  hub: LiveHub;
  bus: EventBus;
  lock: PollLock;
  close(): Promise<void>;
}

export async function startLive(deps: {
  config: AppConfig;
  store: Store;
  logger: Logger;
  options?: Partial<LiveOptions>;
  timers?: LiveTimers;
}): Promise<LiveRuntime> {
  const { config } = deps;
  const bus = config.redisUrl ? await createRedisBus(config.redisUrl, deps.logger) : createMemoryBus();
  // Without Redis each replica only serves its own subscribers, so each must poll for them itself;
  // PGlite is one process by construction.
  const lock = config.redisUrl && config.databaseUrl ? await createAdvisoryLock(config.databaseUrl) : createLocalLock();
  const hub = new LiveHub({ store: deps.store, bus, lock, logger: deps.logger, options: deps.options, timers: deps.timers });
  return {
    hub,
    bus,
    lock,
    async close() {
      await hub.close();
      await lock.close();
      await bus.close();
    },
  };
}
