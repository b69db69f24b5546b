// Run as `node --expose-gc --import tsx test/support/gc-probe.ts` (test/server/gc-tuning.test.ts):
// the server's GC settings (tuneGarbageCollector, as startRuntime sets them, V8_HEAP_GROWING_PERCENT
// from the environment, read as the server reads it: loadConfig), then a workload shaped like a collector's sweep: a live heap that stays,
// and answers that live long enough to be promoted to the old generation (each held while the next
// 63 are made, as a group's answers are held across its writes), then dropped. Prints the live heap
// (after a full collection, the answers under way included) and the highest JS heap in use seen
// while 40 times as many answers went through: the old generation's garbage at its most. Counted
// in allocations, not time: what it prints does not depend on the machine's speed.
import v8 from 'node:v8';
import { DEFAULT_HEAP_GROWING_PERCENT, loadConfig } from '../../src/config/index.js';
import { tuneGarbageCollector } from '../../src/server/gc-tuning.js';

tuneGarbageCollector(loadConfig(process.env).v8HeapGrowingPercent ?? DEFAULT_HEAP_GROWING_PERCENT);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const MiB = (n: number) => n / 2 ** 20;
const used = () => MiB(v8.getHeapStatistics().used_heap_size);

// What the server keeps (caches, maps of jobs): about 80 MiB of small objects (with the answers held: about 100 MiB live).
const kept = Array.from({ length: 100 }, (_, k) => Array.from({ length: 10_000 }, (_, i) => ({ k, i, name: `series-${i}` })));
const HELD = 64;
const answer = (n: number) => ({
  points: Array.from({ length: 2_500 }, (_, i) => ({ ts: n + i, value: i / 7, label: `p${i}` })),
  columns: new Float64Array(4096),
});
const held: ReturnType<typeof answer>[] = [];
for (let n = 0; n < HELD; n++) held.push(answer(n));
gc();
const live = used();
let peak = live;
for (let n = 0; n < HELD * 40; n++) {
  held.push(answer(n));
  held.shift();
  peak = Math.max(peak, used());
}
process.stdout.write(`${JSON.stringify({ liveMiB: Math.round(live), peakMiB: Math.round(peak), kept: kept.length, held: held.length })}\n`);
