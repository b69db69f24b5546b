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

async function written(pid: string, entries: { job: JobRow; series: SeriesData[]; stored?: boolean }[]) {
  const before = suite.db.statementCount();
  const ids = await suite.repo.writeSeriesRows(pid, entries);
  return { ids, statements: suite.db.statementCount() - before };
}

const storedAs = (entries: { job: JobRow; series: SeriesData[] }[]) => entries.map((e) => ({ ...e, stored: true }));

async function unitOf(id: number): Promise<string> {
  const rows = (await suite.db.db.execute(`select unit from series where id = ${id}` as never)) as unknown as { unit: string }[] | { rows: { unit: string }[] };
  return (Array.isArray(rows) ? rows : rows.rows)[0]!.unit;
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

  it('sends no statement for series this process stored as they are, where the caller knows them stored; the same ids', async () => {
    const entries = fleet('sr4', 10, 16);
    const first = await written('sr4', entries);
    const again = await written('sr4', storedAs(entries));
    expect(again.statements).toBe(0);
    expect(again.ids).toEqual(first.ids);
    // Not said to be stored (no fetch record says so): written, as before.
    expect((await written('sr4', entries)).statements).toBe(1);
  });

  it('writes a known series again when what its upsert updates changed, and only it', async () => {
    const entries = fleet('sr5', 2, 4);
    const first = await written('sr5', entries);
    const changed = storedAs(entries);
    changed[1]!.series[2] = { ...changed[1]!.series[2]!, unit: 'COUNT' };
    const again = await written('sr5', changed);
    expect(again.statements).toBe(1);
    expect(again.ids).toEqual(first.ids);
    const id = again.ids.get(seriesIdentity('sr5', changed[1]!.job, changed[1]!.series[2]!).key)!;
    expect(await unitOf(id)).toBe('COUNT');
    // Remembered as written: the same rows again cost nothing.
    expect((await written('sr5', changed)).statements).toBe(0);
  });

  it('does not take the rows of a transaction that rolled back for stored ones', async () => {
    const entries = fleet('sr6', 2, 4);
    const failed = new Error('rolled back');
    await expect(
      suite.repo.transaction(async (tx) => {
        await tx.writeSeriesRows('sr6', entries);
        throw failed;
      }),
    ).rejects.toBe(failed);
    // Said to be stored, but this process never saw them commit: written (inserted now).
    const after = await written('sr6', storedAs(entries));
    expect(after.statements).toBe(1);
    expect(after.ids.size).toBe(8);
    // Committed by a transaction: remembered once it committed.
    const more = fleet('sr7', 1, 4);
    await suite.repo.transaction((tx) => tx.writeSeriesRows('sr7', more));
    expect((await written('sr7', storedAs(more))).statements).toBe(0);
  });
});
