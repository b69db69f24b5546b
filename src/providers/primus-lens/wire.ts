// The Lens payloads the adapter reads, validated defensively. Go encodes nil slices and maps as
// null, so every list and map accepts null (read as empty); unknown keys are ignored.
import { z } from 'zod';

const list = <T extends z.ZodType>(item: T) =>
  z
    .array(item)
    .nullish()
    .transform((v) => v ?? []);
const gpuAllocation = z
  .record(z.string(), z.number())
  .nullish()
  .transform((v) => v ?? {});
/** float64 values: a number, or (defensively) a string such as "NaN" that becomes a gap. */
const floatValue = z.union([z.number(), z.string()]).nullish();

export const workloadListItemSchema = z.object({
  kind: z.string(),
  name: z.string(),
  namespace: z.string(),
  uid: z.string().min(1),
  gpu_allocated: z.number().nullish(),
  gpu_allocation: gpuAllocation,
  status: z.string(),
  start_at: z.number().nullish(),
  end_at: z.number().nullish(),
});
export type WorkloadListItem = z.infer<typeof workloadListItemSchema>;

export const workloadListSchema = z.object({ data: list(workloadListItemSchema), total: z.number().int().nonnegative() });

export const workloadMetadataSchema = z.object({ namespaces: list(z.string()) });

const podSchema = z.object({
  podUid: z.string(),
  podName: z.string(),
  nodeName: z.string().nullish(),
  gpuAllocated: z.number().nullish(),
  phase: z.string().nullish(),
  createdAt: z.number().nullish(),
  updatedAt: z.number().nullish(),
});
export type LensPod = z.infer<typeof podSchema>;

export const workloadDetailSchema = z.object({
  kind: z.string(),
  name: z.string(),
  namespace: z.string(),
  uid: z.string().min(1),
  gpu_allocation: gpuAllocation,
  pods: list(podSchema),
  startTime: z.number().nullish(),
  endTime: z.number().nullish(),
});
export type WorkloadDetail = z.infer<typeof workloadDetailSchema>;

export const diagPodsSchema = z.object({
  pods: list(
    z.object({
      name: z.string(),
      node_name: z.string().nullish(),
      gpu_allocated: z.number().nullish(),
      gpu_model: z.string().nullish(),
    }),
  ),
});

export const metricsGraphSchema = z.object({
  series: list(
    z.object({
      labels: z
        .record(z.string(), z.string())
        .nullish()
        .transform((v) => v ?? {}),
      values: list(z.object({ timestamp: z.number(), value: floatValue })),
    }),
  ),
  config: z.object({ y_axis_unit: z.string().nullish() }).nullish(),
});
export type MetricsGraph = z.infer<typeof metricsGraphSchema>;

/** `/workloads/{uid}/metrics`: graphs keyed by display name; each key is validated when read. */
export const workloadMetricsSchema = z.record(z.string(), z.unknown());

export const nodeGpuMetricsSchema = z.object({ gpu_utilization: metricsGraphSchema.nullish() });

export const dataSourcesSchema = z.object({ data_sources: list(z.object({ name: z.string(), count: z.number().nullish() })) });

export const availableMetricsSchema = z.object({
  metrics: list(z.object({ name: z.string(), data_source: list(z.string()), count: z.number().nullish() })),
});

export const trainingPointSchema = z.object({
  metric_name: z.string(),
  value: floatValue,
  timestamp: z.number(),
  iteration: z.number().int(),
  data_source: z.string().nullish(),
});
export type TrainingPoint = z.infer<typeof trainingPointSchema>;

export const metricsDataSchema = z.object({ data_source: z.string().nullish(), data: list(trainingPointSchema) });

/** `/training-metrics/data` (unified route): one result per asked metric, each a list of Prometheus series. */
export const unifiedDataSchema = z.object({
  results: list(
    z.object({
      name: z.string(),
      unit: z.string().nullish(),
      agg_level: z.string().nullish(),
      series: metricsGraphSchema.shape.series,
    }),
  ),
});
export type UnifiedData = z.infer<typeof unifiedDataSchema>;
