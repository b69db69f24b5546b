// An existing database upgrades: one made at the previous migration (0005, before the rollups)
// with points in it opens on this version, migration 0007 backfills the 1-minute and 1-hour
// rollups of its time-keyed series from the points it holds (none for step-keyed ones), and a
// long window is answered from them exactly as the raw points give it, on PGlite and PostgreSQL.
import { rmSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/db.js';
import { Repository, type PointWriteRow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { databaseOnOldLayout, migrationsUpTo } from '../support/migrations.js';
import { handRollup, rollupRows, wave } from './rollup-fixtures.js';

const START = Date.UTC(2026, 10, 18, 0, 0, 0);
const DAY = 86_400_000;
const PREVIOUS = '0005_findings';

/** The statements that fill the old layout: two series (time- and step-keyed) and their points. */
function fill(points: readonly PointWriteRow[]): string[] {
  const values = points.map(([s, k, ts, step, v]) => `(${s}, ${k}, ${ts === null ? 'null' : `to_timestamp(${ts / 1000})`}, ${step ?? 'null'}, ${v ?? 'null'})`);
  return [
    `insert into series (id, series_key, job_id, kind, name, unit, scope, source, keyed_by) values
      (1, 'old-time', 'baseten-1:job:old', 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time'),
      (2, 'old-step', 'baseten-1:job:old', 'training', 'loss', 'NONE', 'JOB', 'wandb', 'step')`,
    `insert into points (series_id, key, ts, step, value) values ${values.join(', ')}`,
  ];
}

describe('migration 0007 on a database with points', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('backfills the rollups of the stored points and answers long windows from them', async () => {
    const migrations = migrationsUpTo(PREVIOUS);
    cleanup.push(() => rmSync(migrations, { recursive: true, force: true }));
    const points = wave(1, START, 10_000, (2 * DAY) / 10_000);
    // A null among them, and a step-keyed series (no rollups).
    points[50] = [1, points[50]![1], points[50]![2], null, null];
    const statements = fill([...points, [2, 1, null, 1, 2.5], [2, 2, null, 2, 2.25]]);

    const { databaseUrl, dataDir } = await databaseOnOldLayout([{ migrate: migrations }, { statements }], cleanup);

    // The upgrade: this version's migrations on open.
    const db = await openDatabase({ databaseUrl, dataDir });
    cleanup.push(() => db.close());
    expect(await rollupRows(db.db, 'points_1m', 1)).toEqual(handRollup(points, 60_000));
    expect(await rollupRows(db.db, 'points_1h', 1)).toEqual(handRollup(points, 3_600_000));
    expect(await rollupRows(db.db, 'points_1h', 2)).toEqual([]);
    const [held] = await rowsOf<{ n: number | string }>(db.db, sql`select count(*) as n from points`);
    expect(Number(held!.n)).toBe(points.length + 2);

    // Two days at 48 points: 17,280 raw points, past max(1,000, 480), read from the backfilled hours.
    const repo = Repository.of(db);
    const read = await repo.pointsAt([{ seriesId: 1, keyedBy: 'time', from: new Date(START), to: new Date(START + 2 * DAY - 1) }], 48, 'AVG');
    expect(read.resolutions.get(1)).toBe(3600);
    expect(read.points.map((p) => [p.timestamp!.getTime(), p.value])).toEqual(handRollup(points, 3_600_000).map((r) => [r.bucket, r.sum! / r.n]));
    // A short window still reads the raw points, as written.
    const raw = await repo.pointsAt([{ seriesId: 1, keyedBy: 'time', from: new Date(START), to: new Date(START + 60 * 10_000 - 1) }], 100, 'AVG');
    expect(raw.resolutions.size).toBe(0);
    expect(raw.points.map((p) => p.value)).toEqual(points.slice(0, 60).map((p) => p[4]));
  });
});
