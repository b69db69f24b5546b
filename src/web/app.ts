/// <reference lib="dom" />
// The live view page: pick a job, watch its per-GPU (or per-node, where the platform reports
// only node aggregates) utilization and memory arrive sample by sample, with its status and
// progress. A deliberately small example of a client of this API.
import { jobDetail, listJobs, subscribeUtilization, type JobSummary, type UtilizationPoint, type UtilizationSample } from './api.js';
import { LiveChart, type ChartSpec } from './chart.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const GIB = 1024 ** 3;
const percent: ChartSpec['format'] = (v) => `${(v * 100).toFixed(0)}%`;
const PROGRESS_REFRESH_MS = 5000;

const utilization = new LiveChart($('utilization'), { title: 'Utilization', format: percent });
const memory = new LiveChart($('memory'), { title: 'Memory used', format: (v) => `${(v / GIB).toFixed(1)} GiB` });

let unsubscribe: (() => void) | null = null;
let updates = 0;
let lastProgressAt = 0;
/** Memory is charted in bytes when the platform reports bytes, else as a ratio of capacity. */
let memoryInBytes: boolean | null = null;

function setText(id: string, text: string) {
  $(id).textContent = text;
}

function showStatus(status: string) {
  const el = $('status');
  el.textContent = status;
  el.className = `status ${status}`;
}

async function refreshDetail(jobId: string) {
  lastProgressAt = Date.now();
  const job = await jobDetail(jobId);
  if (!job) return;
  showStatus(job.status);
  const p = job.progress;
  const bar = $<HTMLProgressElement>('progress-bar');
  bar.hidden = p?.fraction == null;
  if (p?.fraction != null) {
    bar.value = p.fraction;
    const eta = p.etaSeconds != null ? `, ${Math.round(p.etaSeconds / 60)} min left` : '';
    setText('progress', `${(p.fraction * 100).toFixed(1)}% (${p.iteration} / ${p.targetIteration}${eta})`);
  } else {
    setText('progress', 'not reported by this platform');
  }
}

function plot(line: string, points: UtilizationPoint[]) {
  for (const p of points) {
    const t = Date.parse(p.timestamp);
    utilization.add(line, t, p.gpuUtilization ?? p.npuUtilization);
    const bytes = p.gpuMemoryUsedBytes;
    const ratio = p.gpuMemoryUtilization ?? p.npuMemoryUtilization;
    if (memoryInBytes === null && (bytes !== null || ratio !== null)) {
      memoryInBytes = bytes !== null;
      memory.reset(memoryInBytes ? undefined : { title: 'Memory used (share of capacity)', format: percent });
    }
    if (memoryInBytes !== null) memory.add(line, t, memoryInBytes ? bytes : ratio);
  }
}

function onSample(jobId: string, sample: UtilizationSample) {
  updates++;
  setText('updates', String(updates));
  document.body.dataset.updates = String(updates);
  setText('granularity', sample.granularity === 'GPU' ? 'per GPU' : 'per node (the platform reports no per-GPU series)');
  showStatus(sample.status);
  setText('error', '');
  if (sample.granularity === 'GPU') {
    for (const g of sample.gpus) plot(`${g.nodeName ?? 'gpu'} #${g.index}`, g.points);
  } else {
    for (const n of sample.nodes) plot(n.name, n.points);
  }
  utilization.render();
  memory.render();
  if (sample.final) setText('error', 'The job has finished: this was its last sample.');
  if (sample.final || Date.now() - lastProgressAt > PROGRESS_REFRESH_MS) void refreshDetail(jobId).catch(showError);
}

function showError(err: unknown) {
  setText('error', err instanceof Error ? err.message : String(err));
}

function watch(job: JobSummary) {
  unsubscribe?.();
  updates = 0;
  memoryInBytes = null;
  setText('updates', '0');
  document.body.dataset.updates = '0';
  document.body.dataset.job = job.id;
  setText('provider', `${job.provider.name}${job.provider.simulated ? ' (simulated)' : ''}`);
  setText('granularity', '–');
  utilization.reset();
  memory.reset({ title: 'Memory used', format: (v) => `${(v / GIB).toFixed(1)} GiB` });
  history.replaceState(null, '', `#job=${encodeURIComponent(job.id)}`);
  void refreshDetail(job.id).catch(showError);
  unsubscribe = subscribeUtilization(job.id, {
    sample: (s) => onSample(job.id, s),
    error: showError,
    complete: () => (unsubscribe = null),
  });
}

async function main() {
  const jobs = await listJobs();
  // Running jobs first: they are the ones that move.
  jobs.sort((a, b) => Number(b.status === 'RUNNING') - Number(a.status === 'RUNNING') || a.name.localeCompare(b.name));
  const select = $<HTMLSelectElement>('job');
  select.replaceChildren(
    ...jobs.map((j) => new Option(`${j.name} · ${j.provider.kind} · ${j.status}${j.gpuCount ? ` · ${j.gpuCount} GPU` : ''}`, j.id)),
  );
  const wanted = new URLSearchParams(location.hash.slice(1)).get('job');
  const first = jobs.find((j) => j.id === wanted) ?? jobs[0];
  if (!first) return setText('error', 'No jobs: no provider answered.');
  select.value = first.id;
  select.addEventListener('change', () => watch(jobs.find((j) => j.id === select.value)!));
  watch(first);
}

main().catch(showError);
