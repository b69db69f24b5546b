// `npm run bench:collect [-- --jobs 100,1000 --interval <s> --sweeps 3 --rounds 1 --quick]`: the collector
// (issue 37) on N running jobs over the five simulators, on the real clock, beside a bare loop that
// makes the same upstream adapter calls (each interval: the job list, then every running job's
// system metrics, training metrics and progress) in the same run, against the same simulators.
// Three processes per size: the simulators (their CPU is not counted), the server with its
// collector on a fresh PostgreSQL database, then the bare loop. Each provider sweeps at its own
// poll interval (Baseten 30 s, Primus-Lens 15 s, ModelArts 60 s, PAI-DLC 30 s, Runicorn 2 s; or
// --interval for all), with the same concurrency on both sides (16 at once in all). Per size:
// sweep lag (a sweep's end minus when it was due) p50/p99 as a share of its provider's interval,
// upstream calls per running job and interval (the simulators count them) against the bare loop's,
// CPU per Baseten interval (the process's user + system time; Postgres's own CPU is another
// process and not in it) and RSS after a GC (once the GC's garbage is freed: memoryAfterGc), each
// side's own (the simulators' fleets and HTTP buffers are in their process), split into V8's
// spaces, external buffers and the rest (the C allocator's arenas). Diagnostics of the collector's
// server, off by default: BENCH_COLLECT_PROFILE (CPU), BENCH_COLLECT_ALLOC (allocations),
// BENCH_COLLECT_HEAP (heap snapshots), BENCH_COLLECT_TRACE (memory over time), BENCH_COLLECT_STATEMENTS
// (statements by kind; see each below).
// --rounds N measures the largest size N times, collector then bare loop each round, and reports
// the median CPU ratio beside each round's (ROUNDS).
// Prints a table and `COLLECT_RESULT {json}` (bench/run.ts reads it); writes bench/results/collect.json.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({
  options: {
    role: { type: 'string' },
    options: { type: 'string' },
    jobs: { type: 'string' },
    interval: { type: 'string' },
    sweeps: { type: 'string' },
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
  },
});
/** Every provider's interval when given; else each provider's own poll interval. */
const INTERVAL_S = flags.interval ? Number(flags.interval) : null;
/** The measured window (after the warm-up: the first sweep fetches each job's recent history): this many of Baseten's intervals, which holds most of the jobs. */
const SWEEPS = Number(flags.sweeps ?? (flags.quick ? 2 : 3));
const WINDOW_MS = SWEEPS * (INTERVAL_S ?? 30) * 1000;
const SIZES = (flags.jobs ?? (flags.quick ? '100,300' : '100,1000')).split(',').map(Number);
/**
 * Rounds at the largest size: each a collector measurement then a bare loop's, one after the other
 * against the same simulators, the CPU ratio of each round and their median reported. One round's
 * ratio moved from 1.18x to 1.85x with the same code half an hour apart (the shared machine's load
 * is not the same for both sides): the rounds pair each collector with a bare loop measured minutes
 * from it, and the median leaves out a round one side of which a neighbour's burst fell on.
 */
const ROUNDS = Math.max(1, Number(flags.rounds ?? 1));
/** Sweeps before measuring: the first (each job's recent history) everywhere, and one steady sweep of Baseten's. */
const warmupSweeps = (providerId: string) => (providerId === 'baseten' ? 2 : 1);
/**
 * Jobs at once per provider in the collector; collections at once across providers in the collector
 * (half its pool of 32; a collection is a group of up to this many jobs) and calls at once in the bare loop.
 */
const CONCURRENT = 16;
/** The first collection of a running job reaches back this far (the default is its whole life, a week at most). */
const FIRST_LOOKBACK_S = 300;

interface SimsReady {
  providers: { config: any; secrets: Record<string, string> }[];
}

// ---- the simulators (child) -------------------------------------------------------------------

async function serveSims(opts: { jobs: number; workDir: string }) {
  const { startBasetenSimulator } = await import('../src/simulators/baseten/server.js');
  const { startPrimusLensSimulator } = await import('../src/simulators/primus-lens/server.js');
  const { startModelArtsDemo } = await import('../src/simulators/modelarts/demo.js');
  const { startPaiDlcDemo } = await import('../src/simulators/pai-dlc/demo.js');
  const { startRunicornDemo } = await import('../src/simulators/runicorn/demo.js');
  // The fixed demo fleets of ModelArts, PAI-DLC and Runicorn (a few running jobs each), Primus-Lens
  // repeated to about a sixth of N, and Baseten the rest: only those two have a size knob.
  const fixed = [await startModelArtsDemo({}), await startPaiDlcDemo({}), await startRunicornDemo({ workDir: opts.workDir })];
  const lensToken = 'ak-bench-collect';
  const lens = await startPrimusLensSimulator({
    prefix: '/lens/v1',
    auth: { mode: 'bearer', token: lensToken },
    replicas: Math.max(1, Math.round(opts.jobs / 6 / 5)),
  });
  const lensRunning = lens.fleet.workloads.filter((w) => w.status === 'Running' && w.cluster === 'gpu-cluster-a').length;
  const baseten = await startBasetenSimulator({
    seed: 'bench-collect',
    rateLimit: false,
    fleet: {
      projects: 10,
      jobsPerProject: Math.max(1, Math.ceil((opts.jobs - lensRunning - 10) / 10)),
      emptyProjects: 0,
      nodesPerJob: 1,
      gpusPerNode: 2,
      statuses: ['TRAINING_JOB_RUNNING'],
    },
  });
  const sims = [baseten, lens];
  const providers: SimsReady['providers'] = [
    { config: { id: 'baseten', kind: 'BASETEN', baseUrl: baseten.url, apiKeyEnv: 'BT_KEY' }, secrets: { BT_KEY: baseten.apiKey } },
    {
      config: { id: 'primus-lens', kind: 'PRIMUS_LENS', baseUrl: lens.baseUrl, cluster: 'gpu-cluster-a', tokenEnv: 'LENS_TOKEN' },
      secrets: { LENS_TOKEN: lensToken },
    },
    ...fixed.map((d) => ({ config: d.config, secrets: d.secrets })),
  ];
  // Counts come from every simulator's per-route counter (ModelArts and PAI-DLC through their
  // control routes, at their origin); Runicorn is files, no calls to count.
  const fixedStats = fixed.flatMap((d) => ('baseUrl' in d.config && d.config.baseUrl ? [{ id: d.config.id, origin: new URL(d.config.baseUrl).origin }] : []));
  process.on('message', async (msg: { id: number; cmd: string }) => {
    if (msg.cmd === 'reset') {
      for (const s of sims) s.resetStats();
      await Promise.all(fixedStats.map((f) => fetch(`${f.origin}/__sim/reset`, { method: 'POST' })));
      process.send!({ id: msg.id });
    } else if (msg.cmd === 'stats') {
      const byProvider: Record<string, Record<string, number>> = {
        baseten: Object.fromEntries(baseten.stats),
        'primus-lens': Object.fromEntries(lens.stats),
      };
      for (const f of fixedStats) byProvider[f.id] = (await (await fetch(`${f.origin}/__sim/stats`)).json()) as Record<string, number>;
      process.send!({ id: msg.id, stats: byProvider });
    } else if (msg.cmd === 'close') {
      await Promise.all([...sims.map((s) => s.close()), ...fixed.map((d) => d.close())]);
      process.send!({ id: msg.id }, () => process.exit(0));
    }
  });
  process.send!({ ready: true, providers } satisfies SimsReady & { ready: true });
}

// ---- the measured roles (children) ------------------------------------------------------------

interface Report {
  cpuMs: number;
  memory: Memory;
  /** Each measured sweep's lag as a share of its provider's interval. */
  lags: number[];
  sweeps: number;
  /**
   * Job-intervals due in the measured window: each provider's running jobs times the window over
   * its interval (what the calls are divided by: sweeps cut by the window's edges, or late, do
   * not change it).
   */
  jobIntervals: number;
  runningJobs: number;
  /** V8's collections over the window: young-generation (scavenges), full (mark-compact), and the main thread's pause in them. */
  gc: GcCount;
}

interface GcCount {
  minor: number;
  major: number;
  pauseMs: number;
}

/**
 * Counts V8's collections from now (`take` stops): the promotion a bounded old generation turns
 * into full collections shows as `major`. The pause is the main thread's; the marking V8's helper
 * threads do is in the process's CPU, not here.
 */
async function countGc(): Promise<{ take: () => GcCount }> {
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  const out: GcCount = { minor: 0, major: 0, pauseMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) out.minor++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) out.major++;
      out.pauseMs += e.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    take: () => {
      observer.disconnect();
      return { ...out, pauseMs: Math.round(out.pauseMs) };
    },
  };
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** Where a process's resident memory is, after a GC (MiB). */
interface Memory {
  /** RSS once the GC's garbage is given back (see memoryAfterGc). */
  rssMiB: number;
  /** RSS read at once after the GC (what this bench reported before): it still holds what V8's background threads are about to free. */
  rssAtGcMiB: number;
  /** The JS heap in use right after the GC (what objects hold, apart from buffers and the allocator's free pages). */
  heapMiB: number;
  /** V8's heap pages resident, by space: new (the young generation, sized by V8 to the allocation rate), old, code, large objects and the rest. */
  v8Spaces: Record<string, number>;
  /** Memory outside the JS heap that JS objects own (buffers, array buffers): allocated with malloc. */
  externalMiB: number;
  /** Resident pages mapped from files (the node binary, shared libraries) and anonymous ones (heaps, malloc, stacks), from /proc/self/status. */
  fileMiB: number | null;
  anonMiB: number | null;
  /** The most RSS the process had at any time (VmHWM): the peak a sweep's work in flight reached. */
  peakMiB: number | null;
  /** Anonymous pages that are neither V8's heap nor external: the C allocator's arenas (what it keeps after a peak) and stacks. */
  nativeMiB: number | null;
}

const MiB = (bytes: number) => bytes / 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * RSS, the JS heap in use and where the rest is, after a GC (MiB). RSS is read once it stops
 * falling: the buffers a GC finds dead are freed by V8's background threads over the next few
 * hundred milliseconds (a bench run at 35 jobs: 247 MiB at once, 213 MiB 250 ms later and after),
 * so a reading taken at once counts garbage the GC has already collected.
 */
const memoryAfterGc = async (): Promise<Memory> => {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await sleep(100);
  gc?.();
  const atGc = process.memoryUsage();
  let rss = atGc.rss;
  for (let i = 0; i < 8; i++) {
    await sleep(250);
    const next = process.memoryUsage().rss;
    const fell = rss - next;
    rss = Math.min(rss, next);
    if (fell < 2 ** 20) break;
  }
  const m = process.memoryUsage();
  const v8 = await import('node:v8');
  const v8Spaces: Record<string, number> = {};
  for (const s of v8.getHeapSpaceStatistics()) v8Spaces[s.space_name.replace(/_space$/, '')] = MiB(s.physical_space_size);
  const status = await import('node:fs').then((fs) => fs.readFileSync('/proc/self/status', 'utf8')).catch(() => '');
  const kb = (field: string) => {
    const hit = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return hit ? Number(hit[1]) / 1024 : null;
  };
  const anonMiB = kb('RssAnon');
  const v8Resident = Object.values(v8Spaces).reduce((a, b) => a + b, 0);
  return {
    rssMiB: MiB(rss),
    rssAtGcMiB: MiB(atGc.rss),
    heapMiB: MiB(atGc.heapUsed),
    v8Spaces,
    externalMiB: MiB(m.external),
    fileMiB: kb('RssFile'),
    anonMiB,
    peakMiB: kb('VmHWM'),
    nativeMiB: anonMiB === null ? null : anonMiB - v8Resident - MiB(m.external),
  };
};

function answer(handlers: Record<string, () => Promise<unknown>>) {
  process.on('message', async (msg: { id: number; cmd: string }) => {
    const h = handlers[msg.cmd];
    const out = h ? await h() : { error: `unknown command ${msg.cmd}` };
    process.send!({ id: msg.id, ...(out as object) }, () => msg.cmd === 'close' && process.exit(0));
  });
}

/**
 * BENCH_COLLECT_PROFILE=<file>: a V8 CPU profile of the collector's server over the measured window,
 * written to <file>-<jobs>.cpuprofile (bench/cpu-profile-summary.ts reads it). The profiler costs
 * CPU itself: a profiled run's CPU figures are not comparable with an unprofiled one's.
 */
const PROFILE_FILE = process.env.BENCH_COLLECT_PROFILE ?? null;
/** BENCH_COLLECT_HEAP=<folder>: a heap snapshot of the collector's server at each size's report (where its memory is). */
const HEAP_DIR = process.env.BENCH_COLLECT_HEAP ?? null;
/**
 * BENCH_COLLECT_TRACE=1: the collector's server samples its memory every 20 ms and prints, at the
 * end of the warm-up and at each report, the highest reading and the collections under way then,
 * each time the C allocator's main heap (brk, `[heap]`) grew by 2 MiB (with the JS heap in use,
 * external buffers and each provider's sweep count), and, at the end of the warm-up, the settled
 * RSS with its anonymous memory by mapping (smapsSplit). The extra GC it runs then is outside the
 * measured window. BENCH_COLLECT_TRACE=gc also forces a GC whenever the heap grew while the JS
 * heap in use is above 120 MiB, and prints what was left: garbage or not (it changes what it measures).
 */
const TRACE = Boolean(process.env.BENCH_COLLECT_TRACE);
/**
 * BENCH_COLLECT_STATEMENTS=1: the collector's server counts the SQL statements drizzle sends over
 * the measured window by their first words, and prints the counts per 30 s at each report (what a
 * group, a list sync or a sweep's reads cost in statements; COPY, begin and commit are not drizzle's).
 */
const STATEMENTS = Boolean(process.env.BENCH_COLLECT_STATEMENTS);
function startTrace(inUse: () => number, what: () => unknown) {
  let top = { rss: 0, heapUsed: 0, external: 0, arrayBuffers: 0, slots: 0 };
  let maxSlots = 0;
  // When the C allocator's main heap (brk: [heap] in /proc/self/maps) grew, and what was under way then.
  const t0 = Date.now();
  let grew: unknown[] = [];
  let heapTop = 0;
  const heapTimer = setInterval(() => {
    const line = /^([0-9a-f]+)-([0-9a-f]+) .*\[heap\]$/m.exec(readFileSync('/proc/self/maps', 'utf8'));
    if (!line) return;
    const size = MiB(Number.parseInt(line[2]!, 16) - Number.parseInt(line[1]!, 16));
    if (Math.abs(size - heapTop) < 2) return;
    heapTop = size;
    const m = process.memoryUsage();
    let afterGc: number | undefined;
    if (process.env.BENCH_COLLECT_TRACE === 'gc' && m.heapUsed > 120 * 2 ** 20) {
      (globalThis as { gc?: () => void }).gc?.();
      afterGc = Math.round(MiB(process.memoryUsage().heapUsed));
    }
    grew.push({
      s: Math.round((Date.now() - t0) / 100) / 10,
      heap: Math.round(size),
      rss: Math.round(MiB(m.rss)),
      used: Math.round(MiB(m.heapUsed)),
      afterGc,
      ext: Math.round(MiB(m.external)),
      slots: inUse(),
      what: what(),
    });
  }, 100);
  heapTimer.unref();
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    const slots = inUse();
    maxSlots = Math.max(maxSlots, slots);
    if (m.rss > top.rss) top = { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, slots };
  }, 20);
  timer.unref();
  return {
    take() {
      const out = { ...Object.fromEntries(Object.entries(top).map(([k, v]) => [k, k === 'slots' ? v : Math.round(MiB(v))])), maxSlots, heapGrew: grew };
      grew = [];
      top = { rss: 0, heapUsed: 0, external: 0, arrayBuffers: 0, slots: 0 };
      maxSlots = 0;
      return out;
    },
  };
}
/** Resident anonymous memory by mapping kind (MiB): the main malloc heap, 64 MiB-aligned thread arenas and the rest. */
function smapsSplit() {
  const text = (() => {
    try {
      return readFileSync('/proc/self/smaps', 'utf8');
    } catch {
      return '';
    }
  })();
  const out: Record<string, number> = {};
  let name = '';
  let size = 0;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      size = (Number.parseInt(head[2]!, 16) - Number.parseInt(head[1]!, 16)) / 2 ** 20;
      // glibc's thread arenas are heaps of at most 64 MiB, each aligned to 64 MiB.
      const start = Number.parseInt(head[1]!, 16);
      name = head[3] || (start % 2 ** 26 === 0 && size <= 64 ? 'thread arenas' : 'other anonymous (V8 pages, stacks)');
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && !name.startsWith('/')) out[name] = (out[name] ?? 0) + Number(rss[1]) / 1024;
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Math.round(v)]));
}
/**
 * BENCH_COLLECT_ALLOC=<file>: a sampling heap profile of the collector's server over the measured
 * window, every allocation counted (also what the GC collected since), written to
 * <file>-<jobs>.heapprofile: what the server allocates per job (the garbage that makes its peak).
 * BENCH_COLLECT_ALLOC_PROMOTED=1 leaves out what died in a young-generation collection: what is
 * left was promoted to the old generation (or is still alive), what fills it between full
 * collections, which V8_HEAP_GROWING_PERCENT=50 starts once it grew by half the live heap.
 */
const ALLOC_FILE = process.env.BENCH_COLLECT_ALLOC ?? null;
const ALLOC_PROMOTED = Boolean(process.env.BENCH_COLLECT_ALLOC_PROMOTED);
/**
 * One inspector session recording a profile of this process: `begin` enables and starts it,
 * `end` names the method that stops it (its answer holds `profile`), `what` is said when written.
 */
function inspectorRecorder(begin: [string, object?][], end: string, what: string) {
  let session: import('node:inspector/promises').Session | null = null;
  return {
    async start() {
      const { Session } = await import('node:inspector/promises');
      session = new Session();
      session.connect();
      for (const [method, params] of begin) await (session.post as (m: string, p?: object) => Promise<unknown>)(method, params);
    },
    async stop(file: string) {
      if (!session) return;
      const { profile } = (await (session.post as (m: string) => Promise<unknown>)(end)) as { profile: unknown };
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
      session = null;
      console.error(`bench:collect: ${what} of the collector's server written to ${file}`);
    },
  };
}
const allocations = inspectorRecorder(
  [
    ['HeapProfiler.enable'],
    ['HeapProfiler.startSampling', { samplingInterval: 32_768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !ALLOC_PROMOTED }],
  ],
  'HeapProfiler.stopSampling',
  'allocation profile',
);
const profiling = inspectorRecorder([['Profiler.enable'], ['Profiler.start']], 'Profiler.stop', 'CPU profile');

async function serveCollector(opts: { sims: SimsReady; databaseUrl: string; jobs: number }) {
  const { pino } = await import('pino');
  const { startRuntime } = await import('../src/server/runtime.js');
  const { loadConfig } = await import('../src/config/index.js');
  const rt = await startRuntime({
    config: {
      port: 0,
      host: '127.0.0.1',
      databaseUrl: opts.databaseUrl,
      dataDir: null,
      redisUrl: null,
      logLevel: 'silent',
      providers: opts.sims.providers.map((p) => ({
        ...p.config,
        ...(INTERVAL_S ? { pollIntervalSeconds: INTERVAL_S } : {}),
        collect: { callsPerMinute: 100_000, maxConcurrent: CONCURRENT, firstLookbackSeconds: FIRST_LOOKBACK_S },
      })),
      collect: { enabled: true },
      databasePoolSize: 2 * CONCURRENT,
      // As the server reads it (V8_HEAP_GROWING_PERCENT): the bench's runs compare its values.
      v8HeapGrowingPercent: loadConfig(process.env).v8HeapGrowingPercent,
    } as any,
    env: Object.assign({}, ...opts.sims.providers.map((p) => p.secrets)),
    logger: pino({ level: 'silent' }),
  });
  const collector = rt.collector!;
  let statements: Map<string, number> | null = null;
  if (STATEMENTS) {
    rt.database.watchStatements((text) => {
      if (!statements) return;
      const kind = text.replace(/\s+/g, ' ').trim().slice(0, 60);
      statements.set(kind, (statements.get(kind) ?? 0) + 1);
    });
  }
  const swept = new Map<string, number>();
  let measuring = false;
  let lags: number[] = [];
  let sweeps = 0;
  collector.events.on('sweep', (id, t) => {
    if (!t.swept) return;
    swept.set(id, (swept.get(id) ?? 0) + 1);
    if (measuring) {
      const status = collector.statuses().get(id)!;
      lags.push((t.endedAt - t.dueAt) / (status.intervalSeconds * 1000));
      sweeps++;
    }
  });
  let cpu0 = 0;
  let gcCount: { take: () => GcCount } | null = null;
  const trace = TRACE
    ? startTrace(
        () => collector.slots().inUse,
        () => collector.sweeps(),
      )
    : null;
  answer({
    warm: async () => {
      const providers = rt.store.providers.all().length;
      while ([...swept].filter(([id, n]) => n >= warmupSweeps(id)).length < providers) await new Promise((r) => setTimeout(r, 200));
      return {};
    },
    mark: async () => {
      if (PROFILE_FILE) await profiling.start();
      if (ALLOC_FILE) await allocations.start();
      if (trace) {
        const peak = trace.take();
        const settled = await memoryAfterGc();
        console.error(
          `bench:collect: trace of the warm-up at ${opts.jobs} jobs`,
          JSON.stringify({
            peak,
            settled: {
              rss: Math.round(settled.rssMiB),
              old: Math.round(settled.v8Spaces.old ?? 0),
              native: Math.round(settled.nativeMiB ?? 0),
              smaps: smapsSplit(),
            },
          }),
        );
      }
      measuring = true;
      lags = [];
      sweeps = 0;
      if (STATEMENTS) statements = new Map();
      gcCount = await countGc();
      cpu0 = cpuMs();
      return {};
    },
    report: async () => {
      const cpu = cpuMs() - cpu0;
      const gc = gcCount!.take();
      measuring = false;
      if (statements) {
        const per30 = (n: number) => Math.round((n * 30_000) / WINDOW_MS);
        const sorted = [...statements].sort((a, b) => b[1] - a[1]);
        const all = sorted.reduce((n, [, c]) => n + c, 0);
        console.error(`bench:collect: statements per 30 s at ${opts.jobs} jobs: ${per30(all)}`);
        for (const [kind, n] of sorted) console.error(`  ${String(per30(n)).padStart(6)}  ${kind}`);
        statements = null;
      }
      if (PROFILE_FILE) await profiling.stop(PROFILE_FILE.replace(/(\.cpuprofile)?$/, `-${opts.jobs}.cpuprofile`));
      if (ALLOC_FILE) await allocations.stop(ALLOC_FILE.replace(/(\.heapprofile)?$/, `-${opts.jobs}.heapprofile`));
      const statuses = [...collector.statuses().values()];
      const running = statuses.reduce((n, s) => n + s.runningJobs, 0);
      const jobIntervals = statuses.reduce((n, s) => n + (s.runningJobs * WINDOW_MS) / (s.intervalSeconds * 1000), 0);
      const memory = await memoryAfterGc();
      if (trace) console.error(`bench:collect: trace of the measured window at ${opts.jobs} jobs`, JSON.stringify({ ...trace.take(), smaps: smapsSplit() }));
      if (HEAP_DIR) (await import('node:v8')).writeHeapSnapshot(path.join(HEAP_DIR, `collector-${opts.jobs}.heapsnapshot`));
      return {
        report: {
          cpuMs: cpu,
          memory,
          lags,
          sweeps,
          jobIntervals,
          runningJobs: running,
          gc,
        } satisfies Report,
      };
    },
    close: async () => {
      await rt.close();
      return {};
    },
  });
  process.send!({ ready: true });
}

async function serveBare(opts: { sims: SimsReady }) {
  const { createAdapter } = await import('../src/providers/registry.js');
  const { LIVE_METRICS } = await import('../src/live/feeds.js');
  const { pollIntervalMs } = await import('../src/live/intervals.js');
  const env = Object.assign({}, ...opts.sims.providers.map((p) => p.secrets));
  const adapters = opts.sims.providers.map((p) => createAdapter(p.config, env));
  let measuring = false;
  let lags: number[] = [];
  let sweeps = 0;
  const lastRunning = new Map<string, number>();
  const intervals = new Map<string, number>();
  const swept = new Map<string, number>();
  let stopped = false;
  // The collector's bound across providers, here too.
  let inUse = 0;
  const waiting: (() => void)[] = [];
  const slot = async () => {
    if (inUse >= CONCURRENT) await new Promise<void>((r) => waiting.push(r));
    else inUse++;
    return () => {
      const next = waiting.shift();
      if (next) next();
      else inUse--;
    };
  };
  const reach = new Map<string, number>();
  const signal = new AbortController().signal;

  // One provider's loop: at a fixed cadence, its job list, then every running job's calls, 16 at once.
  const loop = async (adapter: (typeof adapters)[number], i: number) => {
    const metrics = adapter.capabilities.systemMetrics.filter((m) => LIVE_METRICS.has(m));
    const own = opts.sims.providers[i]!.config.pollIntervalSeconds ?? null;
    const intervalMs = INTERVAL_S ? INTERVAL_S * 1000 : pollIntervalMs({ kind: adapter.kind, pollIntervalSeconds: own });
    intervals.set(adapter.id, intervalMs);
    let dueAt = Date.now();
    while (!stopped) {
      await adapter.listProjects(signal);
      const jobs = [];
      let cursor: string | null = null;
      do {
        const page = await adapter.listJobs(cursor, signal);
        jobs.push(...page.jobs);
        cursor = page.nextCursor;
      } while (cursor);
      const live = jobs.filter((j) => j.status === 'RUNNING');
      let next = 0;
      const worker = async () => {
        while (next < live.length) {
          const j = live[next++]!;
          const release = await slot();
          const key = `${adapter.id}:${j.projectExternalId}:${j.externalId}`;
          const now = Date.now();
          const from = new Date(reach.get(key) ?? now - FIRST_LOOKBACK_S * 1000);
          await adapter.fetchSystemMetrics(j, { from, to: new Date(now), metrics, stepSeconds: 15 }, signal).catch(() => null);
          reach.set(key, now - intervalMs);
          if (adapter.capabilities.trainingMetrics) await adapter.fetchTrainingMetrics?.(j, { from: null, to: null, names: null }, signal).catch(() => null);
          if (adapter.capabilities.progress) await adapter.fetchProgress?.(j, signal).catch(() => null);
          release();
        }
      };
      await Promise.all(Array.from({ length: CONCURRENT }, worker));
      const endedAt = Date.now();
      swept.set(adapter.id, (swept.get(adapter.id) ?? 0) + 1);
      lastRunning.set(adapter.id, live.length);
      if (measuring) {
        lags.push((endedAt - dueAt) / intervalMs);
        sweeps++;
      }
      // Fixed cadence, as the collector's: the next sweep one interval after this one was due.
      dueAt += intervalMs;
      await new Promise((r) => setTimeout(r, Math.max(0, dueAt - Date.now())));
    }
  };
  const loops = adapters.map((a, i) => loop(a, i).catch((err) => console.error(`bare loop ${a.id}:`, err)));
  let cpu0 = 0;
  let gcCount: { take: () => GcCount } | null = null;
  answer({
    warm: async () => {
      while ([...swept].filter(([id, n]) => n >= warmupSweeps(id)).length < adapters.length) await new Promise((r) => setTimeout(r, 200));
      return {};
    },
    mark: async () => {
      measuring = true;
      lags = [];
      sweeps = 0;
      gcCount = await countGc();
      cpu0 = cpuMs();
      return {};
    },
    report: async () => {
      const cpu = cpuMs() - cpu0;
      const gc = gcCount!.take();
      measuring = false;
      const running = [...lastRunning.values()].reduce((a, b) => a + b, 0);
      const jobIntervals = [...lastRunning].reduce((n, [id, jobs]) => n + (jobs * WINDOW_MS) / intervals.get(id)!, 0);
      const memory = await memoryAfterGc();
      return {
        report: {
          cpuMs: cpu,
          memory,
          lags,
          sweeps,
          jobIntervals,
          runningJobs: running,
          gc,
        } satisfies Report,
      };
    },
    close: async () => {
      stopped = true;
      await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 20_000))]);
      return {};
    },
  });
  process.send!({ ready: true });
}

// ---- the driver ---------------------------------------------------------------------------------

interface Child {
  ready: any;
  request(cmd: string): Promise<any>;
  close(): Promise<void>;
}

function startRole(role: string, options: unknown): Promise<Child> {
  const child: ChildProcess = fork(
    fileURLToPath(import.meta.url),
    // The window too (--sweeps): a child's own figures per 30 s and per interval (statements, calls per job) are over it.
    ['--role', role, '--options', JSON.stringify(options), '--sweeps', String(SWEEPS), ...(INTERVAL_S ? ['--interval', String(INTERVAL_S)] : [])],
    {
      execArgv: ['--expose-gc', '--import', 'tsx'],
      env: { ...process.env, NODE_ENV: 'production' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench/collect.ts --role ${role} exited (${code}) before it was ready`)));
    child.once('message', (ready: any) => {
      child.removeAllListeners('exit');
      let seq = 0;
      const request = (cmd: string) =>
        new Promise<any>((done) => {
          const id = ++seq;
          const on = (r: any) => r.id === id && (child.off('message', on), done(r));
          child.on('message', on);
          child.send({ cmd, id });
        });
      resolve({
        ready,
        request,
        close: () =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => (child.kill('SIGKILL'), done()), 30_000);
            child.once('exit', () => (clearTimeout(timer), done()));
            void request('close');
          }),
      });
    });
  });
}

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const total = (stats: Record<string, Record<string, number>>) =>
  Object.values(stats).reduce((n, routes) => n + Object.entries(routes).reduce((m, [, c]) => m + c, 0), 0);

interface SideResult {
  /** Sweep lag p50 and p99 as a share of the provider's interval (1 = a whole interval late). */
  lagP50: number;
  lagP99: number;
  /** CPU per 30 s (Baseten's interval) of the measured window. */
  cpuMsPerInterval: number;
  rssMiB: number;
  heapMiB: number;
  memory: Memory;
  gc: GcCount;
  calls: number;
  callsPerJobInterval: number;
  runningJobs: number;
  sweeps: number;
  callsByProvider: Record<string, Record<string, number>>;
}

async function measure(role: 'collector' | 'bare', sims: Child, options: Record<string, unknown>): Promise<SideResult> {
  const side = await startRole(role, { sims: sims.ready, ...options });
  try {
    await side.request('warm');
    await sims.request('reset');
    await side.request('mark');
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const { report } = (await side.request('report')) as { report: Report };
    const { stats } = await sims.request('stats');
    const calls = total(stats);
    return {
      lagP50: pct(report.lags, 50),
      lagP99: pct(report.lags, 99),
      cpuMsPerInterval: report.cpuMs / (WINDOW_MS / 30_000),
      rssMiB: report.memory.rssMiB,
      heapMiB: report.memory.heapMiB,
      gc: report.gc,
      memory: report.memory,
      calls,
      callsPerJobInterval: calls / Math.max(1, report.jobIntervals),
      runningJobs: report.runningJobs,
      sweeps: report.sweeps,
      callsByProvider: stats,
    };
  } finally {
    await side.close();
  }
}

async function main() {
  const results: { jobs: number; collector: SideResult; bare: SideResult; round?: number }[] = [];
  /** Each round at the largest size (ROUNDS): its collector and bare loop, measured one after the other. */
  const rounds: { collector: SideResult; bare: SideResult; cpuRatio: number }[] = [];
  const every = INTERVAL_S ? `every ${INTERVAL_S} s` : "each provider's interval";
  for (const [i, jobs] of SIZES.entries()) {
    const workDir = mkdtempSync(path.join(tmpdir(), 'tg-bench-collect-'));
    const sims = await startRole('sims', { jobs, workDir });
    try {
      const { freshPostgresDatabase } = await import('./children.js');
      const times = i === SIZES.length - 1 ? ROUNDS : 1;
      for (let round = 1; round <= times; round++) {
        const db = await freshPostgresDatabase(flags.db!, 'bench_collect');
        let collector: SideResult;
        const of = times > 1 ? ` (round ${round} of ${times})` : '';
        try {
          console.error(`bench:collect: ${jobs} jobs, the collector${of} (${every}, ${WINDOW_MS / 1000} s measured)`);
          collector = await measure('collector', sims, { databaseUrl: db.url, jobs });
        } finally {
          await db.drop();
        }
        console.error(`bench:collect: ${jobs} jobs, the bare loop${of}`);
        const bare = await measure('bare', sims, {});
        results.push({ jobs, collector, bare, ...(times > 1 ? { round } : {}) });
        if (i === SIZES.length - 1) {
          const cpuRatio = collector.cpuMsPerInterval / Math.max(1e-9, bare.cpuMsPerInterval);
          rounds.push({ collector, bare, cpuRatio });
          if (times > 1)
            console.error(
              `bench:collect: round ${round}: CPU ${Math.round(collector.cpuMsPerInterval)} / ${Math.round(bare.cpuMsPerInterval)} ms per 30 s, ${cpuRatio.toFixed(2)}x`,
            );
        }
      }
    } finally {
      await sims.close();
      rmSync(workDir, { recursive: true, force: true });
    }
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const small = results[0]!;
  // The round whose ratio is the median (the lower middle one of an even count) stands for the
  // largest size: its lag, calls and memory are one run's, read together.
  const byRatio = [...rounds].sort((a, b) => a.cpuRatio - b.cpuRatio);
  const large = byRatio[Math.floor((byRatio.length - 1) / 2)]!;
  const callsRatio = large.collector.callsPerJobInterval / Math.max(1e-9, large.bare.callsPerJobInterval);
  const cpuRatio = median(rounds.map((r) => r.cpuRatio));
  const cpuRatios = rounds.map((r) => r.cpuRatio);
  // RSS at the largest size: the median of its rounds (each a fresh server), against the small size's one run.
  const largeRss = median(rounds.map((r) => r.collector.rssMiB));
  const largeRssAtGc = median(rounds.map((r) => r.collector.memory.rssAtGcMiB));
  const rssGrowth = largeRss / Math.max(1e-9, small.collector.rssMiB);
  const rssAtGcGrowth = largeRssAtGc / Math.max(1e-9, small.collector.memory.rssAtGcMiB);
  const met = {
    lag: large.collector.lagP99 <= 1,
    // Counted over a window whose edges cut sweeps: within 5% is the same calls.
    calls: callsRatio <= 1.05,
    cpu: cpuRatio <= 1.5,
    rss: rssGrowth <= 1.25,
  };
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const roundsText = rounds.length > 1 ? ` (median of ${rounds.length} rounds: ${cpuRatios.map((r) => `${r2(r)}x`).join(', ')})` : '';
  const row = {
    scenario: `collector, ${large.collector.runningJobs.toLocaleString('en')} running jobs over the five simulators, ${every}`,
    measured: `lag p50 ${r2(large.collector.lagP50)}, p99 ${r2(large.collector.lagP99)} intervals; ${r2(large.collector.callsPerJobInterval)} calls per job and interval; CPU ${Math.round(large.collector.cpuMsPerInterval)} ms per 30 s, ${r2(cpuRatio)}x the bare loop${roundsText}; RSS ${Math.round(small.collector.rssMiB)} MiB at ${small.collector.runningJobs} jobs, ${Math.round(largeRss)} MiB at ${large.collector.runningJobs} (read at once after the GC: ${Math.round(small.collector.memory.rssAtGcMiB)} and ${Math.round(largeRssAtGc)})`,
    baseline: `bare loop, same calls: lag p99 ${r2(large.bare.lagP99)} intervals; ${r2(large.bare.callsPerJobInterval)} calls per job and interval; CPU ${Math.round(large.bare.cpuMsPerInterval)} ms per 30 s; RSS ${Math.round(large.bare.rssMiB)} MiB`,
    ratio: cpuRatio,
    goal: 'lag p99 <= 1 interval, calls = minimum (the bare loop), CPU <= 1.5x, RSS flat (<= 1.25x) from 100 to 1,000 jobs',
    met: met.lag && met.calls && met.cpu && met.rss,
  };
  const out = {
    at: new Date().toISOString(),
    intervalSeconds: INTERVAL_S,
    measuredSeconds: WINDOW_MS / 1000,
    concurrent: CONCURRENT,
    v8HeapGrowingPercent: process.env.V8_HEAP_GROWING_PERCENT ?? null,
    rounds: rounds.length,
    results,
    row,
    met,
    callsRatio,
    cpuRatio,
    cpuRatios,
    rssGrowth,
    rssAtGcGrowth,
  };
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(path.join(HERE, 'results', 'collect.json'), JSON.stringify(out, null, 2));
  const sides = results.flatMap(
    (r) =>
      [
        ['collector', r.collector, r.round],
        ['bare loop', r.bare, r.round],
      ] as const,
  );
  console.log(
    '| jobs | side | lag p50 / p99 (intervals) | calls per job and interval | CPU per 30 s (ms) | RSS (MiB) | JS heap (MiB) | collections in the window: minor / major (pause ms) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, s, round] of sides) {
    console.log(
      `| ${s.runningJobs}${round ? ` (round ${round})` : ''} | ${name} | ${r2(s.lagP50)} / ${r2(s.lagP99)} | ${r2(s.callsPerJobInterval)} | ${Math.round(s.cpuMsPerInterval)} | ${Math.round(s.rssMiB)} | ${Math.round(s.heapMiB)} | ${s.gc.minor} / ${s.gc.major} (${s.gc.pauseMs}) |`,
    );
  }
  console.log('');
  console.log(
    '| jobs | side | RSS (at once after the GC; peak) | file-backed | V8 heap resident (new / old / code / large objects / other) | external | native (malloc, stacks) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, s, round] of sides) {
    const m = s.memory;
    const sp = m.v8Spaces;
    const other = Object.entries(sp)
      .filter(([k]) => !['new', 'old', 'code', 'large_object'].includes(k))
      .reduce((a, [, v]) => a + v, 0);
    const v8 = [sp.new, sp.old, sp.code, sp.large_object, other].map((x) => Math.round(x ?? 0)).join(' / ');
    const o = (x: number | null) => (x === null ? '' : Math.round(x));
    console.log(
      `| ${s.runningJobs}${round ? ` (round ${round})` : ''} | ${name} | ${Math.round(m.rssMiB)} (${Math.round(m.rssAtGcMiB)}; ${o(m.peakMiB)}) | ${o(m.fileMiB)} | ${v8} | ${Math.round(m.externalMiB)} | ${o(m.nativeMiB)} |`,
    );
  }
  if (rounds.length > 1) console.log(`\nCPU ratio by round: ${cpuRatios.map((r) => `${r2(r)}x`).join(', ')}; median ${r2(cpuRatio)}x`);
  console.log(`COLLECT_RESULT ${JSON.stringify({ row, met, callsRatio, cpuRatio, rssGrowth })}`);
}

if (flags.role) {
  const options = JSON.parse(flags.options ?? '{}');
  if (flags.role === 'sims') await serveSims(options);
  else if (flags.role === 'collector') await serveCollector(options);
  else if (flags.role === 'bare') await serveBare(options);
} else {
  await main();
  process.exit(0);
}
