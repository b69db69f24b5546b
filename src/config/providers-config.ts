// The providers file (PROVIDERS_CONFIG): which platform instances to federate. Secrets are never
// in it, only the names of environment variables that hold them (DESIGN.md, "Secrets").
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

const common = {
  id: z.string().refine(isValidProviderId, {
    message: 'must be lower-case letters, digits and dashes (it becomes part of every id)',
  }),
  name: z.string().min(1).optional(),
  pollIntervalSeconds: z.number().positive().max(3600).optional(),
  timeoutSeconds: z.number().positive().max(300).optional(),
  collect: collectConfig.optional(),
  findings: findingsConfig.optional(),
};
const url = z.string().url();
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable');

export const basetenConfig = z.object({ ...common, kind: z.literal('BASETEN'), baseUrl: url.default('https://api.baseten.co'), apiKeyEnv: envName }).strict();

export const modelartsConfig = z
  .object({
    ...common,
    kind: z.literal('MODELARTS'),
    baseUrl: url,
    projectId: z.string().min(1),
    workspaceId: z.string().optional(),
    accessKeyIdEnv: envName.optional(),
    secretAccessKeyEnv: envName.optional(),
    securityTokenEnv: envName.optional(),
    iamUrl: url.optional(),
    domainName: z.string().optional(),
    projectName: z.string().optional(),
    usernameEnv: envName.optional(),
    passwordEnv: envName.optional(),
  })
  .strict()
  .refine((c) => (c.accessKeyIdEnv && c.secretAccessKeyEnv) || (c.iamUrl && c.domainName && c.usernameEnv && c.passwordEnv), {
    message: 'needs accessKeyIdEnv + secretAccessKeyEnv (AK/SK) or iamUrl + domainName + usernameEnv + passwordEnv (IAM token)',
    path: ['accessKeyIdEnv'],
  });

export const paiDlcConfig = z
  .object({
    ...common,
    kind: z.literal('PAI_DLC'),
    baseUrl: url,
    regionId: z.string().min(1),
    workspaceId: z.string().optional(),
    /**
     * The Alibaba Cloud account (main) id: GetMetrics' userId dimension. CloudMonitor files a job's
     * metrics under the account, while a job's UserId may be a RAM sub-user; without it the job's
     * UserId is sent.
     */
    accountId: z.string().regex(/^\d+$/, 'must be the numeric account id').optional(),
    accessKeyIdEnv: envName,
    secretAccessKeyEnv: envName,
    securityTokenEnv: envName.optional(),
  })
  .strict();

export const primusLensConfig = z
  .object({
    ...common,
    kind: z.literal('PRIMUS_LENS'),
    baseUrl: url,
    cluster: z.string().optional(),
    tokenEnv: envName.optional(),
    cookieEnv: envName.optional(),
  })
  .strict();

export const runicornConfig = z
  .object({ ...common, kind: z.literal('RUNICORN'), baseUrl: url.optional(), storageDir: z.string().optional() })
  .strict()
  .refine((c) => Boolean(c.baseUrl) !== Boolean(c.storageDir), {
    message: 'needs exactly one of baseUrl (the viewer) or storageDir (the storage folder)',
    path: ['baseUrl'],
  });

export const providerConfig = z.discriminatedUnion('kind', [basetenConfig, modelartsConfig, paiDlcConfig, primusLensConfig, runicornConfig]);

export const providersFile = z
  .object({ providers: z.array(providerConfig).min(1) })
  .strict()
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.providers.forEach((p, i) => {
      if (seen.has(p.id)) ctx.addIssue({ code: 'custom', message: `duplicate provider id "${p.id}"`, path: ['providers', i, 'id'] });
      seen.add(p.id);
    });
  });

export type ProviderConfig = z.infer<typeof providerConfig>;
export type BasetenConfig = z.infer<typeof basetenConfig>;
export type ModelArtsConfig = z.infer<typeof modelartsConfig>;
export type PaiDlcConfig = z.infer<typeof paiDlcConfig>;
export type PrimusLensConfig = z.infer<typeof primusLensConfig>;
export type RunicornConfig = z.infer<typeof runicornConfig>;

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
