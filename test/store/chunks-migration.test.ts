// An existing database upgrades to compacted raw points: one made on the previous layout (points
// in `points` and their rollups, as migrations up to 0007 leave them) opens on this version,
// migration 0008 adds point_chunks without moving anything, the compactor then moves the settled
// days, and the same series are answered identically before and after, on PGlite and PostgreSQL.
import { rmSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import type { Aggregation } from '../../src/domain/types.js';
import { openDatabase } from '../../src/store/db.js';
import { Repository, type PointWriteRow, type SeriesWindow } from '../../src/store/repository.js';
import { rowsOf } from '../../src/store/sql-util.js';
import { databaseOnOldLayout, migrationsUpTo } from '../support/migrations.js';
import { wave } from './rollup-fixtures.js';

const START = Date.UTC(2026, 10, 18, 0, 0, 0);
const DAY = 86_400_000;

/** A job, two series (time- and step-keyed) and their points, as the old layout holds them. */
function fill(points: readonly PointWriteRow[]): string[] {
  const values = points.map(([s, k, ts, step, v]) => `(${s}, ${k}, ${ts === null ? 'null' : `to_timestamp(${ts / 1000})`}, ${step ?? 'null'}, ${v ?? 'null'})`);
  return [
    `insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
      values ('baseten-1:job:old', 'baseten-1', 'baseten-1:project:p', 'old', 'old', 'RUNNING', now(), now())`,
    `insert into series (id, series_key, job_id, kind, name, unit, scope, source, keyed_by) values
      (1, 'old-time', 'baseten-1:job:old', 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time'),
      (2, 'old-step', 'baseten-1:job:old', 'training', 'loss', 'NONE', 'JOB', 'wandb', 'step')`,
    `insert into points (series_id, key, ts, step, value) values ${values.join(', ')}`,
  ];
}

describe('migration 0008 on a database with points', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('opens on the old layout, compacts its settled days and answers the same series identically', async () => {
    // The points go in at 0006 and 0007 backfills their rollups, as an upgrade to it did.
    const at0006 = migrationsUpTo('0006_alerts');
    const at0007 = migrationsUpTo('0007_history_rollups');
    cleanup.push(() => rmSync(at0006, { recursive: true, force: true }));
    cleanup.push(() => rmSync(at0007, { recursive: true, force: true }));
    const points = wave(1, START, 30_000, (3 * DAY) / 30_000);
    points[77] = [1, points[77]![1], points[77]![2], null, null];
    const statements = fill([...points, [2, 1, null, 1, 2.5], [2, 2, null, 2, 2.25]]);

    const { databaseUrl, dataDir } = await databaseOnOldLayout([{ migrate: at0006 }, { statements }, { migrate: at0007 }], cleanup);

    // The upgrade: this version's migrations on open. Nothing moves yet.
    const db = await openDatabase({ databaseUrl, dataDir });
    cleanup.push(() => db.close());
    const repo = Repository.of(db);
    const count = async (table: string) => Number((await rowsOf<{ n: number }>(db.db, sql`select count(*)::int as n from ${sql.raw(table)}`))[0]!.n);
    expect(await count('points')).toBe(points.length + 2);
    expect(await count('point_chunks')).toBe(0);

    const windows: [SeriesWindow[], number][] = [
      [[{ seriesId: 1, keyedBy: 'time', from: new Date(START), to: new Date(START + 3 * DAY - 1) }], 72],
      [[{ seriesId: 1, keyedBy: 'time', from: new Date(START + DAY - 3_600_000), to: new Date(START + DAY + 3_600_000) }], 1000],
      [[{ seriesId: 1, keyedBy: 'time', from: new Date(START + 5_000), to: new Date(START + DAY / 2) }], 300],
      [[{ seriesId: 1, keyedBy: 'time', from: null, to: null }], 1000],
      [[{ seriesId: 2, keyedBy: 'step', from: null, to: null }], 10],
    ];
    const answers = async () => {
      const out: unknown[] = [];
      for (const [w, maxPoints] of windows) {
        for (const aggregation of ['AVG', 'MIN', 'MAX', 'LAST'] as Aggregation[]) {
          const r = await repo.pointsAt(w, maxPoints, aggregation);
          out.push([r.points, [...r.resolutions]]);
        }
        out.push(await repo.summariesOf(w));
      }
      return out;
    };
    const before = await answers();

    // The collector's compaction with a settle age of a day: the first two days move.
    let after = 0;
    let moved = 0;
    for (;;) {
      const step = await repo.compactRawPointsBatch('baseten-1', START + 2 * DAY + 3_600_000, after, 50);
      moved += step.points;
      if (step.last === null) break;
      if (step.done) after = step.last;
    }
    expect(moved).toBe((2 * DAY) / 30_000);
    expect(await count('point_chunks')).toBe(2);
    expect(await count('points')).toBe(DAY / 30_000 + 2);
    expect(await answers()).toEqual(before);
  });
});
