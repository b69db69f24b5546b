// Type-level checks, run by `npm run typecheck` (tsconfig includes test/): each `@ts-expect-error`
// fails the type-check if the line below it compiles, so these show that a half-registered
// platform does not compile. Nothing here runs.
import { z } from 'zod';
import type { ProviderConfig } from '../../../src/config/index.js';
import { commonProviderFields } from '../../../src/config/provider-kit.js';
import type { PlatformModule } from '../../../src/providers/platform.js';
import type { ConfigsOf, KindsOf } from '../../../src/providers/platform.js';
import type { Listed, ProviderKind } from '../../../src/providers/platforms.js';
import type { SimulatorModule } from '../../../src/simulators/demo-starter.js';
import { createToyAdapter } from './adapter.js';
import { toyConfig } from './config.js';
import { toy } from './index.js';
import { STATUS } from './mapping.js';
import type { TOY_PLATFORMS } from './platforms.js';

// A module missing a part (here its default poll interval) is not a PlatformModule.
export const withoutPollInterval = {
  kind: 'TOY',
  description: 'A toy platform',
  configSchema: toyConfig,
  createAdapter: createToyAdapter,
  collect: { callsPerMinute: 60, retentionDays: null },
  statuses: { table: STATUS },
  // @ts-expect-error defaultPollSeconds is missing
} as const satisfies PlatformModule<'TOY', typeof toyConfig>;

// A module whose schema is another kind's is refused too.
const otherKindConfig = z.object({ ...commonProviderFields, kind: z.literal('OTHER') }).strict();
export const kindMismatch = {
  ...toy,
  // @ts-expect-error the schema's kind literal must be the module's kind
  configSchema: otherKindConfig,
} as const satisfies PlatformModule<'TOY'>;

// Without its line, the toy's kind is no ProviderKind: its module's own `Listed` check fails...
// @ts-expect-error TOY is not in src/providers/platforms.ts
export type ToyKindUnlisted = Listed<typeof toy.kind>;
// ...a providers-file entry of its kind does not type...
export const unlistedEntry: ProviderConfig = {
  id: 'toy',
  // @ts-expect-error TOY is not a kind the build's list holds
  kind: 'TOY',
  jobs: [{ name: 'a', status: 'playing' }],
};
// ...and neither does a simulator for it.
// @ts-expect-error a simulator's kind must be a listed platform's
export type ToySimulator = SimulatorModule<'TOY'>;

// With the line (TOY_PLATFORMS), TOY is a kind and its entry types as a config of the list.
export const listedKind: KindsOf<typeof TOY_PLATFORMS> = 'TOY';
export const listedEntry: ConfigsOf<typeof TOY_PLATFORMS> = { id: 'toy', kind: 'TOY', jobs: [{ name: 'a', status: 'playing' }] };
export const realKindStillListed: ProviderKind = 'RUNICORN';
