// Which adapter serves which platform kind: read off the list of platform modules (platforms.ts).
import type { ProviderConfig, SecretSource } from '../config/index.js';
import { type AdapterOptions, adapterFactoryOf } from './platform.js';
import { PLATFORMS } from './platforms.js';
import type { ProviderAdapter } from './provider.js';

export type { AdapterOptions } from './platform.js';

const factory = adapterFactoryOf(PLATFORMS);

/** The adapter of a provider entry; the entry was parsed by its own module's schema (config/providers-config.ts). */
export function createAdapter(config: ProviderConfig, secrets: SecretSource, options: AdapterOptions = {}): ProviderAdapter {
  return factory(config, secrets, options);
}
