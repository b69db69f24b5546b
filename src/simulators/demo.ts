// The embedded demo: with no PROVIDERS_CONFIG, every platform's simulator starts in process on
// loopback and is served as a provider marked `simulated`. The simulators are read off the list
// in platforms.ts.
import type { DemoOptions, DemoProvider } from './demo-starter.js';
import { SIMULATORS } from './platforms.js';

export type { DemoOptions, DemoProvider, DemoStarter, SimulatorModule } from './demo-starter.js';
export { DEMO_LEDGER } from './demo-ledger.js';

export async function startDemoProviders(opts: DemoOptions = {}): Promise<DemoProvider[]> {
  return Promise.all(SIMULATORS.map((s) => s.startDemo(opts)));
}
