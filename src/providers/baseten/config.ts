// A Baseten provider entry in the providers file (PROVIDERS_CONFIG): its fields beside the common ones.
import { z } from 'zod';
import { commonProviderFields, envName, url } from '../../config/provider-kit.js';

export const basetenConfig = z
  .object({ ...commonProviderFields, kind: z.literal('BASETEN'), baseUrl: url.default('https://api.baseten.co'), apiKeyEnv: envName })
  .strict();
export type BasetenConfig = z.infer<typeof basetenConfig>;
