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
