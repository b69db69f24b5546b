// A sixth platform, as a newcomer would add one: this folder (config, mapping, adapter, and this
// module) plus one line, the list in platforms.ts here. It lives in the tests, so the build's own
// list (src/providers/platforms.ts) stays the five real platforms; the toy's line extends that list.
import type { PlatformModule } from '../../../src/providers/platform.js';
import { createToyAdapter } from './adapter.js';
import { toyConfig } from './config.js';
import { STATUS } from './mapping.js';

export const toy = {
  kind: 'TOY',
  description: 'A toy platform whose jobs are listed in its config (tests only)',
  configSchema: toyConfig,
  createAdapter: createToyAdapter,
  defaultPollSeconds: 5,
  collect: { callsPerMinute: 60, retentionDays: null },
  statuses: { table: STATUS },
} as const satisfies PlatformModule<'TOY', typeof toyConfig>;
