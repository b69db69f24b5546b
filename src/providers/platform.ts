// What one platform's module (src/providers/<name>/index.ts) gives the rest of the server. Every
// per-platform fact the server needs outside the platform's folder is a part of it, and the
// registry, the kinds, the poll intervals, the collector's defaults, the contract's ProviderKind
// docs and the providers file's schema are all read off the list in platforms.ts. A module
// missing a part fails its `satisfies PlatformModule<...>`; see docs/adding-a-platform.md.
import { z } from 'zod';
import type { SecretSource } from '../config/provider-kit.js';
import type { JobStatus } from '../domain/types.js';
import type { UpstreamTimers } from './http-client.js';
import type { ProviderAdapter } from './provider.js';

/** A provider entry's schema: a strict object whose `kind` is the platform's literal. */
export type PlatformConfigSchema<K extends string = string> = z.ZodObject<{ kind: z.ZodLiteral<K> } & z.ZodRawShape, z.core.$ZodObjectConfig>;

/**
 * How the platform's own statuses map to the common JobStatus: the table its mapping.ts looks
 * raw statuses up in (anything else is UNKNOWN), and the rules a table cannot say.
 */
export interface StatusMapping {
  readonly table: Readonly<Record<string, JobStatus>>;
  readonly notes?: readonly string[];
}

/** What the server gives every adapter beside its config and secrets. */
export interface AdapterOptions {
  /**
   * The server's clock (a test's controllable one in tests): ModelArts and PAI-DLC sign each
   * request with its time, and both platforms refuse a signature 15 min off their own clock.
   * Default Date.now.
   */
  now?: () => number;
  /** What the time-outs of its HTTP calls run on (a test's clock in tests); default the real one. */
  timers?: UpstreamTimers;
}

export interface PlatformModule<K extends string = string, S extends PlatformConfigSchema<K> = PlatformConfigSchema<K>> {
  /** The ProviderKind value (upper snake case), the `kind` of its providers-file entries. */
  readonly kind: K;
  /** The ProviderKind enum value's description in the GraphQL contract. */
  readonly description: string;
  /** Its entry in the providers file, beside the common fields (config/provider-kit.ts). */
  readonly configSchema: S;
  /** Builds the adapter for one configured provider; secrets resolve the config's *Env names. */
  createAdapter(config: z.output<S>, secrets: SecretSource, options: AdapterOptions): ProviderAdapter;
  /** Seconds between live polls when the provider's config sets no pollIntervalSeconds. */
  readonly defaultPollSeconds: number;
  /** The collector's defaults for it (a provider's `collect` settings override them). */
  readonly collect: {
    /** Upstream calls per minute, a tenth or less of any limit the platform documents. */
    readonly callsPerMinute: number;
    /** Days the platform keeps a finished job's data; null = until deleted. */
    readonly retentionDays: number | null;
  };
  readonly statuses: StatusMapping;
}

/** The kinds of a list of modules, in its order. */
export type KindsOf<L extends readonly PlatformModule[]> = L[number]['kind'];

/** The union of the config entries a list of modules accepts, each narrowed by its kind. */
export type ConfigsOf<L extends readonly PlatformModule[]> = { [I in keyof L]: z.output<L[I]['configSchema']> }[number];

/** The config schemas of a list of modules, as the tuple z.discriminatedUnion takes. */
export type SchemasOf<L extends readonly PlatformModule[]> = { -readonly [I in keyof L]: L[I]['configSchema'] };

// The derivations, as functions of a list, so a list with one module more (test/providers/toy)
// goes through the same code as the build's own list (platforms.ts).

/** The providers file's entry schema: each module's configSchema, picked by `kind`. */
export function configUnionOf<L extends readonly [PlatformModule, ...PlatformModule[]]>(list: L) {
  return z.discriminatedUnion('kind', list.map((p) => p.configSchema) as unknown as SchemasOf<L>);
}

/** The adapter registry: a config (parsed by its own module's schema) to its module's adapter. */
export function adapterFactoryOf(list: readonly PlatformModule[]) {
  const byKind = new Map<string, PlatformModule>(list.map((p) => [p.kind, p]));
  return (config: { readonly id: string; readonly kind: string }, secrets: SecretSource, options: AdapterOptions = {}): ProviderAdapter => {
    const module = byKind.get(config.kind);
    if (!module) throw new Error(`provider "${config.id}": kind ${config.kind} has no adapter in this build`);
    return module.createAdapter(config as never, secrets, options);
  };
}

/** One value per kind, read off each module (poll intervals, collector defaults, ...). */
export function valuesByKind<L extends readonly PlatformModule[], T>(list: L, read: (module: L[number]) => T): Record<KindsOf<L>, T> {
  return Object.fromEntries(list.map((p) => [p.kind, read(p)])) as Record<KindsOf<L>, T>;
}

/** The ProviderKind enum's values with their descriptions, in the list's order. */
export function kindDocsOf<L extends readonly PlatformModule[]>(list: L): Record<KindsOf<L>, { description: string }> {
  return valuesByKind(list, (p) => ({ description: p.description }));
}
