// The Runicorn viewer's bodies we read (its HTTP API has no envelope), validated at the edge: a
// shape change upstream is an UPSTREAM_BAD_RESPONSE, never a crash deeper in. Storage mode reads
// the files the SDK writes (storage-source.ts); their shapes are read leniently there.
import { z } from 'zod';

const runListItem = z.object({
  id: z.string().min(1),
  created_time: z.number().nullable().optional(),
  status: z.string().nullable().optional(),
  pid: z.number().nullable().optional(),
  path: z.string().nullable().optional(),
  alias: z.string().nullable().optional(),
  best_metric_value: z.number().nullable().optional(),
  best_metric_name: z.string().nullable().optional(),
  tags: z.array(z.string()).nullable().optional(),
});
export const runList = z.array(runListItem);

export const runDetail = z.object({
  id: z.string().min(1),
  status: z.string().nullable().optional(),
  path: z.string().nullable().optional(),
  alias: z.string().nullable().optional(),
  // Not in 0.6.0; newer viewers add them, and they are used when present.
  start_time: z.number().nullable().optional(),
  duration: z.number().nullable().optional(),
  summary: z.record(z.string(), z.unknown()).nullable().optional(),
  hostname: z.string().nullable().optional(),
  // assets.json as the run wrote it; `config` is what a script logged as its configuration.
  assets: z
    .object({ config: z.record(z.string(), z.unknown()).nullable().optional() })
    .loose()
    .nullable()
    .optional(),
});

const cell = z.union([z.number(), z.string(), z.boolean(), z.null()]);
export const metricsBody = z.object({
  columns: z.array(z.string()),
  rows: z.array(z.record(z.string(), cell)),
  total: z.number().int(),
});

export const errorBody = z.object({
  detail: z.union([z.string(), z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])).optional(), msg: z.string().optional() }).loose())]),
  retry_after: z.number().optional(),
});

/** `/api/gpu/telemetry` (runicorn/viewer/services/gpu.py): nvidia-smi's "N/A" arrives as null. */
const nullableNumber = z.number().nullable().optional();
export const gpuTelemetrySchema = z.object({
  available: z.boolean(),
  reason: z.string().optional(),
  ts: z.number().optional(),
  gpus: z
    .array(
      z.object({
        index: z.number().int(),
        name: z.string().nullable().optional(),
        util_gpu: nullableNumber,
        mem_used_mib: nullableNumber,
        mem_total_mib: nullableNumber,
        temp_c: nullableNumber,
        power_w: nullableNumber,
      }),
    )
    .optional(),
});
export type GpuTelemetryBody = z.infer<typeof gpuTelemetrySchema>;
/** The per-GPU readings of a telemetry answer (the numeric fields of a `gpus` element). */
export const GPU_TELEMETRY_READINGS = ['util_gpu', 'mem_used_mib', 'mem_total_mib', 'temp_c', 'power_w'] as const;
export type GpuTelemetryReading = (typeof GPU_TELEMETRY_READINGS)[number];
