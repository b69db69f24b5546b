/// <reference lib="dom" />
// Findings as the page shows them: one feed per view (the fleet's, or one job's) that reads the
// findings once and then follows the findings subscription, so a finding appears and resolves
// without a reload. The query and the subscription can cross (an event may arrive while the query
// is out): events heard meanwhile are applied again over the query's answer, so a resolution is
// never undone by an older answer.
import { findings, subscribeFindings, type FindingFilterInput, type FindingItem } from './findings-api.js';
import { ago, clock, percent } from './format.js';

export class FindingsFeed {
  private readonly byId = new Map<string, FindingItem>();
  private unsubscribe: (() => void) | null = null;
  /** Events heard while a read is out, applied again over its answer. */
  private heard: FindingItem[] | null = null;
  private closed = false;
  private loaded = false;
  /** Why the findings could not be read, or null. */
  error: string | null = null;

  constructor(
    private readonly filter: FindingFilterInput,
    private readonly onChange: () => void,
  ) {
    // Subscribed first: whatever fires after the read is asked for is heard.
    this.unsubscribe = subscribeFindings(
      { ...filter, states: null },
      {
        next: (f) => {
          if (this.closed) return;
          this.heard?.push(f);
          this.apply(f);
          this.onChange();
        },
        error: (m) => {
          this.error = `live findings: ${m}`;
          this.onChange();
        },
        complete: () => {},
      },
    );
  }

  /** Reads the findings again (on open, and on each refresh of the view in case an event was missed). */
  async reload(): Promise<void> {
    if (this.closed) return;
    // The first answer is always drawn (it replaces "reading…").
    const before = this.loaded ? this.signature() : null;
    this.loaded = true;
    const heard: FindingItem[] = [];
    this.heard = heard;
    try {
      const answer = await findings(this.filter);
      if (this.closed) return;
      // What the answer no longer lists and no event brought stays only if it is resolved already.
      for (const [id, f] of this.byId) if (f.state === 'FIRING') this.byId.delete(id);
      for (const f of answer) this.apply(f);
      for (const f of heard) this.apply(f);
      this.error = null;
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
    } finally {
      if (this.heard === heard) this.heard = null;
    }
    // Drawn again only when something changed: a view redrawn for nothing loses the reader's focus.
    if (!this.closed && this.signature() !== before) this.onChange();
  }

  private signature(): string {
    return `${this.error ?? ''}|${[...this.byId.values()].map((f) => `${f.id}:${f.state}:${f.summary}`).join(',')}`;
  }

  private apply(f: FindingItem) {
    const known = this.byId.get(f.id);
    // A finding resolves once and never fires again: an older FIRING answer cannot reopen it.
    if (known?.state === 'RESOLVED' && f.state === 'FIRING') return;
    this.byId.set(f.id, f);
  }

  /** Open findings first (most severe, then newest), then resolved ones, newest first. */
  all(): FindingItem[] {
    return [...this.byId.values()].sort(
      (a, b) =>
        Number(b.state === 'FIRING') - Number(a.state === 'FIRING') ||
        SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] ||
        Date.parse(b.startedAt) - Date.parse(a.startedAt),
    );
  }

  /** Open findings per job. */
  openByJob(): Map<string, FindingItem[]> {
    const out = new Map<string, FindingItem[]>();
    for (const f of this.all()) if (f.state === 'FIRING' && f.jobId) out.set(f.jobId, [...(out.get(f.jobId) ?? []), f]);
    return out;
  }

  close() {
    this.closed = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}

const SEVERITY_RANK: Record<FindingItem['severity'], number> = { INFO: 0, WARNING: 1, CRITICAL: 2 };

/** A small badge: the kind, coloured by severity; the summary in its title. */
export function findingBadge(f: FindingItem): HTMLElement {
  const b = document.createElement('span');
  b.className = `finding-badge ${f.severity}`;
  b.dataset.kind = f.kind;
  b.textContent = f.kind.replaceAll('_', ' ').toLowerCase();
  b.title = `${f.severity} ${f.kind}${f.where ? ` (${f.where})` : ''} since ${clock(Date.parse(f.startedAt))}: ${f.summary}`;
  return b;
}

/** One finding as a list item: severity, kind, where, since when, and what shows it. */
export function findingItem(f: FindingItem): HTMLLIElement {
  const li = document.createElement('li');
  li.className = `finding ${f.state}`;
  li.dataset.finding = f.id;
  li.dataset.kind = f.kind;
  li.dataset.state = f.state;
  const head = document.createElement('div');
  head.className = 'finding-head';
  const sev = document.createElement('span');
  sev.className = `severity ${f.severity}`;
  sev.textContent = f.severity;
  const kind = document.createElement('b');
  kind.textContent = f.kind;
  const when = document.createElement('span');
  when.className = 'finding-when';
  const since = Date.parse(f.startedAt);
  when.textContent =
    f.state === 'RESOLVED' && f.endedAt
      ? `resolved ${clock(Date.parse(f.endedAt))} (began ${clock(since)})`
      : `since ${clock(since)} (${ago(since).replace(' ago', '')})`;
  head.append(sev, ' ', kind, ...(f.where ? [` · ${f.where}`] : []), ' ', when);
  const summary = document.createElement('div');
  summary.className = 'finding-summary';
  summary.textContent = f.summary;
  li.append(head, summary);
  const e = f.evidence;
  const numbers = [
    e.observedMax !== null ? `highest ${percent(e.observedMax)}` : null,
    e.threshold !== null ? `threshold ${percent(e.threshold)}` : null,
    e.jobMedian !== null ? `job median ${percent(e.jobMedian)}` : null,
  ].filter(Boolean);
  if (e.from && e.to) numbers.unshift(`window ${clock(Date.parse(e.from))} – ${clock(Date.parse(e.to))}`);
  if (numbers.length) {
    const ev = document.createElement('small');
    ev.className = 'finding-evidence';
    ev.textContent = numbers.join(' · ');
    li.append(ev);
  }
  return li;
}
