// Live feeds shared by every subscriber: one poll loop per (kind, job or provider) whatever the
// number of subscribers, started by the first and stopped with the last (its timer cleared, its
// in-flight call aborted, its lock released at once). Events go out on the bus and come back in
// through one listener per feed per replica, which fans them out to bounded per-subscriber queues.
// Among replicas, the poll lock picks who polls; the others keep trying every interval, so a dead
// holder is replaced within one interval, resuming from the cursor its last event carried.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { DomainError, UpstreamError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import { clientFacingError, type ProviderView, type Store } from '../store/index.js';
import { BoundedChannel } from './buffer.js';
import type { EventBus } from './bus.js';
import { jobRowToJson, type LivePayload, type SamplePayload } from './events.js';
import { pollLogs, pollStatuses, pollUtilization, statusTopic, type FeedKind, type FeedState, type PollContext, type PollOutcome } from './feeds.js';
import { pollIntervalMs } from './intervals.js';
import type { PollLock } from './lock.js';

export interface FeedSpec {
  kind: FeedKind;
  /** A job id for utilization and logs, a provider id for status. */
  key: string;
}

export interface LiveOptions {
  /** Per-subscriber queue sizes; the oldest entries are dropped beyond them. */
  sampleBuffer: number;
  logBuffer: number;
  statusBuffer: number;
  /** Upper bound of the failure backoff. */
  maxBackoffMs: number;
  /**
   * A poll finds the job current when anyone (the collector, a query, a feed on another replica)
   * fetched it within most of an interval, instead of fetching every time: with the collector on,
   * one call per job and interval serves everyone. Off: every poll fetches (read-through only).
   */
  shareFetches: boolean;
}

/**
 * The clock and timers the feeds run on: the real ones in a server; a test gives its own and moves
 * time itself, so poll counts follow the intervals it advances instead of a machine's speed.
 */
export interface LiveTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_TIMERS: LiveTimers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What the hub tells listeners (tests wait on it instead of sleeping). */
export interface LiveHubEvents {
  /** A feed finished one step: it polled (or failed to), or only tried the poll lock. */
  step: [topic: string];
}

export const DEFAULT_LIVE_OPTIONS: LiveOptions = { sampleBuffer: 16, logBuffer: 2000, statusBuffer: 256, maxBackoffMs: 5 * 60_000, shareFetches: false };

export interface LiveHubDeps {
  store: Store;
  bus: EventBus;
  lock: PollLock;
  logger: Logger;
  options?: Partial<LiveOptions>;
  random?: () => number;
  timers?: LiveTimers;
}

export interface SubscribeOptions {
  capacity: number;
  /** Turns one bus event into what the subscriber receives (a page of logs into lines); default as is. */
  expand?: (payload: LivePayload) => unknown[];
}

interface Sink {
  deliver(payload: LivePayload): void;
}

/**
 * A subscriber: its bounded queue, and the sink its feeds deliver to, in one object (what a
 * subscription holds on the server is multiplied by thousands of subscribers).
 */
class FeedChannel extends BoundedChannel<unknown> implements Sink {
  readonly attached: Feed[] = [];

  constructor(
    private readonly hub: LiveHub,
    capacity: number,
    private readonly expand: SubscribeOptions['expand'],
  ) {
    super({ capacity });
  }

  deliver(payload: LivePayload): void {
    if (payload.type === 'end') this.end();
    else if (!this.expand) this.push(payload);
    else for (const item of this.expand(payload)) this.push(item);
  }

  protected override closedOnce(): void {
    this.hub.release(this);
  }
}

export const topicOf = (spec: FeedSpec) => (spec.kind === 'status' ? statusTopic(spec.key) : `live:${spec.kind}:${spec.key}`);

/** Delay before retry `attempt` (1-based): exponential from the interval, capped, with equal jitter. */
export function backoffMs(intervalMs: number, attempt: number, maxMs: number, random: () => number, retryAfterSeconds: number | null = null): number {
  const ceiling = Math.min(maxMs, intervalMs * 2 ** Math.min(attempt - 1, 20));
  const jittered = ceiling / 2 + (random() * ceiling) / 2;
  return Math.max(jittered, (retryAfterSeconds ?? 0) * 1000);
}

class Feed {
  readonly sinks = new Set<Sink>();
  readonly state: FeedState = { cursor: null, since: null };
  private readonly offBus: () => void;
  private timer: unknown = null;
  /** The poll under way, so stopping waits for its cache writes to finish. */
  private running: Promise<void> | null = null;
  private abort = new AbortController();
  private leader = false;
  private stopped = false;
  private done = false;
  private failures = 0;
  /** Polls this replica ran for the feed (tests read it to prove there is one poller). */
  polls = 0;
  /** The latest sample heard (from whichever replica polled), and every series any sample named. */
  private latestSample: SamplePayload | null = null;
  private readonly seenSeries = new Set<string>();
  /**
   * The backfill until the next event: subscribers joining between two polls get the same
   * object, so they share its execution and its serialised answer (server/shared-subscriptions.ts
   * keys both by the event object) instead of one each.
   */
  private backfilled: SamplePayload | null = null;
  /** The cache as it was when `backfilled` was made: its answer holds only while nothing was written since. */
  private backfilledAt: number | null = null;

  constructor(
    readonly topic: string,
    private readonly spec: FeedSpec,
    private readonly provider: ProviderView,
    private readonly hub: LiveHub,
  ) {
    this.offBus = hub.bus.on(topic, (payload) => this.onEvent(payload as LivePayload));
    this.schedule(0);
  }

  get isLeader(): boolean {
    return this.leader;
  }

  get isDone(): boolean {
    return this.done;
  }

  /** Between steps: its next step is scheduled and none runs (a test moves its clock only then). */
  get isWaiting(): boolean {
    return !this.done && !this.stopped && this.running === null && this.timer !== null;
  }

  get intervalMs(): number {
    return pollIntervalMs(this.provider);
  }

  private onEvent(payload: LivePayload) {
    // Whoever polled, the cursor moves: a replica taking over resumes exactly after it.
    if (payload.type === 'sample') {
      if (payload.cursor) this.state.cursor = payload.cursor;
      this.latestSample = payload;
      this.backfilled = null;
      for (const key of payload.series) this.seenSeries.add(key);
    }
    if (payload.type === 'logs') {
      this.state.cursor = payload.cursor;
      this.state.since = payload.since;
    }
    if (payload.type === 'end') this.done = true;
    for (const sink of [...this.sinks]) sink.deliver(payload);
  }

  /**
   * What a subscriber joining a running feed gets at once: the latest sample naming every series
   * the feed has sampled, so it starts with the same series (read from the store over its window)
   * the first subscriber built up, instead of nothing until the next poll.
   */
  backfill(): SamplePayload | null {
    if (!this.latestSample) return null;
    // Shared only while the cache is unchanged: a joiner after a query's cache write must read
    // that write (its series ids are the query's, and a client cache would lose the query's points).
    const version = this.hub.store.cacheVersion();
    if (!this.backfilled || version === null || this.backfilledAt !== version) {
      this.backfilled = { ...this.latestSample, series: [...this.seenSeries], readTo: this.hub.store.now().toISOString() };
      this.backfilledAt = version;
    }
    return this.backfilled;
  }

  private schedule(delayMs: number) {
    if (this.stopped || this.done) return;
    this.timer = this.hub.timers.setTimeout(() => {
      this.timer = null;
      this.running = this.step().finally(() => {
        this.running = null;
        this.hub.events.emit('step', this.topic);
      });
    }, delayMs);
  }

  private async step() {
    const hub = this.hub;
    const started = hub.timers.now();
    try {
      if (!this.leader) {
        const acquired = await hub.lock.tryAcquire(this.topic);
        if (this.stopped) {
          if (acquired) await hub.lock.release(this.topic);
          return;
        }
        this.leader = acquired;
        if (!acquired) return this.schedule(this.intervalMs);
      } else if (!(await hub.lock.holds(this.topic))) {
        this.leader = false;
        hub.logger.warn({ feed: this.topic }, 'live: lost the poll lock; another replica may poll now');
        return this.schedule(this.intervalMs);
      }
    } catch (err) {
      // The lock's database is unreachable, so no replica can tell who polls: each tells its own
      // subscribers (not through the bus, or they would hear it once per replica) and retries.
      return this.failed(err, (payload) => this.onEvent(payload));
    }
    if (this.stopped) return;
    let outcome: PollOutcome;
    try {
      this.polls++;
      outcome = await this.poll();
      this.failures = 0;
    } catch (err) {
      return this.failed(err, (payload) => hub.bus.publish(this.topic, payload));
    }
    if (this.stopped) return;
    if (outcome === 'end') return this.finish('the job has finished');
    // Fixed cadence: the next poll is one interval after this one began, not after it ended.
    this.schedule(Math.max(0, started + this.intervalMs - hub.timers.now()));
  }

  /** Tells subscribers (through `tell`) what failed and when the next try is, then schedules it. */
  private failed(err: unknown, tell: (payload: LivePayload) => void) {
    if (this.stopped) return;
    const hub = this.hub;
    this.failures++;
    const gone = err instanceof DomainError && (err.code === 'NOT_FOUND' || err.code === 'UPSTREAM_NOT_FOUND' || err.code === 'BAD_ID');
    const retryAfter = err instanceof UpstreamError ? err.retryAfterSeconds : null;
    const delay = backoffMs(this.intervalMs, this.failures, hub.options.maxBackoffMs, hub.random, retryAfter);
    const known = clientFacingError(err);
    const code = known?.code ?? 'INTERNAL';
    const message = known?.message ?? 'unexpected failure while polling';
    if (!known) hub.logger.error({ err, feed: this.topic }, 'live: poll failed');
    else if (!(err instanceof DomainError)) hub.logger.warn({ err, feed: this.topic }, 'live: poll could not reach the cache database');
    tell({ type: 'error', code, message, retryInSeconds: gone ? 0 : delay / 1000, attempt: this.failures } satisfies LivePayload);
    if (gone) return this.finish(`the job is gone: ${message}`);
    return this.schedule(delay);
  }

  private poll(): Promise<PollOutcome> {
    const hub = this.hub;
    const ctx: PollContext = {
      store: hub.store,
      provider: this.provider,
      intervalMs: this.intervalMs,
      shareFetches: hub.options.shareFetches,
      signal: this.abort.signal,
      state: this.state,
      publish: (payload) => {
        if (!this.stopped) hub.bus.publish(this.topic, payload);
      },
    };
    if (this.spec.kind === 'utilization') return pollUtilization(ctx, this.spec.key);
    if (this.spec.kind === 'logs') return pollLogs(ctx, this.spec.key);
    return pollStatuses(ctx);
  }

  private finish(reason: string) {
    this.done = true;
    this.hub.bus.publish(this.topic, { type: 'end', reason } satisfies LivePayload);
    void this.releaseLock();
  }

  private async releaseLock() {
    if (!this.leader) return;
    this.leader = false;
    await this.hub.lock.release(this.topic);
  }

  /** The last subscriber left: nothing of this feed may survive (timer, in-flight call, listener, lock). */
  async stop() {
    this.stopped = true;
    if (this.timer !== null) this.hub.timers.clearTimeout(this.timer);
    this.timer = null;
    this.abort.abort();
    this.offBus();
    await this.running?.catch(() => {});
    await this.releaseLock();
  }
}

export class LiveHub {
  readonly options: LiveOptions;
  readonly random: () => number;
  readonly store: Store;
  readonly bus: EventBus;
  readonly lock: PollLock;
  readonly logger: Logger;
  readonly timers: LiveTimers;
  readonly events = new EventEmitter<LiveHubEvents>();
  private readonly feeds = new Map<string, Feed>();
  private readonly channels = new Set<BoundedChannel<unknown>>();

  constructor(deps: LiveHubDeps) {
    this.store = deps.store;
    this.bus = deps.bus;
    this.lock = deps.lock;
    this.logger = deps.logger;
    this.options = { ...DEFAULT_LIVE_OPTIONS, ...deps.options };
    this.random = deps.random ?? Math.random;
    this.timers = deps.timers ?? REAL_TIMERS;
    // Every status change the store claims (a poll's or a query's refresh) goes out once, to every replica.
    this.store.onStatusChange(({ job, previousStatus }) =>
      this.bus.publish(statusTopic(job.providerId), { type: 'status', job: jobRowToJson(job), previousStatus } satisfies LivePayload),
    );
  }

  /** The provider a feed polls; throws a coded error for ids of unknown providers. */
  providerOf(spec: FeedSpec): ProviderView {
    const pid = spec.kind === 'status' ? spec.key : parseGlobalId(spec.key, 'job').providerId;
    const provider = this.store.providers.find(pid);
    if (!provider) throw new DomainError('NOT_FOUND', `provider "${pid}" is not configured`);
    return provider;
  }

  /** A bounded queue fed by the given feeds; return() on it (unsubscribe, disconnect) detaches everything. */
  subscribe(specs: readonly FeedSpec[], opts: SubscribeOptions): BoundedChannel<unknown> {
    const providers = specs.map((s) => this.providerOf(s));
    const channel = new FeedChannel(this, opts.capacity, opts.expand);
    this.channels.add(channel);
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i]!;
      const topic = topicOf(spec);
      let feed = this.feeds.get(topic);
      // A finished feed whose slow readers still drain it is left to them; a newcomer gets a new one.
      if (!feed || feed.isDone) this.feeds.set(topic, (feed = new Feed(topic, spec, providers[i]!, this)));
      const backfill = feed.backfill();
      if (backfill) channel.deliver(backfill);
      feed.sinks.add(channel);
      channel.attached.push(feed);
    }
    return channel;
  }

  /** A subscriber's channel closed (unsubscribe, disconnect, its feeds ended): it leaves its feeds. */
  release(channel: FeedChannel): void {
    this.channels.delete(channel);
    for (const feed of channel.attached) this.detach(feed, channel);
  }

  /** The latest sample of a job's utilization feed running on this replica (with every series it sampled), or null. */
  latestSample(jobId: string): SamplePayload | null {
    const feed = this.feeds.get(topicOf({ kind: 'utilization', key: jobId }));
    return feed && !feed.isDone ? feed.backfill() : null;
  }

  /**
   * Jobs whose utilization feed this replica polls now (it holds the feed's poll lock): the
   * collector counts them as collected by their feed, so a watched job is polled once per interval.
   */
  watchedJobs(): Set<string> {
    const prefix = topicOf({ kind: 'utilization', key: '' });
    const out = new Set<string>();
    for (const f of this.feeds.values()) if (f.isLeader && !f.isDone && f.topic.startsWith(prefix)) out.add(f.topic.slice(prefix.length));
    return out;
  }

  private detach(feed: Feed, sink: Sink) {
    feed.sinks.delete(sink);
    if (feed.sinks.size > 0) return;
    if (this.feeds.get(feed.topic) === feed) this.feeds.delete(feed.topic);
    void feed.stop();
  }

  /**
   * Whether the feed on `topic` is between two steps, its next one scheduled: a test on a clock
   * it moves itself advances the clock only then, never while a step is still under way.
   */
  feedWaiting(topic: string): boolean {
    return this.feeds.get(topic)?.isWaiting ?? false;
  }

  /** What runs now on this replica: tests and /metrics-style probes read it to prove there are no leaks. */
  stats() {
    const feeds = [...this.feeds.values()];
    return {
      feeds: feeds.length,
      leading: feeds.filter((f) => f.isLeader).map((f) => f.topic),
      subscribers: this.channels.size,
      /** Entries waiting in subscriber queues (each at most its capacity) and dropped so far for slow readers. */
      queued: [...this.channels].reduce((n, c) => n + c.length, 0),
      dropped: [...this.channels].reduce((n, c) => n + c.dropped, 0),
      polls: Object.fromEntries(feeds.map((f) => [f.topic, f.polls])),
    };
  }

  async close() {
    const feeds = [...this.feeds.values()];
    this.feeds.clear();
    await Promise.all(feeds.map((f) => f.stop()));
  }
}
