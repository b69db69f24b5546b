// Said once, loudly, at the start of a run: which tests this run skips and the variable that
// enables them (vitest also lists each skipped test with its name, which names the variable).
// `.ci/run` runs both passes (projects pglite and postgres, vitest.config.ts), so it skips nothing overall.
import { existsSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { DEFAULT_CHROMIUM, missingChromium } from '../e2e/chromium.js';
import { databaseTestFiles, runsOnceOnPostgres } from './passes.js';

export default function setup(project: TestProject) {
  const line = '='.repeat(100);
  // Once a run: each project (the PGlite pass, and the PostgreSQL pass when named) calls this.
  if (project.name !== 'postgres') {
    // Not skipped (CI installs it): the browser tests fail, each with this same line.
    const chromium = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM;
    if (!existsSync(chromium)) console.log(`\n${line}\nMISSING BROWSER: ${missingChromium(chromium)}\n${line}\n`);
    if (!existsSync('/usr/bin/prometheus')) {
      console.log(
        `\n${line}\nSKIPPING the Prometheus conformance tests (test/promql/conformance.test.ts), marked [needs /usr/bin/prometheus]:\n` +
          `install Debian's package (apt-get install -y prometheus; .ci/run does).\n${line}\n`,
      );
    }
  }
  if (project.name === 'postgres') {
    console.log(
      `\n${line}\nTEST_DATABASE_URL is set: the files that use the test database run again on that Postgres (project postgres),\n` +
        `beside the PGlite pass (project pglite); the PGlite-only checks are skipped there, and ${databaseTestFiles(project.config.root).filter(runsOnceOnPostgres).length} files\n` +
        `(test/support/passes.ts, ONCE_ON_POSTGRES: above the store, or the 24-hour findings test) run there only.\n${line}\n`,
    );
  } else if (!process.env.TEST_DATABASE_URL) {
    console.log(
      `\n${line}\nSKIPPING the real-Postgres tests (Postgres restarts, two replicas sharing Postgres and Redis, Redis restarts under them, driver and cancellation checks),\n` +
        `marked [needs TEST_DATABASE_URL]: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run them (.ci/run does).\n${line}\n`,
    );
  }
}
