// The Baseten simulator in its own process, so upstream work does not share the event loop (and
// the core) with the server being measured, as a real platform would not. Talks over IPC.
import { startBasetenSimulator } from '../src/simulators/baseten/server.js';

const options = JSON.parse(process.argv[2]!);
const anchorMs: number = options.anchorMs;
const sim = await startBasetenSimulator({ seed: options.seed, anchorMs, now: () => anchorMs, fleet: options.fleet, rateLimit: false });

process.on('message', (msg: { id: number; cmd: 'stats' | 'cpu' | 'reset' | 'close' }) => {
  if (msg.cmd === 'stats') process.send!({ id: msg.id, stats: Object.fromEntries(sim.stats) });
  else if (msg.cmd === 'cpu') {
    // The simulator's own CPU so far (ms): what it spent on a run, against the run's wall time.
    const { user, system } = process.cpuUsage();
    process.send!({ id: msg.id, cpuMs: (user + system) / 1000 });
  } else if (msg.cmd === 'reset') {
    sim.resetStats();
    process.send!({ id: msg.id });
  } else if (msg.cmd === 'close') void sim.close().then(() => process.send!({ id: msg.id }, () => process.exit(0)));
});
process.send!({ ready: true, url: sim.url, apiKey: sim.apiKey, jobs: sim.fleet.jobs.length });
