// The PostgreSQL pass runs only the files that use the test database (test/support/passes.ts),
// found by the names through which a file reaches it. That holds while only test/support/ wraps
// those names: a helper elsewhere that opened the test database for the files importing it would
// take those files out of the Postgres pass without anyone noticing.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_NAMES, databaseTestFiles, ONCE_ON_POSTGRES } from '../support/passes.js';

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

  it('runs each file the PGlite pass leaves to it, so a run with both passes runs every file', () => {
    const files = databaseTestFiles(ROOT);
    expect(ONCE_ON_POSTGRES.length).toBeGreaterThan(0);
    for (const f of ONCE_ON_POSTGRES) expect(files).toContain(f);
  });
});
