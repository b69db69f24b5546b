// The ModelArts simulator's door: the server, its fleet, and its module for the embedded demo.
import type { SimulatorModule } from '../demo-starter.js';
import { startModelArtsDemo } from './demo.js';

export { startModelArtsSimulator, type ModelArtsSimulator, type ModelArtsSimulatorOptions } from './server.js';
export {
  ALL_PHASES,
  FLAVORS,
  DEFAULT_WORKSPACE,
  VISION_WORKSPACE,
  METRIC_NAMES,
  METRIC_WINDOW,
  endTime,
  lastMetricMinute,
  metricSeries,
  metricValue,
  taskLog,
  taskNames,
  type Phase,
  type SimJob,
} from './fleet.js';
export { startModelArtsDemo } from './demo.js';

/** ModelArts's simulator as the demo starts it (listed in src/simulators/platforms.ts). */
export const modelartsSimulator = { kind: 'MODELARTS', startDemo: startModelArtsDemo } as const satisfies SimulatorModule<'MODELARTS'>;
