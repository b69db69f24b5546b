// Prometheus metrics of one runtime: GraphQL operations, HTTP requests, upstream calls per
// provider, cache hits and misses, live subscribers and pollers. Each runtime has its own registry
// (tests run several in one process); the process metrics (CPU, memory, event loop, GC) are
// registered once per process and merged in at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DomainError } from '../domain/errors.js';
import type { LiveHub } from '../live/index.js';
import type { ProviderSet } from '../providers/provider-set.js';
import { onShapeMismatch } from '../providers/shape-watch.js';
import type { AlertsStore, CacheObserver, CollectionStatus, PoolHealth } from '../store/index.js';
import type { Collector } from '../collect/index.js';

export const METRIC_PREFIX = 'training_graph_';

/** Distinct operation names kept as labels; later newcomers share one label so clients cannot blow up the series count. */
const MAX_OPERATION_NAMES = 200;
export const OTHER_OPERATION = '_other';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

let processRegistry: Registry | null = null;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: METRIC_PREFIX });
  }
  return processRegistry;
}

/** Counts of one label set not yet added to its counter. */
interface PendingCount {
  labels: Record<string, string>;
  n: number;
}

export interface OperationSeries {
  /** The duration histogram's labels. */
  labels: { operation: string; type: string };
  ok: PendingCount;
  error: PendingCount;
  /** Its durations (see SeriesHistogram). */
  duration: HistogramSeries;
}

/** One label set of a SeriesHistogram: per-bucket counts (not cumulative; the last is +Inf), sum and count. */
export interface HistogramSeries {
  readonly labels: Record<string, string>;
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram observed through a series found once per label set: an observation is a bucket
 * search and three additions (prom-client's observe validates and hashes the labels every time:
 * ~2 µs of a trivial query's ~130). Registered in prom-client's registries as a metric of its own
 * and scraped in exactly prom-client's histogram exposition (buckets, +Inf, _sum, _count).
 */
export class SeriesHistogram {
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly all = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly upperBounds: readonly number[],
    registers: Registry[],
  ) {
    for (const r of registers) r.registerMetric(this as unknown as Histogram);
  }

  /** The series of one label set (the same object for the same labels). */
  series(labels: Record<string, string>): HistogramSeries {
    const key = this.labelNames.map((n) => labels[n] ?? '').join('\u0000');
    let found = this.all.get(key);
    if (!found) this.all.set(key, (found = { labels, counts: new Array<number>(this.upperBounds.length + 1).fill(0), sum: 0, count: 0 }));
    return found;
  }

  observe(series: HistogramSeries, value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.upperBounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    series.counts[i]!++;
    series.sum += value;
    series.count++;
  }

  reset(): void {
    for (const s of this.all.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }

  /** What prom-client's Histogram hands its registry for the text exposition (series labels shared, `le` own). */
  async getForPromString() {
    const values: { labels: Record<string, string | number>; sharedLabels: Record<string, string>; value: number; metricName: string; exemplar?: null }[] = [];
    for (const s of this.all.values()) {
      if (s.count === 0) continue;
      let acc = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ labels: { le: this.upperBounds[i]! }, sharedLabels: s.labels, value: acc, metricName: `${this.name}_bucket`, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket`, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same with every value's labels whole (as prom-client's Histogram.get, e.g. for JSON). */
  async get() {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })),
    };
  }
}

export interface MetricsSources {
  providers: ProviderSet;
  readThrough: CacheObserver;
  live: LiveHub;
  /** The cache database's pool (store/db.ts Database.poolHealth), read at each scrape. */
  pool?: () => PoolHealth;
  /** The continuous collector; null or absent with COLLECT=off. */
  collector?: Collector | null;
  /** Alert delivery's notifications (read at each scrape: one statement) and whether this replica delivers. */
  alerts?: { store: AlertsStore; leading: () => boolean } | null;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly operationNames = new Set<string>();

  readonly operations = new Counter({
    name: `${METRIC_PREFIX}graphql_operations_total`,
    help: 'GraphQL operations executed (HTTP and graphql-ws), by operation name, type and outcome (error = the result carries errors)',
    labelNames: ['operation', 'type', 'outcome'] as const,
    registers: [this.registry],
    collect: () => this.flushCounts(),
  });

  /** Per operation label and type: its labels and its counts since the last scrape (see operationSeries). */
  private readonly series = new Map<string, OperationSeries>();
  /** The same series by the name as clients send it (bounded). */
  private readonly seriesByName = new Map<string, OperationSeries>();

  readonly operationDuration = new SeriesHistogram(
    `${METRIC_PREFIX}graphql_operation_duration_seconds`,
    'Execution time of GraphQL queries and mutations, by operation name and type',
    ['operation', 'type'],
    LATENCY_BUCKETS,
    [this.registry],
  );

  readonly httpRequests = new Counter({
    name: `${METRIC_PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by route and status code',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
    collect: () => this.flushCounts(),
  });

  /** HTTP requests answered since the last scrape, by route and status (see httpAnswered). */
  private readonly answered = new Map<string, Map<number, PendingCount>>();

  /** Where the in-flight gauge reads its value when scraped (the HTTP front counts requests anyway). */
  private inFlightSource: (() => number) | null = null;

  readonly httpInFlight = new Gauge({
    name: `${METRIC_PREFIX}http_requests_in_flight`,
    help: 'HTTP requests being served (SSE subscription streams excluded)',
    registers: [this.registry],
    collect: () => {
      if (this.inFlightSource) this.httpInFlight.set(this.inFlightSource());
    },
  });

  /** The HTTP requests being served now, read at each scrape. */
  countInFlight(source: () => number): void {
    this.inFlightSource = source;
  }

  readonly upstreamCalls = new Counter({
    name: `${METRIC_PREFIX}upstream_calls_total`,
    help: 'Calls to a training platform, by provider id, kind and outcome',
    labelNames: ['provider', 'kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamErrors = new Counter({
    name: `${METRIC_PREFIX}upstream_errors_total`,
    help: 'Failed calls to a training platform, by provider and error code (UPSTREAM_RATE_LIMITED, UPSTREAM_TIMEOUT, ...)',
    labelNames: ['provider', 'kind', 'code'] as const,
    registers: [this.registry],
  });

  readonly upstreamDuration = new Histogram({
    name: `${METRIC_PREFIX}upstream_call_duration_seconds`,
    help: 'Duration of calls to a training platform (one call may page through several HTTP requests)',
    labelNames: ['provider', 'kind'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly secretFindings = new Counter({
    name: `${METRIC_PREFIX}secret_findings_total`,
    help: 'Outgoing payloads in which the last-line check found (and masked) a provider secret, by transport; anything above 0 is a bug to report',
    labelNames: ['transport'] as const,
    registers: [this.registry],
  });

  readonly wsNextMessages = new Counter({
    name: `${METRIC_PREFIX}graphql_ws_next_messages_total`,
    help: "graphql-ws `next` messages by payload: shared = a shared subscription event's payload serialised once for all its subscribers, own = serialised for this subscriber (queries, other subscriptions, results a plugin changed)",
    labelNames: ['payload'] as const,
    registers: [this.registry],
  });

  readonly wsSharedPayloads = new Counter({
    name: `${METRIC_PREFIX}graphql_ws_shared_payloads_total`,
    help: 'Shared subscription payloads serialised (once per event and operation, whatever the number of subscribers)',
    registers: [this.registry],
  });

  readonly cacheLookups = new Counter({
    name: `${METRIC_PREFIX}cache_lookups_total`,
    help: 'Read-through cache lookups by dataset (metrics, training, progress): hit = answered from Postgres, miss = fetched upstream',
    labelNames: ['dataset', 'result'] as const,
    registers: [this.registry],
  });

  readonly shapeMismatches = new Counter({
    name: `${METRIC_PREFIX}upstream_shape_mismatches_total`,
    help: 'Answers from a training platform that contradicted an unconfirmed reading of its API (see the warning logged with each), by provider and assumption',
    labelNames: ['provider', 'assumption'] as const,
    registers: [this.registry],
  });

  /** Stops counting shape mismatches (the listener is process-wide). */
  readonly dispose: () => void;

  constructor(sources: MetricsSources) {
    registerPoolGauges({ registry: this.registry, pool: sources.pool });
    const ownProviders = new Set(sources.providers.all().map((p) => p.id));
    this.dispose = onShapeMismatch((m) => {
      if (ownProviders.has(m.providerId)) this.shapeMismatches.inc({ provider: m.providerId, assumption: m.assumption });
    });
    const lookups = new Map<string, { hits: number; misses: number }>();
    new Gauge({
      name: `${METRIC_PREFIX}cache_hit_ratio`,
      help: 'Share of cache lookups answered without an upstream call since start, by dataset',
      labelNames: ['dataset'] as const,
      registers: [this.registry],
      collect() {
        for (const [dataset, n] of lookups) if (n.hits + n.misses > 0) this.set({ dataset }, n.hits / (n.hits + n.misses));
      },
    });
    sources.readThrough.observeLookups((dataset, hits, misses) => {
      const n = lookups.get(dataset) ?? { hits: 0, misses: 0 };
      n.hits += hits;
      n.misses += misses;
      lookups.set(dataset, n);
      if (hits) this.cacheLookups.inc({ dataset, result: 'hit' }, hits);
      if (misses) this.cacheLookups.inc({ dataset, result: 'miss' }, misses);
    });

    sources.providers.observe(({ providerId, kind }) => {
      const end = this.upstreamDuration.startTimer({ provider: providerId, kind });
      return (error) => {
        end();
        this.upstreamCalls.inc({ provider: providerId, kind, outcome: error ? 'error' : 'ok' });
        if (error) this.upstreamErrors.inc({ provider: providerId, kind, code: error instanceof DomainError ? error.code : 'INTERNAL' });
      };
    });

    const readThrough = sources.readThrough;
    new Gauge({
      name: `${METRIC_PREFIX}cache_writes_pending`,
      help: 'Cache writes of fetched data not yet committed (answers go out before their write commits; a crash only means a later fetch)',
      registers: [this.registry],
      collect() {
        this.set(readThrough.pendingWrites());
      },
    });

    const live = sources.live;
    new Gauge({
      name: `${METRIC_PREFIX}live_subscribers`,
      help: 'Live subscriptions (graphql-ws and SSE) open on this replica',
      registers: [this.registry],
      collect() {
        this.set(live.stats().subscribers);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}live_pollers`,
      help: 'Live feeds (one per job or provider, shared by its subscribers) open on this replica',
      registers: [this.registry],
      collect() {
        this.set(live.stats().feeds);
      },
    });
    new Gauge({
      name: `${METRIC_PREFIX}live_pollers_leading`,
      help: 'Live feeds this replica polls upstream itself (it holds their poll lock)',
      registers: [this.registry],
      collect() {
        this.set(live.stats().leading.length);
      },
    });

    // The collector's state per provider, the same numbers Provider.collection answers in the graph.
    registerCollectorGauges({ registry: this.registry, collector: sources.collector });

    // Alert delivery: notifications per receiver and state as stored (every replica sees the same), and the lease.
    const alerts = sources.alerts ?? null;
    if (alerts) {
      new Gauge({
        name: `${METRIC_PREFIX}alert_notifications`,
        help: 'Finding notifications per receiver and delivery state (PENDING, DELIVERED, SILENCED, SUPPRESSED, FAILED), as stored',
        labelNames: ['receiver', 'state'] as const,
        registers: [this.registry],
        async collect() {
          // A scrape while the database is away keeps the last numbers rather than failing whole.
          const rows = await alerts.store.stateCounts().catch(() => null);
          if (!rows) return;
          this.reset();
          for (const r of rows) this.set({ receiver: r.receiver, state: r.state }, r.n);
        },
      });
      new Gauge({
        name: `${METRIC_PREFIX}alert_delivery_leading`,
        help: '1 when this replica holds the alert delivery lease and sends notifications',
        registers: [this.registry],
        collect() {
          this.set(alerts.leading() ? 1 : 0);
        },
      });
    }
  }

  /** Attempts and decisions of alert delivery on this replica, by receiver and outcome (delivered, retry, failed, silenced, suppressed). */
  readonly alertOutcomes = new Counter({
    name: `${METRIC_PREFIX}alert_notification_outcomes_total`,
    help: 'Alert delivery on this replica: attempts and decisions by receiver and outcome (delivered, retry, failed, silenced, suppressed)',
    labelNames: ['receiver', 'outcome'] as const,
    registers: [this.registry],
  });

  /**
   * The series of one operation name and type, found once: a request only adds 1 to a number
   * (ok or error) and observes its duration; the counter takes the sums when scraped (prom-client
   * hashes and validates the labels of every inc).
   */
  operationSeries(name: string | null | undefined, type: string): OperationSeries {
    const key = `${type}\u0000${name ?? ''}`;
    const known = this.seriesByName.get(key);
    if (known) return known;
    const operation = this.operationLabel(name);
    const labelKey = `${type}\u0000${operation}`;
    let found = this.series.get(labelKey);
    if (!found) {
      const labels = { operation, type };
      found = {
        labels,
        ok: { labels: { operation, type, outcome: 'ok' }, n: 0 },
        error: { labels: { operation, type, outcome: 'error' }, n: 0 },
        duration: this.operationDuration.series(labels),
      };
      this.series.set(labelKey, found);
    }
    // Client-chosen names beyond the cap are cleaned and looked up again each time.
    if (this.seriesByName.size < 4 * MAX_OPERATION_NAMES) this.seriesByName.set(key, found);
    return found;
  }

  /** The series of an operation kind (plugins/operation.ts keeps one object per document and name): a WeakMap lookup per operation, no key string. */
  seriesOf(kind: { name: string | null; type: string }): OperationSeries {
    let found = this.seriesByKind.get(kind);
    if (!found) this.seriesByKind.set(kind, (found = this.operationSeries(kind.name, kind.type)));
    return found;
  }

  private readonly seriesByKind = new WeakMap<object, OperationSeries>();

  /** One HTTP request answered (counted at the next scrape). */
  httpAnswered(route: string, status: number): void {
    // Two lookups, no key string: this runs once per HTTP request.
    let byStatus = this.answered.get(route);
    if (!byStatus) this.answered.set(route, (byStatus = new Map()));
    let count = byStatus.get(status);
    if (!count) byStatus.set(status, (count = { labels: { route, status: String(status) }, n: 0 }));
    count.n++;
  }

  private flushCounts(): void {
    const flush = (c: PendingCount, counter: Counter<string>) => {
      if (c.n === 0) return;
      counter.inc(c.labels, c.n);
      c.n = 0;
    };
    for (const s of this.series.values()) {
      flush(s.ok, this.operations);
      flush(s.error, this.operations);
    }
    for (const byStatus of this.answered.values()) for (const c of byStatus.values()) flush(c, this.httpRequests);
  }

  /** A bounded label for a client-chosen operation name. */
  operationLabel(name: string | null | undefined): string {
    const clean = (name ?? '').replace(/[^A-Za-z0-9_]/g, '').slice(0, 64) || 'anonymous';
    if (this.operationNames.has(clean)) return clean;
    if (this.operationNames.size >= MAX_OPERATION_NAMES) return OTHER_OPERATION;
    this.operationNames.add(clean);
    return clean;
  }

  contentType(): string {
    return this.registry.contentType;
  }

  async scrape(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }
}

/** The cache database pool's gauges, read at each scrape (none without a pool). */
function registerPoolGauges(ctx: { registry: Registry; pool: (() => PoolHealth) | undefined }): void {
  const { registry, pool } = ctx;
  if (pool) {
    const gauge = (name: string, help: string, read: (h: PoolHealth) => number) =>
      new Gauge({
        name: `${METRIC_PREFIX}${name}`,
        help,
        registers: [registry],
        collect() {
          this.set(read(pool()));
        },
      });
    gauge('db_pool_slots', "Connections the cache database's pool opens at most (PGlite: 1, its statement gate)", (h) => h.max);
    gauge('db_pool_slots_in_use', 'Pool connections running a statement or held by a transaction', (h) => h.inUse);
    gauge('db_pool_waiting', 'Statements waiting for a pool connection', (h) => h.waiting);
    gauge(
      'db_pool_oldest_wait_seconds',
      'How long the statement waiting longest for a pool connection has waited (0 when none waits)',
      (h) => h.oldestWaitMs / 1000,
    );
    gauge(
      'db_pool_recoveries',
      'Times the pool watchdog found the pool wedged (waiters, no reply, its backends idle) and replaced its stuck connections',
      (h) => h.recoveries,
    );
    gauge(
      'db_statements_dropped',
      'Reads not run because their request had been abandoned (timed out, client gone) before their turn (PGlite)',
      (h) => h.dropped,
    );
  }
}

/** The collector's gauges per provider (no series with COLLECT=off). */
function registerCollectorGauges(ctx: { registry: Registry; collector: Collector | null | undefined }): void {
  const { registry } = ctx;
  const collector = ctx.collector ?? null;
  const perProvider = (name: string, help: string, read: (s: CollectionStatus) => number) =>
    new Gauge({
      name: `${METRIC_PREFIX}collection_${name}`,
      help,
      labelNames: ['provider'] as const,
      registers: [registry],
      collect() {
        this.reset();
        if (collector) for (const [provider, s] of collector.statuses()) this.set({ provider }, read(s));
      },
    });
  perProvider('enabled', '1 when this replica runs a collector for the provider (COLLECT on)', (s) => (s.enabled ? 1 : 0));
  perProvider('leading', '1 when this replica holds the provider collector lease and collects', (s) => (s.leading ? 1 : 0));
  perProvider('tracked_jobs', 'Jobs the collector keeps: running ones and finished ones not yet fetched whole', (s) => s.trackedJobs);
  perProvider('running_jobs', 'Running jobs of the provider, as of the last sweep', (s) => s.runningJobs);
  perProvider('last_sweep_timestamp_seconds', 'When the last sweep ended, Unix seconds (0 = none yet)', (s) =>
    s.lastSweepAt ? s.lastSweepAt.getTime() / 1000 : 0,
  );
  perProvider('lag_seconds', 'How far the least recently collected running job is behind its poll interval, seconds', (s) => s.lagSeconds);
  perProvider('calls_last_minute', 'Upstream calls to the provider in the last 60 s (every caller)', (s) => s.callsLastMinute);
  perProvider('budget_calls_per_minute', 'The most upstream calls per minute the collector lets the provider see', (s) => s.budgetPerMinute);
  perProvider('backlog_jobs', 'Jobs due in the last sweep that were not collected (budget, time or failures)', (s) => s.backlog);
  perProvider('expired_jobs', 'Finished jobs the platform dropped before they were fetched whole', (s) => s.expired);
}
