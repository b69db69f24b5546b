// A chart of many lines over time (or over training steps) drawn by uPlot, with what uPlot's own
// legend cannot give a second screen: each line's current (latest) value without hovering, the
// mean of the lines and a min-max band under them, line styles that stay distinct past sixteen
// lines, and, when there is nothing to draw, a sentence saying why instead of a blank frame.
import uPlot from 'uplot';
import { lineStyle } from './palette.js';

export interface ChartSpec {
  title: string;
  /** Formats a value for the y axis and the legend. */
  format(value: number): string;
  /** Time (ms since epoch) or training steps on the x axis. */
  x: 'time' | 'step';
  /** Draw the mean line and the min-max band (for lines of one kind: GPUs of a job). */
  aggregate: boolean;
  /** A fixed y range (ratios: 0..1). */
  yRange?: [number, number];
}

const MAX_XS = 720;
const MEAN_STYLE = { colour: '#111111', width: 2.5, dash: [6, 3] };
const BAND_FILL = 'rgba(120, 120, 140, 0.18)';

export class SeriesChart {
  private readonly values = new Map<number, Map<string, number | null>>();
  private aggregating = false;
  private lines: string[] = [];
  private plot: uPlot | null = null;
  private readonly titleEl: HTMLElement;
  private readonly plotEl: HTMLElement;
  private readonly legendEl: HTMLElement;
  private readonly emptyEl: HTMLElement;
  private readonly resize = new ResizeObserver(() => this.fit());

  constructor(
    readonly root: HTMLElement,
    private spec: ChartSpec,
  ) {
    root.classList.add('chart');
    root.replaceChildren();
    this.titleEl = el('h3', 'chart-title');
    this.plotEl = el('div', 'plot');
    this.emptyEl = el('p', 'empty');
    this.emptyEl.setAttribute('role', 'note');
    this.legendEl = el('ul', 'legend');
    this.legendEl.setAttribute('aria-label', 'lines and their latest values');
    root.append(this.titleEl, this.plotEl, this.emptyEl, this.legendEl);
    this.resize.observe(root);
    this.reset(spec, 'Loading…');
  }

  /** Forgets every point; shows `reason` until points arrive. */
  reset(spec: ChartSpec = this.spec, reason = 'Waiting for the first sample…') {
    this.spec = spec;
    this.values.clear();
    this.lines = [];
    this.plot?.destroy();
    this.plot = null;
    this.titleEl.textContent = spec.title;
    this.legendEl.replaceChildren();
    this.root.dataset.points = '0';
    this.root.dataset.lines = '';
    this.empty(reason);
  }

  /** Nothing to draw, and why (shown in the chart's frame). */
  empty(reason: string) {
    this.root.dataset.state = 'empty';
    this.emptyEl.textContent = reason;
    this.emptyEl.hidden = false;
    this.plotEl.hidden = true;
    this.legendEl.hidden = true;
  }

  /** Forgets the points but keeps the drawn chart, for a full reload of its data (no flicker). */
  clearPoints() {
    this.values.clear();
  }

  get hasPoints(): boolean {
    return this.values.size > 0;
  }

  add(line: string, x: number, value: number | null) {
    const key = this.spec.x === 'time' ? x / 1000 : x;
    let row = this.values.get(key);
    if (!row) this.values.set(key, (row = new Map()));
    row.set(line, value);
  }

  /** Draws what was added since the last render. */
  render() {
    const xs = [...this.values.keys()].sort((a, b) => a - b);
    for (const old of xs.splice(0, Math.max(0, xs.length - MAX_XS))) this.values.delete(old);
    if (xs.length === 0) return;
    const lines = [...new Set([...this.values.values()].flatMap((row) => [...row.keys()]))].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const columns = lines.map((l) => xs.map((x) => this.values.get(x)!.get(l) ?? null));
    const data: (number | null)[][] = [xs];
    // A mean and a band of one line would only repeat it.
    this.aggregating = this.spec.aggregate && lines.length > 1;
    if (this.aggregating) {
      const present = xs.map((_, i) => columns.map((c) => c[i]).filter((v): v is number => v !== null && v !== undefined));
      data.push(
        present.map((v) => (v.length ? Math.max(...v) : null)),
        present.map((v) => (v.length ? Math.min(...v) : null)),
        present.map((v) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : null)),
      );
    }
    data.push(...columns);
    this.root.dataset.state = 'data';
    this.emptyEl.hidden = true;
    this.plotEl.hidden = false;
    this.legendEl.hidden = false;
    if (!this.plot || lines.join('\n') !== this.lines.join('\n')) {
      this.plot?.destroy();
      this.lines = lines;
      this.plot = new uPlot(this.options(lines), data as uPlot.AlignedData, this.plotEl);
    } else {
      this.plot.setData(data as uPlot.AlignedData);
    }
    this.root.dataset.points = String(xs.length);
    this.root.dataset.lines = lines.join('\n');
    this.renderLegend(lines, columns, data);
  }

  private get firstLine(): number {
    return this.aggregating ? 4 : 1;
  }

  private renderLegend(lines: string[], columns: (number | null)[][], data: (number | null)[][]) {
    const format = this.spec.format;
    const latest = (col: (number | null)[]) => {
      for (let i = col.length - 1; i >= 0; i--) if (col[i] !== null && col[i] !== undefined) return col[i]!;
      return null;
    };
    const items: HTMLElement[] = [];
    if (this.aggregating) {
      const mean = latest(data[3]!);
      const max = latest(data[1]!);
      const min = latest(data[2]!);
      items.push(legendItem('mean', mean === null ? '–' : format(mean), swatch(MEAN_STYLE.colour, MEAN_STYLE.dash, 3), 'mean', null));
      items.push(legendItem('range', min === null || max === null ? '–' : `${format(min)} – ${format(max)}`, band(), 'band', null));
    }
    lines.forEach((label, i) => {
      const style = lineStyle(i);
      const v = latest(columns[i]!);
      items.push(legendItem(label, v === null ? '–' : format(v), swatch(style.colour, style.dash, 2), 'line', this.firstLine + i));
    });
    for (const item of items) {
      const idx = item.dataset.index ? Number(item.dataset.index) : null;
      if (idx === null || !this.plot) continue;
      const focus = (on: boolean) => this.plot?.setSeries(on ? idx : null, { focus: on });
      item.addEventListener('mouseenter', () => focus(true));
      item.addEventListener('mouseleave', () => focus(false));
      item.addEventListener('focus', () => focus(true));
      item.addEventListener('blur', () => focus(false));
    }
    this.legendEl.replaceChildren(...items);
  }

  private fit() {
    if (!this.plot) return;
    const width = this.plotEl.clientWidth || this.root.clientWidth;
    if (width > 0 && Math.abs(width - this.plot.width) > 4) this.plot.setSize({ width, height: this.plot.height });
  }

  private options(lines: string[]): uPlot.Options {
    const format = this.spec.format;
    const value = (_u: uPlot, v: number | null) => (v === null ? '–' : format(v));
    const series: uPlot.Series[] = [{ label: this.spec.x === 'time' ? 'time' : 'step' }];
    if (this.aggregating) {
      series.push(
        { label: 'max', stroke: 'transparent', width: 0, points: { show: false }, spanGaps: true, value },
        { label: 'min', stroke: 'transparent', width: 0, points: { show: false }, spanGaps: true, value },
        { label: 'mean', stroke: MEAN_STYLE.colour, width: MEAN_STYLE.width, dash: MEAN_STYLE.dash, points: { show: false }, spanGaps: true, value },
      );
    }
    lines.forEach((label, i) => {
      const style = lineStyle(i);
      series.push({ label, stroke: style.colour, dash: [...style.dash], width: 1.5, spanGaps: true, points: { show: false }, value });
    });
    return {
      width: Math.max(280, this.plotEl.clientWidth || this.root.clientWidth || 600),
      height: this.spec.x === 'step' ? 150 : 200,
      legend: { show: false },
      focus: { alpha: 0.25 },
      cursor: { focus: { prox: 16 } },
      scales: { x: { time: this.spec.x === 'time' }, y: this.spec.yRange ? { range: this.spec.yRange } : {} },
      axes: [{}, { values: (_u, ticks) => ticks.map(format), size: 70 }],
      bands: this.aggregating ? [{ series: [1, 2], fill: BAND_FILL }] : [],
      series,
    };
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  return e;
}

function swatch(colour: string, dash: readonly number[], width: number): HTMLElement {
  const s = el('span', 'swatch');
  s.style.borderTop = `${width + 1}px ${dash.length === 0 ? 'solid' : dash[0]! > 4 ? 'dashed' : 'dotted'} ${colour}`;
  return s;
}

function band(): HTMLElement {
  const s = el('span', 'swatch band');
  s.style.background = BAND_FILL;
  return s;
}

function legendItem(label: string, value: string, mark: HTMLElement, kind: string, index: number | null): HTMLElement {
  const li = el('li', `legend-item ${kind}`);
  li.dataset.label = label;
  li.title = `${label}: ${value}`;
  if (index !== null) {
    li.dataset.index = String(index);
    li.tabIndex = 0;
  }
  const name = el('span', 'label');
  name.textContent = label;
  const v = el('b', 'value');
  v.textContent = value;
  li.append(mark, name, v);
  return li;
}
