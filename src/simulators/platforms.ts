// The simulators the embedded demo starts: one line per simulator module, in the order their
// providers are listed. Each module's kind must be one src/providers/platforms.ts lists (its demo
// config is typed by that list), so a simulator without its platform fails to compile.
import { basetenSimulator } from './baseten/index.js';
import type { SimulatorModule } from './demo-starter.js';
import { modelartsSimulator } from './modelarts/index.js';
import { paiDlcSimulator } from './pai-dlc/index.js';
import { primusLensSimulator } from './primus-lens/index.js';
import { runicornSimulator } from './runicorn/index.js';

export const SIMULATORS = [
  basetenSimulator,
  modelartsSimulator,
  paiDlcSimulator,
  runicornSimulator,
  primusLensSimulator,
] as const satisfies readonly SimulatorModule[];
