// One request cannot stall the rest. The bomb of the report (six `jobs(first: 500) { ...
// metrics(maxPoints: 10000) }`) is refused before it runs, from literals and variables alike, so
// the next trivial query answers at once. And on Postgres, a read its client abandoned is
// cancelled: with its table locked, a read (a series, a filtered job list) waits in pg_stat_activity; the client
// goes away; the statement leaves pg_stat_activity while the lock is still held (so it was
// cancelled, not finished), and a trivial query answers meanwhile.
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSecurityConfig } from '../../src/config/security.js';
import type { Runtime } from '../../src/server/runtime.js';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';
import { postGraphql, startRuntimeOn } from '../support/runtime.js';
import { eventually } from '../support/wait.js';

const BOMB = `query Bomb($n: Int, $p: Int) { jobs(first: $n) { edges { node { id metrics(maxPoints: $p) { name points { timestamp value } } } } } }`;

describe('one request cannot stall the rest', () => {
  let sim: BasetenSimulator;
  let db: TestDatabase;
  let rt: Runtime;
  let jobId: string;

  const gql = (query: string, variables?: Record<string, unknown>, signal?: AbortSignal) => postGraphql(rt.url, query, variables, signal);

  beforeAll(async () => {
    sim = await startBasetenSimulator({
      seed: 'stall',
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 3, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2 },
    });
    db = await createTestDatabase();
    rt = await startRuntimeOn(db, [{ id: 'bt', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', timeoutSeconds: 10 }], {
      // The statement time-out is the execution time-out: ten minutes here, so only the
      // cancellation can end an abandoned read within the wait below (its hang bound is 60 s).
      config: { security: loadSecurityConfig({ EXECUTION_TIMEOUT_MS: '600000' }) },
      env: { BT_KEY: sim.apiKey },
      // Warm series stay fresh: the read below touches only the cache, never upstream.
      cachePolicy: { metricsTtlMs: 3_600_000, detailTtlMs: 3_600_000, listTtlMs: 3_600_000 },
    });
    const list = await gql('{ jobs(first: 5) { edges { node { id status } } } }');
    const jobs = list.data.jobs.edges.map((e: any) => e.node);
    jobId = (jobs.find((j: any) => j.status === 'RUNNING') ?? jobs[0]).id;
  }, 120_000);

  afterAll(async () => {
    await rt?.close();
    await sim?.close();
    await db?.drop();
  });

  it("refuses the report's bomb before it runs, literal or variable, and the next query answers", async () => {
    const asVariables = await Promise.all(Array.from({ length: 6 }, () => gql(BOMB, { n: 500, p: 10_000 })));
    for (const r of asVariables) {
      expect(r.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COSTLY');
      expect(r.errors?.[0]?.message).toMatch(/jobs\(first 500\).*points\(maxPoints 10000\)/);
    }
    const literal = await gql('{ jobs(first: 500) { edges { node { id metrics(maxPoints: 10000) { name points { timestamp value } } } } } }');
    expect(literal.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COSTLY');
    const next = await gql('{ providers { id } }');
    expect(next.data).toEqual({ providers: [{ id: 'bt' }] });
  });

  // Each read is issued through a different path to the driver (store/db.ts, issueReadFor): the
  // series through a raw statement, a filtered job list through drizzle's query builder.
  const ABANDONED_READS = [
    { what: 'a series read', table: 'points', query: `query($id: ID!) { job(id: $id) { metrics(maxPoints: 50) { name points { value } } } }` },
    { what: 'a filtered job list', table: 'jobs', query: `{ jobs(first: 5, filter: { labels: [{ key: "team" }] }) { edges { node { id } } } }` },
  ] as const;

  for (const read of ABANDONED_READS) {
    it.runIf(REAL_POSTGRES_URL)(
      `cancels the SQL of a request its client abandoned: ${read.what} (Postgres) [needs TEST_DATABASE_URL]`,
      async () => {
        const warm = await gql(read.query, { id: jobId });
        expect(warm.errors, JSON.stringify(warm)).toBeUndefined();
        // Its cache write committed: the read below is SQL (not the held points), and no write of
        // it is what waits on the lock.
        await rt.readThrough.writesSettled();

        const admin = postgres(db.databaseUrl!, { max: 2, onnotice: () => {} });
        const events: string[] = [];
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        let locked!: () => void;
        const lockHeld = new Promise<void>((r) => (locked = r));
        const holder = admin.begin(async (tx) => {
          await tx.unsafe(`lock table ${read.table} in access exclusive mode`);
          locked();
          await released;
          events.push('lock released');
        });
        await lockHeld;
        // Waiting for a lock on the table, by pg_locks: pg_stat_activity shows a statement's first
        // 1,024 bytes only (track_activity_query_size), where the table may not be named.
        const waiting = () =>
          admin<{ pid: number }[]>`select a.pid from pg_stat_activity a join pg_locks l on l.pid = a.pid
            where a.datname = current_database() and a.pid <> pg_backend_pid() and a.state = 'active'
              and not l.granted and l.locktype = 'relation' and l.relation = ${read.table}::regclass`;
        try {
          const client = new AbortController();
          const abandoned = gql(read.query, { id: jobId }, client.signal).catch((err: Error) => err.name);
          await eventually(async () => (await waiting()).length > 0, 30_000, `${read.what} waiting on the lock`);
          events.push('read waiting');
          client.abort();
          expect(await abandoned).toBe('AbortError');
          await eventually(async () => (await waiting()).length === 0, 10_000, 'the abandoned read to leave pg_stat_activity');
          events.push('read gone');
          // Answered while the lock is still held (it is released only below): nothing waits on it.
          const trivial = await gql('{ providers { id } }');
          expect(trivial.data).toEqual({ providers: [{ id: 'bt' }] });
          events.push('trivial answered');
        } finally {
          release();
          await holder;
          await admin.end();
        }
        // Cancelled, not finished: it left while the lock that blocked it was still held.
        expect(events).toEqual(['read waiting', 'read gone', 'trivial answered', 'lock released']);
      },
      120_000,
    );
  }
});
