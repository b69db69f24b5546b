// PGlite has no autovacuum: Repository.maintainStatistics plays autoanalyze's part after large
// points writes (the planner otherwise plans every read for empty tables). On PostgreSQL it does
// nothing, autovacuum does it. It is maintenance, not a request's statement: the statement count
// the batching tests read does not see it.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { ANALYZE_AFTER_POINTS, type PointWriteRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';

const suite = useTestRepository();

/** What the planner believes the points table holds: -1 until it was ever analyzed. */
async function plannerRows(): Promise<number> {
  const [row] = await rowsOf<{ n: number | string }>(suite.db.db, sql`select reltuples::float8 as n from pg_class where relname = 'points'`);
  return Number(row!.n);
}

function points(seriesId: number, n: number): PointWriteRow[] {
  return Array.from({ length: n }, (_, i) => [seriesId, i, 1_000_000 + i * 15_000, i, i / 3]);
}

describe('planner statistics after large writes', () => {
  it('PGlite: analyzes once the points written pass the rule, not for small writes, outside the statement count; PostgreSQL: leaves it to autovacuum', async () => {
    if (suite.db.driver === 'postgres') {
      await suite.repo.writePoints(points(4, ANALYZE_AFTER_POINTS));
      expect(await suite.repo.maintainStatistics(ANALYZE_AFTER_POINTS)).toBe(false);
      return;
    }
    const small = points(1, 500);
    await suite.repo.writePoints(small);
    expect(await suite.repo.maintainStatistics(small.length)).toBe(false);
    expect(await plannerRows()).toBe(-1);

    const large = points(2, ANALYZE_AFTER_POINTS);
    await suite.repo.writePoints(large);
    const before = suite.db.statementCount();
    // 500 + 10,000 written since the last (no) ANALYZE: past the floor.
    expect(await suite.repo.maintainStatistics(large.length)).toBe(true);
    expect(suite.db.statementCount()).toBe(before);
    expect(await plannerRows()).toBe(small.length + large.length);

    // The next one waits for the floor again (10% of 10,500 is below it).
    await suite.repo.writePoints(points(3, 2_000));
    expect(await suite.repo.maintainStatistics(2_000)).toBe(false);
    expect(await plannerRows()).toBe(small.length + large.length);
  });
});
