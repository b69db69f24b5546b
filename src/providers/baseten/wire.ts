// Baseten's wire format as the fact sheet documents it, validated at the edge so a shape change
// upstream is an UPSTREAM_BAD_RESPONSE and never a crash deeper in.
import { z } from 'zod';

export const pointSchema = z.object({ timestamp: z.string(), value: z.number().nullable() });
export type WirePoint = z.infer<typeof pointSchema>;

/**
 * A series' points, checked in place: z.array(pointSchema) is the same check, but zod copies
 * every point object it validates (a cold dashboard's answers hold millions; the copies were
 * a third of the validation's time and their collection more). Points are only read afterwards.
 */
const series = z.custom<WirePoint[]>(
  (v) => {
    if (!Array.isArray(v)) return false;
    for (const p of v) {
      if (typeof p !== 'object' || p === null || typeof p.timestamp !== 'string') return false;
      const value = p.value;
      if (value !== null && typeof value !== 'number') return false;
    }
    return true;
  },
  { message: 'expected an array of points ({ timestamp: string, value: number | null })' },
);
const rankMap = z.record(z.string(), series);
const storage = z.object({ usage_bytes: series.default([]), utilization: series.default([]) });

export const nodeMetricsSchema = z.object({
  gpu_utilization: rankMap.default({}),
  gpu_memory_usage_bytes: rankMap.default({}),
  cpu_usage: series.default([]),
  cpu_memory_usage_bytes: series.default([]),
  ephemeral_storage: storage.default({ usage_bytes: [], utilization: [] }),
});
export type WireNodeMetrics = z.infer<typeof nodeMetricsSchema>;

export const instanceTypeSchema = z.object({
  id: z.string(),
  name: z.string(),
  memory_limit_mib: z.number().nullable().optional(),
  millicpu_limit: z.number().nullable().optional(),
  gpu_count: z.number().int().nullable().optional(),
  gpu_type: z.string().nullable().optional(),
  gpu_memory_limit_mib: z.number().nullable().optional(),
});

export const trainingJobSchema = z.object({
  id: z.string(),
  name: z.string().nullable().optional(),
  created_at: z.string(),
  updated_at: z.string().optional(),
  current_status: z.string(),
  error_message: z.string().nullable().optional(),
  instance_type: instanceTypeSchema,
  training_project_id: z.string(),
  training_project: z.object({ id: z.string(), name: z.string() }).optional(),
  /** The creator. */
  user: z.object({ email: z.string().nullable().optional() }).nullable().optional(),
});
export type WireTrainingJob = z.infer<typeof trainingJobSchema>;

export const trainingProjectSchema = z.object({
  id: z.string(),
  name: z.string(),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
  team_name: z.string().nullable().optional(),
});

export const projectsResponse = z.object({ training_projects: z.array(trainingProjectSchema) });
export const searchResponse = z.object({ training_jobs: z.array(trainingJobSchema) });
export const jobResponse = z.object({ training_job: trainingJobSchema });

export const metricsResponse = nodeMetricsSchema.extend({
  cache: storage.nullable().optional(),
  training_job: trainingJobSchema.optional(),
  per_node_metrics: z.array(z.object({ node_id: z.string(), metrics: nodeMetricsSchema })).default([]),
});
export type WireMetrics = z.infer<typeof metricsResponse>;

export const logsResponse = z.object({
  logs: z.array(
    z.object({
      timestamp: z.string(),
      message: z.string(),
      replica: z.string().nullable().optional(),
      request_id: z.string().nullable().optional(),
      level: z.string().nullable().optional(),
    }),
  ),
});

/** GET /v1/training/jobs/{id}/queue_context (GetTrainingJobQueueContextResponseV1; unstable in the spec). */
export const queueContextResponse = z.object({
  target_job_id: z.string(),
  /** gpu_count x effective_node_count, the spec's own words. */
  requested_gpus: z.number().int().nullable().optional(),
  submitted_at: z.string().nullable().optional(),
  released_at: z.string().nullable().optional(),
  events: z
    .array(z.object({ training_job_id: z.string(), status: z.string(), created: z.string(), event_message: z.string().nullable().optional() }))
    .default([]),
});
export type WireQueueContext = z.infer<typeof queueContextResponse>;
