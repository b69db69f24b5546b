import type { ProviderHealth as Health, ProviderView } from '../store/index.js';
import { builder } from './builder.js';
import { HealthStateEnum, ProviderKindEnum, SystemMetricEnum } from './enums.js';

export const ProviderRef = builder.objectRef<ProviderView>('Provider');
const HealthRef = builder.objectRef<Health>('ProviderHealth');
const CircuitStateEnum = builder.enumType('CircuitState', {
  description: "A provider's circuit breaker: OPEN refuses calls for a while after repeated failures, HALF_OPEN lets one trial call through",
  values: ['CLOSED', 'OPEN', 'HALF_OPEN'] as const,
});
export const SourceErrorRef = builder.objectRef<{ code: string; message: string }>('SourceError');

SourceErrorRef.implement({
  description: 'Why data from a platform could not be refreshed (secrets and internals never appear here)',
  fields: (t) => ({
    code: t.exposeString('code'),
    message: t.exposeString('message'),
  }),
});

HealthRef.implement({
  description: 'How calls to this platform have gone lately, as seen by this server',
  fields: (t) => ({
    state: t.field({ type: HealthStateEnum, resolve: (h) => h.state }),
    lastSuccessAt: t.field({ type: 'DateTime', nullable: true, resolve: (h) => h.lastSuccessAt }),
    lastErrorAt: t.field({ type: 'DateTime', nullable: true, resolve: (h) => h.lastErrorAt }),
    lastError: t.field({ type: SourceErrorRef, nullable: true, resolve: (h) => h.lastError }),
    consecutiveFailures: t.exposeInt('consecutiveFailures'),
    circuit: t.field({ type: CircuitStateEnum, resolve: (h) => h.circuit }),
    retryAt: t.field({ type: 'DateTime', nullable: true, description: 'While the circuit is open: when a trial call is next let through', resolve: (h) => h.retryAt }),
  }),
});

ProviderRef.implement({
  description: 'A configured platform instance (one Baseten org, one ModelArts project, ...)',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The id given in the providers file; the first part of every id below it' }),
    kind: t.field({ type: ProviderKindEnum, resolve: (p) => p.kind }),
    name: t.exposeString('name'),
    simulated: t.exposeBoolean('simulated', { description: 'True for the built-in demo simulators' }),
    health: t.field({ type: HealthRef, resolve: (p) => p.health() }),
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
