// The embedded demo: with no PROVIDERS_CONFIG, every platform's simulator starts in process on
// loopback and is served as a provider marked `simulated`. Each platform adds one starter here.
import type { ProviderConfig } from '../config/index.js';
import { startBasetenDemo } from './baseten/demo.js';
import { startPrimusLensDemo } from './primus-lens/demo.js';
import { startModelArtsDemo } from './modelarts/demo.js';
import { startPaiDlcDemo } from './pai-dlc/demo.js';
import { startRunicornDemo } from './runicorn/demo.js';

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
}

export type DemoStarter = (opts: DemoOptions) => Promise<DemoProvider>;

const starters: DemoStarter[] = [startBasetenDemo, startModelArtsDemo, startPaiDlcDemo, startRunicornDemo, startPrimusLensDemo];

export async function startDemoProviders(opts: DemoOptions = {}): Promise<DemoProvider[]> {
  return Promise.all(starters.map((start) => start(opts)));
}
