// A benchmark's result row and its Markdown table, in the shape bench/results/*.json hold: shared by
// `npm run bench` (run.ts) and `npm run bench:history` (history.ts).
export interface Row {
  scenario: string;
  measured: string;
  baseline: string;
  ratio: number | null;
  goal: string;
  met: boolean | null;
}

export const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

export function tableOf(rows: Row[]): string {
  return [
    '| scenario | measured | baseline (same run, same data) | ratio | goal | met |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.measured} | ${r.baseline} | ${r.ratio === null ? '—' : `${round(r.ratio)}x`} | ${r.goal} | ${r.met === null ? '—' : r.met ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
}
