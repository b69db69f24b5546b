// The PAI-DLC simulator as an embedded demo provider, signing with an AccessKey pair (V3).
import type { DemoStarter } from '../demo-starter.js';
import { startPaiDlcSimulator } from './server.js';

export const startPaiDlcDemo: DemoStarter<'PAI_DLC'> = async (opts) => {
  const sim = await startPaiDlcSimulator({ ...(opts.now ? { now: opts.now } : {}), anchorMs: opts.anchorMs });
  return {
    config: {
      id: 'pai-dlc-demo',
      kind: 'PAI_DLC',
      name: 'Alibaba Cloud PAI-DLC (simulated)',
      baseUrl: sim.url,
      regionId: sim.regionId,
      accountId: sim.fleet.accountId,
      accessKeyIdEnv: 'PAI_DLC_DEMO_AK',
      secretAccessKeyEnv: 'PAI_DLC_DEMO_SK',
    },
    secrets: {
      PAI_DLC_DEMO_AK: sim.accessKeyId,
      PAI_DLC_DEMO_SK: sim.accessKeySecret,
    },
    close: () => sim.close(),
  };
};
