// How often each platform is polled for live feeds, unless its config says (pollIntervalSeconds).
import type { ProviderKind } from '../domain/types.js';
import type { ProviderView } from '../store/index.js';

export const DEFAULT_POLL_SECONDS: Record<ProviderKind, number> = {
  // Baseten serves metrics on a 15 s-or-coarser grid and rate-limits per key: polling faster buys nothing.
  BASETEN: 30,
  // ModelArts reports 1-minute averages.
  MODELARTS: 60,
  // PAI-DLC monitoring series are typically 15-60 s apart and each metric is its own call.
  PAI_DLC: 30,
  PRIMUS_LENS: 15,
  // Runicorn is local (a viewer on loopback or a folder): cheap to poll often.
  RUNICORN: 2,
};

export function pollIntervalMs(provider: Pick<ProviderView, 'kind' | 'pollIntervalSeconds'>): number {
  return Math.round((provider.pollIntervalSeconds ?? DEFAULT_POLL_SECONDS[provider.kind]) * 1000);
}
