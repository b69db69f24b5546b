// The toy platform's providers-file entry: a local "platform" whose jobs are listed in its config
// (name and raw status), enough to show a sixth platform going through every derivation.
import { z } from 'zod';
import { commonProviderFields } from '../../../src/config/provider-kit.js';

export const toyConfig = z
  .object({
    ...commonProviderFields,
    kind: z.literal('TOY'),
    jobs: z.array(z.object({ name: z.string().min(1), status: z.string() }).strict()).min(1),
  })
  .strict();
export type ToyConfig = z.infer<typeof toyConfig>;
