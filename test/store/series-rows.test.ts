// Series rows are upserted SERIES_PER_STATEMENT to a statement (store/repository.ts): a cold
// fleet's topology costs the same statements for 50 jobs as for 500 until one statement's bound
// is reached, and each series keeps its id when written again.
import { describe, expect, it } from 'vitest';
import type { SeriesData } from '../../src/domain/types.js';
import { type JobRow, SERIES_PER_STATEMENT, seriesIdentity } from '../../src/store/repository.js';
import { useTestRepository } from '../support/database.js';

const suite = useTestRepository();

/** `perJob` GPU series for each of `jobs` jobs of provider `pid`. */
function fleet(pid: string, jobs: number, perJob: number): { job: JobRow; series: SeriesData[] }[] {
  return Array.from({ length: jobs }, (_, j) => {
    const job = { id: `${pid}:job:j${j}`, externalId: `j${j}` } as JobRow;
    const series = Array.from(
      { length: perJob },
      (_, g): SeriesData => ({
        kind: 'system',
        name: 'GPU_UTILIZATION',
        rawName: null,
        unit: 'RATIO',
        scope: 'GPU',
        nodeExternalId: `n${g >> 3}`,
        gpuIndex: g & 7,
        source: 'test',
        stage: null,
        keyedBy: 'time',
        meta: {},
        points: [],
      }),
    );
    return { job, series };
  });
}

async function written(pid: string, entries: { job: JobRow; series: SeriesData[] }[]) {
  const before = suite.db.statementCount();
  const ids = await suite.repo.writeSeriesRows(pid, entries);
  return { ids, statements: suite.db.statementCount() - before };
}

describe('Repository.writeSeriesRows', () => {
  it('writes 12,000 series (more than the 5,000 a statement took before) in one statement, each with its own id', async () => {
    const entries = fleet('sr1', 500, 24);
    const { ids, statements } = await written('sr1', entries);
    expect(statements).toBe(1);
    expect(ids.size).toBe(12_000);
    expect(new Set(ids.values()).size).toBe(12_000);
    for (const { job, series } of entries.slice(0, 3)) for (const s of series) expect(ids.has(seriesIdentity('sr1', job, s).key)).toBe(true);
  });

  it('gives every series the id it already had when written again', async () => {
    const entries = fleet('sr2', 10, 16);
    const first = await written('sr2', entries);
    const again = await written('sr2', entries);
    expect(again.statements).toBe(1);
    expect([...again.ids]).toEqual([...first.ids]);
  });

  it('takes a second statement only past SERIES_PER_STATEMENT rows', async () => {
    const perJob = 40;
    const jobs = Math.floor(SERIES_PER_STATEMENT / perJob) + 1;
    const { ids, statements } = await written('sr3', fleet('sr3', jobs, perJob));
    expect(ids.size).toBe(jobs * perJob);
    expect(ids.size).toBeGreaterThan(SERIES_PER_STATEMENT);
    expect(statements).toBe(2);
  });
});
