// How often each platform is polled for live feeds, unless its config says (pollIntervalSeconds):
// each platform's module (src/providers/<name>/index.ts) gives its default.
import type { ProviderKind } from '../domain/types.js';
import { byKind } from '../providers/platforms.js';
import type { ProviderView } from '../store/index.js';

/** Each platform module's defaultPollSeconds. */
export const DEFAULT_POLL_SECONDS: Record<ProviderKind, number> = byKind((p) => p.defaultPollSeconds);

export function pollIntervalMs(provider: Pick<ProviderView, 'kind' | 'pollIntervalSeconds'>): number {
  return Math.round((provider.pollIntervalSeconds ?? DEFAULT_POLL_SECONDS[provider.kind]) * 1000);
}
