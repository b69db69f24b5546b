// Summarises a V8 sampling heap profile (.heapprofile: BENCH_COLLECT_ALLOC in bench/collect.ts,
// or node --heap-prof): bytes allocated by function (self and inclusive, a frame counted once per
// stack however often it recurs) and by file. A profile that counted what the GC collected says
// where the garbage comes from, which sets how far the heap grows between major GCs.
// `npx tsx bench/heap-profile-summary.ts <file.heapprofile> [--top 40]`
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '40' } } });
const file = positionals[0];
if (!file) throw new Error('usage: npx tsx bench/heap-profile-summary.ts <file.heapprofile> [--top 40]');
const top = Number(values.top);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };

const short = (url: string) => {
  const u = url.replace(/^file:\/\//, '');
  return u.includes('/node_modules/') ? u.replace(/^.*\/node_modules\//, '') : u.replace(/^.*?\/(src|bench|test)\//, '$1/');
};
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);

function walk(node: HeapNode, onStack: Set<string>): number {
  const cf = node.callFrame;
  const key = `${cf.functionName || '(anonymous)'} ${short(cf.url)}:${cf.lineNumber + 1}`;
  total += node.selfSize;
  add(self, key, node.selfSize);
  add(byFile, short(cf.url) || '(native or generated)', node.selfSize);
  const recurs = onStack.has(key);
  if (!recurs) onStack.add(key);
  let sum = node.selfSize;
  for (const child of node.children) sum += walk(child, onStack);
  if (!recurs) {
    onStack.delete(key);
    add(inclusive, key, sum);
  }
  return sum;
}
walk(profile.head, new Set());

const MiB = (b: number) => (b / 2 ** 20).toFixed(1).padStart(8);
const list = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${MiB(v)} MiB ${((100 * v) / Math.max(1, total)).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
console.log(`allocated in all: ${MiB(total).trim()} MiB`);
console.log(`\nby function (self):\n${list(self, top)}`);
console.log(`\nby function (inclusive):\n${list(inclusive, top)}`);
console.log(`\nby file (self):\n${list(byFile, 25)}`);
