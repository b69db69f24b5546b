// What each platform's simulator module gives the embedded demo: the types demo.ts, platforms.ts
// and the per-platform */index.ts share, kept apart so none imports another's module.
import type { ProviderConfig } from '../config/index.js';
import type { ProviderKind } from '../domain/types.js';

export interface DemoProvider<K extends ProviderKind = ProviderKind> {
  /** A providers-file entry of the simulator's kind: a kind no platform module lists fails to compile here. */
  config: ProviderConfig & { kind: K };
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

export type DemoStarter<K extends ProviderKind = ProviderKind> = (opts: DemoOptions) => Promise<DemoProvider<K>>;

/**
 * One platform's simulator (src/simulators/<name>/index.ts) as the demo sees it. The list in
 * simulators/platforms.ts starts every one of them when no PROVIDERS_CONFIG is given.
 */
export interface SimulatorModule<K extends ProviderKind = ProviderKind> {
  /** The platform it imitates: a kind listed in src/providers/platforms.ts. */
  readonly kind: K;
  /** Starts the simulator in process on loopback and returns it configured as a provider. */
  readonly startDemo: DemoStarter<K>;
}
