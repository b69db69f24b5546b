// `node --expose-gc --import tsx bench/collect-list-memory.ts [jobs=1000] [reps=6] [list|targets]`:
// what one of the collector's fleet-wide steps costs in memory, alone: a server (collector off) on
// a fresh Postgres database over a Baseten simulator with N running jobs (bench/collect.ts's fleet),
// then per repetition: RSS settled after a GC, the peak reset (/proc/self/clear_refs), one job list
// sync (`list`, every listed job written) or one read of the sweep's targets (`targets`, every
// unfinished job), the peak it reached above the settled RSS, and RSS settled after it.
// DATABASE_URL names the admin database (default postgres://postgres@127.0.0.1:5432/).
import { readFileSync, writeFileSync } from 'node:fs';
import { pino } from 'pino';
import { freshPostgresDatabase } from './children.js';

const jobs = Number(process.argv[2] ?? 1000);
const reps = Number(process.argv[3] ?? 6);
const step = process.argv[4] === 'targets' ? 'targets' : 'list';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc --import tsx');

const { startBasetenSimulator } = await import('../src/simulators/baseten/server.js');
const { startRuntime } = await import('../src/server/runtime.js');
const baseten = await startBasetenSimulator({
  seed: 'bench-collect',
  rateLimit: false,
  fleet: { projects: 10, jobsPerProject: Math.ceil(jobs / 10), emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
});
const db = await freshPostgresDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/', 'bench_list_memory');
const rt = await startRuntime({
  config: {
    port: 0,
    host: '127.0.0.1',
    databaseUrl: db.url,
    dataDir: null,
    redisUrl: null,
    logLevel: 'silent',
    providers: [{ id: 'baseten', kind: 'BASETEN', baseUrl: baseten.url, apiKeyEnv: 'BT_KEY' }],
    collect: { enabled: false },
    databasePoolSize: 32,
  } as any,
  env: { BT_KEY: baseten.apiKey },
  logger: pino({ level: 'silent' }),
});
const statusMiB = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** RSS once the GC's garbage is given back (as bench/collect.ts reads it). */
const settled = async () => {
  gc();
  await sleep(100);
  gc();
  await sleep(1500);
  return statusMiB('VmRSS');
};
try {
  // The first sync inserts every job; the repetitions write them again, as each sweep's sync does.
  await rt.store.collection.syncList('baseten', 0);
  const listed = (await rt.store.collection.targets('baseten', null)).unfinished.length;
  console.log(`${listed} unfinished jobs listed; step: ${step}`);
  for (let i = 0; i < reps; i++) {
    const before = await settled();
    writeFileSync('/proc/self/clear_refs', '5');
    const peak0 = statusMiB('VmHWM');
    if (step === 'list') await rt.store.collection.syncList('baseten', 0);
    else await rt.store.collection.targets('baseten', null);
    const peak = statusMiB('VmHWM') - peak0;
    const after = await settled();
    console.log(`${step} ${i}: RSS ${before.toFixed(0)} MiB, peak +${peak.toFixed(1)} MiB, then ${after.toFixed(0)} MiB`);
  }
} finally {
  await rt.close();
  await db.drop();
  await baseten.close();
}
