// A ModelArts provider entry in the providers file (PROVIDERS_CONFIG): its fields beside the common ones.
import { z } from 'zod';
import { commonProviderFields, envName, url } from '../../config/provider-kit.js';

export const modelartsConfig = z
  .object({
    ...commonProviderFields,
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
export type ModelArtsConfig = z.infer<typeof modelartsConfig>;
