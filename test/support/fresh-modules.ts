// Runs before each test file. The files of a worker share one process (vitest.config.ts,
// isolate: false), so the dependencies in node_modules (graphql, yoga, Pothos, PGlite, postgres.js,
// OpenTelemetry) load once per worker instead of once per file. Everything of our own is imported
// afresh for every file: module-level state (caches, registries, the simulators' seeded state, the
// metrics' process registry) starts as it would in a process of its own. The environment is put
// back as the worker found it, so a file that sets a variable cannot change the next file's run.
import { vi } from 'vitest';

vi.resetModules();

const ORIGINAL_ENV = Symbol.for('training-graph.test.original-env');
const holder = globalThis as { [ORIGINAL_ENV]?: Record<string, string | undefined> };
const original = holder[ORIGINAL_ENV];
if (!original) {
  holder[ORIGINAL_ENV] = { ...process.env };
} else {
  for (const name of Object.keys(process.env)) if (!(name in original)) delete process.env[name];
  for (const [name, value] of Object.entries(original)) if (value !== undefined) process.env[name] = value;
}
