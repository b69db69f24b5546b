// Where a provider's running code says "the real API did not match what we assumed". Facts the
// platforms' documents leave unconfirmed are read the most plausible way (said so in code); when a
// real answer contradicts that reading, the adapter reports it here instead of guessing silently.
// The runtime logs each report as a warning and counts it in /metrics
// (training_graph_upstream_shape_mismatches_total{provider, assumption}).

export interface ShapeMismatch {
  /** The provider instance (config id) whose answer did not match. */
  providerId: string;
  /** A stable name of the unconfirmed assumption, e.g. "pai-dlc.cms.datapoint-shape". */
  assumption: string;
  /** What was seen instead (never a secret: ids and field names only). */
  detail: string;
}

export type ShapeMismatchListener = (mismatch: ShapeMismatch) => void;

const listeners = new Set<ShapeMismatchListener>();

/** Subscribes to mismatch reports; returns the unsubscribe function. */
export function onShapeMismatch(listener: ShapeMismatchListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function reportShapeMismatch(mismatch: ShapeMismatch): void {
  for (const listener of listeners) {
    try {
      listener(mismatch);
    } catch {
      // A failing observer must not break the adapter that reported.
    }
  }
}
