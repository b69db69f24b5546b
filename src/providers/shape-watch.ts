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

/** An hour: the shortest busy span over which a percent series never above 1.0 is called suspect. */
export const FRACTION_SCALE_SPAN_MS = 3_600_000;

/**
 * Whether values read as percent (0..100) look like another scale: a value above 100, or, while the
 * platform says the job is busy, an hour or more of values never above 1.0 though not all zero (a
 * 0..1 fraction read as percent shows as at most 1%). Returns what was seen, or null.
 */
export function percentScaleProblem(points: readonly { ms: number; value: number | null }[], busy: boolean): string | null {
  const over = points.filter((p) => p.value !== null && p.value > 100).length;
  if (over > 0) return `${over} value(s) over 100`;
  return fractionScaleProblem(points, busy);
}

/** The second half of percentScaleProblem alone: a busy hour or more never above 1.0, not all zero. */
export function fractionScaleProblem(points: readonly { ms: number; value: number | null }[], busy: boolean): string | null {
  let max = Number.NEGATIVE_INFINITY;
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const p of points) {
    if (p.value === null) continue;
    max = Math.max(max, p.value);
    first = Math.min(first, p.ms);
    last = Math.max(last, p.ms);
  }
  if (busy && max > 0 && max <= 1 && last - first >= FRACTION_SCALE_SPAN_MS) {
    return `never above ${max} over ${Math.round((last - first) / 60_000)} min while busy: a 0..1 scale read as percent?`;
  }
  return null;
}
