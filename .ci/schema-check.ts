// The contract's CI checks (run by .ci/run; `npx tsx .ci/schema-check.ts`):
//  1. lint schema/schema.graphql with graphql-eslint's schema and Relay rules, failing on any
//     type, field, argument or enum value without a description (.ci/eslint.schema.mjs);
//  2. compare it with the previous committed version with graphql-inspector and print every
//     change that breaks clients. A breaking change passes only when what it removes was
//     deprecated before, or when CHANGELOG.md names it (the field `Type.field`, its
//     type, or a type the change names, in backticks) and so says why.
// SCHEMA_BASE=<git rev> compares with that revision instead. Exit code 0 when both pass, 1 otherwise.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriticalityLevel, diff, type Change } from '@graphql-inspector/core';
import { ESLint } from 'eslint';
import { buildSchema, type GraphQLSchema } from 'graphql';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCHEMA = 'schema/schema.graphql';

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

async function lint(): Promise<boolean> {
  const eslint = new ESLint({ cwd: ROOT, overrideConfigFile: path.join(ROOT, '.ci/eslint.schema.mjs') });
  const results = await eslint.lintFiles([SCHEMA]);
  const errors = results.reduce((n, r) => n + r.errorCount, 0);
  if (errors > 0) {
    const formatter = await eslint.loadFormatter('stylish');
    console.log(await formatter.format(results));
  }
  console.log(`schema lint: ${errors} error(s)`);
  return errors === 0;
}

/** The schema as it was at its previous change: the committed one if the file has uncommitted changes, else the one before HEAD's. */
function previousSchema(current: string): { text: string; from: string } | null {
  // SCHEMA_PREVIOUS_FILE=<path> compares with that file (the check's own test uses it).
  const file = process.env.SCHEMA_PREVIOUS_FILE;
  if (file) return { text: readFileSync(file, 'utf8'), from: file };
  // SCHEMA_BASE=<rev> compares with that revision instead (e.g. a branch against main).
  const base = process.env.SCHEMA_BASE;
  if (base) return { text: git('show', `${base}:${SCHEMA}`), from: base };
  let commits: string[];
  try {
    commits = git('log', '--format=%H', '--', SCHEMA).split('\n').filter(Boolean);
  } catch {
    return null; // not a git checkout: nothing to compare with
  }
  for (const commit of commits) {
    const text = git('show', `${commit}:${SCHEMA}`);
    if (text !== current) return { text, from: commit.slice(0, 10) };
  }
  return null;
}

function changelogNames(): Set<string> {
  const changelog = readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8');
  return new Set([...changelog.matchAll(/`([A-Za-z_][\w.]*)`/g)].map((m) => m[1]!));
}

function wasDeprecated(schema: GraphQLSchema, coordinate: string): boolean {
  const [typeName, fieldName] = coordinate.split('.');
  const type = typeName ? schema.getType(typeName) : undefined;
  if (!type || !fieldName) return false;
  if ('getFields' in type) return Boolean((type.getFields() as Record<string, { deprecationReason?: string | null }>)[fieldName]?.deprecationReason);
  if ('getValue' in type) return Boolean(type.getValue(fieldName)?.deprecationReason);
  return false;
}

async function breaking(): Promise<boolean> {
  const current = readFileSync(path.join(ROOT, SCHEMA), 'utf8');
  const previous = previousSchema(current);
  if (!previous) {
    console.log('breaking changes: no previous schema to compare with');
    return true;
  }
  const before = buildSchema(previous.text);
  const changes: Change[] = await diff(before, buildSchema(current));
  const breakingChanges = changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking);
  const named = changelogNames();
  let uncovered = 0;
  console.log(`breaking changes against ${SCHEMA} at ${previous.from}: ${breakingChanges.length}`);
  for (const c of breakingChanges) {
    const coordinate = c.path ?? '';
    // Every name quoted in the message: 'Job.nodes', '[ProviderSourceError!]!' -> ProviderSourceError.
    const mentioned = [...c.message.matchAll(/'([^']*)'/g)].flatMap((m) => [...m[1]!.matchAll(/[A-Za-z_][\w.]*/g)].map((x) => x[0]));
    const covered =
      wasDeprecated(before, coordinate) ||
      [coordinate, coordinate.split('.')[0]!, ...mentioned, ...mentioned.map((m) => m.split('.')[0]!)].some((n) => n && named.has(n));
    if (!covered) uncovered++;
    console.log(`  ${covered ? 'ok ' : 'NEW'} ${coordinate ? `${coordinate}: ` : ''}${c.message}`);
  }
  if (uncovered > 0) console.log(`${uncovered} breaking change(s) neither deprecated first nor explained in CHANGELOG.md`);
  return uncovered === 0;
}

const ok = [await lint(), await breaking()].every(Boolean);
process.exit(ok ? 0 : 1);
