import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // One graphql instance: Node loads graphql's CJS entry for the dependencies (Pothos,
    // @apollo/subgraph, yoga); without this alias vite gives our own files its .mjs entry, and
    // printSchema or execute on a Pothos-built schema fails "from another module or realm".
    alias: [{ find: /^graphql$/, replacement: createRequire(import.meta.url).resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Says which tests this run skips and the variable that enables them.
    globalSetup: ['test/support/skip-notice.ts'],
    // Tests wait on events, never on durations: a time-out only turns a hang into a failure, so it
    // is generous enough for a machine with other work beside the suite (issue 18: two CPU-bound
    // processes). A fresh PGlite takes 4-5 s to initialise (STACK.md); each test file shares one.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    // Two cores: two workers keep PGlite starts from starving each other.
    maxWorkers: 2,
    pool: 'forks',
  },
});
