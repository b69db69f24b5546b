// The fleet semantics written a second time, plainly in TypeScript over a list of points, so the
// tests check the SQL against an independent computation of the same documented rules.

export interface RefPoint {
  t: number;
  v: number | null;
}

export interface RefInterval {
  t0: number;
  t1: number;
  v: number;
}

export interface RefRun {
  from: number;
  to: number;
  avg: number;
  max: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = (s.length - 1) / 2;
  return (s[Math.floor(mid)]! + s[Math.ceil(mid)]!) / 2;
}

/** What each non-null point holds: until the next point within 2 steps, else one step; inside [wFrom, wTo]. */
export function holdIntervals(points: readonly RefPoint[], wFrom: number, wTo: number, askedStepMs: number): RefInterval[] {
  const inside = points.filter((p) => p.t >= wFrom && p.t <= wTo).sort((a, b) => a.t - b.t);
  const gaps = inside.slice(1).map((p, i) => p.t - inside[i]!.t);
  const step = gaps.length ? median(gaps) : askedStepMs;
  const out: RefInterval[] = [];
  inside.forEach((p, i) => {
    if (p.v === null) return;
    const next = inside[i + 1]?.t;
    const end = Math.min(wTo, next !== undefined && next - p.t <= 2 * step ? next : p.t + step);
    if (end > p.t) out.push({ t0: p.t, t1: end, v: p.v });
  });
  return out;
}

/** Maximal contiguous stretches under the threshold lasting at least minMs. */
export function idleRuns(intervals: readonly RefInterval[], threshold: number, minMs: number): RefRun[] {
  const runs: RefRun[] = [];
  let cur: { from: number; to: number; weighted: number; max: number } | null = null;
  const close = () => {
    if (cur && cur.to - cur.from >= minMs) runs.push({ from: cur.from, to: cur.to, avg: cur.weighted / (cur.to - cur.from), max: cur.max });
    cur = null;
  };
  for (const iv of intervals) {
    if (iv.v >= threshold) {
      close();
      continue;
    }
    if (cur && cur.to !== iv.t0) close();
    if (!cur) cur = { from: iv.t0, to: iv.t0, weighted: 0, max: -Infinity };
    cur.to = iv.t1;
    cur.weighted += (iv.t1 - iv.t0) * iv.v;
    cur.max = Math.max(cur.max, iv.v);
  }
  close();
  return runs;
}

export function coveredAndUsedMs(intervals: readonly RefInterval[]): { covered: number; used: number } {
  return intervals.reduce((a, iv) => ({ covered: a.covered + (iv.t1 - iv.t0), used: a.used + (iv.t1 - iv.t0) * iv.v }), { covered: 0, used: 0 });
}
