// A PAI-DLC provider entry in the providers file (PROVIDERS_CONFIG): its fields beside the common ones.
import { z } from 'zod';
import { commonProviderFields, envName, url } from '../../config/provider-kit.js';

export const paiDlcConfig = z
  .object({
    ...commonProviderFields,
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
export type PaiDlcConfig = z.infer<typeof paiDlcConfig>;
