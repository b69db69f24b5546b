// Which adapter serves which platform kind: read off the list of platform modules (platforms.ts).
import type { ProviderConfig, SecretSource } from '../config/index.js';
import type { ProviderAdapter } from './provider.js';
import { PLATFORMS } from './platforms.js';
import type { PlatformModule } from './platform.js';

const BY_KIND = new Map<string, PlatformModule>(PLATFORMS.map((p) => [p.kind, p]));

export function createAdapter(config: ProviderConfig, secrets: SecretSource): ProviderAdapter {
  const module = BY_KIND.get(config.kind);
  if (!module) throw new Error(`provider "${config.id}": kind ${config.kind} has no adapter in this build`);
  // The config was parsed by this module's own schema (config/providers-config.ts picks it by kind).
  return module.createAdapter(config as never, secrets);
}
