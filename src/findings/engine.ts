// The findings evaluator: on an interval, one replica (a leased loop, src/lease/, as the collector's)
// looks at every running job's stored series, progress and status through the store's door in a
// constant number of statements (src/store/findings.ts), opens what it sees for the first time and
// closes what it no longer sees. Each transition goes out once on the live bus (topic
// FINDINGS_TOPIC, every replica's subscribers hear it) and as an event to this process.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LeasedLoop } from '../lease/index.js';
import type { EventBus, LiveTimers } from '../live/index.js';
import { FINDINGS_TOPIC, findingToJson, type FindingEventJson, type FindingRow, type Store, type ThresholdRule } from '../store/index.js';
import { thresholdRules, type ThresholdOverride } from './thresholds.js';

/** Seconds between evaluations by default: below every threshold's minutes, above every platform's poll interval. */
export const DEFAULT_EVALUATE_SECONDS = 60;
const LEASE_NAME = 'findings:evaluate';
/** A lease outlives its holder by half an interval, as alert delivery's; renewed by each evaluation. */
const LEASE_INTERVALS = 1.5;
/** A follower tries twice an interval: a dead holder's lease (1.5 intervals) is taken within two. */
const FOLLOWER_TRY_INTERVALS = 0.5;

export interface Evaluation {
  at: Date;
  /** Conditions seen (open findings after this evaluation). */
  seen: number;
  fired: FindingRow[];
  resolved: FindingRow[];
}

export interface FindingsEngineEvents {
  /** An evaluation ended (or a lease try did): tests wait on it. */
  evaluated: [Evaluation | null];
}

export interface FindingsEngineDeps {
  store: Store;
  logger: Logger;
  timers: LiveTimers;
  /** Where transitions go out to subscribers (every replica's, with Redis). */
  bus?: EventBus;
  intervalSeconds?: number;
  overrides?: readonly ThresholdOverride[];
  holder?: string;
}

export class FindingsEngine {
  readonly events = new EventEmitter<FindingsEngineEvents>();
  readonly holder: string;
  readonly intervalMs: number;
  readonly rules: ThresholdRule[];
  private readonly loop: LeasedLoop<Evaluation>;
  /** Evaluations this replica ran (tests read it). */
  evaluations = 0;

  constructor(private readonly deps: FindingsEngineDeps) {
    this.holder = deps.holder ?? randomUUID();
    this.intervalMs = Math.round((deps.intervalSeconds ?? DEFAULT_EVALUATE_SECONDS) * 1000);
    this.rules = thresholdRules(deps.overrides ?? []);
    this.loop = new LeasedLoop<Evaluation>({
      name: LEASE_NAME,
      holder: this.holder,
      store: deps.store.collection,
      timers: deps.timers,
      intervalMs: this.intervalMs,
      leaseMs: this.intervalMs * LEASE_INTERVALS,
      followerTryMs: this.intervalMs * FOLLOWER_TRY_INTERVALS,
      work: () => this.evaluate(),
      onError: (err, during) => deps.logger.error({ err, during }, 'findings: evaluation failed'),
      onLost: (why) => deps.logger.warn({ why }, 'findings: lost the lease; another replica evaluates now'),
      onStep: (step) => this.events.emit('evaluated', step.result),
    });
  }

  /** This replica holds the evaluator's lease. */
  get leading(): boolean {
    return this.loop.leading;
  }

  start(): this {
    this.loop.start();
    return this;
  }

  /** An evaluation is under way or due at once. */
  busy(): boolean {
    return this.loop.busy();
  }

  /**
   * One evaluation at `at` (default now) over what is stored: three statements whatever the
   * fleet's size. Tests call it at chosen instants over stored data.
   */
  async evaluate(at: Date = this.deps.store.now()): Promise<Evaluation> {
    const findings = this.deps.store.findings;
    const candidates = await findings.detect(at, this.rules);
    const fired = await findings.fire(candidates, at);
    const resolved = await findings.resolve(
      candidates.map((c) => c.fingerprint),
      at,
    );
    this.evaluations++;
    for (const f of fired) this.publish('FIRING', f);
    for (const f of resolved) this.publish('RESOLVED', f);
    if (fired.length || resolved.length) this.deps.logger.info({ fired: fired.length, resolved: resolved.length }, 'findings: evaluated');
    return { at, seen: candidates.length, fired, resolved };
  }

  private publish(event: 'FIRING' | 'RESOLVED', f: FindingRow) {
    this.deps.bus?.publish(FINDINGS_TOPIC, { type: 'finding', event, finding: findingToJson(f) } satisfies FindingEventJson);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
