// What Node the project needs, said once and true (issue 45: the README said "Node 20 (and npm
// 11)" while `npm ci` on Node 20 printed 33 engine warnings it never explained). The README's
// Node matches package.json's engines, and the packages it names as declaring a newer Node are
// exactly the lockfile's: a dependency update that adds or drops one fails here until the README
// says so.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a = 0, b = 0, c = 0] = v
    .replace(/^v/, '')
    .split('.')
    .map((x) => Number.parseInt(x, 10) || 0);
  return [a, b, c];
};
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** The engine range forms the lockfile uses: `||` of space-separated `>=x`, `>x`, `<x`, `<=x`, `^x`, `x` (a bare major or version). */
export function admits(range: string, version: string): boolean {
  const v = parse(version);
  return range
    .replace(/(>=|<=|>|<|\^|=)\s+/g, '$1')
    .split('||')
    .some((clause) =>
      clause
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .every((c) => {
          const m = /^(>=|<=|>|<|\^|=)?\s*v?([\d.x*]+)$/.exec(c);
          if (!m) throw new Error(`unknown engine range part "${c}" in "${range}"`);
          const [op = '', raw] = [m[1], m[2]!];
          if (raw === '*' || raw === 'x') return true;
          const t = parse(raw);
          const parts = raw.split('.').filter((x) => /^\d+$/.test(x)).length;
          switch (op) {
            case '>=':
              return cmp(v, t) >= 0;
            case '>':
              return cmp(v, t) > 0;
            case '<':
              return cmp(v, t) < 0;
            case '<=':
              return cmp(v, t) <= 0;
            case '^':
              return v[0] === t[0] && cmp(v, t) >= 0;
            default:
              // "20" is any 20.x; "20.1" any 20.1.x; a full version that one.
              return parts === 1 ? v[0] === t[0] : parts === 2 ? v[0] === t[0] && v[1] === t[1] : cmp(v, t) === 0;
          }
        }),
    );
}

describe('the Node the project needs', () => {
  const least = /^>=\s*(\d+\.\d+)$/.exec(pkg.engines.node)?.[1];

  it("package.json's engines and the README's setup name the same Node", () => {
    expect(least, 'engines.node is ">=<major>.<minor>"').toBeDefined();
    expect(readme).toContain(`Node ${least} or later`);
    expect(readme).not.toMatch(/npm 11\)/);
  });

  it('the packages the README says declare a newer Node are exactly those of the lockfile', () => {
    const newer = new Set<string>();
    for (const [where, p] of Object.entries(lock.packages)) {
      const range = p.engines && !Array.isArray(p.engines) ? p.engines.node : undefined;
      if (!where || !range || admits(range, `${least}.0`)) continue;
      newer.add(where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
    }
    const paragraph = readme.slice(readme.indexOf('`npm ci` warns `EBADENGINE`'), readme.indexOf('prints none.'));
    const named = new Set([...paragraph.matchAll(/`((?:@[\w.-]+\/)?[\w.-]+)`/g)].map((m) => m[1]!).filter((n) => n !== 'npm ci' && n !== 'EBADENGINE'));
    expect([...newer].sort()).toEqual([...named].sort());
  });

  it('reads the range forms the lockfile uses', () => {
    expect(admits('>=22.15.0', '20.19.0')).toBe(false);
    expect(admits('^20.19.0 || >=22.12.0', '20.19.0')).toBe(true);
    expect(admits('18 || 20 || >=22', '20.19.0')).toBe(true);
    expect(admits('^18.18.0 || ^20.9.0 || >=21.1.0', '20.19.0')).toBe(true);
    expect(admits('>=22.12.0', '22.12.0')).toBe(true);
  });
});
