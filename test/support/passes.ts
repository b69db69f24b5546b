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
