// The PAI-DLC simulator's door: the server, its fleet, and its module for the embedded demo.
import type { SimulatorModule } from '../demo-starter.js';
import { startPaiDlcDemo } from './demo.js';

export { startPaiDlcSimulator, PAI_DLC_API_VERSION, type PaiDlcSimulator, type PaiDlcSimulatorOptions } from './server.js';
export {
  buildFleet,
  PAI_DLC_STATUSES,
  SIM_ECS_SPECS,
  type PaiDlcFleet,
  type PaiDlcStatus,
  type SimEcsSpec,
  type SimJob,
  type SimJobSpec,
  type SimPod,
} from './fleet.js';
export { startPaiDlcDemo } from './demo.js';

/** PAI-DLC's simulator as the demo starts it (listed in src/simulators/platforms.ts). */
export const paiDlcSimulator = { kind: 'PAI_DLC', startDemo: startPaiDlcDemo } as const satisfies SimulatorModule<'PAI_DLC'>;
