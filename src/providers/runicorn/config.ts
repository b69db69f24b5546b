// A Runicorn provider entry in the providers file (PROVIDERS_CONFIG): its fields beside the common ones.
import { z } from 'zod';
import { commonProviderFields, url } from '../../config/provider-kit.js';

export const runicornConfig = z
  .object({ ...commonProviderFields, kind: z.literal('RUNICORN'), baseUrl: url.optional(), storageDir: z.string().optional() })
  .strict()
  .refine((c) => Boolean(c.baseUrl) !== Boolean(c.storageDir), {
    message: 'needs exactly one of baseUrl (the viewer) or storageDir (the storage folder)',
    path: ['baseUrl'],
  });
export type RunicornConfig = z.infer<typeof runicornConfig>;
