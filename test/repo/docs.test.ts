// The README stays a front door (issue 39: it had grown to 1,535 lines of which 598 were a dated
// benchmark diary): what the project is, how to set it up, run and test it, five examples, and
// where to go next; detail lives in docs/, which docs/README.md lists. Every relative link of the
// README and docs/ points at a file that exists, and the README's commands are package.json's.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_CONCURRENT } from '../../src/collect/settings.js';
import { PLATFORMS } from '../../src/providers/platforms.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (rel: string) => readFileSync(path.join(ROOT, rel), 'utf8');
const readme = read('README.md');

/** The Markdown files a reader reaches from the README. */
function docs(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}

/** GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens. */
function headingSlugs(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('the README and docs/', () => {
  it('keeps the README under 320 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(320);
  });

  it('names only commands package.json has, and the test command .ci/run runs', () => {
    const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
    const named = [...readme.matchAll(/`npm (?:run )?([\w:-]+)/g)].map((m) => m[1]!).filter((n) => n !== 'ci');
    expect(named.length).toBeGreaterThan(0);
    for (const n of named) expect(scripts, `npm ${n}`).toContain(n);
    expect(readme).toContain('```sh\nnpm test\n```');
    // Both passes are one run of the same command (two vitest projects, docs/testing.md).
    expect(read('.ci/run')).toMatch(/^TEST_DATABASE_URL="\$PG_URL" [^\n]*\bnpm test\b/m);
  });

  it("lists every document of docs/ in the guide, docs/README.md, or in its own folder's README", () => {
    const missing = docs().filter((f) => {
      if (f === 'docs/README.md') return false;
      const guides = ['docs/README.md', path.posix.join(path.posix.dirname(f), 'README.md')].filter((g) => g !== f && existsSync(path.join(ROOT, g)));
      return !guides.some((g) => read(g).includes(`(${path.posix.relative(path.posix.dirname(g), f)})`));
    });
    expect(missing).toEqual([]);
  });

  it('links only to files that exist', () => {
    const broken: string[] = [];
    for (const file of ['README.md', 'CHANGELOG.md', 'patches/README.md', ...docs()]) {
      for (const m of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const [target = '', anchor] = m[1]!.split('#');
        if (/^[a-z]+:/.test(target)) continue;
        const rel = target ? path.posix.join(path.posix.dirname(file), target) : file;
        if (!existsSync(path.join(ROOT, rel))) broken.push(`${file}: ${m[1]}`);
        else if (anchor && rel.endsWith('.md') && !headingSlugs(read(rel)).has(anchor)) broken.push(`${file}: ${m[1]} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("states each platform's collection interval and budget as the code has them", () => {
    const names: Record<string, string> = { BASETEN: 'Baseten', MODELARTS: 'ModelArts', PAI_DLC: 'PAI-DLC', PRIMUS_LENS: 'Primus-Lens', RUNICORN: 'Runicorn' };
    const section = readme.slice(readme.indexOf('## What it collects'), readme.indexOf('## Test'));
    expect(section.length).toBeGreaterThan(0);
    for (const p of PLATFORMS) {
      const name = names[p.kind];
      expect(name, p.kind).toBeDefined();
      expect(section, p.kind).toContain(`${name} ${p.defaultPollSeconds} s`);
      expect(section, p.kind).toContain(`${p.collect.callsPerMinute.toLocaleString('en-US')}/min`);
    }
    expect(section).toContain(`${DEFAULT_MAX_CONCURRENT} at once`);
  });
});
