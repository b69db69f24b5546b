// Two server processes (src/main.ts, collector on as in production) on one Postgres: exactly one
// collects the provider (its lease in collect_leases, seen in each replica's /metrics); SIGKILL it
// and the other takes the lease once it expires and collects within two intervals (the issue's
// requirement, measured from the kill to the survivor's first stored fetch), and the stored series
// has no hole. The interval is several seconds, so a loaded machine's scheduling delays (a query,
// a timer firing late) stay small beside it: the margin is the design's (a lease of one interval,
// tries every quarter: 1.25 intervals at worst), not the machine's speed.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBasetenSimulator, type BasetenSimulator } from '../../src/simulators/baseten/server.js';
import { eventually } from '../support/wait.js';
import { exited, gaugeOf, type Replica, ReplicaSet } from '../support/replicas.js';

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/postgres';
const INTERVAL_S = 5;

// It runs on the real Postgres whichever pass it is in, so it runs in the Postgres pass only: the
// PGlite pass (`.ci/run` runs both) would run the same two replicas on the same database again.
const run = process.env.TEST_DATABASE_URL ? describe : describe.skip;

const dbName = `collect_replicas_${process.pid}_${Date.now().toString(36)}`;
const providerId = `bt-${Date.now().toString(36)}`;
let sim: BasetenSimulator;
const replicas = new ReplicaSet();

function startReplica(configPath: string): Promise<Replica> {
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const { REDIS_URL: _redis, ...env } = process.env;
  return replicas.start({ ...env, DATABASE_URL: dbUrl.toString(), PROVIDERS_CONFIG: configPath, BT_KEY: sim.apiKey, LOG_LEVEL: 'warn' });
}

/** A replica's own word (its /metrics gauge): does it hold the provider's collector lease? */
const leading = (url: string) => gaugeOf(url, `training_graph_collection_leading{provider="${providerId}"}`);

run('the collector across two replicas [needs TEST_DATABASE_URL]', () => {
  let admin: postgres.Sql;
  beforeAll(async () => {
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${dbName}`);
    sim = await startBasetenSimulator({
      seed: 'collect-replicas',
      rateLimit: false,
      fleet: { projects: 1, jobsPerProject: 2, emptyProjects: 0, nodesPerJob: 1, gpusPerNode: 2, statuses: ['TRAINING_JOB_RUNNING'] },
    });
  });
  afterAll(async () => {
    await replicas.close();
    await sim?.close();
    await admin?.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin?.end();
  });

  it('one replica collects; SIGKILL it and the other collects, leaving no hole in the series', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'collect-replicas-'));
    const configPath = path.join(dir, 'providers.json');
    writeFileSync(
      configPath,
      JSON.stringify({ providers: [{ id: providerId, kind: 'BASETEN', baseUrl: sim.url, apiKeyEnv: 'BT_KEY', pollIntervalSeconds: INTERVAL_S }] }),
    );
    // Started together on the new, empty database: one runs the migrations under their lock, the
    // other waits and finds nothing to do (src/store/db.ts), as two replicas deployed at once do.
    const [a, b] = await Promise.all([startReplica(configPath), startReplica(configPath)]);
    await eventually(async () => (await leading(a.url)) + (await leading(b.url)) === 1, 30_000, 'one replica to lead');
    // The series is checked from here: the leader's first fetch reached back to the job's start at
    // the platform's coarser step for a long window (30 s); every fetch after it asks a few seconds.
    const seriesFrom = new Date();
    // Several sweeps later, still exactly one.
    const m0 = sim.count('getMetrics');
    await eventually(() => sim.count('getMetrics') >= m0 + 6, 30_000, 'a few sweeps');
    expect((await leading(a.url)) + (await leading(b.url))).toBe(1);
    const [leader, follower] = (await leading(a.url)) === 1 ? [a, b] : [b, a];

    const db = new URL(ADMIN_URL);
    db.pathname = `/${dbName}`;
    const sql = postgres(db.toString(), { max: 1, onnotice: () => {} });
    leader.child.kill('SIGKILL');
    // After the signal: a fetch the leader stamped before it is not taken for the survivor's.
    const killedAt = Date.now();
    await exited(leader.child);
    const m1 = sim.count('getMetrics');
    try {
      // The survivor's first collected sample: the first metrics fetch stored after the kill.
      const [first] = await eventually(
        async () => {
          const rows = await sql<
            { at: Date }[]
          >`select min(fetched_at) as at from fetches where dataset like 'metric:%' and fetched_at > ${new Date(killedAt)}`;
          return rows[0]?.at ? rows : false;
        },
        30_000,
        'the survivor to store a sample',
      );
      const gapMs = first!.at.getTime() - killedAt;
      console.log(`collect takeover: the survivor's first sample ${gapMs} ms after SIGKILL (interval ${INTERVAL_S * 1000} ms)`);
      expect(gapMs).toBeLessThanOrEqual(2 * INTERVAL_S * 1000);
      expect(await leading(follower.url)).toBe(1);
      expect(sim.count('getMetrics')).toBeGreaterThan(m1);

      // The series the two replicas wrote has no hole wider than the platform's own spacing: read
      // once the survivor has stored a minute past the kill (the platform samples every 15 s).
      const series = () => sql<{ ts: Date }[]>`
        select p.ts from points p join series s on s.id = p.series_id
        where s.job_id = ${`${providerId}:job:${sim.fleet.jobs[0]!.id}`} and s.name = 'GPU_UTILIZATION' and s.scope = 'GPU'
          and s.series_key = (select min(series_key) from series where job_id = s.job_id and name = 'GPU_UTILIZATION' and scope = 'GPU')
          and p.ts >= ${seriesFrom}
        order by p.ts`;
      const rows = await eventually(
        async () => {
          const r = await series();
          return (r.at(-1)?.ts.getTime() ?? 0) >= killedAt + 60_000 ? r : false;
        },
        120_000,
        'the survivor to store a minute past the kill',
      );
      expect(rows.length).toBeGreaterThanOrEqual(4);
      const gaps = rows.slice(1).map((r, i) => r.ts.getTime() - rows[i]!.ts.getTime());
      const typical = [...gaps].sort((x, y) => x - y)[Math.floor(gaps.length / 2)]!;
      // The platform's own spacing varies around its median (a CI run saw 34 s beside a 28 s median):
      // a missing sample makes a gap of two spacings, so anything under one and a half is no hole.
      expect(Math.max(...gaps)).toBeLessThan(1.5 * typical);
    } finally {
      await sql.end();
    }
  }, 300_000);
});
