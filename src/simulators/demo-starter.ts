// What each platform's demo starter returns: the types the embedded demo (demo.ts) and the
// per-platform */demo.ts share, kept apart so neither imports the other's module.
import type { ProviderConfig } from '../config/index.js';

export interface DemoProvider {
  config: ProviderConfig;
  /** The environment the config's *Env names resolve against (the simulator's own credentials). */
  secrets: Record<string, string>;
  close(): Promise<void>;
}

export interface DemoOptions {
  /** Where file-based simulators (Runicorn storage) may write; a temp folder by default. */
  workDir?: string;
  now?: () => number;
  /**
   * The instant the demo fleets are laid out around (default: the start of the current UTC day, so
   * a restart the same day shows the same jobs). Tests pin it: a running job's history otherwise
   * grows with the time of day.
   */
  anchorMs?: number;
}

export type DemoStarter = (opts: DemoOptions) => Promise<DemoProvider>;
