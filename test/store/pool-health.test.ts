// The cache database's connections under abandoned work (issue 44, items 2 and 3): reads issued
// for a request that is abandoned before their turn never run (PGlite ran every one of them, back
// to back, while the next request waited); the health probe does not queue behind data work; the
// pool's slots, waiters and oldest wait are visible; and the watchdog recovers a pool whose slots
// are held by work that never ends while the database answers.
import { getEventListeners } from 'node:events';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/db.js';
import { readRowsFor } from '../../src/store/sql-util.js';
import { createTestDatabase, REAL_POSTGRES_URL, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/wait.js';

const POOL = 2;

describe('the cache database under abandoned work', () => {
  let tdb: TestDatabase;
  let database: Database;
  let clock = 0;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    database = await openDatabase({ databaseUrl: tdb.databaseUrl, dataDir: tdb.dataDir, maxConnections: POOL, watchdogTimer: false, now: () => clock });
    await database.db.execute(sql`create sequence reads_run`);
  });
  afterAll(async () => {
    await database?.close();
    await tdb?.drop();
  });

  const ran = async () => (await readRowsFor<{ n: string }>(undefined, database.db, sql`select last_value::int as n, is_called from reads_run`))[0]!;

  it('drops the reads of a request abandoned before their turn', async () => {
    const request = new AbortController();
    const scope = { signal: request.signal, tenant: null };
    const reads = Array.from({ length: 40 }, () =>
      readRowsFor(scope, database.db, sql`select nextval('reads_run') as n`).then(
        () => 'ran',
        () => 'dropped',
      ),
    );
    // One listener on the request's signal however many of its reads wait (a listener a read passed
    // the signal's 10 and printed MaxListenersExceededWarning).
    expect(getEventListeners(request.signal, 'abort')).toHaveLength(1);
    request.abort(new Error('client gone'));
    const outcomes = await Promise.all(reads);
    const counted = Number((await ran()).n);
    // PGlite: only the statement already under way; Postgres: at most the first statement of each slot.
    expect(counted).toBeLessThanOrEqual(database.driver === 'pglite' ? 1 : POOL);
    expect(outcomes.filter((o) => o === 'dropped').length).toBeGreaterThanOrEqual(40 - POOL);
    const health = database.poolHealth();
    expect(health).toMatchObject({ waiting: 0, recoveries: 0 });
    if (database.driver === 'pglite') expect(health.dropped).toBeGreaterThanOrEqual(39);
  });

  it('answers the health probe ahead of queued data work', async () => {
    const order: string[] = [];
    if (database.driver === 'pglite') {
      const reads = Array.from({ length: 20 }, (_, i) => database.db.execute(sql`select nextval('reads_run')`).then(() => order.push(`read ${i}`)));
      const probe = database.probe().then(() => order.push('probe'));
      await Promise.all([...reads, probe]);
      // Behind only the statement under way when it came.
      expect(order.indexOf('probe')).toBeLessThanOrEqual(1);
    } else {
      // Every slot held by a transaction that does not end: the probe answers on its own connection.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let begun = 0;
      const holders = Array.from({ length: POOL }, () =>
        database.db.transaction(async (tx) => {
          await tx.execute(sql`select 1`);
          begun++;
          await held;
        }),
      );
      await eventually(() => begun === POOL, 30_000, 'every slot held');
      const waiter = database.db.execute(sql`select 1`).then(() => order.push('read'));
      await eventually(() => database.poolHealth().waiting === 1, 30_000, 'a statement waiting for a slot');
      const health = database.poolHealth();
      expect(health).toMatchObject({ max: POOL, inUse: POOL, waiting: 1 });
      await database.probe();
      order.push('probe');
      release();
      await Promise.all([...holders, waiter]);
      expect(order).toEqual(['probe', 'read']);
    }
  });

  it.runIf(REAL_POSTGRES_URL)('recovers a pool whose slots are held by work that never ends, while the database answers', async () => {
    // The transactions' callbacks never settle (abandoned work holding pool slots): their backends sit
    // idle in transaction, a statement waits for a slot, and no reply comes.
    let begun = 0;
    const stuck = Array.from({ length: POOL }, () =>
      database.db
        .transaction(async (tx) => {
          await tx.execute(sql`select 1`);
          begun++;
          await new Promise(() => {});
        })
        .then(
          () => 'committed',
          () => 'ended',
        ),
    );
    await eventually(() => begun === POOL, 30_000, 'every slot held');
    const waiter = database.db.execute(sql`select 7 as n`).then(() => 'answered');
    await eventually(() => database.poolHealth().waiting === 1, 30_000, 'a statement waiting for a slot');
    expect(await database.watchdog.check()).toBe('ok');
    clock += 1_000;
    expect(await database.watchdog.check()).toBe('waiting');
    clock += 60_000;
    expect(await database.watchdog.check()).toBe('recovered');
    expect(await Promise.all(stuck)).toEqual(Array(POOL).fill('ended'));
    expect(await waiter).toBe('answered');
    expect(database.poolHealth()).toMatchObject({ waiting: 0, recoveries: 1 });
    expect(await database.watchdog.check()).toBe('ok');
  });
});
