// `npm run bench:summaries`: a training run's summaries (latest and best per metric) kept after a
// sweep's write, at two lengths of run. Measured: Repository.refreshSummaries given the stretch
// the write covered (what the collector's training fill does), against the same refresh without
// it (a rebuild from every stored point, what it did before), same database, same run: the kept
// one must not grow with the run, the rebuild does.
// Flags: --steps <a,b> (default 10000,100000 steps of each of 4 metrics), --pglite (PGlite in
// memory instead of PostgreSQL), --db <admin url>, --rounds <n> (default 5; the median counts).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { SeriesData } from '../src/domain/types.js';
import { trainingSeries } from '../src/providers/provider.js';
import { openDatabase } from '../src/store/db.js';
import { Repository } from '../src/store/repository.js';
import { freshPostgresDatabase } from './children.js';
import { round, type Row, tableOf } from './rows.js';

const { values: flags } = parseArgs({
  options: {
    steps: { type: 'string', default: '10000,100000' },
    rounds: { type: 'string', default: '5' },
    pglite: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
});
const SIZES = flags.steps!.split(',').map(Number);
const ROUNDS = Math.max(3, Number(flags.rounds));
const T0 = Date.UTC(2026, 0, 1);
/** A sweep's stretch: the last minutes' steps, overlapping the stored ones by a few. */
const SWEEP_STEPS = 300;
const OVERLAP = 20;
const METRICS = [
  { name: 'loss', stage: 'train' },
  { name: 'eval_loss', stage: 'eval' },
  { name: 'accuracy', stage: 'eval' },
  { name: 'lr', stage: 'train' },
];

function stretch(from: number, to: number, salt: number): SeriesData[] {
  return METRICS.map((m, i) => {
    const points: SeriesData['points'] = [];
    for (let step = from; step < to; step++)
      points.push({ timestamp: new Date(T0 + step * 1000), step, value: Math.sin(step * 0.01 + i + salt) + 2 - step / 1e6 });
    return trainingSeries(m.name, 'sdk', m.stage, {}, points);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const pg = flags.pglite ? null : await freshPostgresDatabase(flags.db!, 'tg_bench_summaries');
  const db = await openDatabase(pg ? { databaseUrl: pg.url } : { dataDir: 'memory://' });
  const repo = Repository.of(db);
  const out: { steps: number; keptMs: number; rebuildMs: number }[] = [];
  try {
    await repo.upsertProviders([{ id: 'rc', kind: 'RUNICORN', name: 'rc', simulated: true }]);
    await repo.upsertCatalog(
      'rc',
      [{ externalId: 'p', name: 'p' }],
      [
        {
          externalId: 'run',
          projectExternalId: 'p',
          name: 'run',
          status: 'RUNNING',
          rawStatus: null,
          createdAt: new Date(T0),
          startedAt: null,
          finishedAt: null,
          gpuType: null,
          gpuCount: null,
        },
      ],
      new Date(T0),
    );
    const [job] = await repo.jobsByIds(['rc:job:run']);
    let head = 0;
    for (const size of SIZES) {
      // The run so far, written in sweeps' worth of 10,000 steps (summarized once at the end).
      for (; head < size; head = Math.min(size, head + 10_000))
        await repo.writeSeries('rc', [{ job: job!, series: stretch(head, Math.min(size, head + 10_000), 0) }]);
      await repo.refreshSummaries([job!.id]);
      const kept: number[] = [];
      const rebuilt: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        // A sweep: the last steps again and the next ones, written as the training fill writes them.
        const written = await repo.writeSeries('rc', [{ job: job!, series: stretch(head - OVERLAP, head + SWEEP_STEPS, r + 1) }]);
        head += SWEEP_STEPS;
        let t0 = performance.now();
        await repo.refreshSummaries([job!.id], written);
        kept.push(performance.now() - t0);
        const afterKept = await repo.summariesOfJobs([job!.id]);
        t0 = performance.now();
        await repo.refreshSummaries([job!.id]);
        rebuilt.push(performance.now() - t0);
        const afterRebuild = await repo.summariesOfJobs([job!.id]);
        if (JSON.stringify(afterKept) !== JSON.stringify(afterRebuild)) throw new Error(`the kept summaries differ from the rebuilt ones at ${head} steps`);
      }
      out.push({ steps: head, keptMs: median(kept), rebuildMs: median(rebuilt) });
      console.error(`bench:summaries: ${head} steps x ${METRICS.length}: kept ${round(median(kept))} ms, rebuilt ${round(median(rebuilt))} ms`);
    }
  } finally {
    await db.close();
    await pg?.drop();
  }
  const small = out[0]!;
  const large = out.at(-1)!;
  const where = flags.pglite ? 'PGlite' : 'PostgreSQL';
  const rows: Row[] = [
    {
      scenario: `training summaries after a sweep of ${SWEEP_STEPS} steps, ${large.steps.toLocaleString('en')} steps x ${METRICS.length} metrics stored (${where})`,
      measured: `${round(large.keptMs)} ms (kept from the stretch written)`,
      baseline: `rebuilt from every point: ${round(large.rebuildMs)} ms`,
      ratio: large.keptMs / large.rebuildMs,
      goal: '< 1x',
      met: large.keptMs < large.rebuildMs,
    },
    {
      scenario: `the same, ${large.steps.toLocaleString('en')} against ${small.steps.toLocaleString('en')} steps stored (${where})`,
      measured: `${round(large.keptMs)} ms`,
      baseline: `${round(small.keptMs)} ms (the rebuild: ${round(small.rebuildMs)} -> ${round(large.rebuildMs)} ms)`,
      ratio: large.keptMs / small.keptMs,
      goal: '<= 1.5x (flat)',
      met: large.keptMs / small.keptMs <= 1.5,
    },
  ];
  console.log(tableOf(rows));
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, `summaries-${flags.pglite ? 'pglite' : 'postgres'}-latest.json`),
    `${JSON.stringify({ at: new Date().toISOString(), rows, sizes: out }, null, 2)}\n`,
  );
}

await main();
process.exit(0);
