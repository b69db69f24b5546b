// `npm run bench:live [-- --subscribers 10000 --rounds 5 --interval 2 --heap-snapshot f.heapsnapshot]`:
// N graphql-ws subscribers of one job's utilization on one server process, publish-to-receive
// latency (p50/p99) and server memory per subscriber, beside a baseline measured in the same run:
// a raw `ws` server broadcasting the same bytes to N plain sockets. Servers run in child processes
// so the clients' memory is not counted; both use the same loopback and the same clock. The
// server's RSS per subscriber is split into what V8 keeps committed per heap space (used or not)
// and what lies outside V8's heap.
// A round is a poll that brought points: the simulator's series have a point every 15 s, so most
// 2 s polls send a sample without series (175 bytes), and which rounds were big used to depend on
// the moment the run started. Empty samples still go out between rounds; only the rounds with
// points are timed, and the baseline broadcasts exactly their bytes, round by round.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import { createClient, type Client } from 'graphql-ws';
import WebSocket, { WebSocketServer } from 'ws';

const { values: flags } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
    interval: { type: 'string', default: '2' },
    serve: { type: 'string' },
    'heap-snapshot': { type: 'string' },
    // The baseline's clients parse each message as JSON, as every graphql-ws client does (its
    // parse is most of this process's work: 3,000 x 57 KB a round); --no-raw-parse only matches a regex.
    'raw-parse': { type: 'boolean', default: true },
  },
  allowNegative: true,
});
const N = Number(flags.subscribers);
const ROUNDS = Number(flags.rounds);
const INTERVAL_S = Number(flags.interval);

type Msg = { type: string; [k: string]: unknown };
const gc = () => (globalThis as { gc?: () => void }).gc?.();
/** Server CPU (user + system) in ms: the steadiest figure on a machine other work shares. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** CPU at each event a server sent (a poll's sample, a broadcast round): a round's cost is the CPU until the next. */
const marks: { key: string; cpu: number }[] = [];
const memory = async () => {
  // V8 frees dead ArrayBuffers' memory (sent frames) on a background sweeper after a collection:
  // read `external` once it has had a moment to, or it counts frames already let go.
  gc();
  await new Promise((r) => setTimeout(r, 200));
  gc();
  const m = process.memoryUsage();
  // What V8 keeps committed per space (used or not): with RSS, where the memory above the live heap is.
  const committed: Record<string, number> = {};
  for (const s of getHeapSpaceStatistics()) committed[s.space_name] = s.space_size;
  return { rss: m.rss, heap: m.heapUsed + m.external + m.arrayBuffers, heapUsed: m.heapUsed, external: m.external, committed };
};

// ---- server roles (child processes) ---------------------------------------------------------

async function serveGraphql() {
  const { pino } = await import('pino');
  const { startBasetenSimulator } = await import('../src/simulators/baseten/server.js');
  const { startRuntime } = await import('../src/server/runtime.js');
  const sim = await startBasetenSimulator({
    seed: 'bench-live',
    rateLimit: false,
    fleet: { projects: 1, jobsPerProject: 1, emptyProjects: 0, nodesPerJob: 2, gpusPerNode: 8, statuses: ['TRAINING_JOB_RUNNING'] },
  });
  const rt = await startRuntime({
    config: {
      port: 0,
      host: '127.0.0.1',
      databaseUrl: null,
      dataDir: 'memory://',
      redisUrl: null,
      logLevel: 'silent',
      providers: [{ id: 'bench', kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BENCH_KEY', pollIntervalSeconds: INTERVAL_S }],
    },
    env: { BENCH_KEY: sim.apiKey },
    logger: pino({ level: 'silent' }),
    ws: { maxSubscriptionsPerConnection: 100, connectionInitWaitTimeoutMs: 60_000, maxPayloadBytes: 64 * 1024, keepAliveMs: 60_000 },
  });
  const jobId = `bench:job:${sim.fleet.jobs[0]!.id}`;
  rt.live.hub.bus.on(`live:utilization:${jobId}`, (p) => {
    const sample = p as { type: string; polledAt?: string };
    if (sample.type === 'sample' && sample.polledAt) marks.push({ key: sample.polledAt, cpu: cpuMs() });
  });
  process.on('message', async (m: Msg) => {
    if (m.type === 'memory') process.send!({ type: 'memory', ...(await memory()) });
    if (m.type === 'marks') process.send!({ type: 'marks', marks, cpu: cpuMs() });
    if (m.type === 'subscribers') process.send!({ type: 'subscribers', n: rt.live.hub.stats().subscribers });
    if (m.type === 'heap-snapshot') {
      const { writeHeapSnapshot } = await import('node:v8');
      gc();
      process.send!({ type: 'heap-snapshot', file: writeHeapSnapshot(m.file as string) });
    }
    if (m.type === 'stop')
      void rt
        .close()
        .then(() => sim.close())
        .then(() => process.exit(0));
  });
  process.send!({ type: 'ready', url: rt.url, jobId });
}

async function serveWs() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * 1024 });
  await new Promise((r) => wss.once('listening', r));
  let timer: NodeJS.Timeout | null = null;
  process.on('message', async (m: Msg) => {
    if (m.type === 'memory') process.send!({ type: 'memory', ...(await memory()) });
    if (m.type === 'marks') process.send!({ type: 'marks', marks, cpu: cpuMs() });
    if (m.type === 'broadcast') {
      const templates = m.templates as string[];
      let left = m.rounds as number;
      let round = 0;
      timer = setInterval(() => {
        // The same bytes as the GraphQL `next` message of the same round, stamped with the send time.
        const polledAt = new Date().toISOString();
        marks.push({ key: polledAt, cpu: cpuMs() });
        const bytes = templates[round++ % templates.length]!.replace('__POLLED_AT__', polledAt);
        for (const c of wss.clients) c.send(bytes);
        if (--left <= 0) clearInterval(timer!);
      }, m.intervalMs as number);
    }
    if (m.type === 'stop') {
      if (timer) clearInterval(timer);
      wss.close();
      process.exit(0);
    }
  });
  process.send!({ type: 'ready', url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}` });
}

// ---- driver ---------------------------------------------------------------------------------

function startChild(role: string): Promise<{ child: ChildProcess; ready: Msg }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', role, '--interval', String(INTERVAL_S)], {
    execArgv: [
      '--import',
      'tsx',
      '--expose-gc',
      '--max-old-space-size=8192',
      ...(process.env.LIVE_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LIVE_BENCH_PROFILE}`] : []),
    ],
  });
  return new Promise((resolve) => child.once('message', (ready: Msg) => resolve({ child, ready })));
}

function ask(child: ChildProcess, type: string, extra: Record<string, unknown> = {}): Promise<Msg> {
  return new Promise((resolve) => {
    const on = (m: Msg) => {
      if (m.type === type) {
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
    child.send({ type, ...extra });
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function inBatches<T>(n: number, batch: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += batch) out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, k) => make(i + k)))));
  return out;
}

interface Result {
  latencies: number[];
  memPerSubscriber: { rss: number; heap: number };
  /** V8's committed bytes per subscriber by heap space (same moments as memPerSubscriber). */
  committedPerSubscriber?: Record<string, number>;
  /** Bytes of each timed round's message. */
  bytes: number[];
  /** Heap per subscriber again after the rounds, once every subscriber got a poll without series (nothing in flight). */
  heapAfterRounds?: number;
  /** RSS per subscriber once the timed rounds are over (the measured row is the RSS once they have all joined). */
  rssAfterRounds?: number;
  /** What the subscribers held: heap after the rounds less heap once they left (warm-up garbage cancels out). */
  heapHeld?: number;
  heapHeldParts?: { heapUsed: number; external: number };
  /** Server CPU ms of each timed round (until the next event went out). */
  roundCpuMs: number[];
}

/** What each heap space committed more, per subscriber, from `before` to `after`. */
function perSubscriber(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - (before[k] ?? 0)) / N]));
}

/** The server CPU spent from each of `keys`' events until the next event (or now). */
async function roundCpu(child: ChildProcess, keys: string[]): Promise<number[]> {
  const m = await ask(child, 'marks');
  const marks = m.marks as { key: string; cpu: number }[];
  return keys.map((k) => {
    const i = marks.findIndex((x) => x.key === k);
    return i < 0 ? Number.NaN : (marks[i + 1]?.cpu ?? (m.cpu as number)) - marks[i]!.cpu;
  });
}

async function measureGraphql(): Promise<Result & { templates: string[] }> {
  const { child, ready } = await startChild('graphql');
  // Warm-up: one subscriber makes the server start its feed, open PGlite pages, compile resolvers;
  // memory per subscriber is then measured from there.
  const warm = createClient({ url: `${(ready.url as string).replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
  await new Promise<void>((resolve) => {
    let n = 0;
    warm.subscribe(
      { query: 'subscription($id: ID!) { jobUtilization(jobId: $id) { polledAt } }', variables: { id: ready.jobId } },
      { next: () => ++n === 2 && resolve(), error: () => {}, complete: () => {} },
    );
  });
  const before = await ask(child, 'memory');
  const latencies: number[] = [];
  // The first message of each timed round, in order: the baseline's bytes.
  const templates = new Map<string, string>();
  let received = 0;
  let empty = 0;
  // Samples without series delivered, per poll: one every subscriber got is a quiet moment (the
  // next poll is an interval away), where the heap holds the subscribers' state and nothing in flight.
  const emptyDelivered = new Map<string, number>();
  let quietPolls = 0;
  const clients: Client[] = [];
  const query = `subscription($id: ID!) { jobUtilization(jobId: $id, names: [GPU_UTILIZATION, GPU_MEMORY_USED, CPU_USAGE, MEMORY_USED], maxPoints: 60) { polledAt granularity job { id status } series { id name scope points { timestamp value } } } }`;
  type Series = { id: string }[];
  // 100 subscriptions per connection (the server's cap): N subscribers, N/100 sockets.
  const perSocket = 100;
  const sockets = Math.ceil(N / perSocket);
  let subscribed = 0;
  const firstSeen = new Set<number>();
  await inBatches(sockets, 50, async (_s) => {
    const c = createClient({ url: `${(ready.url as string).replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
    clients.push(c);
    for (let k = 0; k < perSocket && subscribed < N; k++) {
      const id = subscribed++;
      c.subscribe<{ jobUtilization: { polledAt: string; series: Series } }>(
        { query, variables: { id: ready.jobId } },
        {
          next: (r) => {
            const at = Date.now();
            const s = r.data?.jobUtilization;
            if (!s) return;
            // The first sample of each subscriber is the catch-up of its joining, not a broadcast.
            if (!firstSeen.has(id)) {
              firstSeen.add(id);
              return;
            }
            if (s.series.length === 0) {
              empty++;
              const n = (emptyDelivered.get(s.polledAt) ?? 0) + 1;
              emptyDelivered.set(s.polledAt, n);
              if (n === N) quietPolls++;
              return;
            }
            latencies.push(at - Date.parse(s.polledAt));
            received++;
            if (!templates.has(s.polledAt))
              templates.set(s.polledAt, JSON.stringify({ id: '1', type: 'next', payload: { data: { jobUtilization: { ...s, polledAt: '__POLLED_AT__' } } } }));
          },
          error: () => {},
          complete: () => {},
        },
      );
    }
  });
  while (firstSeen.size < N) await new Promise((r) => setTimeout(r, 100));
  const after = await ask(child, 'memory');
  while (received < N * ROUNDS) await new Promise((r) => setTimeout(r, 100));
  const quietBefore = quietPolls;
  while (quietPolls === quietBefore) await new Promise((r) => setTimeout(r, 20));
  const afterRounds = await ask(child, 'memory');
  if (flags['heap-snapshot']) console.log(`heap snapshot: ${(await ask(child, 'heap-snapshot', { file: flags['heap-snapshot'] })).file}`);
  const timed = [...templates.keys()].slice(0, ROUNDS);
  const cpu = await roundCpu(child, timed);
  // The polls without points in the same stretch: a poll's own work and a 175-byte fan-out.
  const emptyCpu = await roundCpu(
    child,
    [...emptyDelivered.keys()].filter((k) => emptyDelivered.get(k) === N),
  );
  const emptyMean = emptyCpu.reduce((x, y) => x + y, 0) / Math.max(1, emptyCpu.length);
  console.log(`samples without series between the timed rounds: ${empty / N}; server CPU per such poll: ${emptyMean.toFixed(0)} ms`);
  await Promise.allSettled(clients.map((c) => c.dispose()));
  while (((await ask(child, 'subscribers')).n as number) > 1) await new Promise((r) => setTimeout(r, 100));
  const left = await ask(child, 'memory');
  await warm.dispose();
  child.send({ type: 'stop' });
  const list = [...templates.values()].slice(0, ROUNDS);
  return {
    heapHeld: ((afterRounds.heap as number) - (left.heap as number)) / N,
    heapHeldParts: {
      heapUsed: ((afterRounds.heapUsed as number) - (left.heapUsed as number)) / N,
      external: ((afterRounds.external as number) - (left.external as number)) / N,
    },
    roundCpuMs: cpu,
    latencies,
    memPerSubscriber: { rss: ((after.rss as number) - (before.rss as number)) / N, heap: ((after.heap as number) - (before.heap as number)) / N },
    committedPerSubscriber: perSubscriber(before.committed as Record<string, number>, after.committed as Record<string, number>),
    heapAfterRounds: ((afterRounds.heap as number) - (before.heap as number)) / N,
    rssAfterRounds: ((afterRounds.rss as number) - (before.rss as number)) / N,
    bytes: list.map((t) => Buffer.byteLength(t)),
    templates: list,
  };
}

async function measureWs(templates: string[]): Promise<Result> {
  const { child, ready } = await startChild('ws');
  const before = await ask(child, 'memory');
  const latencies: number[] = [];
  const sockets = await inBatches(N, 200, async () => {
    const ws = new WebSocket(ready.url as string);
    ws.on('message', (data) => {
      const at = Date.now();
      const text = String(data);
      const polledAt = flags['raw-parse']
        ? (JSON.parse(text) as { payload: { data: { jobUtilization: { polledAt: string } } } }).payload.data.jobUtilization.polledAt
        : /"polledAt":"([^"]+)"/.exec(text)?.[1];
      if (polledAt) latencies.push(at - Date.parse(polledAt));
    });
    await new Promise((r) => ws.once('open', r));
    return ws;
  });
  const after = await ask(child, 'memory');
  child.send({ type: 'broadcast', templates, rounds: ROUNDS, intervalMs: INTERVAL_S * 1000 });
  while (latencies.length < N * ROUNDS) await new Promise((r) => setTimeout(r, 100));
  const marks = (await ask(child, 'marks')).marks as { key: string }[];
  const cpu = await roundCpu(
    child,
    marks.map((x) => x.key),
  );
  for (const s of sockets) s.terminate();
  child.send({ type: 'stop' });
  return {
    latencies,
    memPerSubscriber: { rss: ((after.rss as number) - (before.rss as number)) / N, heap: ((after.heap as number) - (before.heap as number)) / N },
    bytes: templates.map((t) => Buffer.byteLength(t)),
    roundCpuMs: cpu,
  };
}

async function main() {
  console.log(
    `live bench: ${N} subscribers, ${ROUNDS} rounds, poll interval ${INTERVAL_S}s; baseline clients ${flags['raw-parse'] ? 'parse each message as JSON' : 'match a regex (--no-raw-parse)'}`,
  );
  const g = await measureGraphql();
  const w = await measureWs(g.templates);
  const row = (name: string, r: Result) => {
    const s = [...r.latencies].sort((a, b) => a - b);
    return {
      name,
      p50: percentile(s, 50),
      p99: percentile(s, 99),
      rssKiB: r.memPerSubscriber.rss / 1024,
      heapKiB: r.memPerSubscriber.heap / 1024,
      heapAfterRoundsKiB: r.heapAfterRounds === undefined ? null : r.heapAfterRounds / 1024,
      heapHeldKiB: r.heapHeld === undefined ? null : r.heapHeld / 1024,
      cpuMsPerRound: r.roundCpuMs.reduce((x, y) => x + y, 0) / r.roundCpuMs.length,
      samples: s.length,
    };
  };
  const a = row('graphql-ws subscription', g);
  const b = row('raw ws broadcast', w);
  console.log(`messages of the timed rounds: ${g.bytes.join(', ')} bytes`);
  console.log(
    `graphql-ws server heap per subscriber after the rounds: ${a.heapAfterRoundsKiB?.toFixed(1)} KiB; held by the subscribers (after the rounds less after they left): ${a.heapHeldKiB?.toFixed(1)} KiB (V8 heap ${((g.heapHeldParts?.heapUsed ?? 0) / 1024).toFixed(1)}, external ${((g.heapHeldParts?.external ?? 0) / 1024).toFixed(1)})`,
  );
  if (g.committedPerSubscriber) {
    const spaces = Object.entries(g.committedPerSubscriber).filter(([, v]) => Math.abs(v) >= 102.4);
    const total = Object.values(g.committedPerSubscriber).reduce((x, y) => x + y, 0);
    console.log(
      `graphql-ws server RSS per subscriber ${a.rssKiB.toFixed(1)} KiB: V8 committed ${(total / 1024).toFixed(1)} KiB (${spaces.map(([k, v]) => `${k} ${(v / 1024).toFixed(1)}`).join(', ')}), the rest ${(a.rssKiB - total / 1024).toFixed(1)} KiB outside V8's heap; after the rounds ${((g.rssAfterRounds ?? Number.NaN) / 1024).toFixed(1)} KiB`,
    );
  }
  console.log(
    `server CPU per timed round: graphql-ws ${g.roundCpuMs.map((x) => x.toFixed(0)).join(', ')} ms (fan-out and the next poll); raw ws ${w.roundCpuMs.map((x) => x.toFixed(0)).join(', ')} ms`,
  );
  console.log('transport                  p50 ms   p99 ms   server RSS/sub KiB   heap/sub KiB   deliveries');
  for (const r of [a, b]) {
    console.log(
      `${r.name.padEnd(25)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(8)} ${r.rssKiB.toFixed(1).padStart(20)} ${r.heapKiB.toFixed(1).padStart(14)} ${String(r.samples).padStart(12)}`,
    );
  }
  const ratio = (x: number, y: number) => (y > 0 ? (x / y).toFixed(1) : 'n/a (baseline 0)');
  console.log(
    `ratios graphql-ws / raw ws: p50 ${ratio(a.p50, b.p50)}x, p99 ${ratio(a.p99, b.p99)}x, RSS/sub ${ratio(a.rssKiB, b.rssKiB)}x, heap/sub ${ratio(a.heapKiB, b.heapKiB)}x, server CPU/round ${ratio(a.cpuMsPerRound, b.cpuMsPerRound)}x`,
  );
  // For npm run bench, which puts this row in its table.
  console.log(`LIVE_RESULT ${JSON.stringify({ subscribers: N, rounds: ROUNDS, bytes: Math.max(...g.bytes), graphqlWs: a, rawWs: b })}`);
  process.exit(0);
}

if (flags.serve === 'graphql') void serveGraphql();
else if (flags.serve === 'ws') void serveWs();
else void main();
