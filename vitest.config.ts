import { createRequire } from 'node:module';
import { configDefaults, defineConfig } from 'vitest/config';
import { databaseTestFiles, runsOnceOnPostgres } from './test/support/passes.js';
import LongestFirst from './test/support/sequencer.js';

const ROOT = import.meta.dirname;
/** A PostgreSQL for the second pass (.ci/run sets it). */
const POSTGRES_URL = process.env.TEST_DATABASE_URL;
/** The files of the PostgreSQL pass (read once: both projects' lists come from it). */
const DATABASE_FILES = POSTGRES_URL ? databaseTestFiles(ROOT) : [];

export default defineConfig({
  resolve: {
    // One graphql instance: Node loads graphql's CJS entry for the dependencies (Pothos,
    // @apollo/subgraph, yoga); without this alias vite gives our own files its .mjs entry, and
    // printSchema or execute on a Pothos-built schema fails "from another module or realm".
    alias: [{ find: /^graphql$/, replacement: createRequire(import.meta.url).resolve('graphql') }],
  },
  test: {
    // Says which tests this run skips and the variable that enables them; makes the migrated PGlite
    // every in-memory test database starts from (test/support/pglite-template.ts); drops the
    // PostgreSQL pass's test databases when the run ends (test/support/postgres-databases.ts).
    globalSetup: ['test/support/skip-notice.ts', 'test/support/pglite-template.ts', 'test/support/postgres-databases.ts'],
    // Tests wait on events, never on durations: a time-out only turns a hang into a failure, so it
    // is generous enough for a machine with other work beside the suite (issue 18: two CPU-bound
    // processes). A fresh PGlite takes 4-5 s to initialise (STACK.md); each test file shares one.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    // Two cores: two workers keep PGlite starts from starving each other. With both passes in one
    // run (TEST_DATABASE_URL set) the two share these workers. A project takes this file's value
    // over the command line's, so a `--maxWorkers` given there must find none here (else
    // `--maxWorkers=1` still ran two files at once, one per project).
    maxWorkers: process.argv.some((a) => a.startsWith('--maxWorkers')) ? undefined : 2,
    pool: 'forks',
    // The files of a worker share its process: node_modules load once per worker, not once per file
    // (a file's imports were 2-4 s of CPU: half of a short file's cost). Our own modules are imported
    // afresh for every file (test/support/fresh-modules.ts resets vitest's module registry and the
    // environment), so no module-level state of ours lives from one file to the next: sharing our
    // modules too (isolate: false alone) let a read-through cache outlive its file and fail another
    // file's test in a rehearsal. A file must still close what it starts (servers, runtimes,
    // databases, listeners): the process outlives it.
    isolate: false,
    setupFiles: ['test/support/fresh-modules.ts'],
    // Longest files first (test/support/durations.json), so no long file starts last.
    sequence: { sequencer: LongestFirst },
    // The PGlite pass: every file, on an in-memory PGlite whatever the shell sets. The PostgreSQL
    // pass (only when TEST_DATABASE_URL names one): the files whose setup uses the test database
    // (test/support/passes.ts); the others would run the same test again. One run with the
    // variable set runs both, in parallel; `--project pglite` or `--project postgres` runs one. A
    // file ONCE_ON_POSTGRES takes (its subject sits above the store's door) runs in the PostgreSQL
    // pass only when there is one.
    projects: [
      {
        extends: true,
        test: {
          name: 'pglite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...DATABASE_FILES.filter(runsOnceOnPostgres)],
          env: { TEST_DATABASE_URL: '' },
        },
      },
      ...(POSTGRES_URL ? [{ extends: true as const, test: { name: 'postgres', include: DATABASE_FILES } }] : []),
    ],
  },
});
