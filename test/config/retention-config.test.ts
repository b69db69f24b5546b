// The retention settings per resolution: the environment's (every provider) and a provider's own
// collect entry, which wins; unset: issue 41's defaults (raw 30 days, 1-minute a year, 1-hour for
// ever); 0 (environment) or null (provider entry) keeps that resolution for ever; a bad value is
// refused at start.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseProvidersFile } from '../../src/config/index.js';
import { collectSettings } from '../../src/server/runtime.js';

describe('retention settings', () => {
  it('default to raw 30 days, 1-minute a year, 1-hour for ever', () => {
    const config = loadConfig({});
    const s = collectSettings('BASETEN', config.collect!, undefined);
    expect(s.rawRetentionDays).toBe(30);
    expect(s.finishedJobRawRetentionDays).toBeNull();
    expect(s.minuteRollupRetentionDays).toBe(365);
    expect(s.hourRollupRetentionDays).toBeNull();
  });

  it('keep a resolution for ever when the environment says 0, or a provider entry null', () => {
    const config = loadConfig({ RAW_POINTS_RETENTION_DAYS: '0', MINUTE_ROLLUP_RETENTION_DAYS: '0', HOUR_ROLLUP_RETENTION_DAYS: '0' });
    expect(collectSettings('BASETEN', config.collect!, undefined)).toMatchObject({
      rawRetentionDays: null,
      minuteRollupRetentionDays: null,
      hourRollupRetentionDays: null,
    });
    const [own] = parseProvidersFile(
      `providers:\n  - { id: bt, kind: BASETEN, apiKeyEnv: K, collect: { rawRetentionDays: null, minuteRollupRetentionDays: null } }\n`,
      'providers.yaml',
    );
    expect(collectSettings('BASETEN', loadConfig({}).collect!, own!.collect)).toMatchObject({ rawRetentionDays: null, minuteRollupRetentionDays: null });
  });

  it('are read from the environment for every provider, a provider entry winning', () => {
    const config = loadConfig({
      RAW_POINTS_RETENTION_DAYS: '30',
      FINISHED_JOB_RAW_RETENTION_DAYS: '90',
      MINUTE_ROLLUP_RETENTION_DAYS: '365',
      HOUR_ROLLUP_RETENTION_DAYS: '3650',
    });
    expect(config.collect).toMatchObject({
      rawRetentionDays: 30,
      finishedJobRawRetentionDays: 90,
      minuteRollupRetentionDays: 365,
      hourRollupRetentionDays: 3650,
    });
    const server = collectSettings('MODELARTS', config.collect!, undefined);
    expect(server).toMatchObject({ rawRetentionDays: 30, finishedJobRawRetentionDays: 90, minuteRollupRetentionDays: 365, hourRollupRetentionDays: 3650 });
    const [own] = parseProvidersFile(
      `providers:
  - id: bt
    kind: BASETEN
    apiKeyEnv: K
    collect: { rawRetentionDays: 7, finishedJobRawRetentionDays: 60, minuteRollupRetentionDays: 180.5, hourRollupRetentionDays: null }
`,
      'providers.yaml',
    );
    expect(collectSettings('BASETEN', config.collect!, own!.collect)).toMatchObject({
      rawRetentionDays: 7,
      finishedJobRawRetentionDays: 60,
      minuteRollupRetentionDays: 180.5,
      hourRollupRetentionDays: null,
    });
  });

  const badEnv: [string, string][] = [
    ['RAW_POINTS_RETENTION_DAYS', '-3'],
    ['HOUR_ROLLUP_RETENTION_DAYS', '-1'],
    ['FINISHED_JOB_RAW_RETENTION_DAYS', 'a month'],
    ['MINUTE_ROLLUP_RETENTION_DAYS', '36501'],
  ];
  for (const [name, value] of badEnv) {
    it(`refuses ${name}=${value}, naming it`, () => {
      expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`environment\\.${name}`));
    });
  }

  for (const key of ['finishedJobRawRetentionDays', 'minuteRollupRetentionDays', 'hourRollupRetentionDays']) {
    it(`refuses a provider's ${key} of 0, naming the key`, () => {
      const text = `providers:\n  - { id: bt, kind: BASETEN, apiKeyEnv: K, collect: { ${key}: 0 } }\n`;
      expect(() => parseProvidersFile(text, 'providers.yaml')).toThrow(new RegExp(`providers\\[0\\]\\.collect\\.${key}`));
    });
  }
});
