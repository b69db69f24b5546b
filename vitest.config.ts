import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A fresh PGlite takes 4-5 s to initialise (STACK.md); each test file shares one instance.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: two workers keep PGlite starts from starving each other.
    maxWorkers: 2,
    pool: 'forks',
  },
});
