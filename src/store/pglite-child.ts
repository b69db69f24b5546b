// The child process src/store/pglite.ts forks to run initdb (or write the shared template) in a
// WebAssembly instance of its own, so that memory goes back to the system when it exits. Its own
// entry point, in the sources and in the built dist/ alike.
import { runPgliteChild } from './pglite.js';

const [mode, target] = process.argv.slice(2);
await runPgliteChild(mode, target);
