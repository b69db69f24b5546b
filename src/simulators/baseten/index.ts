// The Baseten simulator's door: the server, its fleet, and its module for the embedded demo.
import type { SimulatorModule } from '../demo-starter.js';
import { startBasetenDemo } from './demo.js';

export { startBasetenSimulator, type BasetenRateLimit, type BasetenSimulator, type BasetenSimulatorOptions } from './server.js';
export { startBasetenDemo } from './demo.js';

/** Baseten's simulator as the demo starts it (listed in src/simulators/platforms.ts). */
export const basetenSimulator = { kind: 'BASETEN', startDemo: startBasetenDemo } as const satisfies SimulatorModule<'BASETEN'>;
