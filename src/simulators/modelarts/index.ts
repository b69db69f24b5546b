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
