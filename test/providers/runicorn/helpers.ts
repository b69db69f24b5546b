// Shared test plumbing: where the captured Runicorn fixtures live and a temp copy of their storage.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
// A copy kept in the repository (test/fixtures/README.md says where it came from).
export const FIXTURES = resolve(repoRoot, 'test/fixtures/runicorn');
/** The storage root the fixtures were captured from (machine prefixes already replaced). */
export const CAPTURED_ROOT = '/home/user/.runicorn';

export const FINISHED_RUN = '20261122_023254_c49b36';
export const CRASHED_RUN = '20261122_023302_808751';
export const LIVE_RUN = '20261122_023335_1fce4f';
export const BIG_RUN = '20261122_023412_cb75cc';

export interface IndexEntry {
  file: string;
  method: string;
  path: string;
  query?: string;
  status: number;
  headers: Record<string, string>;
  note: string;
}

export function fixtureIndex(): IndexEntry[] {
  return JSON.parse(readFileSync(join(FIXTURES, 'responses/_index.json'), 'utf8')) as IndexEntry[];
}

export function fixtureJson(rel: string): unknown {
  return JSON.parse(readFileSync(join(FIXTURES, rel), 'utf8'));
}

export function copyFixtureStorage(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'runicorn-fixture-'));
  cpSync(join(FIXTURES, 'storage'), dir, { recursive: true });
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Replaces the captured absolute storage root with the test's temp folder, everywhere in a body. */
export function relocate(body: unknown, root: string): unknown {
  return JSON.parse(JSON.stringify(body).split(CAPTURED_ROOT).join(root));
}

export const signal = () => new AbortController().signal;
