// The ModelArts (API v2) bodies we read, validated at the edge: a shape change upstream is an
// UPSTREAM_BAD_RESPONSE, never a crash deeper in. Times: metadata.create_time and status.start_time
// in epoch ms, status.duration in ms, running_records in epoch seconds.
import { z } from 'zod';

const nullableString = z.string().nullish();
const countLike = z.union([z.number(), z.string()]).nullish();

const deviceSchema = z.object({ unit_num: countLike, product_name: nullableString, memory: nullableString }).nullish();

export const jobSchema = z.object({
  metadata: z.object({
    id: z.string().min(1),
    name: z.string(),
    workspace_id: nullableString,
    create_time: z.number().nullish(),
    user_name: nullableString,
    /** Free-form key/value pairs (job_template, fault-tolerance settings, ...). */
    annotations: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).nullish(),
  }),
  /** The official SDK's JobAlgorithmResponse: what the job was launched with. */
  algorithm: z
    .object({
      command: nullableString,
      boot_file: nullableString,
      engine: z.object({ engine_name: nullableString, engine_version: nullableString, image_url: nullableString }).nullish(),
      /** Hyperparameters: [{name, value, description?, constraint?}]. */
      parameters: z.array(z.object({ name: z.string(), value: z.union([z.string(), z.number(), z.boolean()]).nullish() })).nullish(),
      /** The SDK types it a list of string maps. */
      environments: z.array(z.record(z.string(), z.string())).nullish(),
    })
    .nullish(),
  status: z.object({
    phase: z.string(),
    secondary_phase: nullableString,
    duration: z.number().nullish(),
    start_time: z.number().nullish(),
    tasks: z.array(z.string()).nullish(),
    /** Not in the v2 field tables we have; read if present (unconfirmed). */
    reason: nullableString,
    task_statuses: z.array(z.object({ task: nullableString, exit_code: z.number().nullish(), message: nullableString })).nullish(),
    /** One record per run of the job: the first starts it, each later one is a restart. */
    running_records: z
      .array(
        z.object({
          /** epoch seconds */
          start_at: z.number().nullish(),
          /** epoch seconds; 0 while the run goes on */
          end_at: z.number().nullish(),
          start_type: nullableString,
          end_reason: nullableString,
          end_related_task: nullableString,
        }),
      )
      .nullish(),
  }),
  spec: z
    .object({
      resource: z
        .object({
          flavor_id: nullableString,
          node_count: z.number().int().nullish(),
          flavor_detail: z
            .object({
              flavor_type: nullableString,
              flavor_info: z.object({ gpu: deviceSchema, npu: deviceSchema }).nullish(),
            })
            .nullish(),
        })
        .nullish(),
    })
    .nullish(),
});
export type ModelArtsJob = z.infer<typeof jobSchema>;

export const searchResponseSchema = z.object({
  total: z.number().nullish(),
  count: z.number().nullish(),
  items: z.array(jobSchema),
});

export const metricsResponseSchema = z.object({
  metrics: z.array(z.object({ metric: z.string(), value: z.array(z.number().nullable()) })),
});
export type MetricsResponse = z.infer<typeof metricsResponseSchema>;

export const logPreviewSchema = z.object({
  // Named `context` before 2022-03-01.
  content: z.string().nullish(),
  context: z.string().nullish(),
  current_size: z.number().nullish(),
  full_size: z.number().nullish(),
});
