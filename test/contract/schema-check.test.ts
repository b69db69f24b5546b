// The CI contract check (.ci/schema-check.ts) on the real schema: it passes as committed, and a
// removal that was neither deprecated first nor named in CHANGELOG.md fails it (printed),
// while the same removal of a field deprecated before passes.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const current = readFileSync(path.join(ROOT, 'schema/schema.graphql'), 'utf8');

async function check(previous: string): Promise<{ code: number; out: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tg-schema-check-'));
  try {
    const file = path.join(dir, 'previous.graphql');
    writeFileSync(file, previous);
    const tsx = path.join(ROOT, 'node_modules/.bin/tsx');
    try {
      const { stdout } = await promisify(execFile)(tsx, ['.ci/schema-check.ts'], { cwd: ROOT, env: { ...process.env, SCHEMA_PREVIOUS_FILE: file } });
      return { code: 0, out: stdout };
    } catch (err) {
      const e = err as { code: number; stdout: string };
      return { code: e.code, out: e.stdout };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The current schema with one more field on Job, as if this change had removed it. */
const withRemovedField = (directive: string) =>
  current.replace(
    /^type Job implements Node \{\n/m,
    `type Job implements Node {\n  """A field this change removed"""\n  legacyQueueName: String${directive}\n\n`,
  );

describe('.ci/schema-check.ts', () => {
  it('fails on a breaking change neither deprecated first nor in the Changelog, and prints it', async () => {
    const res = await check(withRemovedField(''));
    expect(res.out).toContain('schema lint: 0 error(s)');
    expect(res.out).toMatch(/NEW .*Job\.legacyQueueName/);
    expect(res.code).toBe(1);
  }, 180_000);

  it('passes the same removal when the field was deprecated before', async () => {
    const res = await check(withRemovedField(' @deprecated(reason: "use queue")'));
    expect(res.out).toMatch(/ok .*Job\.legacyQueueName/);
    expect(res.code).toBe(0);
  }, 180_000);
});
