// The contract's enums, generated from the domain's lists so the two can never drift.
import { type ACCELERATOR_KINDS, AGGREGATIONS, JOB_STATUSES, METRIC_SCOPES, METRIC_UNITS, START_SOURCES, SYSTEM_METRICS } from '../domain/types.js';
import { METRIC_CATALOG } from '../domain/metric-catalog.js';
import { PROVIDER_KIND_DOCS } from '../providers/platforms.js';
import { builder } from './builder.js';

/** Enum values with their descriptions, checked to cover exactly the domain's list. */
function documented<T extends string>(values: readonly T[], docs: Record<T, string>) {
  return Object.fromEntries(values.map((v) => [v, { description: docs[v] }])) as Record<T, { description: string }>;
}

export const ProviderKindEnum = builder.enumType('ProviderKind', {
  description: 'Which training platform a provider is',
  // Each platform module's own description (src/providers/<name>/index.ts), in the list's order.
  values: PROVIDER_KIND_DOCS,
});
const JOB_STATUS_DOCS = {
  PENDING: 'Submitted, not running yet (queued, scheduling, creating)',
  RUNNING: 'Running (including restarting and stopping in progress)',
  SUCCEEDED: 'Ended successfully (terminal)',
  FAILED: 'Ended with an error (terminal)',
  STOPPED: 'Stopped or cancelled by a user (terminal)',
  UNKNOWN: 'A platform status this server does not recognise (see rawStatus)',
} as const;
export const JobStatusEnum = builder.enumType('JobStatus', {
  description: "A job's status on the common scale every platform's own status maps to (Job.rawStatus keeps the original)",
  values: documented(JOB_STATUSES, JOB_STATUS_DOCS),
});
export const StartSourceEnum = builder.enumType('StartSource', {
  description: 'Where Job.startedAt comes from',
  values: documented(START_SOURCES, {
    PLATFORM: "The platform's own start time of the job",
    CREATION:
      "The job's creation time, standing in where the platform has no start field (Baseten) and no metric point is stored yet: the real start is no earlier",
    FIRST_METRIC:
      'The time of the first metric point the cache holds for the job (at or after its creation), where the platform has no start field (Baseten): the job ran by then; it moves earlier if an earlier point is stored',
  }),
});
// The same values as an input of its own: JobStatus is then output-only, so a supergraph in which
// another subgraph has an output-only JobStatus of its own composes (output enums merge as a
// union), and where theirs is an argument type ours can take another name in the subgraph SDL
// alone (SUBGRAPH_TYPE_NAMES, src/schema/subgraph-names.ts), which only an output-only type can.
export const JobStatusFilterEnum = builder.enumType('JobStatusFilter', {
  description: 'A JobStatus to select by in JobFilter.statuses (the same values as JobStatus)',
  values: documented(JOB_STATUSES, JOB_STATUS_DOCS),
});
export const MetricUnitEnum = builder.enumType('MetricUnit', {
  description: "The canonical unit of a series' values",
  values: documented(METRIC_UNITS, {
    RATIO: 'A fraction 0..1 (a platform percentage divided by 100)',
    BYTES: 'Bytes',
    CORES: 'CPU cores in use (1.0 = one core busy)',
    BYTES_PER_SECOND: 'Bytes per second',
    COUNT: 'A count of things',
    NONE: 'No unit (a training metric such as loss, as the run logged it)',
    WATTS: 'Watts (power draw)',
    FLOPS: 'Floating-point operations per second (1 TFLOP/s = 1e12)',
    CELSIUS: 'Degrees Celsius (temperature)',
  }),
});
export const MetricScopeEnum = builder.enumType('MetricScope', {
  description: 'What one series measures: a whole job, one node, or one GPU',
  values: documented(METRIC_SCOPES, {
    JOB: 'The whole job (an aggregate over its nodes, or a job-level number)',
    NODE: 'One compute node (task, pod, host); its GPU numbers are node aggregates',
    GPU: 'One GPU (or NPU)',
  }),
});
export const AggregationEnum = builder.enumType('Aggregation', {
  description: 'How points are combined when a series is downsampled to maxPoints',
  values: documented(AGGREGATIONS, {
    AVG: 'The mean of the points in a bucket (gaps not counted)',
    MIN: 'The lowest point in a bucket',
    MAX: 'The highest point in a bucket',
    LAST: 'The latest point in a bucket',
  }),
});
export const SeriesKeyEnum = builder.enumType('SeriesKey', {
  description: "What orders a series' points",
  values: {
    TIME: { description: 'Wall-clock time (system metrics): MetricPoint.timestamp is set' },
    STEP: { description: 'Training step (training metrics): MetricPoint.step is set, timestamp where the platform logged one' },
  },
});
export const SystemMetricEnum = builder.enumType('SystemMetric', {
  description: 'The canonical system metrics, each in one unit whatever the platform reports',
  values: Object.fromEntries(
    SYSTEM_METRICS.map((m) => {
      const def = METRIC_CATALOG.get(m)!;
      return [m, { description: `${def.description} (${def.unit})` }];
    }),
  ) as Record<(typeof SYSTEM_METRICS)[number], { description: string }>,
});
export const HealthStateEnum = builder.enumType('HealthState', {
  description: "How a platform's calls have gone lately, as seen by this server",
  values: {
    OK: { description: 'The latest call succeeded' },
    DEGRADED: { description: 'The latest calls failed (consecutiveFailures > 0), or the circuit breaker lets one trial call through' },
    DOWN: { description: 'The circuit breaker is open: calls are refused until retryAt' },
    UNKNOWN: { description: 'No call made yet since the server started' },
  },
});

export const AcceleratorKindEnum = builder.enumType('AcceleratorKind', {
  description: 'What kind of accelerator a job holds',
  values: {
    GPU: { description: 'Graphics processors (NVIDIA, AMD, ...)' },
    NPU: { description: 'Neural processors (Huawei Ascend, ...)' },
    NONE: { description: 'No accelerator: a CPU-only job' },
  } satisfies Record<(typeof ACCELERATOR_KINDS)[number], { description: string }>,
});

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LogLevelEnum = builder.enumType('LogLevel', {
  description: "A log line's severity, read from the platform's own level name (rawLevel keeps that name)",
  values: {
    DEBUG: { description: 'Diagnostic detail (platform names: debug, trace)' },
    INFO: { description: 'Normal operation (platform names: info, notice)' },
    WARNING: { description: 'Something unexpected that did not stop the work (platform names: warn, warning)' },
    ERROR: { description: 'A failure of some part of the work (platform names: error, err)' },
    CRITICAL: { description: 'A failure that stops the work (platform names: critical, fatal, panic)' },
  } satisfies Record<LogLevel, { description: string }>,
});

const LEVEL_NAMES: Record<string, LogLevel> = {
  trace: 'DEBUG',
  debug: 'DEBUG',
  info: 'INFO',
  notice: 'INFO',
  warn: 'WARNING',
  warning: 'WARNING',
  err: 'ERROR',
  error: 'ERROR',
  critical: 'CRITICAL',
  crit: 'CRITICAL',
  fatal: 'CRITICAL',
  panic: 'CRITICAL',
};

/** The level a platform's name stands for; null for a name we do not recognise (never a guess). */
export function logLevelOf(raw: string | null): LogLevel | null {
  return raw ? (LEVEL_NAMES[raw.trim().toLowerCase()] ?? null) : null;
}

export const SummaryValueEnum = builder.enumType('SummaryValue', {
  description: "Which of a training metric's summary values",
  values: {
    LATEST: { description: 'The value at the highest step recorded (then the latest time)' },
    BEST: { description: "The best value: the highest or lowest by the metric's mode (MetricSummaryMode); none where the mode is unknown" },
  },
});

export const SummaryModeEnum = builder.enumType('MetricSummaryMode', {
  description: 'Which way a training metric improves',
  values: {
    MAX: { description: 'Higher is better (accuracy, F1, reward, ...)' },
    MIN: { description: 'Lower is better (loss, error, perplexity, ...)' },
  },
});

export const JobOrderFieldEnum = builder.enumType('JobOrderField', {
  description: 'What a job list is ordered by; ties are broken by job id in the same direction',
  values: {
    CREATED: { description: 'Creation time (else start, else when first seen): the default' },
    STARTED: { description: 'Start time; jobs not started come last in either direction' },
    DURATION: { description: 'Run time (finish, or now for a running job, minus start), seconds; jobs not started come last' },
    NAME: { description: 'Name, by code point (byte order), not locale' },
    ACCELERATOR_COUNT: { description: 'GPUs or NPUs of the whole job; jobs whose platform does not say come last' },
    SUMMARY: { description: 'A training metric summary value (JobOrder.summary); jobs without it come last' },
    COST: {
      description:
        "What the job cost over its life (to now while it runs): the platform's accelerator count (a CPU-only job: its known nodes) x hours x the price table's price (docs/ledger.md); jobs without a price, not started or finished without a known end come last. BAD_INPUT when the price table mixes currencies",
    },
    WASTE: {
      description:
        "Accelerator-hours held but not used over the job's life (to now while it runs): held minus utilization-weighted used hours, the fleet's wasteGpuHours arithmetic (Fleet.ranked(by: WASTE)) over the cached utilization readings, none fetched (docs/ledger.md); jobs without a reading in their life, not started or finished without a known end come last, ties by job id",
    },
  },
});

export const SortDirectionEnum = builder.enumType('SortDirection', {
  description: 'Ascending or descending',
  values: { ASC: { description: 'Smallest (earliest, A) first' }, DESC: { description: 'Largest (latest, Z) first' } },
});
