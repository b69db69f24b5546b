// Runicorn records -> domain records: status, training series from the step table, progress,
// and log-line timestamps. Used by both modes, so both give identical answers.
import type { JobStatus, ProgressRecord, SeriesData, SeriesPoint, TrainingFetchRequest } from '../../domain/types.js';
import { epochSecondsToDate } from '../../domain/units.js';
import type { MetricTable } from './events.js';

export function mapStatus(raw: string): JobStatus {
  switch (raw) {
    case 'running':
      return 'RUNNING';
    case 'finished':
      return 'SUCCEEDED';
    // Also what the viewer writes for a crashed run (exit_reason process_not_found).
    case 'failed':
      return 'FAILED';
    case 'interrupted':
      return 'STOPPED';
    default:
      return 'UNKNOWN';
  }
}

/** Columns that are the row's coordinates, not metrics. */
const COORDINATE_COLUMNS = new Set(['global_step', 'time', 'stage']);

const SERIES_META = {
  keyedBy: 'global_step',
  timestamp: 'the row\'s `time` column: absolute epoch seconds of the last event logged at that step',
  merge:
    'events sharing a step are merged into one row and a later value wins, including stage, so a value may carry the stage of a later event at the same step (Runicorn viewer rule)',
  gaps: 'NaN, Inf and values not logged at a step are dropped',
};

/**
 * Every numeric column except global_step/time becomes a series per stage (rows without a stage
 * give stage null). Strings and booleans are not metrics.
 */
export function tableToSeries(table: MetricTable, request: TrainingFetchRequest): SeriesData[] {
  const wanted = request.names ? new Set(request.names) : null;
  const from = request.from?.getTime() ?? null;
  const to = request.to?.getTime() ?? null;
  const byKey = new Map<string, SeriesData>();
  for (const column of table.columns) {
    if (COORDINATE_COLUMNS.has(column) || (wanted && !wanted.has(column))) continue;
    for (const row of table.rows) {
      const value = row[column];
      const step = row.global_step;
      if (typeof value !== 'number' || !Number.isFinite(value) || typeof step !== 'number') continue;
      const timestamp = epochSecondsToDate(row.time);
      if ((from !== null || to !== null) && timestamp === null) continue;
      if (timestamp && ((from !== null && timestamp.getTime() < from) || (to !== null && timestamp.getTime() > to))) continue;
      const stage = typeof row.stage === 'string' ? row.stage : null;
      const key = JSON.stringify([column, stage]);
      let series = byKey.get(key);
      if (!series) {
        series = {
          kind: 'training',
          name: column,
          rawName: column,
          unit: 'NONE',
          scope: 'JOB',
          nodeExternalId: null,
          gpuIndex: null,
          source: 'runicorn',
          stage,
          keyedBy: 'step',
          meta: SERIES_META,
          points: [],
        };
        byKey.set(key, series);
      }
      series.points.push({ timestamp, step, value } satisfies SeriesPoint);
    }
  }
  return [...byKey.values()].sort((a, b) => (a.name === b.name ? (a.stage ?? '').localeCompare(b.stage ?? '') : a.name < b.name ? -1 : 1));
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

const RUN_ID = /^(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})_/;
const CLOCK_PREFIX = /^(\d{2}):(\d{2}):(\d{2}) \| /;
const QUARTER_HOUR_MS = 15 * 60_000;

/**
 * log_text lines carry only the writer's local "HH:MM:SS". The run id is the same local clock at
 * creation with a date, and created_time is the same instant in UTC, so together they give the
 * writer's UTC offset (rounded to 15 min) and the day; a clock going backwards is the next day.
 * Returns null for every line when the run id or created time is unusable, and for lines without
 * the prefix (console capture).
 */
export function logTimestamper(runId: string, createdAt: Date | null): (line: string) => Date | null {
  const m = RUN_ID.exec(runId);
  if (!m || !createdAt) return () => null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const localCreatedMs = Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
  const offsetMs = Math.round((localCreatedMs - createdAt.getTime()) / QUARTER_HOUR_MS) * QUARTER_HOUR_MS;
  let dayStartLocal = Date.UTC(y!, mo! - 1, d!);
  let previousLocal = localCreatedMs - 1000;
  return (line) => {
    const c = CLOCK_PREFIX.exec(line);
    if (!c) return null;
    const timeOfDay = ((Number(c[1]) * 60 + Number(c[2])) * 60 + Number(c[3])) * 1000;
    let local = dayStartLocal + timeOfDay;
    // Allow a little jitter backwards (lines within the same second); more means midnight passed.
    while (local < previousLocal - 3_600_000) {
      dayStartLocal += 86_400_000;
      local = dayStartLocal + timeOfDay;
    }
    previousLocal = Math.max(previousLocal, local);
    return new Date(local - offsetMs);
  };
}
