// A Primus-Lens provider entry in the providers file (PROVIDERS_CONFIG): its fields beside the common ones.
import { z } from 'zod';
import { commonProviderFields, envName, url } from '../../config/provider-kit.js';

export const primusLensConfig = z
  .object({
    ...commonProviderFields,
    kind: z.literal('PRIMUS_LENS'),
    baseUrl: url,
    cluster: z.string().optional(),
    tokenEnv: envName.optional(),
    cookieEnv: envName.optional(),
  })
  .strict();
export type PrimusLensConfig = z.infer<typeof primusLensConfig>;
