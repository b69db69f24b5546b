/// <reference lib="dom" />
// The job view: one job's accelerators (per GPU, or per node where that is all the platform has)
// live or from history, its training metrics by step, status, progress and logs. Everything one
// opened job starts (subscriptions, timers, fetches) belongs to its Session; opening another job
// closes the session first, and a closed session's late callbacks draw nothing. Its findings (open
// ones, then the latest resolved) follow the findings subscription.
import {
  jobDetail,
  jobHistory,
  logTail,
  subscribeLogs,
  subscribeUtilization,
  trainingMetrics,
  type ChartKind,
  type ChartLines,
  type JobDetail,
  type Line,
  type LogEntry,
  type TrainingSeries,
} from './api.js';
import { SeriesChart, type ChartSpec } from './chart.js';
import { FindingsFeed, findingItem } from './findings.js';
import { GIB, ago, clock, duration, gib, metricValue, percent, providerLabel } from './format.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const FINISHED = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);
/** Platforms whose API gives this server training metrics (loss by step). */
const TRAINING_PLATFORMS = new Set(['PRIMUS_LENS', 'RUNICORN']);
const HISTORY_SECONDS = 30 * 60;
const LOG_LINES_KEPT = 500;
const MIN_REFRESH_MS = 5000;
const SCOPE_RANK = { GPU: 0, NODE: 1, JOB: 2 } as const;
/** Resolved findings listed under the open ones. */
const RESOLVED_SHOWN = 5;

const UTILIZATION: ChartSpec = { title: 'Accelerator utilization', format: percent, x: 'time', aggregate: true, yRange: [0, 1] };
const MEMORY_BYTES: ChartSpec = { title: 'Accelerator memory used', format: gib, x: 'time', aggregate: true };
const MEMORY_RATIO: ChartSpec = { title: 'Accelerator memory used (share of capacity)', format: percent, x: 'time', aggregate: true, yRange: [0, 1] };

function setText(id: string, text: string) {
  $(id).textContent = text;
}

class Session {
  active = true;
  private readonly disposers: (() => void)[] = [];
  constructor(readonly jobId: string) {}
  own(dispose: () => void) {
    if (this.active) this.disposers.push(dispose);
    else dispose();
  }
  timer(fn: () => void, ms: number) {
    const t = setTimeout(() => this.active && fn(), ms);
    this.own(() => clearTimeout(t));
  }
  close() {
    this.active = false;
    for (const d of this.disposers.splice(0)) d();
  }
}

export class JobView {
  private session: Session | null = null;
  private readonly utilization = new SeriesChart($('utilization'), UTILIZATION);
  private readonly memory = new SeriesChart($('memory'), MEMORY_BYTES);
  private memoryKind: ChartKind | null = null;
  private chartScope: Record<'utilization' | 'memory', number | null> = { utilization: null, memory: null };
  private job: JobDetail | null = null;
  private lastSampleAt: number | null = null;
  private intervalSeconds: number | null = null;
  private updates = 0;
  private trainingCharts = new Map<string, SeriesChart>();
  private findings: FindingsFeed | null = null;
  private readonly ticker = setInterval(() => this.showLastSample(), 1000);

  constructor(private readonly onJobKnown: (job: JobDetail) => void) {
    const follow = $<HTMLInputElement>('log-follow');
    follow.addEventListener('change', () => follow.checked && this.scrollLogs());
  }

  get currentJobId(): string | null {
    return this.session?.jobId ?? null;
  }

  close() {
    this.session?.close();
    this.session = null;
  }

  open(jobId: string) {
    if (this.session?.active && this.session.jobId === jobId) return;
    this.close();
    const session = (this.session = new Session(jobId));
    this.job = null;
    this.updates = 0;
    this.lastSampleAt = null;
    this.intervalSeconds = null;
    this.memoryKind = null;
    this.chartScope = { utilization: null, memory: null };
    document.body.dataset.job = jobId;
    document.body.dataset.jobState = 'loading';
    document.body.dataset.updates = '0';
    for (const id of ['job-name', 'provider', 'project', 'status', 'failure', 'progress', 'eta', 'granularity', 'last-sample', 'interval', 'gpus'])
      setText(id, '–');
    setText('job-name', jobId);
    $('failure').hidden = true;
    $('console-link').hidden = true;
    $('restarts-fact').hidden = true;
    $('status').className = 'status';
    $<HTMLProgressElement>('progress-bar').hidden = true;
    this.notice('');
    this.utilization.reset(UTILIZATION, 'Loading…');
    this.memory.reset(MEMORY_BYTES, 'Loading…');
    this.memory.root.hidden = false;
    this.resetTraining('Loading…');
    this.resetLogs('Loading…');
    this.followFindings(session);
    void this.load(session).catch((err) => session.active && this.notice(message(err), true));
  }

  private async load(session: Session) {
    const job = await jobDetail(session.jobId).catch((err: unknown) => {
      if (!session.active) return undefined;
      this.unknownJob(session.jobId, message(err));
      return undefined;
    });
    if (!session.active || job === undefined) return;
    if (job === null) return this.unknownJob(session.jobId, null);
    this.job = job;
    this.onJobKnown(job);
    this.showDetail(job);
    document.body.dataset.jobState = FINISHED.has(job.status) ? 'finished' : 'live';
    const finished = FINISHED.has(job.status);
    const reason = this.systemReason(job);
    if (reason) {
      this.utilization.empty(reason);
      // One sentence is enough when neither chart can ever have data.
      if (job.provider.systemMetrics.length === 0) this.memory.root.hidden = true;
      else this.memory.empty(reason);
    } else {
      this.pickMemoryChart(job);
      await this.loadHistory(session, job, finished);
      if (!finished && job.status !== 'PENDING') this.subscribe(session);
    }
    void this.loadTraining(session, job);
    if (finished) void this.loadLogTail(session, job);
    else this.followLogs(session);
    if (!finished) this.scheduleRefresh(session);
  }

  private unknownJob(jobId: string, error: string | null) {
    document.body.dataset.jobState = 'unknown';
    setText('job-name', 'No such job');
    const text = error
      ? `Cannot open job “${jobId}”: ${error}`
      : `No job with id “${jobId}” on this server: it may be mistyped, or its platform no longer lists it. Pick a job above or open the fleet view.`;
    this.notice(text, true);
    for (const chart of [this.utilization, this.memory]) chart.empty('No such job.');
    this.resetTraining('No such job.');
    this.resetLogs('No such job.');
  }

  /** Why the accelerator charts stay empty whatever happens, or null. */
  private systemReason(job: JobDetail): string | null {
    const p = job.provider;
    const accel = p.systemMetrics.filter((m) => /^(GPU|NPU)_/.test(m));
    const name = providerLabel(p);
    if (p.systemMetrics.length === 0)
      return `${name} reports no system metrics for its jobs (no GPU utilization or memory), so there is nothing to draw here. Its training metrics are below.`;
    if (accel.length === 0) return `${name} reports no GPU or NPU metrics (only ${p.systemMetrics.join(', ').toLowerCase()}).`;
    if (job.acceleratorKind === 'NONE') return 'This job holds no GPUs or NPUs (CPU only): there is no accelerator to draw.';
    if (job.status === 'PENDING') return 'The job is pending: no accelerators are allocated yet. Samples start when it runs.';
    return null;
  }

  private pickMemoryChart(job: JobDetail) {
    const m = job.provider.systemMetrics;
    this.memoryKind = m.includes('GPU_MEMORY_USED')
      ? 'memoryBytes'
      : m.some((x) => /MEMORY_UTILIZATION$/.test(x) && /^(GPU|NPU)/.test(x))
        ? 'memoryRatio'
        : null;
    if (this.memoryKind === 'memoryRatio') this.memory.reset(MEMORY_RATIO, 'Loading…');
    if (this.memoryKind === null) this.memory.empty(`${providerLabel(job.provider)} reports no accelerator memory metric.`);
  }

  private async loadHistory(session: Session, job: JobDetail, finished: boolean) {
    const to = finished ? job.finishedAt : null;
    const start = job.startedAt ? Date.parse(job.startedAt) : null;
    const from = finished ? job.startedAt : new Date(Math.max(start ?? 0, Date.now() - HISTORY_SECONDS * 1000)).toISOString();
    const history = await jobHistory(job.id, from, to).catch((err: unknown) => ({ lines: null, scope: null, error: message(err) }));
    if (!session.active) return;
    if (history.lines) this.plot(history.lines);
    if (history.scope) this.showScope(history.scope);
    const none = finished
      ? `No utilization points are stored for this job's run${job.startedAt ? ` (${clock(Date.parse(job.startedAt))} – ${job.finishedAt ? clock(Date.parse(job.finishedAt)) : 'end unknown'})` : ''}: its platform kept none for it.`
      : job.gpuCount === 0
        ? 'This job holds no GPUs, and no accelerator samples have come in.'
        : 'Waiting for the first sample from the platform…';
    const why = history.error ? `History unavailable: ${history.error}` : none;
    if (!this.utilization.hasPoints) this.utilization.empty(why);
    if (this.memoryKind && !this.memory.hasPoints) this.memory.empty(history.error ? why : none.replace('utilization', 'memory'));
    if (finished) {
      const last = lastX(history.lines);
      this.lastSampleAt = last;
      this.showLastSample();
      setText('interval', 'not polled (finished)');
    }
  }

  private plot(lines: ChartLines) {
    this.plotInto(this.utilization, 'utilization', lines.utilization, 1);
    if (this.memoryKind) this.plotInto(this.memory, 'memory', lines[this.memoryKind], this.memoryKind === 'memoryBytes' ? 1 / GIB : 1);
  }

  /**
   * Only the finest scope a chart has seen is drawn: per-GPU lines where there are any, else per
   * node, else the job; a job-level point never joins per-node lines (it would read as a node).
   */
  private plotInto(chart: SeriesChart, key: 'utilization' | 'memory', lines: Line[], scale: number) {
    if (!lines.length) return;
    const finest = Math.min(...lines.map((l) => SCOPE_RANK[l.scope]));
    const current = this.chartScope[key];
    if (current !== null && finest > current) return;
    if (current !== null && finest < current) chart.clearPoints();
    this.chartScope[key] = finest;
    for (const l of lines) if (SCOPE_RANK[l.scope] === finest) for (const [x, v] of l.points) chart.add(l.label, x, v === null ? null : v * scale);
    chart.render();
  }

  private subscribe(session: Session) {
    session.own(
      subscribeUtilization(session.jobId, {
        next: (s) => {
          this.updates++;
          document.body.dataset.updates = String(this.updates);
          this.lastSampleAt = s.polledAt;
          this.intervalSeconds = s.intervalSeconds;
          setText('interval', `every ${duration(s.intervalSeconds)}`);
          this.showLastSample();
          this.showScope(s.granularity);
          this.showStatus(s.status);
          this.notice('');
          this.plot(s.lines);
          const empty = 'The platform has sent samples, but none with accelerator values yet.';
          if (!this.utilization.hasPoints) this.utilization.empty(empty);
          if (this.memoryKind && !this.memory.hasPoints) this.memory.empty(empty);
          if (s.final) {
            this.notice('The job has finished: that was its last sample.');
            void this.refreshDetail(session);
          }
        },
        error: (m) => this.notice(`Live updates: ${m}`, true),
        complete: () => {
          if (session.active) setText('interval', 'not polled (finished)');
        },
      }),
    );
  }

  private scheduleRefresh(session: Session) {
    const ms = Math.max(MIN_REFRESH_MS, (this.intervalSeconds ?? 0) * 1000);
    session.timer(() => {
      void Promise.all([this.refreshDetail(session), this.job ? this.loadTraining(session, this.job) : null, this.findings?.reload()]).finally(() => {
        if (session.active && this.job && !FINISHED.has(this.job.status)) this.scheduleRefresh(session);
      });
    }, ms);
  }

  private async refreshDetail(session: Session) {
    const job = await jobDetail(session.jobId).catch(() => null);
    if (!session.active || !job) return;
    this.job = job;
    this.showDetail(job);
  }

  private showDetail(job: JobDetail) {
    setText('job-name', job.name);
    setText('provider', providerLabel(job.provider));
    setText('project', job.project.name);
    const kind = job.acceleratorKind;
    const unit = kind === 'NPU' ? 'NPU' : 'GPU';
    setText(
      'gpus',
      kind === 'NONE'
        ? 'none (CPU only)'
        : job.gpuCount === null
          ? 'not reported'
          : `${job.gpuCount} ${unit}${job.gpuCount === 1 ? '' : 's'}${job.gpuType ? ` × ${job.gpuType}` : ''}`,
    );
    const link = $<HTMLAnchorElement>('console-link');
    link.hidden = !job.consoleUrl;
    if (job.consoleUrl) link.href = job.consoleUrl;
    $('restarts-fact').hidden = job.restartCount == null;
    setText('restarts', String(job.restartCount ?? '–'));
    this.showStatus(job.status, job.rawStatus);
    const failure = $('failure');
    const reason = job.failureReason ?? null;
    failure.hidden = !(reason && (job.status === 'FAILED' || job.status === 'STOPPED'));
    failure.textContent = reason ?? '';
    const p = job.progress;
    const bar = $<HTMLProgressElement>('progress-bar');
    bar.hidden = p?.fraction == null;
    if (p?.fraction != null) {
      bar.value = p.fraction;
      const steps = p.iteration != null && p.targetIteration != null ? ` (step ${Math.round(p.iteration)} of ${Math.round(p.targetIteration)})` : '';
      setText('progress', `${(p.fraction * 100).toFixed(1)}%${steps}`);
    } else {
      setText('progress', FINISHED.has(job.status) ? '—' : 'not reported by this platform');
    }
    if (FINISHED.has(job.status)) {
      const took = job.startedAt && job.finishedAt ? ` after ${duration((Date.parse(job.finishedAt) - Date.parse(job.startedAt)) / 1000)}` : '';
      setText('eta', job.finishedAt ? `ended ${clock(Date.parse(job.finishedAt))}${took}` : 'ended (time not reported)');
    } else if (p?.etaSeconds != null) {
      setText('eta', `${duration(p.etaSeconds)} left (≈ ${clock(Date.now() + p.etaSeconds * 1000)})`);
    } else {
      setText('eta', 'unknown');
    }
    if (job.provider.systemMetrics.length === 0) setText('granularity', 'training metrics only (no system metrics)');
  }

  private showStatus(status: string, raw?: string | null) {
    const el = $('status');
    el.textContent = raw && raw.toUpperCase() !== status ? `${status} (${raw})` : status;
    el.className = `status ${status}`;
    if (this.job) this.job.status = status;
  }

  private showScope(scope: string) {
    setText(
      'granularity',
      scope === 'GPU' ? 'per GPU' : scope === 'NODE' ? 'per node (the platform has no per-GPU series)' : 'whole job (no per-node or per-GPU series)',
    );
  }

  private showLastSample() {
    if (this.lastSampleAt === null) {
      if (this.job && !FINISHED.has(this.job.status)) setText('last-sample', this.updates ? '–' : 'none yet');
      return;
    }
    setText('last-sample', `${clock(this.lastSampleAt)} (${ago(this.lastSampleAt)})`);
  }

  // ---- findings

  private followFindings(session: Session) {
    const feed = new FindingsFeed({ jobIds: [session.jobId] }, () => session.active && this.renderFindings(feed));
    this.findings = feed;
    session.own(() => feed.close());
    $('findings-list').replaceChildren();
    setText('findings-state', 'Reading findings…');
    void feed.reload();
  }

  private renderFindings(feed: FindingsFeed) {
    const all = feed.all();
    const open = all.filter((f) => f.state === 'FIRING');
    const resolved = all.filter((f) => f.state === 'RESOLVED').slice(0, RESOLVED_SHOWN);
    $('findings-list').replaceChildren(...[...open, ...resolved].map(findingItem));
    $('findings').dataset.open = String(open.length);
    const state = feed.error
      ? `Findings unavailable: ${feed.error}`
      : open.length
        ? `${open.length} open, live`
        : resolved.length
          ? 'None open now (live); the latest resolved:'
          : 'None: nothing stalled, straggling or idle was found in this job (live).';
    setText('findings-state', state);
  }

  // ---- training metrics

  private resetTraining(reason: string) {
    for (const c of this.trainingCharts.values()) c.root.remove();
    this.trainingCharts.clear();
    const empty = $('training-empty');
    empty.hidden = false;
    empty.textContent = reason;
    $('training').dataset.state = 'empty';
    $('job-view').dataset.training = 'empty';
  }

  private async loadTraining(session: Session, job: JobDetail) {
    const known = TRAINING_PLATFORMS.has(job.provider.kind);
    const { series, error } = await trainingMetrics(job.id).catch((err: unknown) => ({ series: [] as TrainingSeries[], error: message(err) }));
    if (!session.active) return;
    if (series.length === 0) {
      const why = error
        ? `Training metrics unavailable: ${error}`
        : known
          ? 'No training metrics recorded for this job yet.'
          : `${providerLabel(job.provider)} does not give training metrics (loss, accuracy) to this API; look for them in the logs below.`;
      this.resetTraining(why);
      return;
    }
    $('training-empty').hidden = !error;
    if (error) $('training-empty').textContent = `Some training metrics are missing: ${error}`;
    $('training').dataset.state = 'data';
    $('job-view').dataset.training = 'data';
    const byName = new Map<string, TrainingSeries[]>();
    for (const s of series) byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
    // Loss first: it is what people look at; then alphabetical.
    const names = [...byName.keys()].sort((a, b) => Number(b === 'loss') - Number(a === 'loss') || a.localeCompare(b));
    const host = $('training-charts');
    for (const name of names) {
      let chart = this.trainingCharts.get(name);
      if (!chart) {
        const div = document.createElement('div');
        div.dataset.metric = name;
        host.append(div);
        chart = new SeriesChart(div, { title: name, format: metricValue, x: 'step', aggregate: false });
        this.trainingCharts.set(name, chart);
      }
      chart.clearPoints();
      const mine = byName.get(name)!;
      for (const s of mine) {
        // The stage tells lines apart (train, eval); the source where stages are not given or repeat.
        const twin = mine.some((o) => o !== s && o.stage === s.stage);
        const label = s.stage ? (twin ? `${s.stage} · ${s.source}` : s.stage) : s.source;
        for (const [step, v] of s.points) chart.add(label, step, v);
      }
      chart.render();
    }
    // Keep the DOM order the sort gives.
    for (const name of names) host.append(this.trainingCharts.get(name)!.root);
  }

  // ---- logs

  private resetLogs(reason: string) {
    const pane = $('log-pane');
    pane.replaceChildren();
    pane.dataset.lines = '0';
    setText('log-state', reason);
  }

  private followLogs(session: Session) {
    setText('log-state', 'Waiting for log lines (the last minute, then live)…');
    session.own(
      subscribeLogs(session.jobId, {
        next: (line) => this.appendLogs([line]),
        error: (m) => setText('log-state', `Logs unavailable: ${m}`),
        // The stream also ends at once where the platform has no log API (Primus-Lens): say which.
        complete: () => {
          if (!session.active) return;
          const lines = Number($('log-pane').dataset.lines ?? 0);
          const done = this.job && FINISHED.has(this.job.status);
          setText(
            'log-state',
            done
              ? 'The job has finished: no more log lines.'
              : lines === 0 && this.job
                ? `No logs: ${providerLabel(this.job.provider)} gives no job logs to this API.`
                : 'The log stream ended.',
          );
        },
      }),
    );
  }

  private async loadLogTail(session: Session, job: JobDetail) {
    const since = job.finishedAt ? new Date(Date.parse(job.finishedAt) - HISTORY_SECONDS * 1000).toISOString() : null;
    const { lines, error, complete } = await logTail(job.id, since).catch((err: unknown) => ({
      lines: [] as LogEntry[],
      error: message(err),
      complete: false,
    }));
    if (!session.active) return;
    if (error) return setText('log-state', `Logs unavailable: ${error}`);
    if (lines.length === 0) return setText('log-state', 'No log lines for the end of this job.');
    this.appendLogs(lines);
    setText(
      'log-state',
      complete
        ? `The last ${lines.length} lines${since ? ' from its final half hour on' : ''} (the job has finished).`
        : `${lines.length} lines from ${since ? 'its final half hour' : 'its start'}; more follow that this pane does not read.`,
    );
  }

  private appendLogs(lines: LogEntry[]) {
    const pane = $('log-pane');
    for (const l of lines) {
      const row = document.createElement('div');
      row.className = `log-line ${l.level ?? ''}`;
      const when = l.timestamp ? clock(Date.parse(l.timestamp)) : '';
      row.textContent = [when, l.node ? `[${l.node}]` : '', l.message].filter(Boolean).join(' ');
      pane.append(row);
    }
    while (pane.childElementCount > LOG_LINES_KEPT) pane.firstElementChild!.remove();
    pane.dataset.lines = String(Number(pane.dataset.lines ?? 0) + lines.length);
    if (lines.length) setText('log-state', `${pane.dataset.lines} lines, newest last`);
    this.scrollLogs();
  }

  private scrollLogs() {
    if (!$<HTMLInputElement>('log-follow').checked) return;
    const pane = $('log-pane');
    pane.scrollTop = pane.scrollHeight;
  }

  notice(text: string, isError = false) {
    const el = $('notice');
    el.textContent = text;
    el.classList.toggle('error', isError);
  }

  dispose() {
    clearInterval(this.ticker);
    this.close();
  }
}

function lastX(lines: ChartLines | null): number | null {
  if (!lines) return null;
  let last: number | null = null;
  for (const kind of Object.values(lines)) for (const l of kind) for (const [x] of l.points) if (last === null || x > last) last = x;
  return last;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
