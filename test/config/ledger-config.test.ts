// The providers file's `ledger` entry: a price table, average power and peaks, read as written
// (no default price); a bad entry is refused naming its key.
import { describe, expect, it } from 'vitest';
import { ConfigError, ledgerSettings, parseConfigFile } from '../../src/config/index.js';
import { NO_LEDGER_SETTINGS } from '../../src/domain/ledger.js';

const PROVIDERS = `providers:\n  - { id: lens, kind: PRIMUS_LENS, baseUrl: https://safe.example.com/lens, tokenEnv: LENS_TOKEN }\n`;

describe('the ledger entry of the providers file', () => {
  it('reads prices, average power, peaks and the MFU precision', () => {
    const { ledger } = parseConfigFile(
      `${PROVIDERS}ledger:
  prices:
    - { provider: lens, accelerator: MI300X, perAcceleratorHour: 2.1, currency: USD }
    - { provider: "*", perNodeHour: 0.3, currency: EUR }
  averagePowerWatts: { MI300X: 600 }
  peakTflops: { MI300X: { BF16: 1300 } }
  precision: FP8
`,
      'providers.yaml',
    );
    expect(ledgerSettings(ledger)).toEqual({
      prices: [
        { provider: 'lens', accelerator: 'MI300X', perAcceleratorHour: 2.1, currency: 'USD' },
        { provider: '*', perNodeHour: 0.3, currency: 'EUR' },
      ],
      averagePowerWatts: { MI300X: 600 },
      peakTflops: { MI300X: { BF16: 1300 } },
      precision: 'FP8',
    });
  });

  it('invents nothing when there is none', () => {
    const { ledger } = parseConfigFile(PROVIDERS, 'providers.yaml');
    expect(ledger).toBeUndefined();
    expect(ledgerSettings(ledger)).toEqual(NO_LEDGER_SETTINGS);
    expect(NO_LEDGER_SETTINGS.prices).toEqual([]);
  });

  const bad: [string, string, RegExp][] = [
    ['a currency that is no ISO code', `- { provider: lens, accelerator: H100, perAcceleratorHour: 2, currency: dollars }`, /ledger\.prices\[0\]\.currency/],
    ['a price per accelerator-hour without an accelerator', `- { provider: lens, perAcceleratorHour: 2, currency: USD }`, /ledger\.prices\[0\]\.accelerator/],
    ['an entry with no price', `- { provider: lens, accelerator: H100, currency: USD }`, /ledger\.prices\[0\]\.perAcceleratorHour/],
    ['a negative price', `- { provider: lens, accelerator: H100, perAcceleratorHour: -1, currency: USD }`, /ledger\.prices\[0\]\.perAcceleratorHour/],
    ['an unknown key', `- { provider: lens, accelerator: H100, perAcceleratorHour: 1, currency: USD, discount: 5 }`, /ledger\.prices\[0\].*discount/],
  ];
  for (const [what, entry, message] of bad) {
    it(`refuses ${what}, naming the key`, () => {
      const text = `${PROVIDERS}ledger:\n  prices:\n    ${entry}\n`;
      expect(() => parseConfigFile(text, 'providers.yaml')).toThrow(ConfigError);
      expect(() => parseConfigFile(text, 'providers.yaml')).toThrow(message);
    });
  }
});
