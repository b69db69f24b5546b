// The test tree's own rules (issue 18), checked on every run so they hold without anyone
// remembering them: test/ mirrors src/ folder for folder (beside a few named cross-cutting
// suites), and no test file reaches outside the repository for what it reads.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
const TEST = path.join(ROOT, 'test');

/** Suites that test the whole server from outside, and the shared plumbing: not a src/ folder each. */
export const CROSS_CUTTING = {
  contract: 'the public contract: schema checks, real GraphQL clients, partial failure, the README examples',
  deploy: 'the built bundle, the Docker image root and compose',
  e2e: 'a real browser on the live page and GraphiQL',
  reliability: 'Postgres and Redis restarts, the fault matrix',
  security: 'tokens, tenants, hostile input, abandoned and stalled clients',
  repo: "the repository's own rules (this file)",
  support: 'plumbing shared by the tests (databases, runtimes, waits)',
  fixtures: 'real shapes copied from the shared reference material (fixtures/README.md)',
} as const;

/** src/ folders whose code is tested through the folder above them, and why. */
const TESTED_WITH_PARENT: Record<string, string> = {
  'server/plugins': 'the yoga plugins are tested through the server they plug into (test/server, test/security)',
};

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'fixtures' ? [] : filesUnder(p, keep);
    return keep(e.name) ? [p] : [];
  });
}

function srcFolders(dir: string): Set<string> {
  const out = new Set<string>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const rel = path.relative(SRC, path.join(dir, e.name));
    out.add(rel);
    for (const sub of srcFolders(path.join(dir, e.name))) out.add(sub);
  }
  return out;
}

describe('test layout', () => {
  it('puts every test file in the folder of the src/ folder it tests, or in a named cross-cutting suite', () => {
    const folders = srcFolders(SRC);
    const misplaced: string[] = [];
    for (const file of filesUnder(TEST, (n) => n.endsWith('.ts'))) {
      const rel = path.relative(TEST, path.dirname(file));
      const top = rel.split(path.sep)[0]!;
      if (rel === '') misplaced.push(`${path.basename(file)} (at the top of test/)`);
      else if (top in CROSS_CUTTING) continue;
      // A folder of its own below a src/ folder groups one feature's tests (schema/fleet, schema/federation).
      else if (!folders.has(rel) && !folders.has(path.dirname(rel))) misplaced.push(path.relative(TEST, file));
    }
    expect(misplaced).toEqual([]);
  });

  it('has a test folder for every src/ folder that holds code', () => {
    const tested = new Set(filesUnder(TEST, (n) => n.endsWith('.test.ts')).map((f) => path.relative(TEST, path.dirname(f))));
    const untested = [...srcFolders(SRC)].filter((f) => !(f in TESTED_WITH_PARENT) && ![...tested].some((t) => t === f || t.startsWith(`${f}${path.sep}`)));
    expect(untested).toEqual([]);
  });

  it('reads nothing outside the repository', () => {
    const outside: string[] = [];
    for (const file of filesUnder(TEST, (n) => n.endsWith('.ts'))) {
      // Comments left out: they may say where a fixture was copied from.
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      for (const line of code.split('\n')) {
        // A path built from the file's own place (import.meta) that climbs out of the repository.
        if (line.includes('import.meta')) {
          for (const m of line.matchAll(/['"`]((?:\.\.\/?)+[^'"`]*)['"`]/g)) {
            const target = path.resolve(path.dirname(file), m[1]!);
            if (target !== ROOT && !target.startsWith(ROOT + path.sep)) outside.push(`${path.relative(TEST, file)}: ${m[1]}`);
          }
        }
        // The shared reference folder beside the repository, named in any string.
        if (/['"`][^'"`]*\bshared\/(fixtures|seeds|providers)\b/.test(line)) outside.push(`${path.relative(TEST, file)}: names ../shared`);
      }
    }
    expect(outside).toEqual([]);
  });
});
