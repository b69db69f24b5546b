// The providers file (PROVIDERS_CONFIG): which platform instances to federate. Secrets are never
// in it, only the names of environment variables that hold them (docs/design.md, "Secrets"). Each
// platform's entry is its module's configSchema (src/providers/<name>/config.ts); the union is
// read off the list of modules.
import { z } from 'zod';
import { PLATFORMS, type PlatformConfig } from '../providers/platforms.js';
import { configUnionOf } from '../providers/platform.js';
import { alertsConfig } from './alerts-config.js';
import { ledgerConfig } from './ledger-config.js';

export {
  collectConfig,
  findingsConfig,
  type FindingsConfig,
  DEFAULT_PROVIDER_TIMEOUT_SECONDS,
  requireSecret,
  type CollectConfig,
  type SecretSource,
} from './provider-kit.js';

export const providerConfig = configUnionOf(PLATFORMS);

export const providersFile = z
  .object({ providers: z.array(providerConfig).min(1), ledger: ledgerConfig.optional(), alerts: alertsConfig.optional() })
  .strict()
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.providers.forEach((p, i) => {
      if (seen.has(p.id)) ctx.addIssue({ code: 'custom', message: `duplicate provider id "${p.id}"`, path: ['providers', i, 'id'] });
      seen.add(p.id);
    });
  });

export type ProviderConfig = PlatformConfig;
