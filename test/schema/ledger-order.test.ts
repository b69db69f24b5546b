// The run search's COST ordering takes the price table with it, and refuses one that mixes
// currencies (amounts in different currencies do not compare); its SQL is tested against the
// ledger's own price choice in test/store/ledger.test.ts and over a platform in ledger.test.ts.
import { describe, expect, it } from 'vitest';
import type { PriceEntry } from '../../src/domain/ledger.js';
import { resolveJobOrder } from '../../src/schema/job-filter.js';

describe('orderBy COST', () => {
  it('refuses to order the run search by cost over mixed currencies', () => {
    const now = new Date();
    const one: PriceEntry[] = [{ provider: '*', accelerator: '*', perAcceleratorHour: 1, currency: 'USD' }];
    expect(resolveJobOrder({ field: 'COST', direction: 'DESC' }, now, one)).toMatchObject({ by: 'COST', prices: one, now });
    const two = [...one, { provider: 'x', accelerator: '*', perAcceleratorHour: 1, currency: 'CNY' }];
    expect(() => resolveJobOrder({ field: 'COST', direction: 'DESC' }, now, two)).toThrow(/one currency/);
  });
});
