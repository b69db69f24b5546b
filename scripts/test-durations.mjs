// Refreshes test/support/durations.json, the order test/support/sequencer.ts runs files in
// (longest first), from the summaries test/support/summary-reporter.ts wrote (.ci/run keeps one
// at .ci/reports/summary.json): node scripts/test-durations.mjs .ci/reports/summary.json
// Files a summary does not name keep their last measured time, unless the file is gone, or
// `--whole` says the summaries are of a whole run: then a pass they measured keeps only the files
// they name (a file that left the PostgreSQL pass leaves its time there too).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const target = new URL('../test/support/durations.json', import.meta.url);
const root = new URL('..', import.meta.url);
const whole = process.argv.includes('--whole');
const summaries = process.argv.slice(2).filter((a) => a !== '--whole');
if (summaries.length === 0) {
  console.error('usage: node scripts/test-durations.mjs [--whole] <summary.json>...');
  process.exit(2);
}
let durations = {};
try {
  durations = JSON.parse(readFileSync(target, 'utf8'));
} catch {
  // None yet.
}
const measured = new Set();
for (const file of summaries) {
  for (const [pass, files] of Object.entries(JSON.parse(readFileSync(file, 'utf8')).durations ?? {})) {
    durations[pass] = { ...(whole && !measured.has(pass) ? {} : durations[pass]), ...files };
    measured.add(pass);
  }
}
for (const files of Object.values(durations)) {
  for (const name of Object.keys(files)) if (!existsSync(new URL(name, root))) delete files[name];
}
const sorted = Object.fromEntries(
  Object.entries(durations).map(([pass, files]) => [pass, Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)))]),
);
writeFileSync(target, `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test durations: ${Object.entries(sorted).map(([p, f]) => `${Object.keys(f).length} files (${p})`).join(', ')}`);
