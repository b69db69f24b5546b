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

/** A rule of what runs once: the files it takes (of those that use the test database), and why once is enough. */
export interface OnceRule {
  files: RegExp;
  why: string;
}

/**
 * What runs once in a run with both passes: in the PostgreSQL pass, not again on PGlite. Without
 * TEST_DATABASE_URL (`npm test`) these files run on PGlite like every other. The rule: a file runs
 * on both databases when its subject is what the database does (the store's statements, the
 * collector's writes, the findings' and alerts' statements, the leases, the embedded demo's restart,
 * a read cancelled under a stall, the faults and restarts of reliability/); a file whose subject sits
 * above the store's door (the graph's answers and limits, its clients, the HTTP server, the PromQL
 * API, the defences of the surface) reads the same store the same way on either, so running it again
 * on the other database tested the database a second time through a longer path, for about 150 s
 * of CPU a run (docs/testing.md, 2026-12-02). Postgres rather than PGlite: the pool's real
 * concurrency is where two requests' statements can cross (a CI run found topology writes that did,
 * 2026-11-30), and PGlite's single connection serialises them.
 */
export const ONCE_ON_POSTGRES: readonly OnceRule[] = [
  {
    // 85 s of CPU on PGlite on a 2-core machine, the suite's longest file.
    files: /^test\/findings\/no-false-alarms\.test\.ts$/,
    why:
      "the findings rules' verdicts over 24 simulated hours of the healthy demo fleet (about 3.5 million collected points); " +
      "the rules' statement, the points merge and the rollups run on both databases in findings/engine, store/write-points and the store's rollup tests",
  },
  {
    files: /^test\/(schema|contract|promql)\//,
    why: "the graph's resolvers, its clients' view of the contract and the PromQL API: answers read through the store's door, whose statements the store's files run on both databases",
  },
  {
    files: /^test\/server\/(?!demo-restart\.)/,
    why: 'the HTTP server, its limits, exports and executor; demo-restart stays on both (the embedded demo restarted on the data it kept)',
  },
  {
    files: /^test\/security\/(?!stall\.)/,
    why: "the surface's defences (tokens, scopes, hostile input, secrets, budgets); stall stays on both (a read cancelled on Postgres, PGlite's statement gate)",
  },
  {
    files: /^test\/(alerts\/graph|e2e\/collection-lag-page|collect\/budget)\.test\.ts$/,
    why:
      "alerts through the graph (their statements run on both in alerts/delivery), the fleet view's lag line in a browser, and the collector's calls against a platform's budget " +
      "(the collector's writes run on both in the other collect files)",
  },
];

/** Whether a file of the PostgreSQL pass runs there only in a run with both passes (ONCE_ON_POSTGRES). */
export function runsOnceOnPostgres(file: string): boolean {
  return ONCE_ON_POSTGRES.some((rule) => rule.files.test(file));
}
