// The Primus-Lens demo provider: the simulator behind a SaFE-style `/lens/v1` prefix with a
// Bearer API key and a pinned cluster, as a real deployment through the Primus gateway would be.
import type { DemoStarter } from '../demo-starter.js';
import { startPrimusLensSimulator } from './server.js';

const TOKEN_ENV = 'PRIMUS_LENS_DEMO_TOKEN';
const DEMO_TOKEN = 'ak-primus-lens-demo-0001';

export const startPrimusLensDemo: DemoStarter<'PRIMUS_LENS'> = async (opts) => {
  const sim = await startPrimusLensSimulator({
    prefix: '/lens/v1',
    auth: { mode: 'bearer', token: DEMO_TOKEN },
    ...(opts.now ? { now: opts.now } : {}),
    anchorMs: opts.anchorMs,
  });
  return {
    config: {
      id: 'primus-lens-demo',
      kind: 'PRIMUS_LENS',
      name: 'Primus-Lens (simulated)',
      baseUrl: sim.baseUrl,
      cluster: 'gpu-cluster-a',
      tokenEnv: TOKEN_ENV,
    },
    secrets: { [TOKEN_ENV]: DEMO_TOKEN },
    close: () => sim.close(),
  };
};
