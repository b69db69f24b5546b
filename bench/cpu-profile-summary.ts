// Summarises a V8 .cpuprofile (node --cpu-prof): the top frames by self time and by inclusive
// time (a frame counted once per sample however often it recurs), and self time per package
// (node_modules/<package>, src/<folder>, node: internals, native/GC). With the number of requests
// served while profiling, each line also says µs per request.
// `npx tsx bench/cpu-profile-summary.ts <file.cpuprofile> [--top 25] [--requests N] [--focus <regex of frames>]`
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function shortUrl(url: string): string {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  const src = u.search(/\/(src|bench)\//);
  return src >= 0 ? u.slice(src + 1) : u;
}

function packageOf(frame: CallFrame): string {
  const u = frame.url.replace(/^file:\/\//, '');
  if (!u) return frame.functionName.startsWith('(') ? frame.functionName : `(native) ${frame.functionName}`;
  if (u.startsWith('node:')) return 'node: internals';
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = /\/(src\/[^/]+|bench)\//.exec(u);
  return src ? src[1]! : u;
}

function label(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  const where = shortUrl(frame.url);
  return where ? `${name} ${where}:${frame.lineNumber + 1}` : name;
}

const CPU_PSEUDO_FRAMES = new Set(['(idle)', '(root)', '(program)']);
const ROOT_FRAME = new Set(['(root)']);

/** The n largest entries of m, pseudo-frames left out. */
function topEntries(m: Map<string, number>, n: number, skip: ReadonlySet<string>): [string, number][] {
  return [...m]
    .filter(([k]) => !skip.has(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n);
}

/** Each [title, totals, how many] as a blank line, the title and its largest rows. */
function sections(groups: [string, Map<string, number>, number][], skip: ReadonlySet<string>, row: (value: number, name: string) => string): string[] {
  return groups.flatMap(([title, m, n]) => ['', title, ...topEntries(m, n, skip).map(([k, v]) => row(v, k))]);
}

export function summarizeProfile(file: string, opts: { top?: number; requests?: number; focus?: RegExp } = {}): string {
  const top = opts.top ?? 25;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    totalUs += dt;
  });
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const packages = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const key = label(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + us);
    const pkg = packageOf(node.callFrame);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const k = label(byId.get(at)!.callFrame);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const idle = self.get('(idle)') ?? 0;
  const busy = totalUs - idle;
  const perReq = (us: number) => (opts.requests ? ` ${(us / opts.requests).toFixed(1).padStart(7)} µs/req` : '');
  const row = (us: number, name: string) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}%${perReq(us)}  ${name}`;
  const topOf = (m: Map<string, number>, n: number) => topEntries(m, n, CPU_PSEUDO_FRAMES);
  const lines = [
    `profile ${path.basename(file)}: ${(totalUs / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy (not idle)${opts.requests ? `, ${(busy / opts.requests).toFixed(0)} µs busy per request` : ''}`,
    ...sections(
      [
        ['self time by package:', packages, 20],
        ['top self frames:', self, top],
        ['top inclusive frames:', inclusive, top],
      ],
      CPU_PSEUDO_FRAMES,
      row,
    ),
    ...(opts.focus
      ? [
          '',
          `inclusive frames matching ${opts.focus}:`,
          ...topOf(new Map([...inclusive].filter(([k]) => opts.focus!.test(k))), 60).map(([k, us]) => row(us, k)),
        ]
      : []),
  ];
  return lines.join('\n');
}

interface AllocationNode {
  id: number;
  callFrame: CallFrame;
  selfSize: number;
  children: AllocationNode[];
}

/**
 * Summarises a V8 sampling heap profile (HeapProfiler.stopSampling, collected objects included):
 * bytes allocated by package, by frame and inclusive, per request when `requests` is given.
 */
export function summarizeAllocations(file: string, opts: { top?: number; requests?: number } = {}): string {
  const top = opts.top ?? 25;
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: AllocationNode };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const packages = new Map<string, number>();
  let total = 0;
  const walk = (node: AllocationNode, stack: string[]) => {
    const key = label(node.callFrame);
    const here = stack.includes(key) ? stack : [...stack, key];
    if (node.selfSize > 0) {
      total += node.selfSize;
      self.set(key, (self.get(key) ?? 0) + node.selfSize);
      const pkg = packageOf(node.callFrame);
      packages.set(pkg, (packages.get(pkg) ?? 0) + node.selfSize);
      for (const k of here) inclusive.set(k, (inclusive.get(k) ?? 0) + node.selfSize);
    }
    for (const c of node.children) walk(c, here);
  };
  walk(head, []);
  const perReq = (b: number) => (opts.requests ? ` ${(b / opts.requests / 1024).toFixed(1).padStart(7)} KiB/req` : '');
  const row = (b: number, name: string) => `${(b / 2 ** 20).toFixed(1).padStart(8)} MiB ${((100 * b) / total).toFixed(1).padStart(5)}%${perReq(b)}  ${name}`;
  return [
    `allocations ${path.basename(file)}: ${(total / 2 ** 20).toFixed(1)} MiB sampled${opts.requests ? `, ${(total / opts.requests / 1024).toFixed(1)} KiB per request` : ''}`,
    ...sections(
      [
        ['allocated by package:', packages, 20],
        ['top allocating frames:', self, top],
        ['top inclusive frames:', inclusive, top],
      ],
      ROOT_FRAME,
      row,
    ),
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { values, positionals } = parseArgs({
    options: { top: { type: 'string', default: '25' }, requests: { type: 'string' }, focus: { type: 'string' } },
    allowPositionals: true,
  });
  for (const file of positionals) {
    const requests = values.requests ? Number(values.requests) : undefined;
    console.log(summarizeProfile(file, { top: Number(values.top), requests, focus: values.focus ? new RegExp(values.focus) : undefined }));
  }
}
