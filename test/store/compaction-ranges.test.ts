// Compaction reads and deletes the rows it moves by their series' primary-key ranges, whatever the
// table holds beside them: planned as joins of the batch's ids (or days) to the table, the
// planner guessed 100 of them and scanned the whole table every batch, so a first compaction of a
// long history grew with batches x history (src/store/sql-util.ts, idsRows and rangeRowsWhere;
// retention's deletes use the latter too; docs/history.md, "Compaction by index ranges"). The plans are read with EXPLAIN
// on a table whose statistics say it is large; then a batch is compacted for real.
import { type SQL, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { idsRows, rangeRowsWhere, rowsOf } from '../../src/store/sql-util.js';
import { useTestRepository } from '../support/database.js';

const suite = useTestRepository();
const DAY = 86_400_000;
const START = Date.UTC(2026, 9, 1);
const SERIES = 100;
/** Samples a series and day: two days a series, 200,000 points in all. */
const PER_DAY = 1_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of the plan of `query`, as `<node type> on <relation>`. */
async function planOf(query: SQL): Promise<string[]> {
  const [row] = await rowsOf<Record<string, unknown>>(suite.db.db, sql`explain (format json) ${query}`);
  const raw = Object.values(row!)[0];
  const [top] = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  const out: string[] = [];
  const walk = (n: PlanNode) => {
    out.push(`${n['Node Type']} on ${n['Relation Name'] ?? '-'}`);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(top!.Plan);
  return out;
}

describe('compaction by index ranges', () => {
  let ids: number[] = [];

  it('builds a provider of 100 series with two days of points each', async () => {
    const db = suite.db.db;
    await db.execute(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, sort_at, seen_at)
      values ('ranges:job:a', 'ranges', 'ranges:project:p', 'a', 'a', 'RUNNING', now(), now())`);
    const rows = await rowsOf<{ id: number }>(
      db,
      sql`insert into series (series_key, job_id, kind, name, unit, scope, source, keyed_by)
          select 'ranges-' || g, 'ranges:job:a', 'system', 'gpu_utilization', 'RATIO', 'GPU', 'baseten', 'time'
          from generate_series(1, ${SERIES}) g returning id::float8 as id`,
    );
    ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    await db.execute(sql`insert into points (series_id, key, ts, step, value)
      select s.id, k, to_timestamp(k / 1000.0), null, (s.id % 7) + i / 1000.0
      from series s, generate_series(0, ${2 * PER_DAY - 1}) i, lateral (select ${START}::bigint + i * ${DAY / PER_DAY}::bigint as k) kk
      where s.job_id = 'ranges:job:a'`);
    // What autovacuum (PostgreSQL) or the chores (PGlite, Repository.maintainStatistics) keep current.
    await db.execute(sql`analyze points`);
    const [n] = await rowsOf<{ n: number }>(db, sql`select count(*)::float8 as n from points`);
    expect(Number(n!.n)).toBeGreaterThanOrEqual(SERIES * 2 * PER_DAY);
  });

  it("reads a batch's rows by one key range a series, not by a scan of the table", async () => {
    const plan = await planOf(sql`select count(*) from ${idsRows('points', 'key', ids.slice(0, 20), START + 2 * DAY)} p`);
    expect(plan.filter((n) => n.endsWith(' on points'))).not.toEqual([]);
    expect(plan).not.toContain('Seq Scan on points');
  });

  it("deletes a batch's days by the ctids of their key ranges, not by a join scanning the table", async () => {
    const days = ids
      .slice(0, 20)
      .flatMap((id) => [0, 1].map((d) => `[${id},${START + d * DAY}]`))
      .join(',');
    const plan = await planOf(
      sql`with days as materialized (select (r->>0)::bigint as series_id, (r->>1)::bigint as day from jsonb_array_elements(${`[${days}]`}::jsonb) as r)
        delete from points m where ${rangeRowsWhere('points', 'key', 'days', sql`d.day`, sql`d.day + ${DAY}`)}`,
    );
    expect(plan).toContain('Tid Scan on points');
    expect(plan).not.toContain('Seq Scan on points');
  });

  it("deletes retention's batch of series by the ctids of their ranges before the cut", async () => {
    const plan = await planOf(
      sql`with s as materialized (select id from series where id = any (${`{${ids.slice(20, 40).join(',')}}`}::bigint[]))
        delete from points m where ${rangeRowsWhere('points', 'key', '(select s.id as series_id from s)', null, sql`${START + DAY}::bigint`)}`,
    );
    expect(plan).toContain('Tid Scan on points');
    expect(plan).not.toContain('Seq Scan on points');
  });

  it('compacts a batch of 20 series, every point of their settled days and no other', async () => {
    const step = await suite.repo.compactRawPointsBatch('ranges', START + 2 * DAY, 0, 20);
    expect(step).toMatchObject({ last: ids[19], chunks: 40, points: 20 * 2 * PER_DAY, done: true });
    const [left] = await rowsOf<{ inBatch: number; others: number }>(
      suite.db.db,
      sql`select count(*) filter (where series_id <= ${ids[19]!})::float8 as "inBatch", count(*) filter (where series_id > ${ids[19]!})::float8 as others
        from points where series_id = any (${`{${ids.join(',')}}`}::bigint[])`,
    );
    expect({ inBatch: Number(left!.inBatch), others: Number(left!.others) }).toEqual({ inBatch: 0, others: 80 * 2 * PER_DAY });
  });

  it("drops the next batch's raw points before the cut, every one of them and no other", async () => {
    const step = await suite.repo.dropRawPointsBatch('ranges', START + DAY, ids[19]!, 20);
    expect(step).toEqual({ last: ids[39], deleted: 20 * PER_DAY });
    const [left] = await rowsOf<{ before: number; after: number }>(
      suite.db.db,
      sql`select count(*) filter (where key < ${START + DAY})::float8 as before, count(*) filter (where key >= ${START + DAY})::float8 as after
        from points where series_id = any (${`{${ids.slice(20).join(',')}}`}::bigint[])`,
    );
    expect({ before: Number(left!.before), after: Number(left!.after) }).toEqual({ before: 60 * PER_DAY, after: 80 * PER_DAY });
  });
});
