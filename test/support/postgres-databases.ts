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

/** Drops the databases named, `parallel` at a time (each DROP waits for a checkpoint; concurrent ones share it). */
async function dropAll(url: string, names: string[], parallel = 8): Promise<void> {
  const admin = postgres(url, { max: parallel, onnotice: () => {} });
  try {
    const queue = [...names];
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        for (let name = queue.shift(); name; name = queue.shift()) await admin.unsafe(`drop database if exists "${name}" with (force)`);
      }),
    );
  } finally {
    await admin.end();
  }
}

async function databasesLike(url: string, pattern: string): Promise<string[]> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return (await admin<{ datname: string }[]>`select datname from pg_database where datname like ${pattern} order by datname`).map((r) => r.datname);
  } finally {
    await admin.end();
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const prefix = runDatabasePrefix(process.pid);
  project.provide('testDatabasePrefix', prefix);
  const url = process.env.TEST_DATABASE_URL;
  // Once a run: the PostgreSQL pass's project is the one whose files make these databases.
  if (!url || project.name !== 'postgres') return undefined;
  const stale = (await databasesLike(url, 'tg\\_test\\_r%\\_%')).filter((name) => {
    const pid = Number(/^tg_test_r(\d+)_/.exec(name)?.[1]);
    return Number.isInteger(pid) && pid !== process.pid && !alive(pid);
  });
  if (stale.length > 0) await dropAll(url, stale);
  return async () => dropAll(url, await databasesLike(url, `${prefix.replaceAll('_', '\\_')}%`));
}
