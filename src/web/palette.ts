// Line styles that stay tellable apart for many series: Paul Tol's "muted" qualitative palette
// (nine colours chosen to be distinct for the common colour-vision deficiencies and on white),
// crossed with three dash patterns, so 27 lines differ in colour or in dash, and a reader who
// cannot tell two hues apart still has the pattern. The legend draws the same swatch.
export const COLOURS = ['#332288', '#117733', '#44AA99', '#88CCEE', '#DDCC77', '#CC6677', '#AA4499', '#882255', '#999933'] as const;
export const DASHES: readonly (readonly number[])[] = [[], [8, 4], [2, 3]];

export interface LineStyle {
  colour: string;
  /** Canvas dash segments; empty = solid. */
  dash: readonly number[];
}

/** The i-th series' style: colours first, then the next dash pattern once the colours run out. */
export function lineStyle(i: number): LineStyle {
  const n = COLOURS.length;
  return { colour: COLOURS[i % n]!, dash: DASHES[Math.floor(i / n) % DASHES.length]! };
}

/** How many series get a style no other series has. */
export const DISTINCT_STYLES = COLOURS.length * DASHES.length;

/** A utilization ratio 0..1 as a colour on a sequential, colour-blind-safe ramp (light = idle, dark = busy). */
export function utilizationColour(ratio: number): string {
  // Tol's "iridescent"-like ramp, sampled: light yellow-grey -> blue -> deep purple.
  const stops = ['#FEFBE9', '#E7F1D5', '#C6E1C5', '#9BCFD0', '#7DB8DA', '#7B9FE0', '#8680D6', '#8C5FA9', '#6A3D7A', '#46353A'];
  const x = Math.min(1, Math.max(0, ratio)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  return mix(stops[i]!, stops[i + 1]!, x - i);
}

function mix(a: string, b: string, t: number): string {
  const pa = [1, 3, 5].map((k) => parseInt(a.slice(k, k + 2), 16));
  const pb = [1, 3, 5].map((k) => parseInt(b.slice(k, k + 2), 16));
  return `#${pa
    .map((v, k) =>
      Math.round(v + (pb[k]! - v) * t)
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;
}
