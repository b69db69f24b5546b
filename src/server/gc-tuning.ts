// V8 settings the server process runs with, set once at start (startRuntime).
import v8 from 'node:v8';

let applied = false;

/**
 * Turns off V8's allocation-site pretenuring. V8 watches which allocation sites' objects survive
 * young-generation collections and, past a threshold, allocates that site's objects straight into
 * the old generation. Under load our request objects survive while their SQL reads are in flight
 * (a warm job list: 20-100 requests waiting on Postgres at once), so V8 learned to pretenure the
 * sites that every request shares (yoga's, envelop's, the resolvers'), and every request after
 * that filled the old generation with garbage: measured with `npx tsx bench/load-profile.ts
 * --before list --scenarios list,trivial`, garbage collection per trivial query went from 2.3 to
 * 13.5 µs after a job-list load, and per job list from 46 to 67 µs (issue 22). Short-lived
 * objects are what a request server allocates; the young generation is where they belong.
 */
export function tuneGarbageCollector(): void {
  if (applied) return;
  applied = true;
  // Read by V8 at each young-generation collection, so it takes effect when set at run time.
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}
