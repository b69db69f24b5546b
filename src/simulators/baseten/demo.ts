// Demo mode's Baseten provider: the simulator in process on loopback, configured like a real
// Baseten provider whose API key comes from the secrets map instead of the environment.
import type { DemoStarter } from '../demo-starter.js';
import { demoAnomalies } from './fleet.js';
import { startBasetenSimulator } from './server.js';

export const startBasetenDemo: DemoStarter<'BASETEN'> = async (opts) => {
  // A stalled job, a straggler rank and an idle node, under way at start: the findings a newcomer sees (docs/findings.md).
  const sim = await startBasetenSimulator({ now: opts.now, anchorMs: opts.anchorMs, anomalies: demoAnomalies((opts.now ?? Date.now)()) });
  return {
    config: {
      id: 'baseten-demo',
      kind: 'BASETEN',
      name: 'Baseten (simulated)',
      baseUrl: sim.url,
      apiKeyEnv: 'BASETEN_DEMO_API_KEY',
    },
    secrets: { BASETEN_DEMO_API_KEY: sim.apiKey },
    close: () => sim.close(),
  };
};
