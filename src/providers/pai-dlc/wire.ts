// The PAI-DLC response bodies we read, validated defensively: fields may be missing or empty, and
// many numbers arrive as strings (NodeCount, RequestGPU, ResourceConfig.*, WorkspaceId, ...).
import { z } from 'zod';

/** A number the API may send as a number or as a string. */
const numberish = z.union([z.number(), z.string()]).nullish();
const text = z.string().nullish();

export const resourceConfig = z.object({
  CPU: numberish,
  GPU: numberish,
  GPUType: text,
  Memory: text,
  SharedMemory: text,
});

export const jobSpec = z.object({
  Type: text,
  PodCount: numberish,
  EcsSpec: text,
  Image: text,
  ResourceConfig: resourceConfig.nullish(),
});
export type WireJobSpec = z.infer<typeof jobSpec>;

interface WirePodShape {
  PodId?: string | null;
  PodUid?: string | null;
  Type?: string | null;
  Status?: string | null;
  GmtCreateTime?: string | null;
  GmtStartTime?: string | null;
  GmtFinishTime?: string | null;
  HistoryPods?: WirePodShape[] | null;
}

export const pod: z.ZodType<WirePodShape> = z.lazy(() =>
  z.object({
    PodId: text,
    PodUid: text,
    Type: text,
    Status: text,
    GmtCreateTime: text,
    GmtStartTime: text,
    GmtFinishTime: text,
    HistoryPods: z.array(pod).nullish(),
  }),
);
export type WirePod = WirePodShape;

export const jobItem = z.object({
  JobId: z.string().min(1),
  DisplayName: text,
  JobType: text,
  Status: text,
  WorkspaceId: z.union([z.string(), z.number()]).nullish(),
  WorkspaceName: text,
  ResourceType: text,
  /** The resource quota's id; empty for public (pay-as-you-go) resources. */
  ResourceId: text,
  UserId: text,
  Username: text,
  /** The startup command run on each node. */
  UserCommand: text,
  /** Environment variables the user set (SystemEnvs, the platform's own, are not read). */
  Envs: z.record(z.string(), z.string()).nullish(),
  ReasonCode: text,
  ReasonMessage: text,
  /** "used/max", e.g. "2/10". */
  RestartTimes: text,
  GmtCreateTime: text,
  GmtRunningTime: text,
  GmtFinishTime: text,
  GmtSuccessedTime: text,
  GmtFailedTime: text,
  GmtStoppedTime: text,
  NodeCount: numberish,
  RequestGPU: numberish,
  JobSpecs: z.array(jobSpec).nullish(),
  Pods: z.array(pod).nullish(),
});
export type WireJob = z.infer<typeof jobItem>;

export const listJobsResponse = z.object({
  Jobs: z.array(jobItem).nullish(),
  TotalCount: numberish,
});

export const getJobResponse = jobItem;

export const ecsSpec = z.object({
  InstanceType: z.string(),
  Gpu: numberish,
  GpuType: text,
  /** Memory of one GPU card in GiB (the SDK model's `GpuMemory: number`, example 80; unit our reading, unconfirmed). */
  GpuMemory: numberish,
});
export type WireEcsSpec = z.infer<typeof ecsSpec>;

export const listEcsSpecsResponse = z.object({
  EcsSpecs: z.array(ecsSpec).nullish(),
  TotalCount: numberish,
});

export const jobMetricsResponse = z.object({
  JobId: text,
  PodMetrics: z
    .array(
      z.object({
        PodId: z.string(),
        Metrics: z.array(z.object({ Time: numberish, Value: z.union([z.number(), z.string(), z.null()]).optional() })).nullish(),
      }),
    )
    .nullish(),
});
export type WireJobMetrics = z.infer<typeof jobMetricsResponse>;

/**
 * GetMetrics (GET /api/v1/cms/metrics), the CloudMonitor proxy, as the official SDK model
 * GetMetricsResponseBody has it: every field a string except Success, and DataPoints a JSON
 * *string* holding the points.
 */
export const cmsMetricsResponse = z.object({
  Code: text,
  Message: text,
  Success: z.union([z.boolean(), z.string()]).nullish(),
  NextToken: text,
  Period: numberish,
  DataPoints: text,
  RequestId: text,
});
export type WireCmsMetrics = z.infer<typeof cmsMetricsResponse>;

/**
 * One element of the decoded DataPoints. The SDK types DataPoints only as a string; CloudMonitor's
 * own DescribeMetricList points carry `timestamp` (epoch ms), the dimensions asked for and
 * `Average`/`Maximum`/`Minimum`, while PAI's proxy examples use `Value`. Our reading (unconfirmed):
 * `timestamp` in ms, and the value in `Value`, `value` or `Average`, in that order.
 */
export const cmsDataPoint = z
  .object({
    timestamp: numberish,
    Timestamp: numberish,
    Value: z.union([z.number(), z.string(), z.null()]).optional(),
    value: z.union([z.number(), z.string(), z.null()]).optional(),
    Average: z.union([z.number(), z.string(), z.null()]).optional(),
    pod: text,
    podId: text,
  })
  .passthrough();
export type WireCmsDataPoint = z.infer<typeof cmsDataPoint>;

export const podLogsResponse = z.object({
  PodId: text,
  PodUid: text,
  Logs: z.array(z.string()).nullish(),
});

/** Alibaba's error body; SDKs also accept lower-case keys. */
export const errorBody = z.object({
  Code: text,
  code: text,
  Message: text,
  message: text,
  RequestId: text,
  requestId: text,
});
