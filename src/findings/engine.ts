// The findings evaluator: on an interval, one replica (a leased loop, src/lease/, as the collector's)
// looks at every running job's stored series, progress and status through the store's door in a
// constant number of statements (src/store/findings.ts), opens what it sees for the first time and
// closes what it no longer sees. Each transition goes out once on the live bus (topic
// FINDINGS_TOPIC, every replica's subscribers hear it) and as an event to this process.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LeasedWorker } from '../lease/index.js';
import type { EventBus, LiveTimers } from '../live/index.js';
import { FINDINGS_TOPIC, findingToJson, type FindingEventJson, type FindingRow, type Store, type ThresholdRule } from '../store/index.js';
import { thresholdRules, type ThresholdOverride } from './thresholds.js';

/** Seconds between evaluations by default: below every threshold's minutes, above every platform's poll interval. */
export const DEFAULT_EVALUATE_SECONDS = 60;
const LEASE_NAME = 'findings:evaluate';

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

export class FindingsEngine extends LeasedWorker<Evaluation> {
  readonly events = new EventEmitter<FindingsEngineEvents>();
  readonly intervalMs: number;
  readonly rules: ThresholdRule[];
  /** Evaluations this replica ran (tests read it). */
  evaluations = 0;

  constructor(private readonly deps: FindingsEngineDeps) {
    const intervalMs = Math.round((deps.intervalSeconds ?? DEFAULT_EVALUATE_SECONDS) * 1000);
    super({
      name: LEASE_NAME,
      holder: deps.holder ?? randomUUID(),
      store: deps.store.collection,
      timers: deps.timers,
      intervalMs,
      logger: deps.logger,
      doing: 'findings: evaluation',
    });
    this.intervalMs = intervalMs;
    this.rules = thresholdRules(deps.overrides ?? []);
  }

  protected step(): Promise<Evaluation> {
    return this.evaluate();
  }

  protected stepped(result: Evaluation | null): void {
    this.events.emit('evaluated', result);
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
}
