// The Primus-Lens simulator's door: the server and its module for the embedded demo.
import type { SimulatorModule } from '../demo-starter.js';
import { startPrimusLensDemo } from './demo.js';

export { startPrimusLensSimulator, type LensAuth, type PrimusLensSimulator, type PrimusLensSimulatorOptions } from './server.js';
export { startPrimusLensDemo } from './demo.js';

/** Primus-Lens's simulator as the demo starts it (listed in src/simulators/platforms.ts). */
export const primusLensSimulator = { kind: 'PRIMUS_LENS', startDemo: startPrimusLensDemo } as const satisfies SimulatorModule<'PRIMUS_LENS'>;
