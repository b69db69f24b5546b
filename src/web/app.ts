/// <reference lib="dom" />
// The live view page: a fleet view of every running job and a job view of one job, switched by the
// URL's hash (see route.ts) so views can be shared and back/forward walk them; keyboard shortcuts
// for the common moves.
import { listJobs, type JobDetail, type JobSummary } from './api.js';
import { FleetView } from './fleet-view.js';
import { JobView } from './job-view.js';
import { formatRoute, parseRoute, type Route } from './route.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const FINISHED = new Set(['SUCCEEDED', 'FAILED', 'STOPPED', 'UNKNOWN']);

let jobs: JobSummary[] = [];

function navigate(route: Route) {
  const hash = formatRoute(route);
  if (location.hash !== hash)
    location.hash = hash; // a history entry; hashchange renders it
  else show(route);
}

const jobView = new JobView((job) => ensureOption(job));
const fleetView = new FleetView(navigate);

function show(route: Route) {
  document.body.dataset.view = route.view;
  $('job-view').hidden = route.view !== 'job';
  $('fleet-view').hidden = route.view !== 'fleet';
  $('nav-fleet').setAttribute('aria-current', route.view === 'fleet' ? 'page' : 'false');
  const picker = $<HTMLSelectElement>('job');
  if (route.view === 'job') {
    fleetView.close();
    jobView.open(route.jobId);
    picker.value = route.jobId;
    document.title = `Job ${route.jobId} · Training graph`;
  } else {
    jobView.close();
    fleetView.open(route);
    picker.value = '';
    document.title = 'Fleet · Training graph';
  }
}

function optionLabel(j: { name: string; status: string; gpuCount: number | null; provider: { kind: string } }) {
  return `${j.name} · ${j.provider.kind} · ${j.status}${j.gpuCount ? ` · ${j.gpuCount} GPU` : ''}`;
}

/** The picker lists running jobs first, then pending, then finished ones. */
function fillPicker() {
  const picker = $<HTMLSelectElement>('job');
  const groups: [string, (j: JobSummary) => boolean][] = [
    ['Running', (j) => j.status === 'RUNNING'],
    ['Pending', (j) => j.status === 'PENDING'],
    ['Finished', (j) => FINISHED.has(j.status)],
  ];
  const placeholder = new Option('Open a job…', '');
  const children: HTMLElement[] = [placeholder];
  for (const [label, test] of groups) {
    const mine = jobs.filter(test).sort((a, b) => a.name.localeCompare(b.name));
    if (!mine.length) continue;
    const g = document.createElement('optgroup');
    g.label = label;
    g.append(...mine.map((j) => new Option(optionLabel(j), j.id)));
    children.push(g);
  }
  picker.replaceChildren(...children);
  const route = parseRoute(location.hash);
  picker.value = route.view === 'job' ? route.jobId : '';
}

/** A job opened by URL that the picker's first page does not list still shows as picked. */
function ensureOption(job: JobDetail) {
  const picker = $<HTMLSelectElement>('job');
  if (![...picker.options].some((o) => o.value === job.id)) picker.append(new Option(optionLabel(job), job.id));
  if (document.body.dataset.view === 'job' && jobView.currentJobId === job.id) picker.value = job.id;
}

function stepJob(delta: number) {
  const picker = $<HTMLSelectElement>('job');
  const ids = [...picker.options].map((o) => o.value).filter(Boolean);
  if (!ids.length) return;
  const i = ids.indexOf(picker.value);
  const next = ids[(i + delta + ids.length) % ids.length]!;
  navigate({ view: 'job', jobId: next });
}

function onKey(e: KeyboardEvent) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const target = e.target as HTMLElement;
  if (['INPUT', 'SELECT', 'TEXTAREA'].includes(target.tagName) && e.key !== 'Escape') return;
  const actions: Record<string, () => void> = {
    f: () => navigate(parseRoute('#fleet')),
    j: () => $('job').focus(),
    ']': () => stepJob(1),
    '[': () => stepJob(-1),
    l: () => $('log-pane').focus(),
    '?': () => toggleHelp(),
    Escape: () => toggleHelp(false),
  };
  const act = actions[e.key];
  if (act) {
    e.preventDefault();
    act();
  }
}

function toggleHelp(open?: boolean) {
  const help = $('help');
  help.hidden = open === undefined ? !help.hidden : !open;
  $('help-toggle').setAttribute('aria-expanded', String(!help.hidden));
}

async function main() {
  $<HTMLSelectElement>('job').addEventListener('change', (e) => {
    const id = (e.target as HTMLSelectElement).value;
    if (id) navigate({ view: 'job', jobId: id });
  });
  $('help-toggle').addEventListener('click', () => toggleHelp());
  document.addEventListener('keydown', onKey);
  window.addEventListener('hashchange', () => show(parseRoute(location.hash)));
  // The bare address opens the fleet; replace (not push) so back leaves the page as expected.
  if (!location.hash) history.replaceState(null, '', formatRoute(parseRoute('')));
  show(parseRoute(location.hash));
  jobs = await listJobs();
  fillPicker();
  document.body.dataset.ready = 'true';
}

main().catch((err) => {
  $('notice').textContent = err instanceof Error ? err.message : String(err);
});
