// The run's outcome per pass (vitest project: pglite, postgres) for .ci/run, written as JSON to
// TEST_SUMMARY_FILE: counts, every failed test with its first message lines, files that failed
// to load, errors outside any test, and each file's duration (scripts/test-durations.mjs makes
// test/support/durations.json from it). vitest's JSON report cannot tell the two passes apart:
// both hold the same file paths and test names.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

export interface PassSummary {
  passed: number;
  failed: number;
  skipped: number;
}

export interface RunSummary {
  passes: Record<string, PassSummary>;
  /** `[pass] file > test: message` for each failed test, file that failed to load, and error outside a test. */
  failures: string[];
  /** Errors outside any test (vitest fails the run on them): each counts as one failure. */
  unhandledErrors: number;
  /** Milliseconds each file took, per pass (import, hooks and tests). */
  durations: Record<string, Record<string, number>>;
}

/** The first lines of an error that say what failed (no stack frames). */
function firstLines(message: string, n = 8): string {
  return message
    .split('\n')
    .filter((l) => l.trim() && !/^\s+at /.test(l))
    .slice(0, n)
    .join(' | ');
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<SerializedError>): void {
    const file = process.env.TEST_SUMMARY_FILE;
    if (!file) return;
    const summary: RunSummary = { passes: {}, failures: [], unhandledErrors: unhandled.length, durations: {} };
    for (const m of modules) {
      const pass = m.project.name || 'default';
      const counts = (summary.passes[pass] ??= { passed: 0, failed: 0, skipped: 0 });
      (summary.durations[pass] ??= {})[m.relativeModuleId] = Math.round(m.diagnostic().duration);
      let tests = 0;
      for (const t of m.children.allTests()) {
        tests += 1;
        const r = t.result();
        if (r.state === 'passed') counts.passed += 1;
        else if (r.state === 'failed') {
          counts.failed += 1;
          summary.failures.push(`[${pass}] ${m.relativeModuleId} > ${t.fullName}: ${firstLines(r.errors.map((e) => e.stack || e.message).join('\n'))}`);
        } else counts.skipped += 1;
      }
      // A file that failed to load (or in a hook outside its tests) has no failed test to show for it.
      if (m.state() === 'failed' && (tests === 0 || m.errors().length > 0)) {
        counts.failed += 1;
        summary.failures.push(
          `[${pass}] FAILED to load ${m.relativeModuleId}: ${firstLines(
            m
              .errors()
              .map((e) => e.message)
              .join('\n'),
            3,
          )}`,
        );
      }
    }
    for (const e of unhandled) summary.failures.push(`unhandled error: ${firstLines(e.stack || e.message || String(e), 3)}`);
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
  }
}
