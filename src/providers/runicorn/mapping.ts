// Runicorn records -> domain records: status, training series from the step table, progress,
// and log-line timestamps. Used by both modes, so both give identical answers.
import { rawName } from '../../domain/metric-catalog.js';
import type {
  JobStatus,
  MetricUnit,
  ProgressRecord,
  ReportedSummary,
  SeriesData,
  SeriesPoint,
  SystemMetric,
  TrainingFetchRequest,
} from '../../domain/types.js';
import { epochSecondsToDate, finiteOrNull, mibToBytes, percentToRatio } from '../../domain/units.js';
import { trainingSeries } from '../provider.js';
import type { MetricTable } from './events.js';
import { GPU_TELEMETRY_READINGS, type GpuTelemetryReading } from './wire.js';

export const STATUS: Readonly<Record<string, JobStatus>> = {
  running: 'RUNNING',
  finished: 'SUCCEEDED',
  // Also what the viewer writes for a crashed run (exit_reason process_not_found).
  failed: 'FAILED',
  interrupted: 'STOPPED',
};

export function mapStatus(raw: string): JobStatus {
  return Object.hasOwn(STATUS, raw) ? STATUS[raw]! : 'UNKNOWN';
}

/** The catalog's Runicorn name of a metric, which must be one of the telemetry answer's readings. */
function telemetryReading(metric: SystemMetric): GpuTelemetryReading {
  const name = rawName(metric, 'RUNICORN', 'gpu telemetry');
  const reading = GPU_TELEMETRY_READINGS.find((r) => r === name);
  if (!reading) throw new Error(`the metric catalog names "${name}" for ${metric}, which /api/gpu/telemetry does not give`);
  return reading;
}

/**
 * What /api/gpu/telemetry gives (a viewer only): nvidia-smi on the viewer's host, now, tied to no
 * run. Read while a run is running and written as host-wide series of that run (source
 * `runicorn:host`, `meta.hostWide`), never as the run's own GPUs; each poll's reading is a point,
 * so the cache keeps the history the endpoint does not.
 */
export const TELEMETRY: Partial<Record<SystemMetric, { field: GpuTelemetryReading; unit: MetricUnit; convert: (v: unknown) => number | null }>> = {
  GPU_UTILIZATION: { field: telemetryReading('GPU_UTILIZATION'), unit: 'RATIO', convert: percentToRatio },
  GPU_MEMORY_USED: { field: telemetryReading('GPU_MEMORY_USED'), unit: 'BYTES', convert: mibToBytes },
  GPU_POWER: { field: telemetryReading('GPU_POWER'), unit: 'WATTS', convert: finiteOrNull },
  GPU_TEMPERATURE: { field: telemetryReading('GPU_TEMPERATURE'), unit: 'CELSIUS', convert: finiteOrNull },
};

/** Columns that are the row's coordinates, not metrics. */
const COORDINATE_COLUMNS = new Set(['global_step', 'time', 'stage']);

const GAPS = 'NaN and Inf are dropped, as are strings and booleans (Runicorn keeps only numbers as metrics)';

/** Storage mode: events.jsonl names the stage of every event, so every value keeps its own. */
const EXACT_META = {
  keyedBy: 'global_step',
  stage: 'exact: the stage of the event that logged the value (events.jsonl)',
  timestamp: "the logging event's `time` (absolute epoch seconds)",
  gaps: GAPS,
};

/**
 * Viewer mode: metrics_step merges the events of one step into one row, a later event's value and
 * stage winning; the answer does not say which event logged a value. A metric seen under one row
 * stage only is given that stage (marked not exact); one seen under several gets no stage at all.
 */
function viewerMeta(stages: readonly (string | null)[]): Record<string, unknown> {
  const base = {
    keyedBy: 'global_step',
    timestamp: "the row's `time`: the last event logged at that step (the viewer merges a step's events)",
    gaps: GAPS,
  };
  if (stages.length <= 1) {
    return {
      ...base,
      stage: stages[0] ?? null,
      stageExact: false,
      stageNote:
        "every value of this metric came in viewer rows of this stage; the viewer keeps the last event's stage per step, so a value logged in another stage at the same step would look the same (storage mode reads each event's own stage)",
    };
  }
  return {
    ...base,
    stage: null,
    stageExact: false,
    stagesSeen: stages,
    stageNote:
      "unknown: this metric came in viewer rows of several stages, and the viewer keeps only the last event's stage per step, so which stage logged each value cannot be told (storage mode reads each event's own stage)",
  };
}

/**
 * Whether a point logged at `timestamp` is asked for. A point without a time cannot be placed in a
 * window, but asked only `from` a time onwards (the collector's sweep since its newest stored
 * point, capabilities.trainingSince) it is kept: it may be new, and written again it changes nothing.
 */
function inRange(timestamp: Date | null, from: number | null, to: number | null): boolean {
  return inRangeMs(timestamp?.getTime() ?? null, from, to);
}

/** inRange of an instant in epoch ms (null: a point without a time, kept unless the window has an end). */
function inRangeMs(t: number | null, from: number | null, to: number | null): boolean {
  if (from === null && to === null) return true;
  if (t === null) return to === null;
  return (from === null || t >= from) && (to === null || t <= to);
}

function newSeries(name: string, stage: string | null, meta: Record<string, unknown>): SeriesData {
  return trainingSeries(name, 'runicorn', stage, meta);
}

const stageOrder = (a: string | null, b: string | null) => (a ?? '').localeCompare(b ?? '');

/**
 * The training series of a run. With per-event values (storage mode) each value sits in the stage
 * of the event that logged it; from the viewer's merged rows, see viewerMeta. A metric never
 * logged in a stage never appears in it.
 */
export function tableToSeries(table: MetricTable, request: TrainingFetchRequest): SeriesData[] {
  const wanted = request.names ? new Set(request.names) : null;
  const from = request.from?.getTime() ?? null;
  const to = request.to?.getTime() ?? null;
  const out: SeriesData[] = [];
  if (table.byEvent) {
    for (const name of [...table.byEvent.keys()].sort()) {
      if (wanted && !wanted.has(name)) continue;
      const stages = table.byEvent.get(name)!;
      for (const stage of [...stages.keys()].sort(stageOrder)) {
        const series = newSeries(name, stage, EXACT_META);
        // The window first, then the order: a sweep asks for the last minutes of a run that may hold
        // a day of steps (issue 45: sorting and dating every one took 150-260 ms at 43,200 steps).
        const kept: [number, number, number | null][] = [];
        for (const [step, { value, time }] of stages.get(stage)!) {
          if (value === null) continue;
          // epochSecondsToDate's instant, as a number until the point is kept.
          const ms = time !== null && Number.isFinite(time) && time > 0 ? Math.round(time * 1000) : null;
          if (inRangeMs(ms, from, to)) kept.push([step, value, ms]);
        }
        for (const [step, value, ms] of kept.sort((a, b) => a[0] - b[0])) {
          series.points.push({ timestamp: ms === null ? null : new Date(ms), step, value } satisfies SeriesPoint);
        }
        if (series.points.length > 0) out.push(series);
      }
    }
    return out;
  }
  const stageOf = (row: Record<string, unknown>) => (typeof row.stage === 'string' ? row.stage : null);
  const has = (row: Record<string, unknown>, column: string) => {
    const value = row[column];
    return typeof value === 'number' && Number.isFinite(value) && typeof row.global_step === 'number';
  };
  // The one stage a metric only ever came in (undefined: several).
  const onlyStage = new Map<string, string | null>();
  for (const column of table.columns) {
    if (COORDINATE_COLUMNS.has(column)) continue;
    const stages = new Set(table.rows.filter((row) => has(row, column)).map(stageOf));
    if (stages.size === 1) onlyStage.set(column, [...stages][0]!);
  }
  for (const column of table.columns) {
    if (COORDINATE_COLUMNS.has(column) || (wanted && !wanted.has(column))) continue;
    const rows = table.rows.filter((row) => has(row, column));
    const stages = [...new Set(rows.map(stageOf))].sort(stageOrder);
    // A row that also holds a metric only its own stage ever logged is two events merged (the later
    // one's stage won): this metric's value there may be another stage's. Without any such row, each
    // row is one event as far as the answer shows, and its stage is the value's.
    const merged =
      stages.length > 1 && rows.some((row) => table.columns.some((x) => x !== column && onlyStage.has(x) && onlyStage.get(x) === stageOf(row) && has(row, x)));
    if (stages.length > 1 && !merged) {
      for (const stage of stages) {
        const series = newSeries(column, stage, {
          ...viewerMeta([stage]),
          stageFrom: 'rows',
          stageNote:
            "each value in the stage of its viewer row: no row of this metric holds a metric only another stage logs, so no row shows two events merged (storage mode reads each event's own stage)",
        });
        for (const row of rows) {
          if (stageOf(row) !== stage) continue;
          const timestamp = epochSecondsToDate(row.time);
          if (!inRange(timestamp, from, to)) continue;
          series.points.push({ timestamp, step: row.global_step as number, value: row[column] as number });
        }
        if (series.points.length > 0) out.push(series);
      }
      continue;
    }
    const series = newSeries(column, stages.length === 1 ? stages[0]! : null, viewerMeta(stages));
    for (const row of rows) {
      const timestamp = epochSecondsToDate(row.time);
      if (!inRange(timestamp, from, to)) continue;
      series.points.push({ timestamp, step: row.global_step as number, value: row[column] as number });
    }
    if (series.points.length > 0) out.push(series);
  }
  return out.sort((a, b) => (a.name === b.name ? stageOrder(a.stage, b.stage) : a.name < b.name ? -1 : 1));
}

/** How many of the last rows the rate is measured over. */
const RATE_WINDOW_ROWS = 20;

/** Iteration = last step; rate = steps per second over the recent rows' `time`. */
export function progressFromTable(table: MetricTable, targetIteration: number | null): ProgressRecord | null {
  const rows = table.rows.filter((r) => typeof r.global_step === 'number');
  if (rows.length === 0) return null;
  const last = rows[rows.length - 1]!;
  const timed = rows.slice(-RATE_WINDOW_ROWS).filter((r) => typeof r.time === 'number');
  let rate: number | null = null;
  if (timed.length >= 2) {
    const first = timed[0]!;
    const end = timed[timed.length - 1]!;
    const dt = (end.time as number) - (first.time as number);
    if (dt > 0) rate = ((end.global_step as number) - (first.global_step as number)) / dt;
  }
  return { iteration: last.global_step as number, targetIteration, rate, updatedAt: epochSecondsToDate(last.time) };
}

/**
 * Runicorn does not record a run's length. Read by convention (unconfirmed: the SDK has no such
 * field) from numeric summary or meta keys a training script may set.
 */
const TARGET_KEYS = ['total_steps', 'max_steps', 'target_steps', 'total_iterations', 'max_iterations'];
export function targetIterationFrom(...docs: (Record<string, unknown> | null | undefined)[]): number | null {
  for (const doc of docs) {
    if (!doc) continue;
    for (const key of TARGET_KEYS) {
      const v = doc[key];
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v;
    }
  }
  return null;
}

/**
 * The best metric a run reports (summary.json, or the viewer's list): its name, value and, where
 * summary.json has them, step and direction. Other summary.json keys are the script's own and are
 * not read as metric values.
 */
export function reportedBest(summary: Record<string, unknown> | null | undefined): ReportedSummary[] {
  const name = summary?.best_metric_name;
  if (typeof name !== 'string' || name.length === 0) return [];
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const mode = summary?.best_metric_mode;
  return [
    {
      name,
      bestValue: num(summary?.best_metric_value),
      bestStep: num(summary?.best_metric_step),
      mode: mode === 'max' ? 'MAX' : mode === 'min' ? 'MIN' : null,
    },
  ];
}
