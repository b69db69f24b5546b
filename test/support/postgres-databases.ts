// The PostgreSQL pass's test databases are dropped when the run ends, not when their file ends.
// PostgreSQL 15's DROP DATABASE waits for an immediate checkpoint (wait event CheckpointDone): each
// file's teardown flushed and fsynced every dirty page of every test database then open, and its
// worker waited for it (1.4-2.1 s a drop beside a write-heavy benchmark, docs/testing.md). The run
// tags its databases (`tg_test_<run>_…`, the run being the runner's pid); this global setup drops
// them after the last file, several at once so that their checkpoints are shared, and at the start
// drops those of runs that are gone (killed before their end), never another live run's.
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';

/** The prefix of the test databases of the run whose runner has process id `pid`. */
export const runDatabasePrefix = (pid: number | string) => `tg_test_r${pid}_`;

/** The run's prefix, as the runner provides it to the files (inject('testDatabasePrefix')). */
declare module 'vitest' {
  export interface ProvidedContext {
    testDatabasePrefix: string;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Databases dropped at once: each DROP waits for a checkpoint, and concurrent ones share it. */
const PARALLEL = 8;

async function withAdmin<T>(url: string, fn: (admin: postgres.Sql) => Promise<T>): Promise<T> {
  const admin = postgres(url, { max: PARALLEL, onnotice: () => {} });
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/** The test databases of runs (`tg_test_r<pid>_…`), by the runner's pid. */
async function runDatabases(admin: postgres.Sql): Promise<{ name: string; pid: number }[]> {
  const rows = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${'tg\\_test\\_r%'}`;
  return rows.flatMap((r) => {
    const pid = Number(/^tg_test_r(\d+)_/.exec(r.datname)?.[1]);
    return Number.isInteger(pid) ? [{ name: r.datname, pid }] : [];
  });
}

async function dropAll(admin: postgres.Sql, names: string[]): Promise<void> {
  const queue = [...names];
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) await admin.unsafe(`drop database if exists "${name}" with (force)`);
    }),
  );
}

/** Drops the test databases of the run whose runner has process id `pid`. */
export function dropRunDatabases(url: string, pid: number): Promise<void> {
  return withAdmin(url, async (admin) =>
    dropAll(
      admin,
      (await runDatabases(admin)).filter((d) => d.pid === pid).map((d) => d.name),
    ),
  );
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const prefix = runDatabasePrefix(process.pid);
  project.provide('testDatabasePrefix', prefix);
  const url = process.env.TEST_DATABASE_URL;
  // Once a run: the PostgreSQL pass's project is the one whose files make these databases.
  if (!url || project.name !== 'postgres') return undefined;
  await withAdmin(url, async (admin) =>
    dropAll(
      admin,
      (await runDatabases(admin)).filter((d) => d.pid !== process.pid && !alive(d.pid)).map((d) => d.name),
    ),
  );
  return () => dropRunDatabases(url, process.pid);
}
