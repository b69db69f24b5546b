// Longest files first, from the durations measured on this machine (test/support/durations.json,
// refreshed from a whole run's summary by `node scripts/test-durations.mjs --whole <summary.json>`):
// a 4-minute file that starts last keeps the run going minutes after every other worker is idle.
// vitest's own cache orders by the last run's durations too, but a fresh clone (CI) has none and
// falls back to file size, which says little here (test/collect/demo-collection.test.ts is one of
// the smallest).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const DURATIONS = path.join(import.meta.dirname, 'durations.json');

/** Milliseconds a file took, per project (`pglite`, `postgres`). */
type Durations = Record<string, Record<string, number>>;

function measured(): Durations {
  try {
    return JSON.parse(readFileSync(DURATIONS, 'utf8')) as Durations;
  } catch {
    return {};
  }
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const known = measured();
    // vitest's order (its cache, else size) decides among files not measured.
    const base = await super.sort(files);
    const rank = new Map(base.map((f, i) => [f, i]));
    const root = this.ctx.config.root;
    const ms = (f: TestSpecification) => {
      const file = path.relative(root, f.moduleId).split(path.sep).join('/');
      // A file not yet measured on Postgres: its PGlite time is the better guess than none.
      return known[f.project.name]?.[file] ?? known.pglite?.[file] ?? -1;
    };
    const longestFirst = (a: TestSpecification, b: TestSpecification) => ms(b) - ms(a) || rank.get(a)! - rank.get(b)!;
    // One project after the other, each longest first: a worker keeps its process (and the modules
    // of node_modules it loaded, about 1.5 s of CPU a process) only while the next file in the queue
    // is of its own project (vitest.config.ts, isolate: false). Long files of both projects first,
    // then the short ones by project, started a process at each change: 28 processes for four
    // workers in a whole run, where one block a project needs about eight (docs/testing.md,
    // 2026-12-02). The project with the longest file goes first, so no long file starts last.
    const projects = [...new Set(files.map((f) => f.project.name))];
    const blocks = projects.map((name) => files.filter((f) => f.project.name === name).sort(longestFirst));
    blocks.sort((a, b) => ms(b[0]!) - ms(a[0]!));
    return blocks.flat();
  }
}
