// `npm run bench:findings` (and a row of `npm run bench`): one findings evaluation (detect, fire,
// resolve: src/store/findings.ts) over N running jobs of 8 GPUs each, with 40 minutes of readings
// every 30 s, a training series of 64 steps, one job in ten stalled, one in ten with a slow rank.
// Measured: wall time and SQL statements per evaluation at 100 and at N jobs (statements must not
// grow), against the floor of reading every job's windows once (one aggregate over the same points).
// Flags: --jobs (default 1000), --pglite (PGlite in memory instead of PostgreSQL), --db <admin url>,
// --keep (PostgreSQL: leave the database and print its URL), --explain (print the plan of the detect
// statement with EXPLAIN (ANALYZE, BUFFERS) at N jobs: where an evaluation's time goes).
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { thresholdRules } from '../src/findings/index.js';
import { openDatabase, type Database } from '../src/store/db.js';
import { FindingsStore } from '../src/store/index.js';
import { freshPostgresDatabase } from './children.js';

const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000' },
    pglite: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    explain: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
});
const JOBS = Number(flags.jobs);
const GPUS = 8;
const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const MINUTE = 60_000;

async function exec(db: Database, q: ReturnType<typeof sql>): Promise<any[]> {
  const res = (await db.db.execute(q)) as any;
  return Array.isArray(res) ? res : res.rows;
}

/** Jobs [from, to) with their series, points, fetch records and training steps, all in SQL. */
async function addJobs(db: Database, from: number, to: number): Promise<void> {
  const now = new Date(NOW).toISOString();
  await exec(
    db,
    sql`insert into jobs (id, provider_id, project_id, external_id, name, status, started_at, sort_at, seen_at)
      select 'bench:job:' || i, 'bench', 'bench:project:p' || (i % 10), i::text, 'job ' || i, 'RUNNING',
        ${now}::timestamptz - interval '3 hours', ${now}::timestamptz, ${now}::timestamptz
      from generate_series(${from}::int, ${to - 1}::int) i`,
  );
  await exec(
    db,
    sql`insert into series (series_key, job_id, node_id, gpu_id, kind, name, unit, scope, source, keyed_by)
      select 'bench:job:' || i || '|gpu|' || g, 'bench:job:' || i, 'bench:node:' || i || '#0', 'bench:gpu:' || i || '#0#' || g,
        'system', 'GPU_UTILIZATION', 'RATIO', 'GPU', 'bench', 'time'
      from generate_series(${from}::int, ${to - 1}::int) i, generate_series(0, ${GPUS - 1}) g
      union all
      select 'bench:job:' || i || '|loss', 'bench:job:' || i, null, null, 'training', 'loss', 'NONE', 'JOB', 'bench', 'step'
      from generate_series(${from}::int, ${to - 1}::int) i`,
  );
  // Healthy GPUs between 55% and 95%; job i % 10 = 0 stalled (below 3%), i % 10 = 1 with GPU 3 at 8%.
  await exec(
    db,
    sql`insert into points (series_id, key, ts, step, value)
      select s.id, k, to_timestamp(k / 1000.0), null,
        case when j % 10 = 0 then 0.01 + 0.02 * random()
             when j % 10 = 1 and s.series_key like '%|gpu|3' then 0.08
             else 0.55 + 0.4 * random() end
      from (select id, series_key, split_part(job_id, ':', 3)::int as j from series where kind = 'system' and split_part(job_id, ':', 3)::int >= ${from} and split_part(job_id, ':', 3)::int < ${to}) s,
        generate_series(${NOW - 40 * MINUTE}::bigint, ${NOW}::bigint, 30000) k`,
  );
  await exec(
    db,
    sql`insert into points (series_id, key, ts, step, value)
      select s.id, st, to_timestamp(${NOW / 1000} - (2000 - st) * 2), st, 1.0 / st
      from series s, generate_series(1937, 2000) st
      where s.kind = 'training' and split_part(s.job_id, ':', 3)::int >= ${from} and split_part(s.job_id, ':', 3)::int < ${to}`,
  );
  await exec(
    db,
    sql`insert into fetches (job_id, dataset, range_from, range_to, fetched_at, step_seconds, final)
      select 'bench:job:' || i, d, ${now}::timestamptz - interval '3 hours', ${now}::timestamptz, ${now}::timestamptz, 30, false
      from generate_series(${from}::int, ${to - 1}::int) i, unnest(array['metric:GPU_UTILIZATION', 'training']) d`,
  );
  await exec(db, sql`analyze`);
}

async function evaluation(db: Database, store: FindingsStore, at: Date): Promise<{ ms: number; statements: number; fired: number; seen: number }> {
  const rules = thresholdRules([]);
  const before = db.statementCount();
  const t0 = performance.now();
  const candidates = await store.detect(at, rules);
  const fired = await store.fire(candidates, at);
  await store.resolve(
    candidates.map((c) => c.fingerprint),
    at,
  );
  return { ms: performance.now() - t0, statements: db.statementCount() - before, fired: fired.length, seen: candidates.length };
}

/** The plan of detect's statement at the bench's instant, as the evaluation runs it. */
async function explain(store: FindingsStore): Promise<void> {
  console.log((await store.explainDetect(new Date(NOW + 10), thresholdRules([]), !flags.pglite)).join('\n'));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const pg = flags.pglite ? null : await freshPostgresDatabase(flags.db!, 'tg_bench_findings');
  const db = await openDatabase(pg ? { databaseUrl: pg.url } : { dataDir: 'memory://' });
  const store = new FindingsStore(db.db);
  try {
    const sizes = [Math.min(100, JOBS), JOBS];
    const out: { jobs: number; ms: number; statements: number; fired: number; seen: number; floorMs: number }[] = [];
    let have = 0;
    for (const n of sizes) {
      if (n > have) await addJobs(db, have, n);
      have = n;
      const runs: Awaited<ReturnType<typeof evaluation>>[] = [];
      // The first evaluation opens the findings, the next ones refresh them: the steady state.
      for (let i = 0; i < 4; i++) runs.push(await evaluation(db, store, new Date(NOW + i)));
      const floor: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        await exec(
          db,
          sql`select series_id, count(value), avg(value order by key), max(value) from points where key >= ${NOW - 30 * MINUTE}::bigint and key <= ${NOW}::bigint group by series_id`,
        );
        floor.push(performance.now() - t0);
      }
      const steady = runs.slice(1);
      out.push({
        jobs: n,
        ms: median(steady.map((r) => r.ms)),
        statements: steady[0]!.statements,
        fired: runs[0]!.fired,
        seen: steady[0]!.seen,
        floorMs: median(floor),
      });
    }
    if (flags.explain) await explain(store);
    const small = out[0]!;
    const large = out.at(-1)!;
    const row = {
      scenario: `findings: one evaluation over ${large.jobs.toLocaleString('en')} running jobs x ${GPUS} GPUs (${flags.pglite ? 'PGlite' : 'PostgreSQL'})`,
      measured: `${large.ms.toFixed(0)} ms, ${large.statements} SQL (${small.jobs} jobs: ${small.ms.toFixed(0)} ms, ${small.statements} SQL); ${large.seen} findings`,
      baseline: `one aggregate over the same 30-minute windows: ${large.floorMs.toFixed(0)} ms`,
      ratio: large.ms / Math.max(1, large.floorMs),
      goal: 'constant SQL; <= 1 s per 1,000 jobs',
      met: large.statements === small.statements && large.ms <= 1000 * (large.jobs / 1000),
    };
    console.log(`FINDINGS_RESULT ${JSON.stringify({ row, sizes: out })}`);
    console.log(
      [
        '| scenario | measured | baseline | ratio | goal | met |',
        '| --- | --- | --- | --- | --- | --- |',
        `| ${row.scenario} | ${row.measured} | ${row.baseline} | ${row.ratio.toFixed(2)}x | ${row.goal} | ${row.met ? 'yes' : 'no'} |`,
      ].join('\n'),
    );
  } finally {
    await db.close();
    if (flags.keep && pg) console.log(`kept the database: ${pg.url}`);
    else await pg?.drop();
  }
}

await main();
process.exit(0);
