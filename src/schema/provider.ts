import type { CollectionStatus, ProviderHealth as Health, ProviderView } from '../store/index.js';
import { builder } from './builder.js';
import { NodeInterfaceRef, ProviderRef, SourceErrorRef, type SourceErrorShape } from './refs.js';

export { ProviderRef };
import { HealthStateEnum, ProviderKindEnum, SystemMetricEnum } from './enums.js';
import { collectionId, healthId, ID_DOCS } from './value-ids.js';

/** A provider's health; its id is derived from the provider's. */
export interface HealthView extends Health {
  providerId: string;
  /** Set when Query.node answered it: the id asked. */
  id?: string;
}

export const healthView = (p: ProviderView): HealthView => ({ ...p.health(), providerId: p.id });

/** The latest failure, as ProviderHealth.lastError answers it. */
export const healthError = (h: HealthView): SourceErrorShape | null =>
  h.lastError ? { ...h.lastError, stale: false, ownerId: h.id ?? healthId(h.providerId) } : null;

const HealthRef = builder.objectRef<HealthView>('ProviderHealth');
const CircuitStateEnum = builder.enumType('CircuitState', {
  description: "A provider's circuit breaker: OPEN refuses calls for a while after repeated failures, HALF_OPEN lets one trial call through",
  values: {
    CLOSED: { description: 'Calls go through' },
    OPEN: { description: 'Calls are refused (UPSTREAM_UNAVAILABLE) until retryAt' },
    HALF_OPEN: { description: 'One trial call is let through; its outcome closes or reopens the circuit' },
  },
});

HealthRef.implement({
  description: 'How calls to this platform have gone lately, as seen by this server',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.ProviderHealth, resolve: (h) => h.id ?? healthId(h.providerId) }),
    state: t.field({ type: HealthStateEnum, description: 'The summary: OK, DEGRADED, DOWN or UNKNOWN', resolve: (h) => h.state }),
    lastSuccessAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When a call last succeeded; null if none has since start',
      resolve: (h) => h.lastSuccessAt,
    }),
    lastErrorAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When a call last failed; null if none has since start',
      resolve: (h) => h.lastErrorAt,
    }),
    lastError: t.field({
      type: SourceErrorRef,
      nullable: true,
      description: 'The latest failure; null if none since start',
      resolve: (h) => healthError(h),
    }),
    consecutiveFailures: t.exposeInt('consecutiveFailures', { description: 'Failed calls in a row since the last success (a count)' }),
    circuit: t.field({ type: CircuitStateEnum, description: "The circuit breaker's position", resolve: (h) => h.circuit }),
    retryAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'While the circuit is open: when a trial call is next let through',
      resolve: (h) => h.retryAt,
    }),
  }),
});

const OFF: CollectionStatus = {
  enabled: false,
  leading: false,
  trackedJobs: 0,
  runningJobs: 0,
  lastSweepAt: null,
  lagSeconds: 0,
  callsLastMinute: 0,
  budgetPerMinute: 0,
  maxConcurrent: 0,
  intervalSeconds: 0,
  backlog: 0,
  expired: 0,
  lastError: null,
};

/** A provider's collection; its id is derived from the provider's. */
export interface CollectionView extends CollectionStatus {
  providerId: string;
  /** Set when Query.node answered it: the id asked. */
  id?: string;
}

export const collectionView = (p: ProviderView): CollectionView => ({ ...(p.collection() ?? OFF), providerId: p.id });

/** The latest failure, as ProviderCollection.lastError answers it. */
export const collectionError = (c: CollectionView): SourceErrorShape | null =>
  c.lastError
    ? { code: c.lastError.code, message: c.lastError.message, stale: false, providerId: c.providerId, ownerId: c.id ?? collectionId(c.providerId) }
    : null;

const CollectionRef = builder.objectRef<CollectionView>('ProviderCollection');
CollectionRef.implement({
  description:
    "How this server keeps the platform's data without anyone asking: a sweep per interval syncs the job list, brings every running job up to now and fetches finished jobs whole before the platform's retention ends (docs/collection.md)",
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.id({ description: ID_DOCS.ProviderCollection, resolve: (c) => c.id ?? collectionId(c.providerId) }),
    enabled: t.exposeBoolean('enabled', { description: "False with COLLECT=off (or the provider's collect.enabled: false): data is fetched only when asked" }),
    leading: t.exposeBoolean('leading', {
      description: 'True when this replica holds the provider collector lease (one replica collects a provider; the others stand by)',
    }),
    trackedJobs: t.exposeInt('trackedJobs', { description: 'Jobs kept as of the last sweep: running ones and finished ones not yet fetched whole (a count)' }),
    runningJobs: t.exposeInt('runningJobs', { description: 'Running jobs as of the last sweep (a count)' }),
    lastSweepAt: t.field({ type: 'DateTime', nullable: true, description: 'When the last sweep ended; null before the first', resolve: (s) => s.lastSweepAt }),
    lag: t.float({
      description: 'Seconds the least recently collected running job is behind its interval (0 = every running job is current)',
      resolve: (s) => s.lagSeconds,
    }),
    intervalSeconds: t.float({ description: 'Seconds between sweeps (default the provider poll interval)', resolve: (s) => s.intervalSeconds }),
    callsLastMinute: t.exposeInt('callsLastMinute', { description: 'Upstream calls to the platform in the last 60 s, by every caller (a count)' }),
    budgetPerMinute: t.exposeInt('budgetPerMinute', {
      description: 'The most calls per minute the collector lets the platform see (collect.callsPerMinute; default per platform, docs/collection.md)',
    }),
    backlog: t.exposeInt('backlog', {
      description: 'Jobs due in the last sweep that were not collected: the budget or time ran out, or their fetch failed (a count; 0 = nothing skipped)',
    }),
    expired: t.exposeInt('expired', { description: 'Finished jobs the platform dropped (retention) before they were fetched whole (a count)' }),
    lastError: t.field({
      type: SourceErrorRef,
      nullable: true,
      description:
        'What failed in the latest sweep (the job list, a job or the lease try; the last failure that sweep met); null when the latest sweep or lease try went clean, so a monitor alerting on it clears once collection recovers',
      resolve: (c) => collectionError(c),
    }),
    lastErrorAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When lastError happened (the server clock); null when lastError is null',
      resolve: (c) => c.lastError?.at ?? null,
    }),
  }),
});

ProviderRef.implement({
  description: 'A configured platform instance (one Baseten org, one ModelArts project, ...)',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The id given in the providers file; the first part of every id below it' }),
    kind: t.field({ type: ProviderKindEnum, description: 'Which platform this is', resolve: (p) => p.kind }),
    name: t.exposeString('name', { description: 'A display name (the providers file `name`, default: the id)' }),
    simulated: t.exposeBoolean('simulated', { description: 'True for the built-in demo simulators' }),
    health: t.field({ type: HealthRef, description: 'How calls to this platform have gone lately', resolve: (p) => healthView(p) }),
    collection: t.field({
      type: CollectionRef,
      description: "The platform's continuous collection on this replica (enabled false when COLLECT=off)",
      resolve: (p) => collectionView(p),
    }),
    systemMetrics: t.field({
      type: [SystemMetricEnum],
      description: 'The system metrics this platform reports',
      resolve: (p) => [...p.capabilities.systemMetrics],
    }),
    perGpuSeries: t.boolean({
      description: 'Whether the platform reports real per-GPU series (otherwise GPU metrics are node aggregates)',
      resolve: (p) => p.capabilities.perGpuSeries,
    }),
  }),
});

builder.queryField('providers', (t) =>
  t.field({
    type: [ProviderRef],
    description: 'Every configured platform, with its health',
    resolve: (_r, _a, ctx) => ctx.store.providers.all(),
  }),
);
