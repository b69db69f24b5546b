// The viewer's side of the storage folder: finding runs (current and legacy layout), reading
// their JSON files leniently, crashed-run detection, and the step-merged metrics table.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ScannedRun {
  id: string;
  dir: string;
  /** The path from the folder layout (null for runs directly under runs/). */
  layoutPath: string | null;
}

/** read_json: a missing or unreadable file is {} (the viewer never fails on a bad JSON file). */
export function readJsonLenient(file: string): Record<string, unknown> {
  try {
    if (!existsSync(file)) return {};
    const v: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

const byLowerName = (a: string, b: string) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0);

function scanCurrent(dir: string, path: string, out: ScannedRun[]): void {
  let names: string[];
  try {
    names = readdirSync(dir).sort(byLowerName);
  } catch {
    return;
  }
  for (const name of names) {
    const item = join(dir, name);
    if (!isDir(item)) continue;
    if (existsSync(join(item, 'meta.json')) || existsSync(join(item, 'status.json'))) {
      if (!existsSync(join(item, '.deleted'))) out.push({ id: name, dir: item, layoutPath: path || null });
    } else {
      scanCurrent(item, path ? `${path}/${name}` : name, out);
    }
  }
}

/** iter_all_runs: the current layout first (sorted by name), then legacy <project>/<name>/runs/<id>. */
export function scanRuns(root: string): ScannedRun[] {
  const out: ScannedRun[] = [];
  if (isDir(join(root, 'runs'))) scanCurrent(join(root, 'runs'), '', out);
  let projects: string[] = [];
  try {
    projects = readdirSync(root).sort(byLowerName);
  } catch {
    return out;
  }
  for (const project of projects) {
    if (['runs', 'webui', 'archive', 'index'].includes(project) || !isDir(join(root, project))) continue;
    for (const name of readdirSync(join(root, project)).sort(byLowerName)) {
      const runsDir = join(root, project, name, 'runs');
      if (!isDir(runsDir)) continue;
      const runDirs = readdirSync(runsDir)
        .filter((r) => isDir(join(runsDir, r)))
        .sort((a, b) => statSync(join(runsDir, b)).mtimeMs - statSync(join(runsDir, a)).mtimeMs);
      for (const r of runDirs) {
        if (existsSync(join(runsDir, r, '.deleted'))) continue;
        out.push({ id: r, dir: join(runsDir, r), layoutPath: `${project}/${name}` });
      }
    }
  }
  return out;
}

export interface CrashCheck {
  hostname: string;
  isProcessAlive: (pid: number) => boolean;
  nowSeconds: () => number;
}

/**
 * update_status_if_process_dead: a `running` run whose writer was on this host and whose pid is
 * gone is rewritten to failed / process_not_found. Runs from other hosts are never touched.
 */
export function markCrashedIfDead(runDir: string, check: CrashCheck): void {
  const metaFile = join(runDir, 'meta.json');
  const statusFile = join(runDir, 'status.json');
  if (!existsSync(metaFile) || !existsSync(statusFile)) return;
  const meta = readJsonLenient(metaFile);
  const status = readJsonLenient(statusFile);
  if (status.status !== 'running') return;
  if (typeof meta.hostname === 'string' && meta.hostname !== '' && meta.hostname !== check.hostname) return;
  const pid = meta.pid;
  if (typeof pid !== 'number' || pid === 0 || check.isProcessAlive(pid)) return;
  const updated = { ...status, status: 'failed', ended_at: check.nowSeconds(), exit_reason: 'process_not_found' };
  writeFileSync(statusFile, JSON.stringify(updated, null, 2));
}

export function defaultIsProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// ---- metrics: the incremental cache's merge, done over the whole file ----

export type CellValue = number | string | boolean | null;
export interface MetricsTable {
  columns: string[];
  rows: Record<string, CellValue>[];
}

/** Python's json.loads accepts NaN / Infinity / -Infinity; JSON.parse does not, so they become null here. */
function parsePythonJson(line: string): unknown {
  let out = '';
  let inString = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (inString) {
      out += ch;
      if (ch === '\\') {
        out += line[i + 1] ?? '';
        i++;
      } else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') {
      inString = true;
      out += ch;
    } else if (line.startsWith('NaN', i)) {
      out += 'null';
      i += 2;
    } else if (line.startsWith('-Infinity', i)) {
      out += 'null';
      i += 8;
    } else if (line.startsWith('Infinity', i)) {
      out += 'null';
      i += 7;
    } else out += ch;
  }
  return JSON.parse(out);
}

function toStep(v: unknown): number | null {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : null;
  if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) return Number.parseInt(v, 10);
  return null;
}

export function readMetricsTable(eventsFile: string): MetricsTable {
  if (!existsSync(eventsFile)) return { columns: [], rows: [] };
  const stepRows = new Map<number, Record<string, CellValue>>();
  const columns = new Set<string>();
  for (const raw of readFileSync(eventsFile, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    let evt: unknown;
    try {
      evt = parsePythonJson(line);
    } catch {
      continue;
    }
    if (!evt || typeof evt !== 'object' || (evt as { type?: unknown }).type !== 'metrics') continue;
    const data = (evt as { data?: unknown }).data;
    if (!data || typeof data !== 'object' || Array.isArray(data)) continue;
    const d = data as Record<string, unknown>;
    const step = toStep(d.global_step ?? d.step ?? null);
    if (step === null) continue;
    let row = stepRows.get(step);
    if (!row) {
      row = { global_step: step };
      stepRows.set(step, row);
    }
    for (const [key, value] of Object.entries(d)) {
      if (key === 'global_step' || key === 'step' || key === 'epoch') continue;
      if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string' || value === null) {
        row[key] = value;
        columns.add(key);
      }
    }
  }
  if (stepRows.size === 0) return { columns: [], rows: [] };
  const cols = ['global_step', ...[...columns].sort()];
  const rows = [...stepRows.keys()]
    .sort((a, b) => a - b)
    .map((step) => {
      const row = { ...stepRows.get(step)! };
      for (const c of cols) if (!(c in row)) row[c] = null;
      return row;
    });
  return { columns: cols, rows };
}

/**
 * The viewer's LTTB: picks by the alphabetically first numeric column of the first 100 rows, x =
 * global_step. Its last bucket may also pick the last row, which is then appended again: the real
 * server returns that duplicate, so this does too.
 */
export function downsampleLttb(rows: Record<string, CellValue>[], target: number): Record<string, CellValue>[] {
  const n = rows.length;
  if (n <= target) return rows;
  const numeric = new Set<string>();
  for (const row of rows.slice(0, Math.min(100, n))) {
    for (const [k, v] of Object.entries(row)) if (k !== 'global_step' && (typeof v === 'number' || typeof v === 'boolean')) numeric.add(k);
  }
  if (numeric.size === 0) {
    const stride = n / target;
    const idx = Array.from({ length: target }, (_, i) => Math.trunc(i * stride));
    idx[idx.length - 1] = n - 1;
    return idx.map((i) => rows[i]!);
  }
  const yKey = [...numeric].sort()[0]!;
  const data = rows.map((row, i) => {
    const x = row.global_step;
    const y = row[yKey];
    return [x === null || x === undefined ? i : Number(x), y === null || y === undefined ? 0 : Number(y)] as const;
  });
  const picked = [0];
  const bucket = (n - 2) / (target - 2);
  let a = 0;
  for (let i = 0; i < target - 2; i++) {
    const start = Math.trunc((i + 1) * bucket) + 1;
    const end = Math.min(Math.trunc((i + 2) * bucket) + 1, n);
    const nextStart = end;
    const nextEnd = Math.min(Math.trunc((i + 3) * bucket) + 1, n);
    let avgX: number;
    let avgY: number;
    if (nextEnd > nextStart) {
      let sx = 0;
      let sy = 0;
      for (let j = nextStart; j < nextEnd; j++) {
        sx += data[j]![0];
        sy += data[j]![1];
      }
      avgX = sx / (nextEnd - nextStart);
      avgY = sy / (nextEnd - nextStart);
    } else [avgX, avgY] = data[n - 1]!;
    let maxArea = -1;
    let maxIdx = start;
    for (let j = start; j < end; j++) {
      const area = Math.abs((data[a]![0] - avgX) * (data[j]![1] - data[a]![1]) - (data[a]![0] - data[j]![0]) * (avgY - data[a]![1]));
      if (area > maxArea) {
        maxArea = area;
        maxIdx = j;
      }
    }
    picked.push(maxIdx);
    a = maxIdx;
  }
  picked.push(n - 1);
  return picked.map((i) => rows[i]!);
}
