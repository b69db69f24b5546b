// The platforms this build federates: one line per module. Everything that differs by platform
// outside a platform's folder is read off this list (the kinds, the adapter registry, the poll
// intervals, the collector's defaults, the ProviderKind docs, the providers file's schema), so a
// module added here is registered everywhere and one left out is nowhere (docs/adding-a-platform.md).
import { baseten } from './baseten/index.js';
import { modelarts } from './modelarts/index.js';
import { paiDlc } from './pai-dlc/index.js';
import { kindDocsOf, valuesByKind, type ConfigsOf, type KindsOf, type PlatformModule } from './platform.js';
import { primusLens } from './primus-lens/index.js';
import { runicorn } from './runicorn/index.js';

export const PLATFORMS = [baseten, modelarts, paiDlc, primusLens, runicorn] as const satisfies readonly PlatformModule[];

export type ProviderKind = KindsOf<typeof PLATFORMS>;
export const PROVIDER_KINDS: readonly ProviderKind[] = PLATFORMS.map((p) => p.kind);

/** A provider entry of any listed platform, narrowed by `kind`. */
export type PlatformConfig = ConfigsOf<typeof PLATFORMS>;

/** A value per kind, read off each module (the poll intervals, the collector's defaults, ...). */
export function byKind<T>(read: (module: (typeof PLATFORMS)[number]) => T): Record<ProviderKind, T> {
  return valuesByKind(PLATFORMS, read);
}

/** The contract's ProviderKind values, each described by its module. */
export const PROVIDER_KIND_DOCS = kindDocsOf(PLATFORMS);

/**
 * Compiles only for a kind the list holds. Each module's index.ts names its kind through it, so a
 * platform folder whose line above is missing fails type-checking instead of being silently absent.
 */
export type Listed<K extends ProviderKind> = K;
