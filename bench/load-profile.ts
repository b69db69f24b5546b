// CPU profiles of one replica under the load bench's warm reads: `npx tsx bench/load-profile.ts
// --out <dir>` starts the simulator, a fresh Postgres database (or PGlite with --pglite) and, for
// each scenario (--scenarios list,page,trivial), a replica, warms it as bench/load.ts does, then
// profiles it (V8's CPU profiler, in the replica: start-up and warm-up left out) while wrk drives
// the scenario (--connections, --seconds), writes <dir>/<scenario>.cpuprofile and prints the top
// self and inclusive frames (bench/cpu-profile-summary.ts). --before list,page drives those
// scenarios first in the same replica, as bench/load.ts does (what one load leaves behind can
// slow the next: V8's pretenuring did, see src/server/gc-tuning.ts); the replica's live heap is
// printed before the profiled load (after a full collection when run with --expose-gc in
// NODE_OPTIONS); --heap-snapshot writes it; --alloc samples allocations instead of CPU
// (<scenario>.heapprofile, bytes per request by package and frame); --floor profiles the
// scenario's floor (bench/load-floor.ts) under the same load after ours, for a side-by-side.
import { freePort, freshServerDatabase, post, startChild, wrkPostScript, type Child } from './children.js';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { summarizeAllocations, summarizeProfile } from './cpu-profile-summary.js';
// The load bench's own queries, so a profile is of exactly what it measures.
import { fillCacheApart, LIST_QUERY, PAGE_QUERY, TRIVIAL_QUERY } from './load.js';

const { values: flags } = parseArgs({
  options: {
    out: { type: 'string', default: path.join(tmpdir(), 'tg-load-profile') },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '20' },
    scenarios: { type: 'string', default: 'list,page,trivial' },
    pglite: { type: 'boolean', default: false },
    top: { type: 'string', default: '25' },
    // Scenarios driven (unprofiled, --seconds each) in the same replica before the profiled one,
    // as bench/load.ts drives them one after another: `--before list,page --scenarios trivial`.
    before: { type: 'string', default: '' },
    'heap-snapshot': { type: 'boolean', default: false },
    alloc: { type: 'boolean', default: false },
    // Fill the cache from another replica first, so the profiled one never did a cold fetch.
    'fill-apart': { type: 'boolean', default: false },
    // Profile the scenarios' floor (bench/load-floor.ts: bare SQL + JSON, or a bare yoga) too, after ours.
    floor: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
});
const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);
const OUT = path.resolve(flags.out!);
mkdirSync(OUT, { recursive: true });

const WRK = wrkPostScript('tg-load-profile-');

const sim = await startChild('sim-child.ts', {
  seed: 7,
  anchorMs: ANCHOR,
  fleet: { projects: 5, jobsPerProject: 10, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 8, statuses: ['TRAINING_JOB_RUNNING'] },
});
const database = await freshServerDatabase(flags.pglite ? { pgliteDir: path.join(WRK.dir, 'pglite') } : { postgres: flags.db!, prefix: 'tg_profile' });
const { databaseUrl, dataDir } = database;

/** Profiles `server` (CPU, or allocations with --alloc) while wrk POSTs `body` to `url`, and prints the summary. */
async function profileUnderLoad(server: Child, url: string, body: unknown, name: string): Promise<void> {
  // One unprofiled second first, as bench/load.ts runs every measured load.
  WRK.run(url, body, { connections: flags.connections!, seconds: 1 });
  const target = path.join(OUT, `${name}.${flags.alloc ? 'heapprofile' : 'cpuprofile'}`);
  await server.request({ cmd: 'profile-start', alloc: flags.alloc });
  const { rps, requests } = WRK.run(url, body, { connections: flags.connections!, seconds: flags.seconds! });
  await server.request({ cmd: 'profile-stop', file: target, alloc: flags.alloc });
  console.log(`\n## ${name}: ${rps} req/s, ${requests} requests (wrk -c${flags.connections} -d${flags.seconds}s)\n`);
  const summarize = flags.alloc ? summarizeAllocations : summarizeProfile;
  console.log(summarize(target, { top: Number(flags.top), requests }));
}

/** A replica of this checkout's options on the bench's database and simulator. */
const replicaOptions = async () => ({
  port: await freePort(),
  workers: 1,
  databaseUrl,
  dataDir,
  simUrl: sim.url,
  apiKey: sim.ready.apiKey,
  anchorMs: ANCHOR,
});

try {
  if (flags['fill-apart']) await fillCacheApart(await replicaOptions());
  for (const scenario of flags.scenarios!.split(',')) {
    const replica = await startChild('load-replica.ts', await replicaOptions());
    const gql = `${replica.url}/graphql`;
    const list = await post(gql, { query: LIST_QUERY });
    const jobId: string = list.data.jobs.edges[0].node.id;
    const bodies: Record<string, unknown> = {
      list: { query: LIST_QUERY },
      page: { query: PAGE_QUERY, variables: { id: jobId } },
      trivial: { query: TRIVIAL_QUERY },
    };
    for (let i = 0; i < 3; i++) for (const b of Object.values(bodies)) await post(gql, b);
    for (const earlier of flags.before!.split(',').filter(Boolean)) WRK.run(gql, bodies[earlier], { connections: flags.connections!, seconds: flags.seconds! });
    const heap = await replica.request({ cmd: 'heap' });
    console.log(
      `\n[${scenario}] before the profiled load: heap used ${(heap.heapUsed / 2 ** 20).toFixed(1)} MiB, old space ${(heap.oldSpaceUsed / 2 ** 20).toFixed(1)} MiB`,
    );
    if (flags['heap-snapshot']) await replica.request({ cmd: 'heap-snapshot', file: path.join(OUT, `${scenario}.heapsnapshot`) });
    await profileUnderLoad(replica, gql, bodies[scenario], scenario);
    if (flags.floor) {
      // The bare yoga answers the providers ours answered. PGlite is one process's database: the
      // floor opens the same folder once the replica is gone.
      const providers = (await post(gql, bodies.trivial)).data.providers;
      await replica.close();
      const floor = await startChild('load-floor.ts', { databaseUrl, dataDir, providers });
      const route = { list: '/list', page: '/page', trivial: '/graphql' }[scenario]!;
      await post(`${floor.url}${route}`, bodies[scenario]);
      await profileUnderLoad(floor, `${floor.url}${route}`, bodies[scenario], `${scenario}-floor`);
      await floor.close();
    } else {
      await replica.close();
    }
  }
} finally {
  await sim.close();
  await database.drop();
  rmSync(WRK.dir, { recursive: true, force: true });
}
