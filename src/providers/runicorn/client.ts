// The Runicorn client as the adapter sees it: what each mode (the viewer's HTTP API in viewer-source.ts,
// the storage folder in storage-source.ts) provides, in Runicorn's terms.
import type { MetricTable } from './events.js';
import type { LogSlice } from './log-replay.js';

export interface RunSnapshot {
  id: string;
  /** Experiment path ("demo/mnist"); null for a run directly under runs/. */
  path: string | null;
  alias: string | null;
  status: string;
  /** Epoch seconds. */
  createdTime: number | null;
  startedAt: number | null;
  endedAt: number | null;
  /** Where endedAt came from: status.json / a viewer field, or the last metric event (viewer 0.6.0). */
  endedAtFrom?: 'status' | 'viewer' | 'last-metric-event' | null;
  /** The writer's host (meta.json; the 0.6.0 viewer does not serve it). */
  hostname: string | null;
  /** assets.json's `config` (viewer mode; what a script logged as its configuration). */
  config?: Record<string, unknown> | null;
  /** summary.json (storage mode; the viewer only in versions that return it). */
  summary: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
  /** meta.json's tags (storage) or the list's (viewer); null = not known from this read. */
  tags?: readonly string[] | null;
}

export interface RunicornSource {
  listRuns(signal: AbortSignal): Promise<RunSnapshot[]>;
  /** null = no such run. */
  getRun(id: string, signal: AbortSignal): Promise<RunSnapshot | null>;
  /** null = no such run. */
  metricTable(id: string, signal: AbortSignal): Promise<MetricTable | null>;
  /**
   * The non-blank lines of logs.txt in order, at least `need` of them where the log has that many;
   * a null entry is a line that exists but was not delivered (the viewer drops one at its
   * 10,000-line replay cap), kept so numbering matches. `follow`: the run may still write.
   * null = no such run.
   */
  logLines(id: string, need: number, follow: boolean, signal: AbortSignal): Promise<LogSlice | null>;
  close?(): Promise<void>;
}
