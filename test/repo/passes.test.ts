// The PostgreSQL pass runs only the files that use the test database (test/support/passes.ts),
// found by the names through which a file reaches it. That holds while only test/support/ wraps
// those names: a helper elsewhere that opened the test database for the files importing it would
// take those files out of the Postgres pass without anyone noticing.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_NAMES, databaseTestFiles, ONCE_ON_POSTGRES, runsOnceOnPostgres } from '../support/passes.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : tsFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('the PostgreSQL pass', () => {
  it('only test/support/ wraps the test database for other files', () => {
    const helpers = tsFiles(path.join(ROOT, 'test'))
      .filter((f) => !f.endsWith('.test.ts') && !f.includes(`${path.sep}support${path.sep}`))
      .filter((f) => DATABASE_NAMES.test(readFileSync(f, 'utf8')))
      .map((f) => path.relative(ROOT, f));
    expect(helpers).toEqual([]);
  });

  it('holds the files that use the test database and leaves out those that never do', () => {
    const files = databaseTestFiles(ROOT);
    for (const f of ['test/store/read-through.test.ts', 'test/reliability/postgres-restart.test.ts', 'test/security/stall.test.ts']) expect(files).toContain(f);
    for (const f of ['test/repo/layout.test.ts', 'test/live/subscriptions.test.ts', 'test/providers/baseten/adapter.test.ts']) expect(files).not.toContain(f);
  });

  it('takes some files by each rule of ONCE_ON_POSTGRES, and says why', () => {
    const files = databaseTestFiles(ROOT);
    expect(ONCE_ON_POSTGRES.length).toBeGreaterThan(0);
    for (const rule of ONCE_ON_POSTGRES) {
      expect(files.filter((f) => rule.files.test(f)).length, String(rule.files)).toBeGreaterThan(0);
      expect(rule.why.length, String(rule.files)).toBeGreaterThan(40);
    }
    const once = databaseTestFiles(ROOT).filter(runsOnceOnPostgres);
    for (const f of ['test/findings/no-false-alarms.test.ts', 'test/schema/platforms.test.ts', 'test/server/query-cost.test.ts']) expect(once).toContain(f);
  });

  it("runs the store's, the collector's and the database-bound files on both databases", () => {
    const once = databaseTestFiles(ROOT).filter(runsOnceOnPostgres);
    const both = databaseTestFiles(ROOT).filter((f) => !once.includes(f));
    expect(both.filter((f) => f.startsWith('test/store/')).length).toBeGreaterThan(20);
    expect(once.filter((f) => /^test\/(store|lease|reliability|live)\//.test(f))).toEqual([]);
    for (const f of [
      'test/collect/demo-collection.test.ts',
      'test/server/demo-restart.test.ts',
      'test/security/stall.test.ts',
      'test/alerts/delivery.test.ts',
      'test/findings/engine.test.ts',
    ]) {
      expect(both).toContain(f);
    }
  });

  it('leaves out of the once-rules every file with a test only a PGlite pass runs (CI would run it nowhere)', () => {
    const pgliteOnly =
      /\b(runIf\(\s*!\s*REAL_POSTGRES_URL|skipIf\(\s*REAL_POSTGRES_URL|runIf\(\s*!\s*process\.env\.TEST_DATABASE_URL|skipIf\(\s*process\.env\.TEST_DATABASE_URL)/;
    const offending = databaseTestFiles(ROOT)
      .filter(runsOnceOnPostgres)
      .filter((f) => pgliteOnly.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(offending).toEqual([]);
  });
});
