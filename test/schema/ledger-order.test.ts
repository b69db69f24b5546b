// The run search's COST ordering takes the price table with it, and refuses one that mixes
// currencies (amounts in different currencies do not compare); its SQL is tested against the
// ledger's own price choice in test/store/ledger.test.ts and over a platform in ledger.test.ts.
import { describe, expect, it } from 'vitest';
import type { PriceEntry } from '../../src/domain/ledger.js';
import { decodeJobCursor, encodeJobCursor } from '../../src/schema/args.js';
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

describe('orderBy WASTE', () => {
  it("keeps the request's instant and step rule, and its cursors are its own", () => {
    const now = new Date(Date.UTC(2026, 10, 28));
    const step = { minStepSeconds: 15, points: 120 };
    const waste = resolveJobOrder({ field: 'WASTE', direction: 'ASC' }, now, [], step);
    expect(waste).toEqual({ by: 'WASTE', direction: 'ASC', now, wasteStep: step });
    // A later page measures running jobs to the first page's instant.
    const cursor = encodeJobCursor(waste, { key: 2.5, id: 'p:job:x' });
    expect(decodeJobCursor(cursor, { ...waste, now: new Date() })).toEqual({ cursor: { key: 2.5, id: 'p:job:x' }, now });
    // A COST cursor means nothing in a WASTE order.
    const cost = resolveJobOrder({ field: 'COST', direction: 'ASC' }, now, []);
    expect(() => decodeJobCursor(encodeJobCursor(cost, { key: 2.5, id: 'p:job:x' }), waste)).toThrow(/another ordering/);
  });
});
