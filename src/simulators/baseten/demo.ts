// Demo mode's Baseten provider: the simulator in process on loopback, configured like a real
// Baseten provider whose API key comes from the secrets map instead of the environment.
import type { DemoStarter } from '../demo-starter.js';
import { startBasetenSimulator } from './server.js';

export const startBasetenDemo: DemoStarter<'BASETEN'> = async (opts) => {
  const sim = await startBasetenSimulator({ now: opts.now, anchorMs: opts.anchorMs });
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
