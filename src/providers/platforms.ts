// The platforms this build federates: one line per module. Everything that differs by platform
// outside a platform's folder is read off this list (the kinds, the adapter registry, the poll
// intervals, the collector's defaults, the ProviderKind docs, the providers file's schema), so a
// module added here is registered everywhere and one left out is nowhere (docs/adding-a-platform.md).
import { baseten } from './baseten/index.js';
import { modelarts } from './modelarts/index.js';
import { paiDlc } from './pai-dlc/index.js';
import type { ConfigsOf, KindsOf, PlatformModule } from './platform.js';
import { primusLens } from './primus-lens/index.js';
import { runicorn } from './runicorn/index.js';

export const PLATFORMS = [baseten, modelarts, paiDlc, primusLens, runicorn] as const satisfies readonly PlatformModule[];

export type ProviderKind = KindsOf<typeof PLATFORMS>;
export const PROVIDER_KINDS: readonly ProviderKind[] = PLATFORMS.map((p) => p.kind);

/** A provider entry of any listed platform, narrowed by `kind`. */
export type PlatformConfig = ConfigsOf<typeof PLATFORMS>;

/** A value per kind, read off each module (the poll intervals, the collector's defaults, ...). */
export function byKind<T>(read: (module: (typeof PLATFORMS)[number]) => T): Record<ProviderKind, T> {
  return Object.fromEntries(PLATFORMS.map((p) => [p.kind, read(p)])) as Record<ProviderKind, T>;
}
