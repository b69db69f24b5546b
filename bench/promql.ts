// `npm run bench:promql`: the Prometheus query API (src/promql) against the real Prometheus
// (Debian's /usr/bin/prometheus) holding the same samples, in one run. 1,000 accelerator series
// (25 jobs x 5 nodes x 8 GPUs, the scrape families' names and labels) over 24 h at one sample per
// --interval seconds are written (a) into a fresh store through the store's own write path
// (catalog, topology, series, then points by COPY), and (b) as OpenMetrics into
// `promtool tsdb create-blocks-from openmetrics` (backfill), whose blocks a Prometheus on loopback
// then serves. Each query_range (24 h at a 60 s step) runs on both, alternating which goes first,
// after one warm-up each; the table gives medians and the ratio ours / Prometheus (goal <= 2x),
// and every answer is checked to be the same on both (series and values within 1e-9 relative), so
// the two did the same work. Written to bench/results/promql.json. Flags: --postgres / --pglite
// (one database only; both by default), --db <url> (admin URL where a fresh database is created),
// --quick (3 of the queries, 3 rounds), --only <regex> (the queries whose name matches, instead),
// --rounds <n>, --interval <s> (sample spacing, default 60).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadSecurityConfig } from '../src/config/security.js';
import { SCRAPE_FAMILIES, scrapeLabels } from '../src/domain/scrape-families.js';
import { jobGlobalId } from '../src/domain/ids.js';
import type { JobRecord, NodeRecord, SeriesData } from '../src/domain/types.js';
import { startRuntime, type Runtime } from '../src/server/runtime.js';
import { seriesIdentity, type PointWriteRow } from '../src/store/repository.js';
import { freePort, freshServerDatabase } from './children.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const { values: flags } = parseArgs({
  options: {
    pglite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' },
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    interval: { type: 'string', default: '60' },
    only: { type: 'string' },
  },
});
const ROUNDS = Number(flags.rounds ?? (flags.quick ? 3 : 5));
const INTERVAL_MS = Number(flags.interval) * 1000;
const JOBS = 25;
const NODES = 5;
const GPUS = 8;
const DAY_MS = 24 * 3600_000;
const STEP_S = 60;
// Within Prometheus' retention and an hour clear of its head block: the last whole hour but one.
const END = Math.floor(Date.now() / 3600_000) * 3600_000 - 3600_000;
const START = END - DAY_MS;
const PROVIDER = 'bt';
const FAMILY = SCRAPE_FAMILIES.GPU_UTILIZATION!.family;

/** `quick`: the three --quick runs. */
const ALL_QUERIES = [
  { name: 'selector, all 1,000 series', q: FAMILY, quick: true },
  { name: 'avg by (provider)', q: `avg by (provider) (${FAMILY})`, quick: true },
  { name: 'sum by (job)', q: `sum by (job) (${FAMILY})` },
  { name: 'min by (node)', q: `min by (node) (${FAMILY})` },
  { name: 'max by (job)', q: `max by (job) (${FAMILY})` },
  { name: 'count by (project)', q: `count by (project) (${FAMILY})` },
  { name: 'max_over_time [5m], 1,000 series', q: `max_over_time(${FAMILY}[5m])`, quick: true },
  { name: 'topk(5)', q: `topk(5, ${FAMILY})` },
  { name: 'matcher =~ (a fifth of the jobs)', q: `${FAMILY}{job=~"job-0[0-4]"}` },
];
const ONLY = flags.only ? new RegExp(flags.only) : null;
const QUERIES = ALL_QUERIES.filter((q) => (ONLY ? ONLY.test(q.name) : q.quick || !flags.quick));

const started = performance.now();
const log = (...a: unknown[]) => console.error(`[${((performance.now() - started) / 1000).toFixed(1)}s]`, ...a);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

// ---- the samples ------------------------------------------------------------------------------

const jobRecords: JobRecord[] = Array.from({ length: JOBS }, (_, j) => ({
  externalId: `job-${String(j).padStart(2, '0')}`,
  projectExternalId: `proj-${j % 5}`,
  projectName: `project-${j % 5}`,
  name: `job-${String(j).padStart(2, '0')}`,
  status: 'RUNNING',
  rawStatus: 'TRAINING_JOB_RUNNING',
  createdAt: new Date(START - 3600_000),
  startedAt: new Date(START - 3600_000),
  finishedAt: null,
  gpuType: 'H100',
  gpuCount: NODES * GPUS,
  acceleratorKind: 'GPU',
}));
const nodesOf = (j: JobRecord): NodeRecord[] =>
  Array.from({ length: NODES }, (_, n) => ({
    externalId: `${j.externalId}-n${n}`,
    name: `${j.externalId}-n${n}`,
    gpus: Array.from({ length: GPUS }, (_, g) => ({ index: g, model: 'H100', memoryTotalBytes: 80e9 })),
  }));
const seriesOf = (nodes: NodeRecord[]): SeriesData[] =>
  nodes.flatMap((n) =>
    n.gpus.map((g) => ({
      kind: 'system' as const,
      name: 'GPU_UTILIZATION',
      rawName: 'gpu_utilization',
      unit: 'RATIO' as const,
      scope: 'GPU' as const,
      nodeExternalId: n.externalId,
      gpuIndex: g.index,
      source: 'baseten',
      stage: null,
      keyedBy: 'time' as const,
      meta: {},
      points: [],
    })),
  );
const TIMES: number[] = [];
// Samples 7 s after each interval boundary: evaluation times never land on a sample.
for (let t = START + 7_000; t <= END; t += INTERVAL_MS) TIMES.push(t);
/**
 * Series i's value at sample k: fixed pseudo-random in [0, 1), distinct across series at each
 * sample (no topk ties), written as JavaScript's shortest round-trip decimal (Go reads the same float).
 */
const P = 1_000_000_007;
const sampleValue = (i: number, k: number) => String((((i + 1) * 2654435761 + k * 40503) % P) / P);

interface Labelled {
  labels: Record<string, string>;
  index: number;
}

// ---- the store ----------------------------------------------------------------------------------

async function openStore(pglite: boolean): Promise<{ runtime: Runtime; series: Labelled[]; close(): Promise<void> }> {
  const database = await freshServerDatabase(
    pglite ? { pgliteDir: mkdtempSync(path.join(tmpdir(), 'tg-bench-promql-pglite-')) } : { postgres: flags.db!, prefix: 'tg_bench_promql' },
  );
  const runtime = await startRuntime({
    config: {
      ...database.config,
      // Never called: the query API reads the store only, and no collector runs (no `collect`).
      providers: [{ id: PROVIDER, kind: 'BASETEN', baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'BT_KEY', timeoutSeconds: 5 }],
      // The default limits but the time-out: a slow answer is measured, not cut off at 2 minutes.
      security: loadSecurityConfig({ EXECUTION_TIMEOUT_MS: '1800000' }),
    },
    env: { BT_KEY: 'unused' },
    logger: pino({ level: 'silent' }),
  });
  const repo = runtime.readThrough.repo;
  const seenAt = new Date(END);
  await repo.upsertCatalog(PROVIDER, [], jobRecords, seenAt);
  const jobs = await repo.jobsByIds(jobRecords.map((j) => jobGlobalId(PROVIDER, j.externalId)));
  const byExternal = new Map(jobs.map((j) => [j.externalId, j]));
  const entries = jobRecords.map((r) => ({ job: byExternal.get(r.externalId)!, nodes: nodesOf(r) }));
  await repo.writeTopology(PROVIDER, entries, seenAt);
  const withSeries = entries.map((e) => ({ job: e.job, series: seriesOf(e.nodes) }));
  const ids = await repo.writeSeriesRows(PROVIDER, withSeries);
  const series: { id: number; labels: Labelled }[] = [];
  for (const { job, series: list } of withSeries) {
    for (const s of list) {
      const labels = scrapeLabels({
        name: s.name,
        scope: s.scope,
        providerId: PROVIDER,
        jobId: job.id,
        jobName: job.name,
        projectName: jobRecords.find((r) => r.externalId === job.externalId)!.projectName!,
        nodeName: s.nodeExternalId,
        gpuIndex: s.gpuIndex,
        model: 'H100',
        acceleratorKind: 'GPU',
      });
      series.push({ id: ids.get(seriesIdentity(PROVIDER, job, s).key)!, labels: { labels, index: series.length } });
    }
  }
  // 40 series (~58,000 points) per write: one COPY each.
  for (let from = 0; from < series.length; from += 40) {
    const rows: PointWriteRow[] = [];
    for (const s of series.slice(from, from + 40)) {
      for (let k = 0; k < TIMES.length; k++) rows.push([s.id, TIMES[k]!, TIMES[k]!, null, Number(sampleValue(s.labels.index, k))]);
    }
    await repo.writePoints(rows, { expectNew: true });
  }
  await repo.maintainStatistics(series.length * TIMES.length);
  if (!pglite) await (runtime.database.db as any).$client.unsafe('analyze points, series');
  return {
    runtime,
    series: series.map((s) => s.labels),
    async close() {
      await runtime.close();
      await database.drop();
    },
  };
}

// ---- the real Prometheus ------------------------------------------------------------------------

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

async function openPrometheus(series: Labelled[]): Promise<{ url: string; blocks: number; close(): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tg-bench-promql-'));
  let child: ChildProcess | undefined;
  // A crash past main's clean-up (an uncaught error) still stops Prometheus and removes its folder.
  process.once('exit', () => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const close = async () => {
    if (child && child.exitCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const file = path.join(dir, 'samples.om');
    const out = createWriteStream(file);
    const write = async (s: string) => {
      if (!out.write(s)) await once(out, 'drain');
    };
    await write(`# HELP ${FAMILY} ${SCRAPE_FAMILIES.GPU_UTILIZATION!.help}\n# TYPE ${FAMILY} gauge\n`);
    for (const s of series) {
      const head = `${FAMILY}{${Object.entries(s.labels)
        .filter(([, v]) => v !== '')
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',')}} `;
      let chunk = '';
      for (let k = 0; k < TIMES.length; k++) chunk += `${head}${sampleValue(s.index, k)} ${TIMES[k]! / 1000}\n`;
      await write(chunk);
    }
    out.end('# EOF\n');
    await once(out, 'finish');
    log(`promtool tsdb create-blocks-from openmetrics (${series.length * TIMES.length} samples)`);
    const data = path.join(dir, 'data');
    const made = spawnSync(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', '--quiet', file, data], { encoding: 'utf8', timeout: 900_000 });
    if (made.status !== 0) throw new Error(`promtool failed (${made.status}): ${made.stderr || made.error}`);
    rmSync(file);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    writeFileSync(path.join(dir, 'prometheus.yml'), 'global: { scrape_interval: 1h }\nscrape_configs: []\n');
    child = spawn(
      PROMETHEUS,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${data}`,
        '--storage.tsdb.retention.time=3650d',
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=error',
      ],
      { stdio: 'ignore' },
    );
    const proc = child;
    const deadline = Date.now() + 120_000;
    while (!(await fetch(`${url}/-/ready`).catch(() => null))?.ok) {
      if (proc.exitCode !== null) throw new Error(`prometheus exited (${proc.exitCode})`);
      if (Date.now() > deadline) throw new Error('prometheus not ready after 120 s');
      await new Promise((r) => setTimeout(r, 250));
    }
    // Prometheus compacts the backfilled 2 h blocks into longer ones in the background, its first
    // pass a minute after start: measured before that, it would pay for the compaction meanwhile
    // (and read more blocks than a Prometheus that has run a day). Wait until a pass ran and the
    // loaded block count holds still (bounded).
    const metric = async (name: string) => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    };
    log(`prometheus ready on ${url}; waiting for its first compaction pass`);
    const until = Date.now() + 240_000;
    let stable = 0;
    let last = -1;
    while (Date.now() < until && stable < 3) {
      await new Promise((r) => setTimeout(r, 5_000));
      const triggered = await metric('prometheus_tsdb_compactions_triggered_total');
      const blocks = await metric('prometheus_tsdb_blocks_loaded');
      stable = triggered > 0 && blocks === last ? stable + 1 : 0;
      last = blocks;
    }
    const blocks = readdirSync(data).filter((d) => /^[0-9A-Z]{26}$/.test(d)).length;
    return { url, blocks, close };
  } catch (err) {
    await close();
    throw err;
  }
}

// ---- measuring ------------------------------------------------------------------------------------

interface Answer {
  ms: number;
  bytes: number;
  result: { metric: Record<string, string>; values: [number, string][] }[];
}

async function queryRange(base: string, q: string): Promise<Answer> {
  const params = new URLSearchParams({ query: q, start: String(END / 1000 - DAY_MS / 1000), end: String(END / 1000), step: String(STEP_S) });
  let t0 = performance.now();
  // A kept-alive connection the server closed as idle just as it was reused (ECONNRESET: seen once
  // on a machine at load 18, where timers fire late) is tried again once, and timed from there.
  const res = await fetch(`${base}/api/v1/query_range?${params}`).catch((err) => {
    log(`${base}: ${err.cause?.code ?? err.message}; once more`);
    t0 = performance.now();
    return fetch(`${base}/api/v1/query_range?${params}`);
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  const body = JSON.parse(text);
  if (body.status !== 'success') throw new Error(`${base}: ${q}: ${res.status} ${text.slice(0, 300)}`);
  return { ms, bytes: text.length, result: body.data.result };
}

/** The same series (by label set) with the same timestamps and values within 1e-9 relative; the first difference, or null. */
function difference(ours: Answer, theirs: Answer): string | null {
  const key = (m: Record<string, string>) => JSON.stringify(Object.entries(m).sort());
  const mine = new Map(ours.result.map((s) => [key(s.metric), s.values]));
  if (mine.size !== theirs.result.length) return `${mine.size} series here, ${theirs.result.length} in Prometheus`;
  for (const s of theirs.result) {
    const v = mine.get(key(s.metric));
    if (!v) return `series ${key(s.metric)} missing here`;
    if (v.length !== s.values.length) return `${key(s.metric)}: ${v.length} points here, ${s.values.length} in Prometheus`;
    for (let i = 0; i < v.length; i++) {
      const [t, a] = v[i]!;
      const [u, b] = s.values[i]!;
      if (t !== u || Math.abs(Number(a) - Number(b)) > 1e-9 * Math.max(1, Math.abs(Number(b))))
        return `${key(s.metric)} at ${u}: ${t} ${a} here, ${b} in Prometheus`;
    }
  }
  return null;
}

interface Row {
  database: string;
  query: string;
  promql: string;
  series: number;
  points: number;
  answerMB: number;
  oursMs: number;
  prometheusMs: number;
  ratio: number;
  goalMet: boolean;
}

async function measure(database: string, ours: string, theirs: string): Promise<Row[]> {
  const rows: Row[] = [];
  for (const { name, q } of QUERIES) {
    const a = await queryRange(ours, q);
    const b = await queryRange(theirs, q);
    const diff = difference(a, b);
    if (diff) throw new Error(`${database}: ${q}: the answers differ: ${diff}`);
    const mine: number[] = [];
    const prom: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating which side goes first: neither always runs on the other's warm caches or leftovers.
      if (r % 2 === 0) mine.push((await queryRange(ours, q)).ms), prom.push((await queryRange(theirs, q)).ms);
      else prom.push((await queryRange(theirs, q)).ms), mine.push((await queryRange(ours, q)).ms);
    }
    const row: Row = {
      database,
      query: name,
      promql: q,
      series: b.result.length,
      points: b.result.reduce((n, s) => n + s.values.length, 0),
      answerMB: round(b.bytes / 1e6, 1),
      oursMs: Math.round(median(mine)),
      prometheusMs: Math.round(median(prom)),
      ratio: round(median(mine) / median(prom)),
      goalMet: median(mine) / median(prom) <= 2,
    };
    log(`${database} ${name}: ours ${row.oursMs} ms, Prometheus ${row.prometheusMs} ms, ${row.ratio}x`);
    rows.push(row);
  }
  return rows;
}

// ---- main -------------------------------------------------------------------------------------------

async function main() {
  if (!existsSync(PROMETHEUS) || !existsSync(PROMTOOL)) {
    console.log(`not run: needs ${PROMETHEUS} and ${PROMTOOL} (apt-get install prometheus)`);
    return;
  }
  const databases = flags.pglite && !flags.postgres ? [true] : flags.postgres && !flags.pglite ? [false] : [false, true];
  log(`${JOBS * NODES * GPUS} series x ${TIMES.length} samples (every ${INTERVAL_MS / 1000} s over 24 h); query_range 24 h at ${STEP_S} s; ${ROUNDS} rounds`);
  const rows: Row[] = [];
  let prom: Awaited<ReturnType<typeof openPrometheus>> | undefined;
  const stores: { close(): Promise<void> }[] = [];
  try {
    for (const pglite of databases) {
      const name = pglite ? 'PGlite' : 'PostgreSQL';
      log(`${name}: writing the samples through the store`);
      const t0 = performance.now();
      const store = await openStore(pglite);
      stores.push(store);
      log(`${name}: written in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
      prom ??= await openPrometheus(store.series);
      rows.push(...(await measure(name, store.runtime.url, prom.url)));
      await store.close();
      stores.pop();
    }
  } finally {
    for (const s of stores) await s.close().catch(() => {});
    await prom?.close();
  }
  const table = [
    '| database | query_range (24 h, 60 s step) | series | points | answer | ours | Prometheus | ours / Prometheus | <= 2x |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.database} | ${r.query} | ${r.series} | ${r.points} | ${r.answerMB} MB | ${r.oursMs} ms | ${r.prometheusMs} ms | ${r.ratio}x | ${r.goalMet ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
  log(`the Prometheus query API against Prometheus ${promVersion()} (same samples, same run; medians of ${ROUNDS}):`);
  // stdout is the table alone: bench/run.ts prints it in its own output.
  console.log(table);
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(
    path.join(HERE, 'results', 'promql.json'),
    `${JSON.stringify({ at: new Date().toISOString(), series: JOBS * NODES * GPUS, samplesPerSeries: TIMES.length, intervalS: INTERVAL_MS / 1000, stepS: STEP_S, rounds: ROUNDS, prometheus: promVersion(), rows }, null, 2)}\n`,
  );
}

function promVersion(): string {
  return /version (\S+)/.exec(spawnSync(PROMETHEUS, ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1] ?? 'unknown';
}

// Interrupted (Ctrl-C, a time-out's SIGTERM): exit through the 'exit' handlers, which stop Prometheus.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
