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
 *
 * And bounds the old generation's garbage: V8 starts a full collection once the old generation
 * is (1 + heapGrowingPercent/100) times what the last one left alive, not up to 4 times (its own
 * factor under a high allocation rate) where V8_HEAP_GROWING_PERCENT asks (src/config/). What the collector's first sweep at 1,000 jobs allocates
 * (each group's answers and statements, held across its writes long enough to be promoted) grew
 * the JS heap in use from 50 to about 200 MiB of garbage before V8 collected it, and the buffers
 * that garbage owns (socket reads, answers' bodies, point columns: malloc'd) with it, 4 -> 40-50
 * MiB; the C allocator keeps the pages such a peak spread over, so the server's RSS after it
 * depended on the job count. With 50%: the heap in use peaked at 73-87 MiB, the malloc heap at
 * 22 MiB instead of 58 (docs/collection.md, "A bounded old generation").
 */
export function tuneGarbageCollector(heapGrowingPercent: number): void {
  if (applied) return;
  applied = true;
  // Read by V8 at each young-generation collection, so it takes effect when set at run time.
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
  // Read by V8 at the end of each full collection, when it sets the next one's limit.
  // 0 sets nothing: V8's own factor (the default is 50: DEFAULT_HEAP_GROWING_PERCENT).
  if (heapGrowingPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${heapGrowingPercent}`);
}
