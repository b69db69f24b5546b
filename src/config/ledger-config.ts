// The ledger's part of the providers file (`ledger:`): the price table, average power per model
// and MFU peaks (docs/ledger.md). Nothing here has a default price or power: a job without a
// matching entry gets a null cost (or energy estimate) that says why.
import { z } from 'zod';
import { isValidProviderId } from '../domain/ids.js';
import { type LedgerSettings, NO_LEDGER_SETTINGS, PRECISIONS, type Precision } from '../domain/ledger.js';

const money = z.number().finite().min(0).max(1_000_000);
const precision = z.enum(PRECISIONS as [Precision, ...Precision[]]);

export const priceEntry = z
  .object({
    provider: z.string().refine((s) => s === '*' || isValidProviderId(s), { message: 'must be a provider id of this file, or "*" for any' }),
    accelerator: z.string().min(1).max(200).optional(),
    perAcceleratorHour: money.optional(),
    perNodeHour: money.optional(),
    currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD, CNY or EUR'),
  })
  .strict()
  .refine((p) => p.perAcceleratorHour !== undefined || p.perNodeHour !== undefined, {
    message: 'needs perAcceleratorHour (with accelerator) or perNodeHour (CPU-only jobs)',
    path: ['perAcceleratorHour'],
  })
  .refine((p) => p.perAcceleratorHour === undefined || p.accelerator !== undefined, {
    message: 'perAcceleratorHour needs accelerator (a model name, or "*" for any)',
    path: ['accelerator'],
  });

export const ledgerConfig = z
  .object({
    prices: z.array(priceEntry).max(10_000).default([]),
    averagePowerWatts: z.record(z.string().min(1).max(200), z.number().positive().max(10_000)).default({}),
    peakTflops: z.record(z.string().min(1).max(200), z.partialRecord(precision, z.number().positive().max(1_000_000))).default({}),
    precision: precision.default('BF16'),
  })
  .strict();
export type LedgerConfig = z.infer<typeof ledgerConfig>;

/** The settings the graph reads, from the file's `ledger` entry (absent: no prices, no power, the built-in peaks). */
export function ledgerSettings(c: LedgerConfig | undefined): LedgerSettings {
  if (!c) return NO_LEDGER_SETTINGS;
  return { prices: c.prices, averagePowerWatts: c.averagePowerWatts, peakTflops: c.peakTflops as LedgerSettings['peakTflops'], precision: c.precision };
}
