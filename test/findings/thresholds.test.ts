// Thresholds: a job takes its project's values over its provider's over the defaults, and the
// providers file's `findings:` entry (with `projects:`) is read and checked like the rest of it.
import { describe, expect, it } from 'vitest';
import { parseProvidersFile } from '../../src/config/index.js';
import { DEFAULT_THRESHOLDS, thresholdRules } from '../../src/findings/index.js';

describe('finding thresholds', () => {
  it('merges a project override onto its provider override onto the defaults', () => {
    const rules = thresholdRules([
      { providerId: 'bt', idleMinutes: 60, stragglerFraction: 0.5 },
      { providerId: 'bt', projectId: 'bt:project:p1', stallMinutes: 45 },
    ]);
    expect(rules).toEqual([
      { ...DEFAULT_THRESHOLDS, providerId: null, projectId: null },
      { ...DEFAULT_THRESHOLDS, idleMinutes: 60, stragglerFraction: 0.5, providerId: 'bt', projectId: null },
      { ...DEFAULT_THRESHOLDS, idleMinutes: 60, stragglerFraction: 0.5, stallMinutes: 45, providerId: 'bt', projectId: 'bt:project:p1' },
    ]);
  });

  it('reads `findings:` on a provider entry and refuses a value out of range, naming it', () => {
    const yaml = (extra: string) => `providers:\n  - id: bt\n    kind: BASETEN\n    apiKeyEnv: K\n    findings:\n${extra}`;
    const [p] = parseProvidersFile(yaml('      idleMinutes: 60\n      projects:\n        abc:\n          stallMinutes: 45\n'), 'p.yaml');
    expect(p!.findings).toEqual({ idleMinutes: 60, projects: { abc: { stallMinutes: 45 } } });
    expect(() => parseProvidersFile(yaml('      stragglerFraction: 2\n'), 'p.yaml')).toThrow(/p\.yaml\.providers\[0\]\.findings\.stragglerFraction/);
    expect(() => parseProvidersFile(yaml('      idleMinuets: 60\n'), 'p.yaml')).toThrow(/idleMinuets/);
  });
});
