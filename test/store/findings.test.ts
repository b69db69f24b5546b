// The findings SQL on its own over rows written as the cache writes them (real PGlite or
// PostgreSQL): the kinds the simulator tests do not produce (NO_DATA, STALLED by progress, FAILED,
// RESTARTED) fire once and resolve once, and nothing fires for a job that is fine.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { thresholdRules } from '../../src/findings/index.js';
import { FindingsStore, type FindingRow } from '../../src/store/index.js';
import { useTestRepository } from '../support/database.js';

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('findings SQL: NO_DATA, STALLED by progress, FAILED, RESTARTED', () => {
  const t = useTestRepository();
  const exec = (q: ReturnType<typeof sql>) => t.db.db.execute(q);

  async function evaluate(store: FindingsStore, at: number): Promise<{ fired: FindingRow[]; resolved: FindingRow[] }> {
    const now = new Date(at);
    const candidates = await store.detect(now, thresholdRules([]));
    const fired = await store.fire(candidates, now);
    const resolved = await store.resolve(
      candidates.map((c) => c.fingerprint),
      now,
    );
    return { fired, resolved };
  }

  it('each fires once and resolves once', async () => {
    const store = new FindingsStore(t.db.db);
    const job = (id: string, status: string, extra = sql``) =>
      exec(sql`insert into jobs (id, provider_id, project_id, external_id, name, status, started_at, finished_at, failure_reason, restart_count, sort_at, seen_at)
        values (${`p:job:${id}`}, 'p', 'p:project:x', ${id}, ${id}, ${status}, ${iso(T0 - 3 * 60 * MINUTE)}::timestamptz,
          ${status === 'FAILED' ? iso(T0 - 10 * MINUTE) : null}::timestamptz, ${status === 'FAILED' ? 'OOMKilled' : null}, ${id === 'restarted' ? 1 : null},
          ${iso(T0)}::timestamptz, ${iso(T0)}::timestamptz) ${extra}`);
    await job('silent', 'RUNNING');
    await job('steps', 'RUNNING');
    await job('failed', 'FAILED');
    await job('restarted', 'RUNNING');
    await job('fine', 'RUNNING');
    // silent: its GPU reported until T0 - 20 min, and the platform was asked at T0 - 1 min.
    // fine: reported until T0. steps: a step every 60 s until T0 - 12 min.
    await exec(sql`insert into series (series_key, job_id, node_id, gpu_id, kind, name, unit, scope, source, keyed_by) values
      ('silent|gpu', 'p:job:silent', 'n', 'g', 'system', 'GPU_UTILIZATION', 'RATIO', 'GPU', 'p', 'time'),
      ('fine|gpu', 'p:job:fine', 'n2', 'g2', 'system', 'GPU_UTILIZATION', 'RATIO', 'GPU', 'p', 'time'),
      ('steps|loss', 'p:job:steps', null, null, 'training', 'loss', 'NONE', 'JOB', 'p', 'step')`);
    await exec(sql`insert into points (series_id, key, ts, step, value)
      select s.id, k, to_timestamp(k / 1000.0), null::int, 0.8 from series s, generate_series(${T0 - 120 * MINUTE}::bigint, ${T0 - 20 * MINUTE}::bigint, 30000) k where s.series_key = 'silent|gpu'
      union all
      select s.id, k, to_timestamp(k / 1000.0), null::int, 0.8 from series s, generate_series(${T0 - 120 * MINUTE}::bigint, ${T0 + 60 * MINUTE}::bigint, 30000) k where s.series_key = 'fine|gpu'`);
    await exec(sql`insert into points (series_id, key, ts, step, value)
      select s.id, st, to_timestamp(${(T0 - 12 * MINUTE) / 1000} - (100 - st) * 60), st, 1.0 / st from series s, generate_series(1, 100) st where s.series_key = 'steps|loss'`);
    await exec(sql`insert into fetches (job_id, dataset, range_from, range_to, fetched_at, step_seconds, final) values
      ('p:job:silent', 'metric:GPU_UTILIZATION', ${iso(T0 - 180 * MINUTE)}::timestamptz, ${iso(T0 - MINUTE)}::timestamptz, ${iso(T0 - MINUTE)}::timestamptz, 30, false),
      ('p:job:fine', 'metric:GPU_UTILIZATION', ${iso(T0 - 180 * MINUTE)}::timestamptz, ${iso(T0)}::timestamptz, ${iso(T0)}::timestamptz, 30, false),
      ('p:job:steps', 'training', ${iso(T0 - 180 * MINUTE)}::timestamptz, ${iso(T0 - MINUTE)}::timestamptz, ${iso(T0 - MINUTE)}::timestamptz, 60, false)`);

    const first = await evaluate(store, T0);
    const kinds = first.fired.map((f) => `${f.kind} ${f.jobId}`).sort();
    expect(kinds).toEqual(['FAILED p:job:failed', 'NO_DATA p:job:silent', 'RESTARTED p:job:restarted', 'STALLED p:job:steps']);
    const stalled = first.fired.find((f) => f.kind === 'STALLED')!;
    // 60 s per step, so the limit is max(10 min, 5 x 60 s) = 10 min; the last step was 12 min ago.
    expect(stalled.evidence).toMatchObject({ reason: 'NO_PROGRESS', lastStep: 100, medianSecondsPerStep: 60, limitSeconds: 600 });
    expect(Math.round(Number(stalled.evidence.stalledSeconds))).toBe(720);
    expect(first.fired.find((f) => f.kind === 'FAILED')!.evidence).toMatchObject({ failureReason: 'OOMKilled' });
    expect(first.fired.find((f) => f.kind === 'NO_DATA')!.evidence.lastPointAt).toMatch(/^2026-11-20T11:40:00/);

    // Nothing new while the conditions hold.
    expect(await evaluate(store, T0 + MINUTE)).toEqual({ fired: [], resolved: [] });

    // The silent job reports again, the steps advance, a second restart: those resolve (and the restart count is a new finding).
    await exec(sql`insert into points (series_id, key, ts, step, value)
      select s.id, k, to_timestamp(k / 1000.0), null::int, 0.8 from series s, generate_series(${T0 - 20 * MINUTE + 30000}::bigint, ${T0 + 2 * MINUTE}::bigint, 30000) k where s.series_key = 'silent|gpu'`);
    await exec(sql`insert into points (series_id, key, ts, step, value)
      select s.id, 101, to_timestamp(${(T0 + 2 * MINUTE) / 1000}), 101, 0.01 from series s where s.series_key = 'steps|loss'`);
    await exec(sql`update fetches set fetched_at = ${iso(T0 + 2 * MINUTE)}::timestamptz, range_to = ${iso(T0 + 2 * MINUTE)}::timestamptz`);
    await exec(sql`update jobs set restart_count = 2 where id = 'p:job:restarted'`);
    const second = await evaluate(store, T0 + 2 * MINUTE);
    expect(second.resolved.map((f) => `${f.kind} ${f.jobId} ${f.evidence.restartCount ?? ''}`).sort()).toEqual([
      'NO_DATA p:job:silent ',
      'RESTARTED p:job:restarted 1',
      'STALLED p:job:steps ',
    ]);
    expect(second.fired.map((f) => `${f.kind} ${f.jobId} ${f.evidence.restartCount}`)).toEqual(['RESTARTED p:job:restarted 2']);

    // FAILED resolves when its hold ends (24 h after the failure) and never fires again.
    const day = await evaluate(store, T0 + 24 * 60 * MINUTE);
    expect(day.resolved.map((f) => f.kind).sort()).toEqual(['FAILED', 'RESTARTED']);
    expect((await evaluate(store, T0 + 24 * 60 * MINUTE + MINUTE)).fired.filter((f) => f.kind === 'FAILED')).toEqual([]);
    const events = (await exec(sql`select event, count(*)::int as n from finding_events group by event order by event`)) as any;
    const rows = Array.isArray(events) ? events : events.rows;
    expect(rows).toEqual([
      { event: 'FIRING', n: 5 },
      { event: 'RESOLVED', n: 5 },
    ]);
  });
});
