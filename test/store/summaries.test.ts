// Training summaries (latest and best per metric) kept after each write from the stored summary
// and the write's stretches of steps, instead of every stored point again: the same rows as a
// rebuild from all the points, after every write of a long random sequence that overwrites
// steps (the best and the latest among them), logs late, skips values and mixes stages.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRecord, SeriesData } from '../../src/domain/types.js';
import { trainingSeries } from '../../src/providers/provider.js';
import type { JobRow, Repository } from '../../src/store/repository.js';
import { openTestRepository, REAL_POSTGRES_URL } from '../support/database.js';

const JOB: JobRecord = {
  externalId: 'run-1',
  projectExternalId: 'p1',
  name: 'long run',
  status: 'RUNNING',
  rawStatus: null,
  createdAt: new Date('2026-01-01T00:00:00Z'),
  startedAt: null,
  finishedAt: null,
  gpuType: null,
  gpuCount: null,
};
const T0 = Date.UTC(2026, 0, 1);

/** A seeded generator (mulberry32): the sequence is the same in every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** loss: lower is better (by its name); accuracy: higher; lr: no way is better (no best). Eval logs odd steps, train even ones. */
const METRICS = [
  { name: 'loss', stage: 'train', parity: 0 },
  { name: 'loss', stage: 'eval', parity: 1 },
  { name: 'accuracy', stage: 'eval', parity: 1 },
  { name: 'lr', stage: 'train', parity: 0 },
];

/** A step-keyed training series of the metric in the stage, as the adapters make them. */
function series(name: string, stage: string, points: SeriesData['points']): SeriesData {
  return trainingSeries(name, 'sdk', stage, {}, points);
}

describe('training summaries kept from the stored summary and what a write covered', () => {
  let store: Awaited<ReturnType<typeof openTestRepository>>;
  let repo: Repository;
  let job: JobRow;

  beforeAll(async () => {
    store = await openTestRepository();
    repo = store.repo;
    await repo.upsertProviders([{ id: 'rc', kind: 'RUNICORN', name: 'rc', simulated: true }]);
    await repo.upsertCatalog('rc', [{ externalId: 'p1', name: 'one' }], [JOB], new Date(T0));
    const [row] = await repo.jobsByIds(['rc:job:run-1']);
    expect(row).toBeDefined();
    job = row!;
  });
  afterAll(() => store?.close());

  const summaries = async () => (await repo.summariesOfJobs([job.id])).map((r) => ({ ...r, latestAt: r.latestAt?.toISOString() ?? null }));

  /** Writes as the training fill does (writeSeries, then refreshSummaries with what it covered); returns the rows. */
  async function write(batch: SeriesData[]) {
    const written = await repo.writeSeries('rc', [{ job, series: batch }]);
    await repo.refreshSummaries([job.id], written);
    return summaries();
  }

  it('equal a rebuild from every point after each of 60 random writes', async () => {
    const next = random(41);
    let head = 0;
    let incrementalOnly = 0;
    let rewritesOfBest = 0;
    for (let w = 0; w < 60; w++) {
      // Mostly the next stretch of steps with some overlap (a sweep's, over the stored latest); now
      // and then an old stretch logged again with new values, or the stretch around a stored best
      // logged again worse (so that best is gone). A step's time is the same whenever it is logged.
      const kind = w < 5 ? 'next' : (['next', 'next', 'old', 'best'] as const)[Math.floor(next() * 4)]!;
      let from = Math.max(0, head - Math.floor(next() * 6));
      let to = head + 5 + Math.floor(next() * 30);
      let worse: string | null = null;
      if (kind === 'old') {
        from = Math.floor(next() * head);
        to = Math.min(head, from + 1 + Math.floor(next() * 20));
      } else if (kind === 'best') {
        worse = next() < 0.5 ? 'loss' : 'accuracy';
        const bestStep = (await summaries()).find((r) => r.name === worse)?.bestStep ?? 0;
        from = Math.max(0, bestStep - 3);
        to = Math.min(head, bestStep + 3);
        rewritesOfBest++;
      }
      head = Math.max(head, to);
      const batch = METRICS.filter((m) => !worse || m.name === worse).map((m) => {
        const points: SeriesData['points'] = [];
        for (let step = from; step <= to; step++) {
          if (step % 2 !== m.parity) continue;
          const r = next();
          // Gaps (null) and values no summary weighs (infinities) among them.
          let value =
            r < 0.04
              ? null
              : r < 0.06
                ? r < 0.05
                  ? Infinity
                  : -Infinity
                : m.name === 'lr'
                  ? 1e-3 * (1 + next())
                  : 10 * next() - (m.name === 'loss' ? step / 100 : -step / 100);
          if (worse && value !== null && Number.isFinite(value)) value += m.name === 'loss' ? 100 : -100;
          points.push({ timestamp: new Date(T0 + step * 1000), step, value });
        }
        return series(m.name, m.stage, points);
      });
      const kept = await write(batch);
      await repo.refreshSummaries([job.id]);
      const rebuilt = await summaries();
      expect(kept, `write ${w} (${kind}: steps ${from}-${to})`).toEqual(rebuilt);
      if (kind === 'next') incrementalOnly++;
    }
    expect(rewritesOfBest).toBeGreaterThan(5);
    expect(incrementalOnly).toBeGreaterThan(20);
    const byName = new Map((await summaries()).map((r) => [r.name, r]));
    expect(byName.get('loss')?.mode).toBe('MIN');
    expect(byName.get('accuracy')?.mode).toBe('MAX');
    expect(byName.get('lr')?.bestValue ?? null).toBeNull();
  });

  it('gives a latest logged again as a gap way to the step before it', async () => {
    const lr = (await summaries()).find((r) => r.name === 'lr')!;
    const step = lr.latestStep!;
    const kept = await write([series('lr', 'train', [{ timestamp: new Date(T0 + step * 1000), step, value: null }])]);
    const now = kept.find((r) => r.name === 'lr')!;
    expect(now.latestStep).toBeLessThan(step);
    await repo.refreshSummaries([job.id]);
    expect(await summaries()).toEqual(kept);
  });

  it('reads the points of the stretch written, not the run before it', async () => {
    // A stored point changed behind the store's back (never done by the store: a probe) to a new
    // best: a summary kept from the write's stretch does not see it, a rebuild does.
    const [old] = await summaries().then((rows) => rows.filter((r) => r.name === 'accuracy'));
    await store.db.db.execute(sql`
      update points set value = 1e9 where series_id = (select id from series where name = 'accuracy' and job_id = ${job.id})
        and key = (select min(key) from points p where p.series_id = points.series_id)`);
    const [last] = await store.db.db
      .execute(sql`select max(key)::int as k from points p join series s on s.id = p.series_id where s.name = 'accuracy'`)
      .then((r) => (Array.isArray(r) ? r : (r as { rows: unknown[] }).rows) as { k: number }[]);
    const kept = await write([series('accuracy', 'eval', [{ timestamp: new Date(T0 + (last!.k + 2) * 1000), step: last!.k + 2, value: -1 }])]);
    expect(kept.find((r) => r.name === 'accuracy')?.bestValue).toBe(old!.bestValue);
    await repo.refreshSummaries([job.id]);
    expect((await summaries()).find((r) => r.name === 'accuracy')?.bestValue).toBe(1e9);
  });

  it.runIf(REAL_POSTGRES_URL)(
    'a second writer of the job waits for the first and keeps its points in the summary (real Postgres) [needs TEST_DATABASE_URL]',
    async () => {
      // Two writers of one job's training data at once (a query's fetch on one replica, the
      // collector's on another), of different series of one metric (loss' train and eval stages):
      // the second must start from the summary the first committed, not the one both read.
      // A summary of both stages to start from (this test may run alone).
      const base = (await summaries()).find((r) => r.name === 'loss')?.latestStep ?? 0;
      await write([
        series('loss', 'train', [{ timestamp: new Date(T0 + (base + 2) * 1000), step: base + 2, value: 3 }]),
        series('loss', 'eval', [{ timestamp: new Date(T0 + (base + 3) * 1000), step: base + 3, value: 4 }]),
      ]);
      const far = base + 1001;
      let inside!: () => void;
      const firstInside = new Promise<void>((resolve) => (inside = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const first = repo.transaction(async (r) => {
        await r.lockJobSummaries([job.id]);
        const written = await r.writeSeries('rc', [
          { job, series: [series('loss', 'train', [{ timestamp: new Date(T0 + far * 1000), step: far, value: -1e6 }])] },
        ]);
        await r.refreshSummaries([job.id], written);
        inside();
        await released;
      });
      await firstInside;
      const second = repo.transaction(async (r) => {
        await r.lockJobSummaries([job.id]);
        const written = await r.writeSeries('rc', [
          { job, series: [series('loss', 'eval', [{ timestamp: new Date(T0 + (far - 990) * 1000), step: far - 990, value: 5 }])] },
        ]);
        await r.refreshSummaries([job.id], written);
      });
      // The second waits on a lock while the first is open.
      const waiting = async () => {
        const rows = await store.db.db.execute(sql`select count(*)::int as n from pg_locks where not granted`);
        return ((Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows) as { n: number }[])[0]!.n;
      };
      for (let n = await waiting(); n === 0; n = await waiting()) await new Promise((r) => setImmediate(r));
      release();
      await Promise.all([first, second]);
      const kept = (await summaries()).find((r) => r.name === 'loss')!;
      expect(kept.latestStep).toBe(far);
      expect(kept.bestValue).toBe(-1e6);
      await repo.refreshSummaries([job.id]);
      expect((await summaries()).find((r) => r.name === 'loss')).toEqual(kept);
    },
  );
});
