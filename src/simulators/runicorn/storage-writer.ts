// Writes Runicorn run folders the way the 0.6 Python SDK does (rn.init / log / log_text /
// summary / finish), so the viewer simulator and the storage-mode adapter read real-shaped files.
// Layout: <root>/runs/<path>/<run_id>/ (current) or <root>/<project>/<name>/runs/<run_id>/ (legacy).
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashSeed, seededRandom } from '../kit.js';

export interface RunSpec {
  /** Experiment path ("demo/mnist"); "" puts the run directly under runs/. */
  path: string;
  alias?: string | null;
  tags?: string[];
  hostname: string;
  pid: number;
  /** Epoch seconds (float), like meta.created_at. */
  createdAt: number;
  /** Offset of the writer's local clock from UTC, in minutes; run ids and log lines use local time. */
  utcOffsetMinutes?: number;
  /**
   * The writer's IANA time zone (overrides utcOffsetMinutes): its offset is taken at each instant,
   * as Python's time.localtime does, so lines after a daylight-saving change use the new offset.
   */
  timeZone?: string;
  /** Fixed id; by default `YYYYMMDD_HHMMSS_<6 hex>` from createdAt (local time) and a seeded suffix. */
  id?: string;
  storageDirLabel?: string;
}

const ASSETS_TEMPLATE = { code: {}, config: {}, datasets: [], pretrained: [], outputs: [] };

/** Python's json.dumps for one events line: ", " and ": " separators, NaN/Infinity as bare tokens. */
function pythonJsonLine(value: unknown): string {
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN';
    if (value === Infinity) return 'Infinity';
    if (value === -Infinity) return '-Infinity';
    return JSON.stringify(value);
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonJsonLine).join(', ')}]`;
  const parts = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}: ${pythonJsonLine(v)}`);
  return `{${parts.join(', ')}}`;
}

/** json.dumps(indent=2), which is what JSON.stringify(_, null, 2) prints for these documents. */
function writeIndentedJson(file: string, data: unknown): void {
  writeFileSync(file, JSON.stringify(data, null, 2));
}

function localParts(epochSeconds: number, utcOffsetMinutes: number) {
  const d = new Date(Math.floor(epochSeconds * 1000) + utcOffsetMinutes * 60_000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return {
    date: `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`,
    time: `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`,
    clock: `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`,
  };
}

function defaultOffsetMinutes(epochSeconds: number): number {
  return -new Date(epochSeconds * 1000).getTimezoneOffset();
}

/** The zone's UTC offset at an instant, in minutes, from the platform's tz database. */
export function zoneOffsetMinutes(timeZone: string, epochSeconds: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  })
    .formatToParts(new Date(Math.floor(epochSeconds) * 1000))
    .reduce<Record<string, number>>((acc, p) => {
      if (p.type !== 'literal') acc[p.type] = Number(p.value);
      return acc;
    }, {});
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return Math.round((local - Math.floor(epochSeconds) * 1000) / 60_000);
}

export function makeRunId(createdAt: number, utcOffsetMinutes: number, seedText: string): string {
  const { date, time } = localParts(createdAt, utcOffsetMinutes);
  const hex = Math.floor(seededRandom(hashSeed(seedText))() * 0xffffff)
    .toString(16)
    .padStart(6, '0');
  return `${date}_${time}_${hex}`;
}

export class RunicornRunWriter {
  readonly id: string;
  readonly dir: string;
  readonly path: string;
  private readonly utcOffsetMinutes: number;
  private readonly timeZone: string | undefined;
  private nextStep = 1;
  private startedAt: number;

  /** `legacy` runs name project and name in meta.json instead of a path, as pre-0.5 SDKs did. */
  constructor(runDir: string, id: string, spec: RunSpec, storageRoot: string, legacy?: { project: string; name: string }) {
    this.id = id;
    this.dir = runDir;
    this.path = spec.path;
    this.utcOffsetMinutes = spec.utcOffsetMinutes ?? defaultOffsetMinutes(spec.createdAt);
    this.timeZone = spec.timeZone;
    this.startedAt = spec.createdAt + 0.0003;
    mkdirSync(runDir, { recursive: true });
    const meta: Record<string, unknown> = {
      id,
      ...(legacy ? { project: legacy.project, name: legacy.name } : { path: spec.path }),
      alias: spec.alias ?? null,
      created_at: spec.createdAt,
      python: '3.11.2',
      platform: 'Linux 6.1.0-generic (x86_64)',
      hostname: spec.hostname,
      pid: spec.pid,
      storage_dir: spec.storageDirLabel ?? storageRoot,
      workspace_root: '/home/user/project',
    };
    if (spec.tags && spec.tags.length > 0) meta.tags = spec.tags;
    writeIndentedJson(join(runDir, 'meta.json'), meta);
    writeIndentedJson(join(runDir, 'status.json'), { status: 'running', started_at: this.startedAt });
    writeIndentedJson(join(runDir, 'assets.json'), ASSETS_TEMPLATE);
  }

  /**
   * run.log(data, step=?, stage=?): global_step auto-increments from 1 unless `step` is given
   * (then counting continues after it); `time` equals `ts` (absolute epoch seconds).
   */
  logMetrics(data: Record<string, unknown>, opts: { ts: number; step?: number; stage?: string }): number {
    const step = opts.step ?? this.nextStep;
    this.nextStep = step + 1;
    const user = Object.fromEntries(Object.entries(data).filter(([k]) => k !== 'step' && k !== 'global_step'));
    const payload: Record<string, unknown> = { ...user, global_step: step, time: opts.ts };
    if (opts.stage !== undefined) payload.stage = opts.stage;
    appendFileSync(join(this.dir, 'events.jsonl'), `${pythonJsonLine({ ts: opts.ts, type: 'metrics', data: payload })}\n`);
    return step;
  }

  /** run.log_text: "HH:MM:SS | text" in the writer's local time, no date. */
  logText(text: string, ts: number): void {
    const offset = this.timeZone ? zoneOffsetMinutes(this.timeZone, ts) : this.utcOffsetMinutes;
    appendFileSync(join(this.dir, 'logs.txt'), `${localParts(ts, offset).clock} | ${text}\n`);
  }

  summary(data: Record<string, unknown>): void {
    writeIndentedJson(join(this.dir, 'summary.json'), data);
  }

  finish(ts: number, status = 'finished', exitReason?: string): void {
    const body: Record<string, unknown> = { status, started_at: this.startedAt, ended_at: ts };
    if (exitReason) body.exit_reason = exitReason;
    writeIndentedJson(join(this.dir, 'status.json'), body);
  }

  /** Soft delete, as the viewer's delete does before it moves a run away. */
  markDeleted(ts: number): void {
    writeIndentedJson(join(this.dir, '.deleted'), { deleted_at: ts, reason: 'user_deleted' });
  }
}

/** A run in the current layout: <root>/runs/<path>/<run_id>/. */
export function createRun(storageRoot: string, spec: RunSpec): RunicornRunWriter {
  const offset = spec.timeZone ? zoneOffsetMinutes(spec.timeZone, spec.createdAt) : (spec.utcOffsetMinutes ?? defaultOffsetMinutes(spec.createdAt));
  const id = spec.id ?? makeRunId(spec.createdAt, offset, `${spec.path}/${spec.alias ?? ''}/${spec.createdAt}`);
  const segments = spec.path.split('/').filter((s) => s !== '');
  const runDir = join(storageRoot, 'runs', ...segments, id);
  return new RunicornRunWriter(runDir, id, { ...spec, utcOffsetMinutes: offset }, storageRoot);
}

/** A run in the legacy (pre-0.5) layout: <root>/<project>/<name>/runs/<run_id>/; its path is "project/name". */
export function createLegacyRun(storageRoot: string, project: string, name: string, spec: Omit<RunSpec, 'path'>): RunicornRunWriter {
  const offset = spec.utcOffsetMinutes ?? defaultOffsetMinutes(spec.createdAt);
  const id = spec.id ?? makeRunId(spec.createdAt, offset, `${project}/${name}/${spec.createdAt}`);
  const runDir = join(storageRoot, project, name, 'runs', id);
  return new RunicornRunWriter(runDir, id, { ...spec, path: `${project}/${name}`, utcOffsetMinutes: offset }, storageRoot, {
    project,
    name,
  });
}
