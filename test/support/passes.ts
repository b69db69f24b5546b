// Which test files the PostgreSQL pass runs. A file whose setup never reaches TEST_DATABASE_URL
// (a provider adapter against its simulator, the live tests on their in-memory PGlite, the repo
// checks) runs the same test twice when the suite runs again on Postgres: those run once, in the
// PGlite pass. A file reaches the test database through test/support/database.ts or
// startTestServer, or reads the variable itself; test/repo/passes.test.ts keeps that the only way.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The names through which a test file reaches the database TEST_DATABASE_URL names. */
export const DATABASE_NAMES =
  /\b(createTestDatabase|databaseOnOldLayout|openTestRepository|useTestRepository|startTestServer|REAL_POSTGRES_URL|TEST_DATABASE_URL)\b/;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : testFiles(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** The test files (relative to `root`, with / separators) whose setup uses the test database. */
export function databaseTestFiles(root: string): string[] {
  return testFiles(path.join(root, 'test'))
    .filter((f) => DATABASE_NAMES.test(readFileSync(f, 'utf8')))
    .map((f) => path.relative(root, f).split(path.sep).join('/'))
    .sort();
}

/**
 * Files that run in one pass of a run with both: the PostgreSQL one. Their subject does not depend
 * on the database, and each costs minutes of CPU a pass; what of them does depend on it (the
 * statements they drive) runs in both passes through the files named with each. Without
 * TEST_DATABASE_URL (`npm test`) they run on PGlite.
 */
export const ONCE_ON_POSTGRES = [
  // The findings rules' verdicts over 24 simulated hours of the healthy demo fleet (about 3.5 million
  // collected points; 85 s of CPU on PGlite on a 2-core machine, the suite's longest file). The rules'
  // statement, the points merge and the rollups run on both databases in findings/engine,
  // store/write-points and the store's rollup tests.
  'test/findings/no-false-alarms.test.ts',
];
