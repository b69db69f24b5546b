// What a platform's module takes from configuration: the fields every provider entry has, the
// shapes of a URL and of an environment variable's name, and the secret lookup. Kept apart from
// providers-config.ts (which builds the union of the platforms' schemas from src/providers/platforms.ts)
// so a platform's module can use them without importing the union it is part of.
import { z } from 'zod';
import { isValidProviderId } from '../domain/ids.js';
import { registerSecret } from '../domain/secrets.js';

/**
 * An upstream call's time-out when a provider sets none. It stays well inside the default execution
 * time-out of a request (30 s): a field whose platform is slow then fails alone (UPSTREAM_TIMEOUT)
 * and the rest of the answer is kept, instead of the whole answer becoming EXECUTION_TIMEOUT.
 */
export const DEFAULT_PROVIDER_TIMEOUT_SECONDS = 20;

/** Per-provider collector settings (src/collect/settings.ts has the defaults). */
export const collectConfig = z
  .object({
    enabled: z.boolean().optional(),
    intervalSeconds: z.number().positive().max(3600).optional(),
    listIntervalSeconds: z.number().positive().max(86_400).optional(),
    callsPerMinute: z.number().int().min(1).max(100_000).optional(),
    maxConcurrent: z.number().int().min(1).max(256).optional(),
    retentionDays: z.number().positive().max(3650).nullable().optional(),
    rawRetentionDays: z.number().positive().max(36_500).nullable().optional(),
    finishedJobRawRetentionDays: z.number().positive().max(36_500).nullable().optional(),
    minuteRollupRetentionDays: z.number().positive().max(36_500).nullable().optional(),
    hourRollupRetentionDays: z.number().positive().max(36_500).nullable().optional(),
    compactAfterDays: z.number().min(0).max(36_500).nullable().optional(),
    compactBatchesPerSweep: z.number().int().min(1).max(10_000).optional(),
    firstLookbackSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .optional(),
    training: z.boolean().optional(),
    logs: z.boolean().optional(),
  })
  .strict();
export type CollectConfig = z.infer<typeof collectConfig>;

/** The fields of every provider entry, whatever its kind: spread into each platform's schema. */
/** Finding thresholds (src/findings/thresholds.ts has the defaults, docs/findings.md their meaning). */
const findingThresholds = {
  stallUtilization: z.number().min(0).max(1).optional(),
  stallMinutes: z.number().positive().max(1440).optional(),
  stallStepMinutes: z.number().positive().max(1440).optional(),
  stallStepFactor: z.number().min(1).max(100).optional(),
  stragglerFraction: z.number().gt(0).lt(1).optional(),
  stragglerBusyUtilization: z.number().min(0).max(1).optional(),
  stragglerMinutes: z.number().positive().max(1440).optional(),
  idleUtilization: z.number().min(0).max(1).optional(),
  idleMinutes: z.number().positive().max(1440).optional(),
  noDataMinutes: z.number().positive().max(1440).optional(),
  failedHoldHours: z.number().positive().max(720).optional(),
  restartHoldMinutes: z.number().positive().max(43_200).optional(),
};
/** A provider's finding thresholds, and per project (by the platform's project id) on top of them. */
export const findingsConfig = z
  .object({ ...findingThresholds, projects: z.record(z.string().min(1), z.object(findingThresholds).strict()).optional() })
  .strict();
export type FindingsConfig = z.infer<typeof findingsConfig>;

export const commonProviderFields = {
  id: z.string().refine(isValidProviderId, {
    message: 'must be lower-case letters, digits and dashes (it becomes part of every id)',
  }),
  name: z.string().min(1).optional(),
  pollIntervalSeconds: z.number().positive().max(3600).optional(),
  timeoutSeconds: z.number().positive().max(300).optional(),
  collect: collectConfig.optional(),
  findings: findingsConfig.optional(),
};
export const url = z.string().url();
export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable');

/** Environment lookup handed to adapters; demo mode passes the simulators' own secrets here. */
export type SecretSource = Readonly<Record<string, string | undefined>>;

/** A secret by its variable name, or a clear error naming the variable (never the value). */
export function requireSecret(env: SecretSource, name: string, providerId: string): string {
  const v = env[name];
  if (!v) throw new Error(`provider "${providerId}": environment variable ${name} is not set`);
  // Read once here by every adapter: from now on no error, log line or response may carry it.
  registerSecret(v);
  return v;
}
