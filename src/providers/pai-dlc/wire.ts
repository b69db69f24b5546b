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
  GmtStartTime?: string | null;
  HistoryPods?: WirePodShape[] | null;
}

export const pod: z.ZodType<WirePodShape> = z.lazy(() =>
  z.object({
    PodId: text,
    PodUid: text,
    Type: text,
    Status: text,
    GmtStartTime: text,
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
