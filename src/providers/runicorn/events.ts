// events.jsonl -> the step table the viewer serves from metrics_step, built with the viewer's own
// merge rules so storage mode and viewer mode give the same rows. Read incrementally: each
// refresh reads only the bytes appended since the last one, and a torn last line waits.
import { open, stat } from 'node:fs/promises';

export type Cell = number | string | boolean | null;
export type MetricRow = Record<string, Cell>;

export interface MetricTable {
  /** "global_step" first, then every other key alphabetically (incl. stage and time); [] when empty. */
  columns: string[];
  /** One row per global_step, ascending; every row has every column. */
  rows: MetricRow[];
  /**
   * Storage mode only (the viewer's answer has no such thing): every value with the stage of the
   * event that logged it, metric -> stage (null = none given) -> step -> value and event time.
   */
  byEvent?: EventValues;
}

export interface EventValue {
  /** null = NaN / Inf logged (a gap). */
  value: number | null;
  /** Epoch seconds of the logging event (its `time`, else `ts`). */
  time: number | null;
}
export type EventValues = Map<string, Map<string | null, Map<number, EventValue>>>;

/**
 * The SDK writes with Python's json.dumps, which prints NaN / Infinity / -Infinity as bare tokens
 * that JSON.parse rejects. The viewer turns them into null, so they become null here.
 */
export function parseEventLine(line: string): unknown {
  const parts: string[] = [];
  let i = 0;
  while (i < line.length) {
    const quote = line.indexOf('"', i);
    const plainEnd = quote < 0 ? line.length : quote;
    parts.push(line.slice(i, plainEnd).replace(/-?Infinity|NaN/g, 'null'));
    if (quote < 0) break;
    let j = quote + 1;
    while (j < line.length && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
    parts.push(line.slice(quote, j + 1));
    i = j + 1;
  }
  return JSON.parse(parts.join(''));
}

/** Python's int() on what a writer may put in global_step / step; null = the event is skipped. */
function stepOf(value: unknown): number | null {
  if (typeof value === 'boolean') return Number(value);
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) : null;
  if (typeof value === 'string' && /^\s*[-+]?\d+\s*$/.test(value)) return Number(value.trim());
  return null;
}

/** Accumulates metric events into step rows: later values win (including stage), NaN/Inf are null. */
export class StepTableBuilder {
  private readonly byStep = new Map<number, MetricRow>();
  private readonly keys = new Set<string>();
  /** Each value under its own event's stage; a later event of the same stage at the same step wins. */
  private readonly byEvent: EventValues = new Map();
  /**
   * The rows table() gave last, kept: a running run's table is asked for at every sweep (Runicorn's
   * interval is 2 s) and grows by a few steps between, so only the steps written since are made
   * again; a day of a step every 2 s (43,200 rows) took 300-400 ms a call rebuilt whole (issue 45).
   */
  private built: { columns: string[]; rows: MetricRow[]; index: Map<number, number>; lastStep: number } | null = null;
  /** Steps an event reached since table() last ran. */
  private readonly touched = new Set<number>();

  applyLine(line: string): void {
    const text = line.trim();
    if (!text) return;
    let event: unknown;
    try {
      event = parseEventLine(text);
    } catch {
      return; // the viewer skips lines it cannot parse
    }
    if (typeof event !== 'object' || event === null || (event as { type?: unknown }).type !== 'metrics') return;
    const data = (event as { data?: unknown }).data;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return;
    const fields = data as Record<string, unknown>;
    const step = stepOf(fields.global_step ?? fields.step);
    if (step === null) return;
    const row = this.byStep.get(step) ?? { global_step: step };
    this.byStep.set(step, row);
    this.touched.add(step);
    const stage = typeof fields.stage === 'string' ? fields.stage : null;
    const eventTs = (event as { ts?: unknown }).ts;
    const time = typeof fields.time === 'number' ? fields.time : typeof eventTs === 'number' ? eventTs : null;
    for (const [key, value] of Object.entries(fields)) {
      if (key === 'global_step' || key === 'step' || key === 'epoch') continue;
      const keep = value === null || typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean';
      if (!keep) continue;
      row[key] = value;
      this.keys.add(key);
      // Only numbers (and NaN/Inf, read as null) are metric values; strings and booleans are not.
      if (key === 'time' || key === 'stage' || !(value === null || typeof value === 'number')) continue;
      let stages = this.byEvent.get(key);
      if (!stages) this.byEvent.set(key, (stages = new Map()));
      let steps = stages.get(stage);
      if (!steps) stages.set(stage, (steps = new Map()));
      steps.set(step, { value: typeof value === 'number' && Number.isFinite(value) ? value : null, time });
    }
  }

  table(): MetricTable {
    if (this.byStep.size === 0) return { columns: [], rows: [], byEvent: new Map() };
    const columns = ['global_step', ...[...this.keys].sort()];
    const cell = (row: MetricRow) => Object.fromEntries(columns.map((c) => [c, row[c] ?? null])) as MetricRow;
    const built = this.built;
    const added = built ? [...this.touched].filter((step) => !built.index.has(step)).sort((a, b) => a - b) : [];
    // Made whole again when a column appeared (every row gains it) or a step came before the last one.
    const sameColumns = built !== null && built.columns.length === columns.length && built.columns.every((c, i) => c === columns[i]);
    if (!built || !sameColumns || (added.length > 0 && added[0]! < built.lastStep)) {
      const steps = [...this.byStep.keys()].sort((a, b) => a - b);
      this.built = {
        columns,
        rows: steps.map((step) => cell(this.byStep.get(step)!)),
        index: new Map(steps.map((step, i) => [step, i])),
        lastStep: steps.at(-1)!,
      };
    } else {
      // A row once given is never changed: a step written again gets a new one.
      for (const step of this.touched) {
        const i = built.index.get(step);
        if (i !== undefined) built.rows[i] = cell(this.byStep.get(step)!);
      }
      for (const step of added) {
        built.index.set(step, built.rows.length);
        built.rows.push(cell(this.byStep.get(step)!));
        built.lastStep = step;
      }
    }
    this.touched.clear();
    return { columns, rows: this.built!.rows.slice(), byEvent: this.byEvent };
  }
}

/** Follows one events.jsonl: remembers how many bytes it has read and any torn last line. */
export class EventsFileTail {
  private builder = new StepTableBuilder();
  private readOffset = 0;
  private pending: Buffer = Buffer.alloc(0);
  private inode: number | null = null;
  /** Bytes read from disk over this tail's life (tests prove reads are incremental with it). */
  bytesRead = 0;

  constructor(readonly file: string) {}

  async refresh(): Promise<MetricTable> {
    let size: number;
    try {
      const st = await stat(this.file);
      size = st.size;
      // A shorter or replaced file is a new file: start over.
      if (size < this.readOffset || (this.inode !== null && st.ino !== this.inode)) this.reset();
      this.inode = st.ino;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.reset();
        return this.builder.table();
      }
      throw err;
    }
    if (size > this.readOffset) {
      const fh = await open(this.file, 'r');
      try {
        const chunk = Buffer.alloc(size - this.readOffset);
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, this.readOffset);
        this.readOffset += bytesRead;
        this.bytesRead += bytesRead;
        this.consume(Buffer.concat([this.pending, chunk.subarray(0, bytesRead)]));
      } finally {
        await fh.close();
      }
    }
    return this.builder.table();
  }

  private consume(buf: Buffer): void {
    const lastNewline = buf.lastIndexOf(0x0a);
    const complete = lastNewline < 0 ? Buffer.alloc(0) : buf.subarray(0, lastNewline);
    let rest = buf.subarray(lastNewline + 1);
    for (const line of complete.toString('utf8').split('\n')) this.builder.applyLine(line);
    // An unterminated tail is a torn write unless it already parses as a whole event.
    if (rest.length > 0 && isWholeJson(rest.toString('utf8'))) {
      this.builder.applyLine(rest.toString('utf8'));
      rest = Buffer.alloc(0);
    }
    this.pending = Buffer.from(rest);
  }

  private reset(): void {
    this.builder = new StepTableBuilder();
    this.readOffset = 0;
    this.pending = Buffer.alloc(0);
    this.inode = null;
  }
}

function isWholeJson(text: string): boolean {
  try {
    parseEventLine(text.trim());
    return true;
  } catch {
    return false;
  }
}
