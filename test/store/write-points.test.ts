// Points are written with COPY in its binary format (store/sql-util.ts): every value must come back
// as it went in, on PGlite and on PostgreSQL, through both paths of Repository.writePoints (new
// series copied straight into points; existing ones merged through the staging table).
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { PointWriteRow } from '../../src/store/repository.js';
import { pointBatchOfRows, rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';

const suite = useTestRepository();

async function stored(seriesIds: number[]): Promise<PointWriteRow[]> {
  const rows = await rowsOf<{ series_id: string | number; key: string | number; ms: string | number | null; step: number | null; value: number | null }>(
    suite.db.db,
    sql`select series_id, key, (extract(epoch from ts) * 1000)::float8 as ms, step, value from points
        where series_id = any(${`{${seriesIds.join(',')}}`}::bigint[]) order by series_id, key`,
  );
  return rows.map((r) => [
    Number(r.series_id),
    Number(r.key),
    r.ms === null ? null : Math.round(Number(r.ms)),
    r.step,
    r.value === null ? null : Number(r.value),
  ]);
}

const sorted = (rows: PointWriteRow[]) => [...rows].sort((a, b) => a[0] - b[0] || a[1] - b[1]);

describe('Repository.writePoints (binary COPY)', () => {
  const edge: PointWriteRow[] = [
    // Time-keyed: milliseconds, before 2000 (negative microseconds from the binary epoch), far future.
    [901, Date.UTC(2026, 10, 20, 12, 0, 0, 123), Date.UTC(2026, 10, 20, 12, 0, 0, 123), null, 0.4375],
    [901, Date.UTC(1999, 11, 31, 23, 59, 59, 999), Date.UTC(1999, 11, 31, 23, 59, 59, 999), null, -1.5e308],
    [901, Date.UTC(1970, 0, 1), Date.UTC(1970, 0, 1), null, 5e-324],
    [901, Date.UTC(2262, 0, 1), Date.UTC(2262, 0, 1), null, null],
    // Step-keyed: steps as keys, a time or none, values of every size; a series id past 2^32.
    [902, 0, null, 0, 0],
    [902, 1, Date.UTC(2026, 0, 1), 1, 1],
    [902, 2_147_483_647, null, 2_147_483_647, 123456.789],
    [6_000_000_000, -5, null, -5, -0.000001],
    [6_000_000_000, 2 ** 52, null, null, 42],
  ];

  it('stores every value as given: new series copied, nulls, negative and large numbers', async () => {
    await suite.repo.writePoints(edge, { expectNew: true });
    expect(await stored([901, 902, 6_000_000_000])).toEqual(sorted(edge));
  });

  it('merges points of existing series: changed values replace, new keys join', async () => {
    const changed: PointWriteRow[] = [
      [901, Date.UTC(2026, 10, 20, 12, 0, 0, 123), Date.UTC(2026, 10, 20, 12, 0, 0, 123), null, 0.5],
      [902, 3, null, 3, 3],
    ];
    // expectNew although the first exists: the straight copy fails on the key, the merge follows.
    await suite.repo.writePoints(changed, { expectNew: true });
    const expected = sorted([...edge.filter((r) => !(r[0] === 901 && r[1] === changed[0]![1])), ...changed]);
    expect(await stored([901, 902, 6_000_000_000])).toEqual(expected);
  });

  it('merges a batch past its series stored reach and within it: new keys on either side, changed values, a series with none stored', async () => {
    // PGlite inserts the points past a series' last stored key as they are and upserts the rest
    // (repo-point-writes.ts, MERGE_PAST_REACH): both parts, and the boundary between them.
    const t0 = Date.UTC(2026, 10, 21, 8, 0, 0);
    const at = (id: number, i: number, value: number | null): PointWriteRow => [id, t0 + i * 15_000, t0 + i * 15_000, null, value];
    const held = [at(911, 0, 1), at(911, 2, 2), at(911, 4, 3), at(912, 0, 4)];
    await suite.repo.writePoints(held, { expectNew: true });
    const batch = [
      at(911, 1, 9), // new, below the reach
      at(911, 2, 2), // stored as given
      at(911, 4, 3.5), // the reach itself, changed
      at(911, 5, null), // past the reach
      at(911, 6, 6),
      at(912, 0, 4),
      at(912, 1, 5),
      at(913, 0, 7), // a series with nothing stored
    ];
    await suite.repo.writePoints(batch);
    const key = (r: PointWriteRow) => `${r[0]}:${r[1]}`;
    const given = new Set(batch.map(key));
    expect(await stored([911, 912, 913])).toEqual(sorted([...held.filter((r) => !given.has(key(r))), ...batch]));
    // Written again, nothing changes.
    await suite.repo.writePoints(batch);
    expect(await stored([911, 912, 913])).toEqual(sorted([...held.filter((r) => !given.has(key(r))), ...batch]));
  });

  it('merges two writes in one transaction each on its own: the second does not merge the points of the first again', async () => {
    // The merge reads the staging table without emptying it; the next write's stage starts empty
    // (CREATE_STAGES), so the second merge holds only its own points.
    const t0 = Date.UTC(2026, 10, 21, 9, 0, 0);
    const at = (i: number, value: number): PointWriteRow => [921, t0 + i * 15_000, t0 + i * 15_000, null, value];
    await suite.repo.writePoints([at(0, 1)], { expectNew: true });
    await suite.repo.transaction(async (repo) => {
      await repo.writePoints([at(0, 2), at(1, 3)]);
      await repo.writePoints([at(0, 4), at(2, 5)]);
    });
    expect(await stored([921])).toEqual([at(0, 4), at(1, 3), at(2, 5)]);
  });

  it('reads them back through pointsOf as written: NULL steps, values and instants stay null', async () => {
    const points = await suite.repo.pointsOf(
      [
        { seriesId: 901, from: null, to: null, keyedBy: 'time' },
        { seriesId: 902, from: null, to: null, keyedBy: 'step' },
      ],
      1000,
      'AVG',
    );
    const expected = sorted([
      ...edge.filter((r) => !(r[0] === 901 && r[1] === Date.UTC(2026, 10, 20, 12, 0, 0, 123))),
      [901, Date.UTC(2026, 10, 20, 12, 0, 0, 123), Date.UTC(2026, 10, 20, 12, 0, 0, 123), null, 0.5],
      [902, 3, null, 3, 3],
    ])
      .filter((r) => r[0] !== 6_000_000_000)
      .map(([seriesId, , ts, step, value]) => ({ seriesId, timestamp: ts === null ? null : new Date(ts), step, value }));
    expect(points).toEqual(expected);
  });

  it('writes a batch of columns whose series runs cross the chunks (fetched points: NaN is null)', async () => {
    const rows: PointWriteRow[] = [];
    for (const id of [904, 905, 906, 907]) {
      for (let i = 0; i < 3_001; i++) rows.push([id, 2_000_000 + i * 15_000, i % 11 === 0 ? null : 2_000_000 + i * 15_000, null, i % 13 === 0 ? null : i / 3]);
    }
    const batch = pointBatchOfRows(rows);
    expect(batch.runs).toHaveLength(4);
    await suite.repo.writePoints(batch, { expectNew: true });
    expect(await stored([904, 905, 906, 907])).toEqual(rows);
  });

  it('writes several batches (one per fetch, built as it arrived) in one COPY, each run under its series id', async () => {
    const parts: PointWriteRow[][] = [908, 909, 910].map((id, b) =>
      Array.from(
        { length: 2_500 + b * 1_700 },
        (_, i) => [id, 3_000_000 + i * 15_000, 3_000_000 + i * 15_000, null, i % 9 === 0 ? null : id + i / 5] as PointWriteRow,
      ),
    );
    const before = suite.db.statementCount();
    await suite.repo.writePointBatches(parts.map(pointBatchOfRows), { expectNew: true });
    // The transaction, its savepoint and the one COPY: as for one batch.
    const oneBatch = suite.db.statementCount() - before;
    const before1 = suite.db.statementCount();
    await suite.repo.writePointBatches([pointBatchOfRows([[911, 1, 1, null, 1]])], { expectNew: true });
    expect(oneBatch).toBe(suite.db.statementCount() - before1);
    expect(await stored([908, 909, 910])).toEqual(parts.flat());
  });

  it('writes many chunks in one COPY (the encoder splits rows into buffers)', async () => {
    const many: PointWriteRow[] = Array.from({ length: 12_345 }, (_, i) => [903, 1_000_000 + i * 15_000, 1_000_000 + i * 15_000, i, i / 7]);
    await suite.repo.writePoints(many);
    expect(await stored([903])).toEqual(many);
  });
});
