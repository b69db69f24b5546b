// `npx tsx bench/collect-startup.ts [on|off] [--db postgres://...]`: a fresh demo server
// (src/main.ts, collector on or off) on a new PostgreSQL database: how long until /readyz answers
// 200, how long the first `jobs` query takes, then /readyz every 0.5 s for 10 s with the pool's
// state it reports (in use, waiting) while the collector's first sweep runs (docs/collection.md).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, freshPostgresDatabase } from './children.js';

const { values: flags, positionals } = parseArgs({
  options: { db: { type: 'string', default: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/' } },
  allowPositionals: true,
});
const collect = positionals[0] ?? 'on';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const db = await freshPostgresDatabase(flags.db!, 'bench_collect_startup');
const dataDir = mkdtempSync(path.join(tmpdir(), 'tg-collect-startup-'));
const port = await freePort();
const t0 = Date.now();
const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
  cwd: root,
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, COLLECT: collect, LOG_LEVEL: 'warn', DATA_DIR: dataDir },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const url = `http://127.0.0.1:${port}`;
try {
  for (;;) {
    const res = await fetch(`${url}/readyz`).catch(() => null);
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const readyMs = Date.now() - t0;
  const q0 = Date.now();
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ jobs(first: 5) { totalCount } }' }),
  });
  const body = (await res.json()) as { data?: { jobs: { totalCount: number } }; errors?: unknown };
  const queryMs = Date.now() - q0;
  const probes: { ms: number; status: number; inUse: number; waiting: number }[] = [];
  for (let i = 0; i < 20; i++) {
    const a = Date.now();
    const r = await fetch(`${url}/readyz`);
    const pool = ((await r.json()) as { pool: { inUse: number; waiting: number } }).pool;
    probes.push({ ms: Date.now() - a, status: r.status, inUse: pool.inUse, waiting: pool.waiting });
    await new Promise((r) => setTimeout(r, 500));
  }
  const max = (f: (p: (typeof probes)[number]) => number) => Math.max(...probes.map(f));
  console.log(
    JSON.stringify({
      collect,
      readyMs,
      jobsQueryMs: queryMs,
      jobs: body.data?.jobs.totalCount ?? null,
      errors: body.errors ?? null,
      readyzMaxMs: max((p) => p.ms),
      readyzNot200: probes.filter((p) => p.status !== 200).length,
      poolInUseMax: max((p) => p.inUse),
      poolWaitingMax: max((p) => p.waiting),
    }),
  );
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
