// Storage mode: reads a Runicorn storage folder directly (read-only), in the current layout
// <root>/runs/<path…>/<run_id>/ and the legacy <root>/<project>/<name>/runs/<run_id>/.
import { readdir, readFile, stat } from 'node:fs/promises';
import { hostname as localHostname } from 'node:os';
import { join } from 'node:path';
import { UpstreamError } from '../../domain/errors.js';
import { EventsFileTail, type MetricTable } from './events.js';
import type { LogSlice } from './log-replay.js';
import type { RunicornSource, RunSnapshot } from './client.js';

interface RunLocation {
  id: string;
  dir: string;
  layoutPath: string | null;
}

/** Root-level folders that are not legacy projects. */
const NON_PROJECT_DIRS = new Set(['runs', 'webui', 'archive', 'index']);

async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/** Like the viewer's read_json: a missing or broken file reads as an empty object. */
async function readObject(file: string): Promise<Record<string, unknown>> {
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const numberOrNull = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const stringOrNull = (v: unknown) => (typeof v === 'string' ? v : null);

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class StorageSource implements RunicornSource {
  private readonly tails = new Map<string, EventsFileTail>();

  constructor(
    private readonly providerId: string,
    private readonly root: string,
  ) {}

  /** Bytes read from events files so far, over all runs. */
  get eventBytesRead(): number {
    let n = 0;
    for (const t of this.tails.values()) n += t.bytesRead;
    return n;
  }

  private async locateAll(): Promise<RunLocation[]> {
    if (!(await exists(this.root))) {
      throw new UpstreamError('UPSTREAM_UNAVAILABLE', this.providerId, `storage folder ${this.root} is not readable`);
    }
    const found: RunLocation[] = [];
    const walk = async (dir: string, path: string): Promise<void> => {
      const names = (await subdirs(dir)).sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
      for (const name of names) {
        const child = join(dir, name);
        const isRun = (await exists(join(child, 'meta.json'))) || (await exists(join(child, 'status.json')));
        if (!isRun) await walk(child, path ? `${path}/${name}` : name);
        else if (!(await exists(join(child, '.deleted')))) found.push({ id: name, dir: child, layoutPath: path || null });
      }
    };
    await walk(join(this.root, 'runs'), '');
    for (const project of await subdirs(this.root)) {
      if (NON_PROJECT_DIRS.has(project)) continue;
      for (const name of await subdirs(join(this.root, project))) {
        const runsDir = join(this.root, project, name, 'runs');
        for (const id of await subdirs(runsDir)) {
          if (await exists(join(runsDir, id, '.deleted'))) continue;
          found.push({ id, dir: join(runsDir, id), layoutPath: `${project}/${name}` });
        }
      }
    }
    return found;
  }

  private async locate(id: string): Promise<RunLocation | null> {
    return (await this.locateAll()).find((r) => r.id === id) ?? null;
  }

  private async snapshot(loc: RunLocation): Promise<RunSnapshot> {
    const [meta, status, summary] = await Promise.all([
      readObject(join(loc.dir, 'meta.json')),
      readObject(join(loc.dir, 'status.json')),
      readObject(join(loc.dir, 'summary.json')),
    ]);
    let rawStatus = (typeof status.status === 'string' && status.status) || 'finished';
    // The viewer rewrites a `running` run of this host whose pid is gone to failed/process_not_found;
    // this mode reads the same conclusion without writing to the folder.
    const runHost = stringOrNull(meta.hostname);
    const pid = numberOrNull(meta.pid);
    if (rawStatus === 'running' && (!runHost || runHost === localHostname()) && pid && !pidAlive(pid)) rawStatus = 'failed';
    let createdTime = numberOrNull(meta.created_at);
    if (createdTime === null) createdTime = (await stat(loc.dir)).mtimeMs / 1000;
    return {
      id: loc.id,
      path: stringOrNull(meta.path) || loc.layoutPath,
      alias: stringOrNull(meta.alias),
      status: rawStatus,
      createdTime,
      startedAt: numberOrNull(status.started_at),
      endedAt: numberOrNull(status.ended_at),
      hostname: runHost,
      summary,
      meta,
      tags: Array.isArray(meta.tags) ? meta.tags.filter((t): t is string => typeof t === 'string') : [],
    };
  }

  async listRuns(): Promise<RunSnapshot[]> {
    return Promise.all((await this.locateAll()).map((loc) => this.snapshot(loc)));
  }

  async getRun(id: string): Promise<RunSnapshot | null> {
    const loc = await this.locate(id);
    return loc ? this.snapshot(loc) : null;
  }

  async metricTable(id: string): Promise<MetricTable | null> {
    const loc = await this.locate(id);
    if (!loc) return null;
    const file = join(loc.dir, 'events.jsonl');
    let tail = this.tails.get(file);
    if (!tail) {
      tail = new EventsFileTail(file);
      this.tails.set(file, tail);
    }
    return tail.refresh();
  }

  async logLines(id: string): Promise<LogSlice | null> {
    const loc = await this.locate(id);
    if (!loc) return null;
    let text: string;
    try {
      text = await readFile(join(loc.dir, 'logs.txt'), 'utf8');
    } catch {
      return { lines: [], complete: true };
    }
    // The last piece has no newline yet: a line still being written, left for the next read.
    const whole = text.slice(0, text.lastIndexOf('\n') + 1);
    const lines = whole
      .split('\n')
      .map((l) => l.replace(/\r$/, ''))
      .filter((l) => l.trim() !== '');
    return { lines, complete: true };
  }
}
