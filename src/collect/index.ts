// The collector's one door: the server starts it (src/server/runtime.ts) with each provider's
// settings; the graph and /metrics read what it reports through the store (Provider.collection).
export { Collector, type CollectorDeps, type CollectorEvents } from './collector.js';
export { CallBudget } from './budget.js';
export { defaultSettings, DEFAULT_CALLS_PER_MINUTE, DEFAULT_MAX_CONCURRENT, DEFAULT_RETENTION_DAYS, type CollectSettings } from './settings.js';
