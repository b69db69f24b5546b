// The ledger's plain arithmetic: which price entry applies, how platforms' type names map to the
// models the peak table knows, and what a group's cost is (never across currencies, never partial).
import { describe, expect, it } from 'vitest';
import { acceleratorModel, type CostFigure, groupCost, PEAK_TFLOPS, peakTflops, priceFor, type PriceEntry } from '../../src/domain/ledger.js';

describe('the ledger arithmetic', () => {
  it("names the platforms' accelerator types by the models the peak table knows", () => {
    const names: [string, string | null][] = [
      ['NVIDIA-A100-SXM4-80GB', 'A100'],
      ['NVIDIA H100 80GB HBM3', 'H100'],
      ['NVIDIA H100 PCIe', 'H100 PCIe'],
      ['H20', 'H20'],
      ['H200', 'H200'],
      ['NVIDIA-H800-80GB', 'H800'],
      ['Tesla-V100-16G', 'V100'],
      ['Tesla-T4-16G', 'T4'],
      ['A10G', 'A10G'],
      ['A10', 'A10'],
      ['NVIDIA L4', 'L4'],
      ['AMD_Instinct_MI300X_OAM', 'MI300X'],
      ['MI325X', 'MI325X'],
      ['Ascend-snt9b', 'Ascend 910B'],
      ['Ascend 910B3', 'Ascend 910B'],
      ['Some Future GPU', null],
    ];
    for (const [raw, model] of names) expect(acceleratorModel(raw), raw).toBe(model);
    expect(peakTflops('H100', 'BF16', {})).toBe(989);
    expect(peakTflops('A10G', 'BF16', {})).toBeNull();
    expect(peakTflops('A10G', 'BF16', { a10g: { BF16: 70 } })).toBe(70);
    // Dense peaks: FP8 is never below BF16, BF16 never below TF32.
    for (const [model, p] of Object.entries(PEAK_TFLOPS)) {
      if (p.FP8 && p.BF16) expect(p.FP8, model).toBeGreaterThan(p.BF16);
      if (p.BF16 && p.TF32) expect(p.BF16, model).toBeGreaterThan(p.TF32);
    }
  });

  it('takes the most specific price entry, the first of equals', () => {
    const table: PriceEntry[] = [
      { provider: '*', accelerator: '*', perAcceleratorHour: 1, currency: 'USD' },
      { provider: '*', accelerator: 'H100', perAcceleratorHour: 2, currency: 'USD' },
      { provider: 'a', accelerator: '*', perAcceleratorHour: 3, currency: 'USD' },
      { provider: 'a', accelerator: 'NVIDIA H100 80GB HBM3', perAcceleratorHour: 4, currency: 'USD' },
      { provider: 'a', accelerator: 'h100', perAcceleratorHour: 5, currency: 'USD' },
      { provider: 'a', perNodeHour: 0.5, currency: 'USD' },
    ];
    expect(priceFor(table, 'a', 'NVIDIA H100 80GB HBM3', false)?.perAcceleratorHour).toBe(4);
    expect(priceFor(table, 'a', 'A100', false)?.perAcceleratorHour).toBe(3);
    expect(priceFor(table, 'b', 'H100', false)?.perAcceleratorHour).toBe(2);
    expect(priceFor(table, 'b', 'A100', false)?.perAcceleratorHour).toBe(1);
    expect(priceFor(table, 'a', null, true)?.perNodeHour).toBe(0.5);
    expect(priceFor(table, 'b', null, true)).toBeNull();
    expect(priceFor([], 'a', 'H100', false)).toBeNull();
  });

  it('sums a group exactly in millionths, and never across currencies or over missing prices', () => {
    const priced = (micros: number, currency = 'USD'): CostFigure => ({
      amountMicros: micros,
      idleAmountMicros: micros / 2,
      currency,
      billedHours: 1,
      basis: 'ACCELERATOR_HOUR',
      unitPrice: 1,
      reasons: [],
    });
    const unpriced: CostFigure = {
      ...priced(0),
      amountMicros: null,
      idleAmountMicros: null,
      currency: null,
      reasons: [{ field: 'amount', code: 'NO_PRICE', message: 'no price' }],
    };
    // 0.1 + 0.2 in floats is 0.30000000000000004; in millionths it is 300,000.
    expect(groupCost([priced(100_000), priced(200_000)])).toMatchObject({ amountMicros: 300_000, idleAmountMicros: 150_000, currency: 'USD', reasons: [] });
    expect(groupCost([priced(100_000), priced(200_000, 'CNY')])).toMatchObject({ amountMicros: null, pricedAmountMicros: null, currency: null });
    expect(groupCost([priced(100_000), unpriced])).toMatchObject({ amountMicros: null, pricedAmountMicros: 100_000, unpricedJobs: 1 });
  });
});
