// A live time-series chart: one line per GPU (or node), a rolling window of the latest points.
// uPlot wants columnar data sharing one x axis, so points are kept by timestamp and re-laid out
// on every update; the chart is rebuilt only when the set of lines changes.
import uPlot from 'uplot';

export interface ChartSpec {
  title: string;
  /** Formats a value for the y axis and the legend. */
  format(value: number): string;
}

const MAX_TIMESTAMPS = 600;
const PALETTE = ['#3366cc', '#dc3912', '#ff9900', '#109618', '#990099', '#0099c6', '#dd4477', '#66aa00', '#b82e2e', '#316395'];

export class LiveChart {
  private readonly values = new Map<number, Map<string, number | null>>();
  private lines: string[] = [];
  private plot: uPlot | null = null;

  constructor(
    private readonly container: HTMLElement,
    private spec: ChartSpec,
  ) {}

  /** Forgets every point (another job was picked); `spec` may change the unit. */
  reset(spec: ChartSpec = this.spec) {
    this.spec = spec;
    this.values.clear();
    this.lines = [];
    this.plot?.destroy();
    this.plot = null;
    this.container.dataset.points = '0';
  }

  add(line: string, timestampMs: number, value: number | null) {
    const seconds = timestampMs / 1000;
    let row = this.values.get(seconds);
    if (!row) this.values.set(seconds, (row = new Map()));
    row.set(line, value);
  }

  /** Draws what was added since the last render. */
  render() {
    const xs = [...this.values.keys()].sort((a, b) => a - b);
    for (const old of xs.splice(0, Math.max(0, xs.length - MAX_TIMESTAMPS))) this.values.delete(old);
    const lines = [...new Set([...this.values.values()].flatMap((row) => [...row.keys()]))].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const data: uPlot.AlignedData = [xs, ...lines.map((l) => xs.map((x) => this.values.get(x)!.get(l) ?? null))];
    if (!this.plot || lines.join('\n') !== this.lines.join('\n')) {
      this.plot?.destroy();
      this.lines = lines;
      this.plot = new uPlot(this.options(lines), data, this.container);
    } else {
      this.plot.setData(data);
    }
    this.container.dataset.points = String(xs.length);
  }

  private options(lines: string[]): uPlot.Options {
    const format = this.spec.format;
    return {
      title: this.spec.title,
      width: Math.max(320, this.container.clientWidth || 900),
      height: 260,
      scales: { x: { time: true } },
      axes: [{}, { values: (_u, ticks) => ticks.map(format), size: 84 }],
      series: [{}, ...lines.map((label, i) => ({ label, stroke: PALETTE[i % PALETTE.length], width: 1.5, value: (_u: uPlot, v: number | null) => (v === null ? '–' : format(v)) }))],
    };
  }
}
