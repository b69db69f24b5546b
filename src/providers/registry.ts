// Which adapter serves which platform kind. Each platform folder exports one factory.
import type { ProviderConfig, SecretSource } from '../config/index.js';
import type { ProviderKind } from '../domain/types.js';
import type { ProviderAdapter } from './provider.js';
import { createBasetenAdapter } from './baseten/adapter.js';
import { createPrimusLensAdapter } from './primus-lens/adapter.js';
import { createModelArtsAdapter } from './modelarts/adapter.js';
import { createPaiDlcAdapter } from './pai-dlc/adapter.js';
import { createRunicornAdapter } from './runicorn/adapter.js';

export interface AdapterOptions {
  /**
   * The server's clock (a test's controllable one in tests): ModelArts and PAI-DLC sign each
   * request with its time, and both platforms refuse a signature 15 min off their own clock.
   * Default Date.now.
   */
  now?: () => number;
}

type FactoryFor<K extends ProviderKind> = (config: Extract<ProviderConfig, { kind: K }>, secrets: SecretSource, options: AdapterOptions) => ProviderAdapter;

const factories: { [K in ProviderKind]?: FactoryFor<K> } = {
  BASETEN: createBasetenAdapter,
  PRIMUS_LENS: createPrimusLensAdapter,
  MODELARTS: createModelArtsAdapter,
  PAI_DLC: createPaiDlcAdapter,
  RUNICORN: createRunicornAdapter,
};

export function createAdapter(config: ProviderConfig, secrets: SecretSource, options: AdapterOptions = {}): ProviderAdapter {
  const factory = factories[config.kind] as FactoryFor<typeof config.kind> | undefined;
  if (!factory) throw new Error(`provider "${config.id}": kind ${config.kind} has no adapter in this build`);
  return factory(config as never, secrets, options);
}
