import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';
import { databaseTestFiles } from './test/support/passes.js';
import LongestFirst from './test/support/sequencer.js';

const ROOT = import.meta.dirname;

export default defineConfig({
  resolve: {
    // One graphql instance: Node loads graphql's CJS entry for the dependencies (Pothos,
    // @apollo/subgraph, yoga); without this alias vite gives our own files its .mjs entry, and
    // printSchema or execute on a Pothos-built schema fails "from another module or realm".
    alias: [{ find: /^graphql$/, replacement: createRequire(import.meta.url).resolve('graphql') }],
  },
  test: {
    // Says which tests this run skips and the variable that enables them; makes the migrated PGlite
    // every in-memory test database starts from (test/support/pglite-template.ts).
    globalSetup: ['test/support/skip-notice.ts', 'test/support/pglite-template.ts'],
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
    // Each file gets a fresh module graph (isolate, vitest's default). Sharing modules between files
    // (isolate: false) cut a run's import time by half (docs/testing.md), but module state then
    // lived across files (caches, registries, the simulators' seeded state), and a fresh-clone
    // rehearsal failed a read-through test that never failed isolated: kept off until each
    // module-level state is shown reset between files.
    isolate: true,
    // Longest files first (test/support/durations.json), so no long file starts last.
    sequence: { sequencer: LongestFirst },
    // The PGlite pass: every file, on an in-memory PGlite whatever the shell sets. The PostgreSQL
    // pass (only when TEST_DATABASE_URL names one): the files whose setup uses the test database
    // (test/support/passes.ts); the others would run the same test again. One run with the
    // variable set runs both, in parallel; `--project pglite` or `--project postgres` runs one.
    projects: [
      { extends: true, test: { name: 'pglite', include: ['test/**/*.test.ts'], env: { TEST_DATABASE_URL: '' } } },
      ...(process.env.TEST_DATABASE_URL ? [{ extends: true as const, test: { name: 'postgres', include: databaseTestFiles(ROOT) } }] : []),
    ],
  },
});
