// The Runicorn simulator's door: the viewer, the storage writer, and its module for the embedded demo.
import type { SimulatorModule } from '../demo-starter.js';
import { startRunicornDemo } from './demo.js';

export { startRunicornViewer, type RunicornViewerHandle, type RunicornViewerOptions } from './viewer.js';
export { createLegacyRun, createRun, makeRunId, RunicornRunWriter, zoneOffsetMinutes, type RunSpec } from './storage-writer.js';
export { startRunicornDemo } from './demo.js';

/** Runicorn's simulator as the demo starts it (listed in src/simulators/platforms.ts). */
export const runicornSimulator = { kind: 'RUNICORN', startDemo: startRunicornDemo } as const satisfies SimulatorModule<'RUNICORN'>;
