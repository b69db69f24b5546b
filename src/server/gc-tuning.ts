// V8 settings the server process runs with, set once at start (startRuntime).
import v8 from 'node:v8';

let applied = false;

/**
 * How much V8's old generation may grow past what the last full collection left alive before the
 * next one starts, in percent: the limit is (1 + this/100) times the live heap. V8's own factor is
 * dynamic, up to 4x under a high allocation rate, and stays the default: 50 made the collector's
 * RSS flat from 100 to 1,000 jobs but cost it about a fifth more CPU, and its cost to queries is
 * not measured (docs/collection.md). `V8_HEAP_GROWING_PERCENT` sets it (docs/configuration.md).
 */
export const DEFAULT_HEAP_GROWING_PERCENT = 0;

/** The growing percent the server sets (V8_HEAP_GROWING_PERCENT, default 0: V8's own dynamic factor). */
export function heapGrowingPercent(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.V8_HEAP_GROWING_PERCENT;
  if (raw === undefined || raw.trim() === '') return DEFAULT_HEAP_GROWING_PERCENT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 1000) throw new Error(`V8_HEAP_GROWING_PERCENT must be an integer 0-1000 (0: V8's own), got ${JSON.stringify(raw)}`);
  return n;
}

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
 * factor under a high allocation rate) where V8_HEAP_GROWING_PERCENT asks. What the collector's first sweep at 1,000 jobs allocates
 * (each group's answers and statements, held across its writes long enough to be promoted) grew
 * the JS heap in use from 50 to about 200 MiB of garbage before V8 collected it, and the buffers
 * that garbage owns (socket reads, answers' bodies, point columns: malloc'd) with it, 4 -> 40-50
 * MiB; the C allocator keeps the pages such a peak spread over, so the server's RSS after it
 * depended on the job count. With 50%: the heap in use peaked at 73-87 MiB, the malloc heap at
 * 22 MiB instead of 58 (docs/collection.md, "A bounded old generation").
 */
export function tuneGarbageCollector(env: NodeJS.ProcessEnv = process.env): void {
  if (applied) return;
  applied = true;
  // Read by V8 at each young-generation collection, so it takes effect when set at run time.
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
  // Read by V8 at the end of each full collection, when it sets the next one's limit.
  // 0 (the default) sets nothing: V8's own factor.
  const percent = heapGrowingPercent(env);
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
