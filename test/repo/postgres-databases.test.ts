// The PostgreSQL pass's databases outlive their files and go when the run ends
// (test/support/postgres-databases.ts): a file's drop() leaves its database, the run's teardown
// drops every database of the run, and a run's start drops those of runs that are gone but never a
// live run's.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, REAL_POSTGRES_URL } from '../support/database.js';
import setup, { dropRunDatabases, runDatabasePrefix } from '../support/postgres-databases.js';

describe.runIf(REAL_POSTGRES_URL)('the test databases of a run go when it ends [needs TEST_DATABASE_URL]', () => {
  let admin: postgres.Sql | undefined;
  // A live process other than this one: the runner of another run.
  let live: ChildProcess;
  beforeAll(() => {
    admin = postgres(REAL_POSTGRES_URL!, { max: 1, onnotice: () => {} });
    live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  });
  const exists = async (name: string) => (await admin!`select 1 from pg_database where datname = ${name}`).length === 1;

  afterAll(async () => {
    live?.kill();
    if (live?.pid) await dropRunDatabases(REAL_POSTGRES_URL!, live.pid);
    await admin?.end();
  });

  it("keeps a file's database after its drop(), for the run's end", async () => {
    const db = await createTestDatabase();
    await db.drop();
    const name = new URL(db.databaseUrl!).pathname.slice(1);
    expect(await exists(name)).toBe(true);
  });

  it("drops at its end every database of the run, and at its start those of a run that is gone, not a live run's", async () => {
    // This process stands for the runner: its pid names "its" run.
    const mine = `${runDatabasePrefix(process.pid)}a1`;
    const gonePid = spawnSync(process.execPath, ['-e', '0']).pid!;
    const gone = `${runDatabasePrefix(gonePid)}b2`;
    const other = `${runDatabasePrefix(live.pid!)}c3`;
    for (const name of [mine, gone, other]) await admin!.unsafe(`create database "${name}"`);
    const provided: Record<string, string> = {};
    const project = { name: 'postgres', provide: (key: string, value: string) => (provided[key] = value) };
    const teardown = await setup(project as never);
    expect(provided.testDatabasePrefix).toBe(runDatabasePrefix(process.pid));
    expect([await exists(mine), await exists(gone), await exists(other)]).toEqual([true, false, true]);
    await teardown!();
    expect([await exists(mine), await exists(other)]).toEqual([false, true]);
  });
});
