// The thresholds findings are judged by: documented defaults (docs/findings.md), overridden per
// provider and per project from the providers file (`findings:` on a provider entry). The store
// takes them as whole rules, so every override is merged onto what it overrides here.
import type { FindingThresholds, ThresholdRule } from '../store/index.js';

export const DEFAULT_THRESHOLDS: Readonly<FindingThresholds> = Object.freeze({
  stallUtilization: 0.05,
  stallMinutes: 15,
  stallStepMinutes: 10,
  stallStepFactor: 5,
  // Healthy ranks of the demo's platforms never fall below 0.4x their job's median over 10
  // minutes (their 47-minute utilization waves are out of phase); a straggler drops far lower.
  stragglerFraction: 0.3,
  stragglerBusyUtilization: 0.5,
  stragglerMinutes: 10,
  idleUtilization: 0.05,
  idleMinutes: 30,
  noDataMinutes: 15,
  failedHoldHours: 24,
  restartHoldMinutes: 60,
});

/** Overrides of some thresholds for a provider, or for one of its projects. */
export interface ThresholdOverride extends Partial<FindingThresholds> {
  providerId: string;
  /** The project's id in the graph (`<provider>:project:<id>`); absent = the whole provider. */
  projectId?: string | null;
}

/** Whole rules: the defaults, each provider's overrides, each project's on top of its provider's. */
export function thresholdRules(overrides: readonly ThresholdOverride[], defaults: FindingThresholds = DEFAULT_THRESHOLDS): ThresholdRule[] {
  const rules: ThresholdRule[] = [{ ...defaults, providerId: null, projectId: null }];
  const strip = (o: ThresholdOverride): Partial<FindingThresholds> => {
    const { providerId: _p, projectId: _j, ...t } = o;
    return Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined)) as Partial<FindingThresholds>;
  };
  const providerLevel = new Map<string, Partial<FindingThresholds>>();
  for (const o of overrides) if (!o.projectId) providerLevel.set(o.providerId, { ...providerLevel.get(o.providerId), ...strip(o) });
  for (const [providerId, t] of providerLevel) rules.push({ ...defaults, ...t, providerId, projectId: null });
  for (const o of overrides) {
    if (!o.projectId) continue;
    rules.push({ ...defaults, ...providerLevel.get(o.providerId), ...strip(o), providerId: o.providerId, projectId: o.projectId });
  }
  return rules;
}
