// A filtered, ordered job search is answered from the cache in a fixed number of SQL statements:
// the same at 50 and at 5,000 cached jobs (labels, owner, a time window, a summary condition,
// ordered by a summary value, with a cursor and the total count).
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/store/sql-util.js';
import { startTestServer, type TestServer } from '../support/runtime.js';

const SEARCH = `query($after: String) {
  jobs(first: 20, after: $after,
       filter: { owners: ["alice@example.com", "bob@example.com"], labels: [{ key: "team", value: "vision" }],
                 created: { from: "2000-01-01T00:00:00Z" }, summary: [{ metric: "val_acc", gte: 0.5 }] },
       orderBy: { field: SUMMARY, direction: DESC, summary: { metric: "val_acc" } }) {
    totalCount pageInfo { hasNextPage endCursor } edges { node { id owner labels { key value } } }
  }
}`;

async function measure(jobCount: number) {
  const projects = jobCount / 50;
  const s: TestServer = await startTestServer({
    fleet: { projects, jobsPerProject: 50, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 1, statuses: ['TRAINING_JOB_COMPLETED'] },
  });
  try {
    const first = await s.gql(`{ jobs(first: 1) { totalCount } }`); // the list sync writes the jobs once
    expect(first.errors).toBeUndefined();
    expect(first.data.jobs.totalCount).toBe(jobCount);
    // Labels and summaries as platforms with them would leave them (Baseten has neither): every
    // other job on team vision, val_acc spread over 0..1.
    const db = s.runtime.database.db;
    await db.execute(sql`update jobs set labels = case when (hashtext(id) & 1) = 0 then '{"team":"vision"}'::jsonb else '{"team":"nlp"}'::jsonb end`);
    await db.execute(sql`insert into job_summaries (job_id, name, latest_value, latest_step)
      select id, 'val_acc', ((hashtext(id) & 1023) / 1023.0)::float8, 100 from jobs`);
    const owners = await rowsOf<{ owner: string | null }>(db, sql`select distinct owner from jobs order by owner`);
    expect(owners.map((o) => o.owner)).toContain('alice@example.com');

    const before = s.runtime.database.statementCount();
    const page1 = await s.gql(SEARCH);
    const firstPage = s.runtime.database.statementCount() - before;
    expect(page1.errors, JSON.stringify(page1.errors)).toBeUndefined();
    const mid = s.runtime.database.statementCount();
    const page2 = await s.gql(SEARCH, { after: page1.data.jobs.pageInfo.endCursor });
    const secondPage = s.runtime.database.statementCount() - mid;
    expect(page2.errors, JSON.stringify(page2.errors)).toBeUndefined();

    const expected = await rowsOf<{ n: number }>(
      db,
      sql`select count(*)::int as n from jobs j join job_summaries js on js.job_id = j.id and js.name = 'val_acc'
        where j.owner in ('alice@example.com', 'bob@example.com') and j.labels @> '{"team":"vision"}' and js.latest_value >= 0.5`,
    );
    expect(page1.data.jobs.totalCount).toBe(Number(expected[0]!.n));
    for (const e of [...page1.data.jobs.edges, ...page2.data.jobs.edges]) {
      expect(e.node.labels).toEqual([{ key: 'team', value: 'vision' }]);
    }
    return { firstPage, secondPage, matched: page1.data.jobs.totalCount as number };
  } finally {
    await s.close();
  }
}

describe('job search cost', () => {
  const results: Record<number, Awaited<ReturnType<typeof measure>>> = {};
  afterAll(() => console.log(`job search statements: ${JSON.stringify(results)}`));

  it('is the same number of SQL statements over 50 and over 5,000 cached jobs', async () => {
    results[50] = await measure(50);
    results[5000] = await measure(5000);
    expect(results[5000].matched).toBeGreaterThan(results[50].matched);
    expect(results[5000].firstPage).toBe(results[50].firstPage);
    expect(results[5000].secondPage).toBe(results[50].secondPage);
    // The list's sync state, the page, the count.
    expect(results[50].firstPage).toBeLessThanOrEqual(3);
  }, 300_000);
});
