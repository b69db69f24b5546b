// The leased loop's one door: the collector, the findings evaluator and alert delivery each run
// their periodic work on one replica at a time through it.
export { LeasedLoop, LeasedWorker, type LeasedLoopOptions, type LeasedWorkerOptions, type LeaseStore, type LeaseTry, type LoopStep } from './loop.js';
