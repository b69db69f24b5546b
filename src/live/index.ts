// The live feeds' door for server/'s wiring: the hub that runs one poller per job and kind of data,
// the event bus between replicas (memory or Redis) and the lock that makes one replica poll a job.
export { createMemoryBus, createRedisBus, type EventBus } from './bus.js';
export { LiveHub, REAL_TIMERS, type LiveOptions, type LiveTimers } from './hub.js';
export { createAdvisoryLock, createLocalLock, type PollLock } from './lock.js';
