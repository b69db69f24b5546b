// The findings evaluator's one door: the server starts it (src/server/runtime.ts); the graph reads
// findings through the store (src/store/findings.ts) and hears transitions on the live bus.
export {
  DEFAULT_EVALUATE_SECONDS,
  FindingsEngine,
  type Evaluation,
  type FindingsEngineDeps,
} from './engine.js';
export { DEFAULT_THRESHOLDS, thresholdRules, type ThresholdOverride } from './thresholds.js';
