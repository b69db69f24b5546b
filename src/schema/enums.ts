// The contract's enums, generated from the domain's lists so the two can never drift.
import { ACCELERATOR_KINDS, AGGREGATIONS, JOB_STATUSES, METRIC_SCOPES, METRIC_UNITS, PROVIDER_KINDS, SYSTEM_METRICS } from '../domain/types.js';
import { METRIC_CATALOG } from '../domain/metric-catalog.js';
import { builder } from './builder.js';

export const ProviderKindEnum = builder.enumType('ProviderKind', { values: PROVIDER_KINDS });
export const JobStatusEnum = builder.enumType('JobStatus', { values: JOB_STATUSES });
export const MetricUnitEnum = builder.enumType('MetricUnit', { values: METRIC_UNITS });
export const MetricScopeEnum = builder.enumType('MetricScope', { values: METRIC_SCOPES });
export const AggregationEnum = builder.enumType('Aggregation', {
  description: 'How points are combined when a series is downsampled to maxPoints',
  values: AGGREGATIONS,
});
export const SystemMetricEnum = builder.enumType('SystemMetric', {
  values: Object.fromEntries(
    SYSTEM_METRICS.map((m) => {
      const def = METRIC_CATALOG.get(m)!;
      return [m, { description: `${def.description} (${def.unit})` }];
    }),
  ) as Record<(typeof SYSTEM_METRICS)[number], { description: string }>,
});
export const HealthStateEnum = builder.enumType('HealthState', { values: ['OK', 'DEGRADED', 'DOWN', 'UNKNOWN'] as const });
export const AcceleratorKindEnum = builder.enumType('AcceleratorKind', {
  description: 'What kind of accelerator a job holds',
  values: {
    GPU: { description: 'Graphics processors (NVIDIA, AMD, ...)' },
    NPU: { description: 'Neural processors (Huawei Ascend, ...)' },
    NONE: { description: 'No accelerator: a CPU-only job' },
  } satisfies Record<(typeof ACCELERATOR_KINDS)[number], { description: string }>,
});
