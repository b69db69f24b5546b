// An hour of the live page on the embedded default, time-compressed: the built server (dist/) in
// this process with its clock (simulators and cache) running SPEED times faster and every poll
// interval divided by SPEED, so the hub polls as often as in an hour; one graphql-ws subscriber per
// platform watches a running job's utilization as the page does, and one watches status changes.
// Prints one JSON line: resident memory at the end, its peak, and the events received.
// Plain JavaScript on purpose: no TypeScript loader in the process that is measured.
// Usage: node bench/live-hour.mjs <PGlite folder>   (run by bench/footprint.ts; npm run build first)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { pino } from 'pino';
import WebSocket from 'ws';
import { startRuntime } from '../dist/server/runtime.js';
import { DEFAULT_POLL_SECONDS } from '../dist/live/intervals.js';

const SPEED = 120;
const SIMULATED_SECONDS = 3600;
const dataDir = process.argv[2] ?? 'memory://';
const workDir = mkdtempSync(path.join(tmpdir(), 'tg-live-hour-'));
const realStart = Date.now();
const clock = () => realStart + (Date.now() - realStart) * SPEED;
const rss = (key) => Math.round(Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024);

const rt = await startRuntime({
  config: { port: 0, host: '127.0.0.1', databaseUrl: null, dataDir, redisUrl: null, logLevel: 'silent', providers: null },
  logger: pino({ level: 'silent' }),
  clock,
  demoWorkDir: workDir,
});
for (const p of rt.providers.all()) p.pollIntervalSeconds = DEFAULT_POLL_SECONDS[p.kind] / SPEED;

const res = await fetch(`${rt.url}/graphql`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ query: '{ jobs(first: 200, filter: { statuses: [RUNNING] }) { edges { node { id provider { kind } } } } }' }),
});
const jobs = (await res.json()).data.jobs.edges.map((e) => e.node);
const watched = [...new Map(jobs.map((j) => [j.provider.kind, j.id])).values()];

const client = createClient({ url: `${rt.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket });
let events = 0;
let errors = 0;
const errorSamples = new Set();
const failed = (message) => {
  errors++;
  if (errorSamples.size < 5) errorSamples.add(String(message).slice(0, 200));
};
const sink = {
  next: (m) => (m.errors?.length ? failed(m.errors[0].message) : events++),
  error: (e) => failed(e?.message ?? e?.reason ?? JSON.stringify(e)),
  complete: () => {},
};
// The live page's own subscription (src/web/api.ts), at its resolution.
const UTILIZATION = `subscription LiveUtilization($jobId: ID!, $maxPoints: Int) {
  jobUtilization(jobId: $jobId, maxPoints: $maxPoints,
    names: [GPU_UTILIZATION, NPU_UTILIZATION, GPU_MEMORY_USED, GPU_MEMORY_UTILIZATION, NPU_MEMORY_UTILIZATION]) {
    job { status } polledAt from interval granularity final
    series { id name scope node { name } gpu { index node { name } } points { timestamp value } }
  }
}`;
const stops = watched.map((jobId) => client.subscribe({ query: UTILIZATION, variables: { jobId, maxPoints: 5_000 } }, sink));
stops.push(client.subscribe({ query: 'subscription { jobStatusChanged { id status } }' }, sink));

await new Promise((r) => setTimeout(r, (SIMULATED_SECONDS / SPEED) * 1000));
const out = {
  rssMb: rss('VmRSS'),
  peakRssMb: rss('VmHWM'),
  watchedJobs: watched.length,
  events,
  errors,
  errorSamples: [...errorSamples],
  simulatedSeconds: SIMULATED_SECONDS,
  speed: SPEED,
};
for (const stop of stops) stop();
await client.dispose();
await rt.close();
rmSync(workDir, { recursive: true, force: true });
console.log(JSON.stringify(out));
process.exit(0);
