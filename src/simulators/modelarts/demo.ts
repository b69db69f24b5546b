// The ModelArts simulator as an embedded demo provider, signing with AK/SK like most API users do.
import type { DemoStarter } from '../demo-starter.js';
import { startModelArtsSimulator } from './server.js';

export const startModelArtsDemo: DemoStarter<'MODELARTS'> = async (opts) => {
  const sim = await startModelArtsSimulator({ ...(opts.now ? { now: opts.now } : {}), anchorMs: opts.anchorMs });
  return {
    config: {
      id: 'modelarts-demo',
      kind: 'MODELARTS',
      name: 'Huawei Cloud ModelArts (simulated)',
      baseUrl: sim.url,
      projectId: sim.projectId,
      accessKeyIdEnv: 'MODELARTS_DEMO_AK',
      secretAccessKeyEnv: 'MODELARTS_DEMO_SK',
    },
    secrets: {
      MODELARTS_DEMO_AK: sim.credentials.accessKeyId,
      MODELARTS_DEMO_SK: sim.credentials.secretAccessKey,
    },
    close: () => sim.close(),
  };
};
