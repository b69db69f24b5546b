// The embedded demo: with no PROVIDERS_CONFIG, every platform's simulator starts in process on
// loopback and is served as a provider marked `simulated`. Each platform adds one starter here.
import type { DemoOptions, DemoProvider, DemoStarter } from './demo-starter.js';
import { startBasetenDemo } from './baseten/demo.js';
import { startPrimusLensDemo } from './primus-lens/demo.js';
import { startModelArtsDemo } from './modelarts/demo.js';
import { startPaiDlcDemo } from './pai-dlc/demo.js';
import { startRunicornDemo } from './runicorn/demo.js';

export type { DemoOptions, DemoProvider, DemoStarter } from './demo-starter.js';
export { DEMO_LEDGER } from './demo-ledger.js';

const starters: DemoStarter[] = [startBasetenDemo, startModelArtsDemo, startPaiDlcDemo, startRunicornDemo, startPrimusLensDemo];

export async function startDemoProviders(opts: DemoOptions = {}): Promise<DemoProvider[]> {
  return Promise.all(starters.map((start) => start(opts)));
}
