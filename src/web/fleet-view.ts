/// <reference lib="dom" />
// The fleet view: every running job of every platform, one row per job with a strip of its
// accelerators' latest utilization (idle ones marked from the fleet query's idleGpus), its waste
// and cost (the ledger's, with the idle share) over the last hour, and a total row (the fleet's
// own total) under them, sortable and filterable by platform and project. Refreshed on a timer and
// at once when a job changes status (the jobStatusChanged subscription). A job with open findings
// is marked in its row (a badge per finding), live: the findings subscription adds and removes them.
import { subscribeStatusChanges } from './api.js';
import type { FindingItem } from './findings-api.js';
import {
  catalog,
  collectionLags,
  fleetJobs,
  fleetWaste,
  type Catalog,
  type CollectionLag,
  type FleetJob,
  type FleetJobs,
  type FleetOptions,
  type FleetWaste,
  type JobWaste,
  type LedgerCost,
} from './fleet-api.js';
import { FindingsFeed, findingBadge } from './findings.js';
import { ago, clock, duration, percent, providerLabel } from './format.js';
import { utilizationColour } from './palette.js';
import type { FleetSort, Route } from './route.js';

type FleetRoute = Extract<Route, { view: 'fleet' }>;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
export const FLEET_WINDOW_SECONDS = 3600;
const RECENT_SECONDS = 15 * 60;
const IDLE_THRESHOLD = 0.1;
const IDLE_FOR_AT_LEAST = 'PT10M';
const REFRESH_MS = 10_000;

const COLUMNS: { key: FleetSort | null; title: string; className?: string }[] = [
  { key: 'name', title: 'Job' },
  { key: 'platform', title: 'Platform · project' },
  { key: 'gpus', title: 'GPUs', className: 'num' },
  { key: null, title: 'Accelerators now (latest utilization)' },
  { key: 'utilization', title: 'Mean now', className: 'num' },
  { key: 'waste', title: 'Waste, last hour', className: 'num' },
  { key: 'cost', title: 'Cost, last hour', className: 'num' },
  { key: null, title: 'Progress' },
];

export class FleetView {
  private route: FleetRoute | null = null;
  private data: FleetJobs | null = null;
  /** Waste and idle marks: a slower query, drawn when it lands (null until then). */
  private waste: FleetWaste | null = null;
  private wasteError: string | null = null;
  private catalog: Catalog | null = null;
  /** Providers whose background collection is behind (null until read, or when it could not be). */
  private lags: CollectionLag[] | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private unsubscribe: (() => void) | null = null;
  private findings: FindingsFeed | null = null;
  private generation = 0;
  private refreshes = 0;
  private inFlight = false;
  private readonly ticker = setInterval(() => this.showUpdated(), 1000);

  constructor(private readonly navigate: (route: Route) => void) {
    $<HTMLSelectElement>('fleet-provider').addEventListener('change', (e) => {
      const provider = (e.target as HTMLSelectElement).value || null;
      this.go({ provider, project: null });
    });
    $<HTMLSelectElement>('fleet-project').addEventListener('change', (e) => this.go({ project: (e.target as HTMLSelectElement).value || null }));
  }

  private go(change: Partial<FleetRoute>) {
    if (this.route) this.navigate({ ...this.route, ...change });
  }

  open(route: FleetRoute) {
    const filterChanged = !this.route || this.route.provider !== route.provider || this.route.project !== route.project || !this.timer;
    this.route = route;
    document.body.dataset.fleetProvider = route.provider ?? '';
    if (!filterChanged) return this.render();
    this.close();
    this.route = route;
    const generation = ++this.generation;
    this.data = null;
    this.waste = null;
    this.wasteError = null;
    this.lags = null;
    this.render();
    void this.fillFilters();
    this.unsubscribe = subscribeStatusChanges(route.provider ? [route.provider] : null, {
      next: () => this.refreshSoon(generation),
      error: () => {},
      complete: () => {},
    });
    const feed = new FindingsFeed({ providerIds: route.provider ? [route.provider] : null, projectId: route.project, states: ['FIRING'] }, () => {
      if (generation === this.generation) this.render();
    });
    this.findings = feed;
    void this.refresh(generation);
  }

  close() {
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.findings?.close();
    this.findings = null;
    this.inFlight = false;
  }

  private refreshSoon(generation: number) {
    if (generation !== this.generation || this.inFlight) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(generation), 250);
  }

  private async refresh(generation: number) {
    if (generation !== this.generation || !this.route) return;
    this.inFlight = true;
    const route = this.route;
    const opts: FleetOptions = {
      providerId: route.provider,
      projectId: route.project,
      windowSeconds: FLEET_WINDOW_SECONDS,
      recentSeconds: RECENT_SECONDS,
      idleThreshold: IDLE_THRESHOLD,
      idleForAtLeast: IDLE_FOR_AT_LEAST,
    };
    const current = () => generation === this.generation;
    // Rows first, then waste: on one embedded database the two queries share one engine, and the
    // waste query (every job's whole window) kept the rows' quick query waiting 11 s when both
    // were asked at once. Asked in turn, the rows are drawn as soon as they are read and the waste
    // column fills in after (it says "computing…" meanwhile).
    await fleetJobs(opts).then(
      (data) => {
        if (!current()) return;
        this.data = data;
        this.refreshes++;
        document.body.dataset.fleetRefreshes = String(this.refreshes);
        document.body.dataset.fleetUpdated = data.at;
        $('fleet-error').textContent = '';
        this.render();
      },
      (err: unknown) => {
        if (current()) $('fleet-error').textContent = `The running jobs could not be read: ${err instanceof Error ? err.message : String(err)} (retrying)`;
      },
    );
    if (!current()) return;
    // Read again each refresh: the subscription keeps the marks current, this catches a missed event.
    await this.findings?.reload();
    if (!current()) return;
    // Small and independent of the rows: a failure leaves the last lines as they were.
    await collectionLags().then(
      (lags) => {
        if (!current()) return;
        this.lags = lags;
        document.body.dataset.fleetCollectionChecked = String(Date.now());
        this.renderLags();
      },
      () => {},
    );
    if (!current()) return;
    await fleetWaste(opts).then(
      (w) => {
        if (!current()) return;
        this.waste = w;
        this.wasteError = null;
        document.body.dataset.fleetWasteUpdated = w.to;
        this.render();
      },
      (err: unknown) => {
        if (!current()) return;
        this.wasteError = err instanceof Error ? err.message : String(err);
        this.render();
      },
    );
    if (current()) {
      this.inFlight = false;
      this.timer = setTimeout(() => void this.refresh(generation), REFRESH_MS);
    }
  }

  private async fillFilters() {
    this.catalog ??= await catalog().catch(() => null);
    const route = this.route;
    if (!this.catalog || !route) return;
    const providers = $<HTMLSelectElement>('fleet-provider');
    providers.replaceChildren(new Option('All platforms', ''), ...this.catalog.providers.map((p) => new Option(providerLabel(p), p.id)));
    providers.value = route.provider ?? '';
    const projects = $<HTMLSelectElement>('fleet-project');
    const mine = this.catalog.projects.filter((p) => !route.provider || p.provider.id === route.provider);
    projects.replaceChildren(new Option('All projects', ''), ...mine.map((p) => new Option(route.provider ? p.name : `${p.name} (${p.provider.id})`, p.id)));
    projects.value = route.project ?? '';
  }

  private showUpdated() {
    if (!this.data || document.body.dataset.view !== 'fleet') return;
    const at = Date.parse(this.data.at);
    $('fleet-updated').textContent = `Updated ${clock(at)} (${ago(at)}); refreshed every ${REFRESH_MS / 1000} s and on every status change.`;
  }

  private render() {
    const route = this.route;
    if (!route) return;
    this.renderHead(route);
    const body = $('fleet-rows');
    const summary = $('fleet-summary');
    if (!this.data) {
      summary.textContent = 'Loading the fleet…';
      body.replaceChildren(emptyRow('Loading…'));
      return;
    }
    const d = this.data;
    const w = this.waste;
    this.showUpdated();
    const rows = this.sorted(d.jobs, route);
    const gpus = d.jobs.reduce((n, j) => n + (j.gpuCount ?? 0), 0);
    const platforms = new Set(d.jobs.map((j) => j.provider.kind)).size;
    const facts = [
      fact('Running jobs', `${d.jobs.length}${d.totalCount > d.jobs.length ? ` of ${d.totalCount}` : ''}`),
      fact('Platforms', String(platforms)),
      fact('GPUs held', String(gpus)),
    ];
    const open = this.findings?.openByJob() ?? new Map();
    const openCount = d.jobs.reduce((n, j) => n + (open.get(j.id)?.length ?? 0), 0);
    facts.push(
      fact(
        'Open findings',
        this.findings?.error
          ? `unavailable: ${this.findings.error}`
          : `${openCount}${openCount ? ` in ${d.jobs.filter((j) => open.has(j.id)).length} jobs` : ''}`,
      ),
    );
    if (w) {
      const idleGpus = w.idle.reduce((n, g) => n + g.gpuCount, 0);
      // The fleet's own total (every running job in the window), else the rows' sum.
      const rowsSum = (f: (x: JobWaste) => number) => [...w.waste.values()].reduce((n, x) => n + f(x), 0);
      const waste = w.total?.wasteGpuHours ?? rowsSum((x) => x.wasteGpuHours);
      const used = w.total?.usedGpuHours ?? rowsSum((x) => x.usedGpuHours);
      const allocated = w.total?.allocatedGpuHours ?? rowsSum((x) => x.allocatedGpuHours);
      facts.push(
        fact('Used / held, last hour', allocated > 0 ? `${used.toFixed(1)} / ${allocated.toFixed(1)} GPU-h (${percent(used / allocated)})` : '–'),
        fact('Waste, last hour', `${waste.toFixed(1)} GPU-h`),
        fact('Cost, last hour', costFact(w.cost, knownIdle(w))),
        fact(
          'Idle accelerators',
          `${idleGpus % 1 === 0 ? idleGpus : idleGpus.toFixed(1)} (under ${percent(IDLE_THRESHOLD)} for ${IDLE_FOR_AT_LEAST.slice(2).toLowerCase()}+)`,
        ),
      );
    } else {
      facts.push(fact('Waste, last hour', this.wasteError ? `unavailable: ${this.wasteError}` : 'computing…'));
      facts.push(fact('Cost, last hour', this.wasteError ? 'unavailable' : 'computing…'));
    }
    summary.replaceChildren(...facts);
    const problems = [...d.problems, ...(w?.problems ?? [])];
    $('fleet-problems').replaceChildren(...problems.map((p) => Object.assign(document.createElement('li'), { textContent: p })));
    this.renderLags();
    // The rows are drawn anew on every refresh and finding: a reader's focus on a row's link stays on it.
    const focused = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>('#fleet-rows tr[data-job]')?.dataset.job;
    body.replaceChildren(
      ...(rows.length
        ? rows.map((j) => this.row(j, w, open.get(j.id) ?? []))
        : [emptyRow(route.provider || route.project ? 'No running jobs match these filters.' : 'No running jobs on any platform.')]),
    );
    if (focused) body.querySelector<HTMLElement>(`tr[data-job="${CSS.escape(focused)}"] a`)?.focus();
    $('fleet-total').replaceChildren(...(rows.length ? [this.totalRow(w)] : []));
  }

  /** The table's last line: waste and cost of every running job in the window together (the fleet's total). */
  private totalRow(w: FleetWaste | null): HTMLTableRowElement {
    const tr = document.createElement('tr');
    tr.className = 'total';
    const pending = [text('–'), small(this.wasteError ? 'unavailable' : 'computing…')];
    const t = w?.total ?? null;
    tr.append(
      cell([text('Total, last hour'), small(t ? `${t.jobCount} running job${t.jobCount === 1 ? '' : 's'} in the window` : '')]),
      cell([]),
      cell([]),
      cell([]),
      cell([]),
      cell(
        t
          ? [
              text(`${t.wasteGpuHours.toFixed(1)} GPU-h`),
              small(t.allocatedGpuHours > 0 ? `${percent(t.usedGpuHours / t.allocatedGpuHours)} of ${t.allocatedGpuHours.toFixed(1)} held GPU-h used` : ''),
            ]
          : pending,
        'num',
      ),
      cell(w ? costCell(w.cost, w, this.wasteError, null, knownIdle(w)) : pending, 'num'),
      cell([]),
    );
    return tr;
  }

  private renderLags() {
    const route = this.route;
    const lags = (this.lags ?? []).filter((l) => !route?.provider || l.providerId === route.provider);
    $('fleet-collection').replaceChildren(
      ...lags.map((l) => {
        const li = document.createElement('li');
        li.textContent = l.message;
        li.dataset.provider = l.providerId;
        return li;
      }),
    );
  }

  private renderHead(route: FleetRoute) {
    const head = $('fleet-head');
    head.replaceChildren(
      ...COLUMNS.map((c) => {
        const th = document.createElement('th');
        th.scope = 'col';
        if (c.className) th.className = c.className;
        if (!c.key) {
          th.textContent = c.title;
          return th;
        }
        const active = route.sort === c.key;
        th.setAttribute('aria-sort', active ? (route.descending ? 'descending' : 'ascending') : 'none');
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'sort';
        button.dataset.sort = c.key;
        button.textContent = `${c.title}${active ? (route.descending ? ' ▼' : ' ▲') : ''}`;
        button.title = `Sort by ${c.title.toLowerCase()}`;
        button.addEventListener('click', () =>
          this.go({
            sort: c.key!,
            descending: active ? !route.descending : c.key === 'waste' || c.key === 'cost' || c.key === 'gpus' || c.key === 'utilization',
          }),
        );
        th.append(button);
        return th;
      }),
    );
  }

  private sorted(jobs: FleetJob[], route: FleetRoute): FleetJob[] {
    const w = this.waste;
    const key = (j: FleetJob): number | string => {
      switch (route.sort) {
        case 'waste':
          return w?.waste.get(j.id)?.wasteGpuHours ?? -1;
        case 'cost':
          return w?.waste.get(j.id)?.cost?.amount ?? -1;
        case 'utilization':
          return meanNow(j) ?? -1;
        case 'gpus':
          return j.gpuCount ?? -1;
        case 'platform':
          return `${j.provider.kind} ${j.project.name} ${j.name}`;
        default:
          return j.name;
      }
    };
    const sign = route.descending ? -1 : 1;
    return [...jobs].sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      const c = typeof ka === 'number' && typeof kb === 'number' ? ka - kb : String(ka).localeCompare(String(kb), undefined, { numeric: true });
      return sign * c || a.name.localeCompare(b.name);
    });
  }

  private row(j: FleetJob, d: FleetWaste | null, findings: FindingItem[]): HTMLTableRowElement {
    const tr = document.createElement('tr');
    tr.dataset.job = j.id;
    tr.dataset.provider = j.provider.kind;
    tr.dataset.findings = findings.map((f) => f.kind).join(' ');
    if (findings.length) tr.classList.add('has-findings');
    const name = document.createElement('a');
    name.href = `#job=${encodeURIComponent(j.id)}`;
    name.textContent = j.name;
    const started = j.startedAt ? `running ${duration((Date.now() - Date.parse(j.startedAt)) / 1000)}` : '';
    const w = d?.waste.get(j.id);
    const mean = meanNow(j);
    tr.append(
      cell([name, small(started), ...(findings.length ? [badges(findings)] : [])]),
      cell([text(providerLabel(j.provider)), small(j.project.name)]),
      cell([text(j.gpuCount === null ? '–' : String(j.gpuCount)), small(j.gpuType ?? '')], 'num'),
      cell([this.strip(j, d)]),
      cell([text(mean === null ? '–' : percent(mean))], 'num'),
      cell(
        w && w.allocatedGpuHours > 0
          ? [
              text(`${w.wasteGpuHours.toFixed(1)} GPU-h`),
              small(
                w.efficiency === null
                  ? ''
                  : `${percent(w.efficiency)} of held GPU time used${w.coverage !== null && w.coverage < 0.95 ? `, data for ${percent(w.coverage)}` : ''}`,
              ),
            ]
          : [
              text('–'),
              small(!d ? (this.wasteError ? 'unavailable' : 'computing…') : j.gpuCount ? 'no GPU data in the window' : 'holds no GPUs: no GPU waste'),
            ],
        'num',
      ),
      cell(costCell(w?.cost ?? null, d, this.wasteError, j), 'num'),
      cell(progressCell(j)),
    );
    return tr;
  }

  private strip(j: FleetJob, d: FleetWaste | null): HTMLElement {
    const strip = document.createElement('div');
    strip.className = 'strip';
    strip.setAttribute('role', 'img');
    if (j.cells === null) {
      strip.append(small(`metrics unavailable: ${j.metricsError ?? 'no answer'}`));
      strip.setAttribute('aria-label', 'metrics unavailable');
      return strip;
    }
    if (j.cells.length === 0) {
      const why =
        j.provider.systemMetrics.length === 0
          ? `${j.provider.kind === 'RUNICORN' ? 'Runicorn' : 'this platform'} reports no accelerator metrics`
          : j.gpuCount === 0
            ? 'holds no GPUs'
            : `no sample in the last ${RECENT_SECONDS / 60} min`;
      strip.append(small(why));
      strip.setAttribute('aria-label', why);
      strip.dataset.empty = why;
      return strip;
    }
    const idle = (d?.idle ?? []).filter((g) => g.jobId === j.id);
    const perCell = j.cells[0]!.scope === 'GPU' ? 1 : j.gpuCount ? j.gpuCount / j.cells.length : 1;
    let idleCount = 0;
    for (const c of j.cells) {
      const span = document.createElement('span');
      span.className = 'cell';
      const isIdle = idle.some(
        (g) =>
          (c.gpuId && g.gpuId === c.gpuId) || (!c.gpuId && c.nodeId && g.nodeId === c.nodeId && g.scope !== 'GPU') || (c.scope === 'JOB' && g.scope === 'JOB'),
      );
      if (isIdle) {
        span.classList.add('idle');
        idleCount++;
      }
      if (c.utilization === null) span.classList.add('nodata');
      else span.style.background = utilizationColour(c.utilization);
      const width = Math.min(8, Math.max(1, Math.round(perCell)));
      span.style.flexGrow = String(width);
      span.style.minWidth = `${width * 10}px`;
      const stands =
        c.scope === 'GPU'
          ? ''
          : ` (${c.scope === 'NODE' ? 'node aggregate' : 'job aggregate'}${perCell > 1 ? ` of ${perCell % 1 ? perCell.toFixed(1) : perCell} GPUs` : ''})`;
      span.title = `${c.label}${stands}: ${c.utilization === null ? 'no value' : percent(c.utilization)}${c.at ? ` at ${clock(Date.parse(c.at))}` : ''}${isIdle ? ' — idle in the last hour' : ''}`;
      strip.append(span);
    }
    strip.dataset.cells = String(j.cells.length);
    strip.dataset.idle = String(idleCount);
    const values = j.cells.map((c) => c.utilization).filter((v): v is number => v !== null);
    strip.setAttribute(
      'aria-label',
      `${j.cells.length} ${j.cells[0]!.scope === 'GPU' ? 'GPUs' : 'nodes'}, ${values.length ? `from ${percent(Math.min(...values))} to ${percent(Math.max(...values))} busy` : 'no values'}${idleCount ? `, ${idleCount} idle` : ''}`,
    );
    return strip;
  }

  dispose() {
    clearInterval(this.ticker);
    this.close();
  }
}

/** What stands for an idle share that cannot be known: a CPU-only job's (and so any total that holds one). */
const IDLE_UNKNOWN = 'idle share not known: CPU-only';

function badges(findings: FindingItem[]): HTMLElement {
  const div = document.createElement('div');
  div.className = 'finding-badges';
  div.setAttribute('aria-label', `open findings: ${findings.map((f) => f.kind).join(', ')}`);
  div.append(...findings.map(findingBadge));
  return div;
}

function money(amount: number, currency: string | null): string {
  return `${amount.toFixed(2)} ${currency ?? ''}`.trim();
}

/**
 * A total's idle share when it is not known (CPU-only jobs have none to count): what the rows that
 * have one add up to, said to be theirs alone; null when no row has one.
 */
function knownIdle(w: FleetWaste): number | null {
  const idle = [...w.waste.values()].map((x) => x.cost?.idleAmount ?? null).filter((x): x is number => x !== null);
  return idle.length ? idle.reduce((a, b) => a + b, 0) : null;
}

/** A total's idle part: its idle share, or, without one, the accelerator jobs' (never as the whole). */
function idleText(c: LedgerCost, partial: number | null): string {
  if (c.idleAmount !== null) return `${money(c.idleAmount, c.currency)} idle`;
  return partial === null ? IDLE_UNKNOWN : `${money(partial, c.currency)} idle on GPU jobs; CPU-only not known`;
}

/** The summary's total: the window's cost, or why there is none (a price missing, currencies mixed). */
function costFact(c: LedgerCost | null, partialIdle: number | null): string {
  if (!c) return '–';
  if (c.amount === null) return c.reason ? `not known: ${c.reason.replace(/^amount: /, '')}` : '–';
  return `${money(c.amount, c.currency)} (${idleText(c, partialIdle)})`;
}

/** A row's (or, without a job, the total's) cost: amount and its idle share, or what stands in its way (shown in the cell's title too). */
function costCell(c: LedgerCost | null, d: FleetWaste | null, wasteError: string | null, j: FleetJob | null, partialIdle: number | null = null): Node[] {
  if (!d) return [text('–'), small(wasteError ? 'unavailable' : 'computing…')];
  if (!c) return [text('–'), small(!j ? '' : j.gpuCount ? 'no GPU data in the window' : 'holds no GPUs, no node-hour price')];
  if (c.amount === null) {
    const why = c.reason?.split(';')[0]?.replace(/^amount: /, '') ?? 'not known';
    const s = small(/no price/.test(why) ? 'no price configured' : why);
    s.title = c.reason ?? '';
    return [text('–'), s];
  }
  return [
    text(money(c.amount, c.currency)),
    small(j ? (c.idleAmount === null ? IDLE_UNKNOWN : `${money(c.idleAmount, c.currency)} idle`) : idleText(c, partialIdle)),
  ];
}

function meanNow(j: FleetJob): number | null {
  const v = (j.cells ?? []).map((c) => c.utilization).filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
}

function progressCell(j: FleetJob): Node[] {
  const p = j.progress;
  if (p?.fraction == null) return [small('not reported')];
  const bar = document.createElement('progress');
  bar.max = 1;
  bar.value = p.fraction;
  return [bar, text(` ${(p.fraction * 100).toFixed(0)}%`), small(p.etaSeconds != null ? `${duration(p.etaSeconds)} left` : '')];
}

function text(s: string): Text {
  return document.createTextNode(s);
}

function small(s: string): HTMLElement {
  const e = document.createElement('small');
  e.textContent = s;
  return e;
}

function cell(children: Node[], className?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  if (className) td.className = className;
  td.append(...children);
  return td;
}

function fact(label: string, value: string): HTMLElement {
  const div = document.createElement('div');
  div.className = 'fact';
  const l = document.createElement('span');
  l.textContent = label;
  const v = document.createElement('b');
  v.textContent = value;
  div.append(l, v);
  return div;
}

function emptyRow(message: string): HTMLTableRowElement {
  const tr = document.createElement('tr');
  const td = document.createElement('td');
  td.colSpan = COLUMNS.length;
  td.className = 'empty';
  td.textContent = message;
  tr.append(td);
  return tr;
}
