import type { ProviderHealth as Health, ProviderView } from '../store/index.js';
import { builder } from './builder.js';
import { NodeInterfaceRef, ProviderRef, SourceErrorRef, type SourceErrorShape } from './refs.js';

export { ProviderRef };
import { HealthStateEnum, ProviderKindEnum, SystemMetricEnum } from './enums.js';
import { healthId, ID_DOCS } from './value-ids.js';

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

ProviderRef.implement({
  description: 'A configured platform instance (one Baseten org, one ModelArts project, ...)',
  interfaces: [NodeInterfaceRef],
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The id given in the providers file; the first part of every id below it' }),
    kind: t.field({ type: ProviderKindEnum, description: 'Which platform this is', resolve: (p) => p.kind }),
    name: t.exposeString('name', { description: 'A display name (the providers file `name`, default: the id)' }),
    simulated: t.exposeBoolean('simulated', { description: 'True for the built-in demo simulators' }),
    health: t.field({ type: HealthRef, description: 'How calls to this platform have gone lately', resolve: (p) => healthView(p) }),
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
