// Two checkouts of the server under the same warm load, alternated, for decisions on a busy
// machine: `npx tsx bench/load-ab.ts --b <other checkout>` starts one replica from this checkout
// (A) and one from the other (B, a worktree or a copy with node_modules), both on the same fresh
// PostgreSQL database and simulator, filled beforehand by a third replica (of this checkout), plus
// the load bench's floor, then runs wrk against A, B and
// the floor in turn (the order rotates each round) for each scenario (--scenarios list,trivial,page;
// --rounds, --seconds, --connections) and prints each run's server CPU µs per request and req/s,
// and the median per variant, and each variant's median ratio to A's CPU in the same round. CPU
// per request is what to compare when other work shares the cores.
import { freePort, freshPostgresDatabase, post, startChild, wrkPostScript, type Child } from './children.js';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fillCacheApart, LIST_QUERY, PAGE_QUERY, TRIVIAL_QUERY } from './load.js';

const { values: flags } = parseArgs({
  options: {
    b: { type: 'string' },
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '20' },
    scenarios: { type: 'string', default: 'list,trivial' },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
});
const ANCHOR = Date.UTC(2026, 10, 20, 12, 0, 0);

const WRK = wrkPostScript('tg-load-ab-');

async function run(server: Child, url: string, body: unknown): Promise<{ cpuUs: number; rps: number }> {
  const before = await server.cpu();
  const { requests, rps } = WRK.run(url, body, { connections: flags.connections!, seconds: flags.seconds! });
  return { cpuUs: ((await server.cpu()) - before) / requests, rps };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const sim = await startChild('sim-child.ts', {
  seed: 7,
  anchorMs: ANCHOR,
  fleet: { projects: 5, jobsPerProject: 10, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 8, statuses: ['TRAINING_JOB_RUNNING'] },
});
const fresh = await freshPostgresDatabase(flags.db!, 'tg_ab');
const replicaOptions = async () => ({
  port: await freePort(),
  workers: 1,
  databaseUrl: fresh.url,
  dataDir: 'memory://',
  simUrl: sim.url,
  apiKey: sim.ready.apiKey,
  anchorMs: ANCHOR,
});
try {
  // The cache is filled by a replica of its own, closed before A and B start, so A and B begin
  // alike: in one A/A run the replica that had made the cold fill itself measured 511 against 418
  // µs per warm list request, which read as a difference between the checkouts (a later check of
  // the trivial query found no such difference: 113-124 µs either way).
  await fillCacheApart(await replicaOptions());
  const a = await startChild('load-replica.ts', await replicaOptions());
  const b = flags.b ? await startChild('load-replica.ts', await replicaOptions(), path.resolve(flags.b)) : null;
  const list = await post(`${a.url}/graphql`, { query: LIST_QUERY });
  const jobId: string = list.data.jobs.edges[0].node.id;
  const bodies: Record<string, unknown> = {
    list: { query: LIST_QUERY },
    page: { query: PAGE_QUERY, variables: { id: jobId } },
    trivial: { query: TRIVIAL_QUERY },
  };
  for (const s of b ? [a, b] : [a]) for (let i = 0; i < 3; i++) for (const body of Object.values(bodies)) await post(`${s.url}/graphql`, body);
  const providers = (await post(`${a.url}/graphql`, bodies.trivial)).data.providers;
  const floor = await startChild('load-floor.ts', { databaseUrl: fresh.url, dataDir: 'memory://', providers });
  const routes: Record<string, string> = { list: '/list', page: '/page', trivial: '/graphql' };
  const variants: [string, Child, (scenario: string) => string][] = [
    ['A', a, () => `${a.url}/graphql`],
    ...(b ? [['B', b, () => `${b.url}/graphql`] as [string, Child, (s: string) => string]] : []),
    ['floor', floor, (s: string) => `${floor.url}${routes[s]}`],
  ];
  for (const scenario of flags.scenarios!.split(',')) {
    await post(variants.at(-1)![2](scenario), bodies[scenario]);
    const results = new Map<string, { cpuUs: number; rps: number }[]>();
    for (let round = 0; round < Number(flags.rounds); round++) {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
      for (const [name, server, url] of order) {
        const r = await run(server, url(scenario), bodies[scenario]);
        results.set(name, [...(results.get(name) ?? []), r]);
        console.log(`${scenario} round ${round + 1} ${name}: ${r.cpuUs.toFixed(0)} µs/req, ${r.rps.toFixed(0)} req/s`);
      }
    }
    // Each variant's CPU per request against A's in the same round, then the median of those:
    // the machine's pace drifts between rounds more than the variants differ.
    const aRuns = results.get('A')!;
    for (const [name, rs] of results) {
      const paired = name === 'A' ? '' : `, ${median(rs.map((r, i) => r.cpuUs / aRuns[i]!.cpuUs)).toFixed(3)}x A's CPU per round (median)`;
      console.log(
        `== ${scenario} ${name}: median ${median(rs.map((r) => r.cpuUs)).toFixed(0)} µs/req CPU, ${median(rs.map((r) => r.rps)).toFixed(0)} req/s${paired}`,
      );
    }
  }
  await Promise.all([a.close(), b?.close(), floor.close()]);
} finally {
  await sim.close();
  await fresh.drop();
  rmSync(WRK.dir, { recursive: true, force: true });
}
