// Compaction of settled raw points into point_chunks (migrations/0008) and retention by hiding its
// days and dropping whole partitions of it: the collector lease holder's chores beside its
// row-delete retention of what is still in `points` (docs/history.md, "Built: compact raw points").
import { type SQL, sql } from 'drizzle-orm';
import type { RepoContext } from './repo-context.js';
import { CHUNK_MS, DECODED_CHUNK, keyInstant, notKeptFinished, type RetentionMark, takeChunkDays, visibleFrom } from './raw-points.js';
import { embeddedClientOf, idsRows, rangeRowsWhere, rowsOf } from './sql-util.js';

/**
 * Days of a series one compaction transaction moves at most: the first run after an upgrade
 * finds all of history in `points`, and writes wait for a batch (the lock below), so a batch is
 * bounded by series x days, not by how much history there is.
 */
export const COMPACT_SPAN_DAYS = 7;

const MIN_KEY = sql.raw('(-9223372036854775807)::bigint');
const MAX_KEY = sql.raw('9223372036854775807::bigint');

/** The start of the UTC day holding `key`, as SQL over column `k`. */
const dayOf = (k: string) => sql.raw(`(${k} - ((${k} % ${CHUNK_MS}) + ${CHUNK_MS}) % ${CHUNK_MS})`);

/** The UTC month [start, end) holding epoch ms `ms`, and its partition's name (of `parent`, point_chunks unless said). */
export function monthOf(ms: number, parent = 'point_chunks'): { start: number; end: number; name: string } {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const start = Date.UTC(y, m, 1);
  const end = Date.UTC(y, m + 1, 1);
  const tag = `${y < 0 ? 'm' : ''}${String(Math.abs(y)).padStart(4, '0')}${String(m + 1).padStart(2, '0')}`;
  return { start, end, name: `${parent}_${tag}` };
}

/** The UTC year [start, end) holding epoch ms `ms`, and its partition's name of `parent` (rollup_chunks_1h's partitions are years). */
export function yearOf(ms: number, parent: ChunkTable): { start: number; end: number; name: string } {
  const y = new Date(ms).getUTCFullYear();
  return { start: Date.UTC(y, 0, 1), end: Date.UTC(y + 1, 0, 1), name: `${parent}_${y < 0 ? 'm' : ''}${String(Math.abs(y)).padStart(4, '0')}` };
}

/** The partition of `parent` holding `ms`: a month's, or a year's for the 1-hour rollup's chunks (a row a month each). */
function partitionOf(ms: number, parent: ChunkTable): { start: number; end: number; name: string } {
  return parent === 'rollup_chunks_1h' ? yearOf(ms, parent) : monthOf(ms, parent);
}

/**
 * The partitions of `parent` (point_chunks unless said): name, and the span's [start, end) as
 * epoch ms (from the name): a month each, a year each for rollup_chunks_1h.
 */
export async function chunkPartitions(ctx: RepoContext, parent: ChunkTable = 'point_chunks'): Promise<{ name: string; start: number; end: number }[]> {
  const rows = await rowsOf<{ name: string }>(
    ctx.db,
    sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = ${parent}::regclass order by c.relname`,
  );
  const out: { name: string; start: number; end: number }[] = [];
  const yearly = parent === 'rollup_chunks_1h';
  const pattern = new RegExp(yearly ? `^${parent}_(m?)(\\d{4,})()$` : `^${parent}_(m?)(\\d{4,})(\\d{2})$`);
  for (const r of rows) {
    const m = pattern.exec(r.name);
    if (!m) continue;
    const year = (m[1] ? -1 : 1) * Number(m[2]);
    const span = partitionOf(Date.UTC(year, yearly ? 0 : Number(m[3]) - 1, 1), parent);
    out.push({ name: r.name, start: span.start, end: span.end });
  }
  return out.sort((a, b) => a.start - b.start);
}

/**
 * The next compaction batch of a provider: up to `batch` of its time-keyed series with ids above
 * `after` that hold rows of `table` (`points` by key, `points_1m` by bucket) in days wholly before
 * `before`, the oldest such row's time (`first`), and the batch's end (`cut`: at most
 * COMPACT_SPAN_DAYS days from the first's day, never past `settled`, the UTC day `before` falls in).
 * null: none left.
 */
export async function pickCompactionBatch(
  ctx: RepoContext,
  table: 'points' | 'points_1m' | 'points_1h',
  providerId: string,
  before: number,
  after: number,
  batch: number,
): Promise<{ ids: number[]; first: number; cut: number; settled: number } | null> {
  const settled = before - (((before % CHUNK_MS) + CHUNK_MS) % CHUNK_MS);
  const rows = sql.raw(table);
  const at = sql.raw(table === 'points' ? 'key' : 'bucket');
  // A series' oldest row, one index step (a parameter of the lateral subquery, not a join of
  // `table` on series_id): a join made the planner look up series_id's actual extremes in the
  // index, walking the index entries of the rows this very compaction had just deleted (no vacuum
  // runs in the middle of a run: autovacuum comes later, and on PGlite the chore vacuums after it,
  // Repository.vacuumDeadRows). On PGlite, 1,000 series with their points moved: 76-95 ms to plan
  // each batch's pick (7,700 buffers read), 0.2-0.6 ms this way.
  const picked = await rowsOf<{ id: number | string; first: number | string | null }>(
    ctx.db,
    sql`select s.id::float8 as id, f.first::float8 as first
      from series s join jobs j on j.id = s.job_id
      cross join lateral (select p.${at} as first from ${rows} p where p.series_id = s.id order by p.${at} limit 1) f
      where j.provider_id = ${providerId} and s.keyed_by = 'time' and s.id > ${after} and f.first < ${settled}
      order by s.id limit ${batch}`,
  );
  if (picked.length === 0) return null;
  const first = Math.min(...picked.map((r) => Number(r.first)));
  const firstDay = first - (((first % CHUNK_MS) + CHUNK_MS) % CHUNK_MS);
  return { ids: picked.map((r) => Number(r.id)), first, cut: Math.min(settled, firstDay + COMPACT_SPAN_DAYS * CHUNK_MS), settled };
}

/**
 * Compaction, one batch: the settled days (wholly before `before`, a UTC day boundary) of the
 * next `batch` time-keyed series of a provider with raw points in `points` before it (ids above
 * `after`, in id order) are moved into point_chunks, a row per series and day. The months' partitions
 * are created first, each in its own statement (a partition's creation locks point_chunks
 * briefly, so not inside the batch); the move is one statement in a transaction that first takes
 * `points` in SHARE ROW EXCLUSIVE mode, so no write lands in a day while it is moved (a write
 * waits for the batch, then finds the chunk and moves it back: repo-point-writes.ts). A day
 * holding a point whose ts is not its key's instant (written behind the store's door) stays in
 * `points`. At most COMPACT_SPAN_DAYS days from the batch's oldest point move; `done` is false
 * when the batch has older days left (the caller runs the same batch again). Returns the last
 * series id of the batch (null: none left), the chunk rows written and the points moved.
 */
export async function compactRawPointsBatch(
  ctx: RepoContext,
  providerId: string,
  before: number,
  after: number,
  batch: number,
): Promise<{ last: number | null; chunks: number; points: number; done: boolean }> {
  const picked = await pickCompactionBatch(ctx, 'points', providerId, before, after, batch);
  if (!picked) return { last: null, chunks: 0, points: 0, done: true };
  const { ids, cut, settled } = picked;
  await ensureChunkPartitions(ctx, picked.first, cut - 1);
  const moved = await ctx.transaction(async (tx) => {
    await tx.db.execute(sql`lock table points in share row exclusive mode`);
    // The days to move, first (one index range a series), so that the move is planned for the
    // few of them it is: as a CTE, the planner guessed thousands and joined by scanning partitions.
    const days = await rowsOf<{ series_id: number | string; day: number | string }>(
      tx.db,
      sql`select p.series_id::float8 as series_id, ${dayOf('p.key')}::float8 as day
        from ${idsRows('points', 'key', ids, cut)} p
        group by 1, 2
        having bool_and(p.ts is not null and p.ts = ${keyInstant('p.key')})`,
    );
    if (days.length === 0) return { chunks: 0, points: 0 };
    const json = `[${days.map((d) => `[${Number(d.series_id)},${Number(d.day)}]`).join(',')}]`;
    const [row] = await rowsOf<{ chunks: number | string; points: number | string }>(
      tx.db,
      sql`
      with ${takeChunkDays(json)}, moved as (
        delete from points m where ${rangeRowsWhere('points', 'key', 'days', sql`d.day`, sql`d.day + ${CHUNK_MS}`)}
        returning m.series_id, m.key, m.step, m.value
      ), every as (
        -- A chunk of such a day (mv: a point put into points behind the write door) is merged,
        -- the point in points winning.
        select series_id, key, step, value from moved
        union all
        select c.series_id, k.key, k.step, k.value from mv c cross join lateral ${DECODED_CHUNK}
        where not exists (select 1 from moved m where m.series_id = c.series_id and m.key = k.key)
      ), ins as (
        insert into point_chunks (series_id, chunk_start, n, offs, vals, steps)
        select series_id, day, count(*)::int,
          -- A day at one spacing keeps [first offset, spacing] (4 bytes a point fewer), else every offset.
          case when count(*) > 2 and min(key - prev) = max(key - prev) then array[(min(key) - day)::int4, min(key - prev)::int4]
            else array_agg((key - day)::int4 order by key) end,
          array_agg(value order by key), case when count(step) = 0 then null else array_agg(step order by key) end
        from (
          select e.series_id, e.key, e.step, e.value, ${dayOf('e.key')} as day,
            lag(e.key) over (partition by e.series_id, ${dayOf('e.key')} order by e.key) as prev
          from every e
        ) x
        group by series_id, day
        returning n
      )
      select count(*)::float8 as chunks, coalesce(sum(n), 0)::float8 as points from ins`,
    );
    return { chunks: Number(row?.chunks ?? 0), points: Number(row?.points ?? 0) };
  });
  // A span with nothing to move (its days hold points written behind the door) ends the batch.
  return { last: ids[ids.length - 1]!, ...moved, done: cut >= settled || moved.points === 0 };
}

/**
 * Autoanalyze's part on PGlite (no autovacuum; see maintainStatistics): point_chunks' statistics
 * after a compaction run, so the reads and the write door's move-back probe plan for what is there.
 */
export async function analyzeChunks(ctx: RepoContext): Promise<void> {
  const client = embeddedClientOf(ctx.db);
  if (client) await client.query('analyze point_chunks');
}

/** The tables partitioned by range of chunk_start: raw chunks and the 1-minute rollup's by month (rollup-chunks.ts), the 1-hour rollup's by year (hour-rollups.ts). */
export type ChunkTable = 'point_chunks' | 'rollup_chunks_1m' | 'rollup_chunks_1h';

/** Creates `parent`'s (point_chunks unless said) partitions from the one holding `from` to the one holding `to` that are missing. */
export async function ensureChunkPartitions(ctx: RepoContext, from: number, to: number, parent: ChunkTable = 'point_chunks'): Promise<void> {
  if (!(to >= from)) return;
  const held = new Set((await chunkPartitions(ctx, parent)).map((p) => p.name));
  for (let at = partitionOf(from, parent).start; at <= to; at = partitionOf(at, parent).end) {
    const m = partitionOf(at, parent);
    if (held.has(m.name)) continue;
    await ctx.db.execute(sql.raw(`create table if not exists ${m.name} partition of ${parent} for values from (${m.start}) to (${m.end})`));
  }
}

/**
 * Raw retention of compacted points, for a provider: its days wholly before `before` are hidden
 * and whole month partitions dropped once nothing in them is seen (hideChunkDays).
 * `keepFinishedSince` (epoch ms; null: none kept): the series of the provider's jobs that finished
 * after it are not hidden (collect.finishedJobRawRetentionDays), so their partitions stay.
 * Returns the partitions dropped and the series hidden up to the cut.
 */
export function dropRawChunks(
  ctx: RepoContext,
  providerId: string,
  before: number,
  keepFinishedSince: number | null = null,
): Promise<{ dropped: number; hidden: number }> {
  const cut = before - (((before % CHUNK_MS) + CHUNK_MS) % CHUNK_MS);
  return hideChunkDays(ctx, 'point_chunks', providerId, cut, notKeptFinished(keepFinishedSince), { column: 'raw_before', at: cut });
}

/**
 * Retention of a table of day chunks (`point_chunks`, `rollup_chunks_1m`) for a provider: its
 * days wholly before `cut` (a UTC day) are hidden, and whole partitions go once nothing in them is
 * seen. Hidden: the provider's series that `gone` (SQL over `jobs j`) lets go and that have chunks
 * before the cut take `mark.at` (at or after the cut) in `mark.column` (never moved back), where
 * every read of the table starts (raw-points.ts, `visibleFrom`), so a day's retention writes a
 * row a series whatever the day's chunks hold. Reclaimed: each partition wholly before the cut
 * whose every chunk is hidden, whatever provider's series it holds (each sweep hides its own; the
 * last to pass drops the month), is dropped. No row is deleted one by one: a deleted chunk's space
 * in a past month's partition is reused by no later write (writes land in the current days), so
 * deleting a day gave no disk back before its month was dropped anyway, and took time in
 * proportion to the day's bytes (its TOASTed arrays: 3.5x from 1M to 50M points in
 * bench:history, docs/history.md). Returns the partitions dropped and the series hidden.
 */
export async function hideChunkDays(
  ctx: RepoContext,
  parent: 'point_chunks' | 'rollup_chunks_1m',
  providerId: string,
  cut: number,
  gone: SQL,
  mark: { column: RetentionMark; at: number },
): Promise<{ dropped: number; hidden: number }> {
  const column = sql.raw(mark.column);
  const chunks = sql.raw(parent);
  // A series with a chunk of a day wholly before the cut, one primary-key probe each (its minutes
  // of the cut's own day before the mark's hour are hidden with them; a series whose chunks begin
  // on that day is not marked: its first minute may be after the mark, and a window from before
  // the mark would be answered hourly for nothing); one hidden further already (a row delete of
  // the table's hot rows sets its exact cut) is left as it is.
  const [row] = await rowsOf<{ n: number | string }>(
    ctx.db,
    sql`with u as (
        update series s set ${column} = ${mark.at} from jobs j
        where j.id = s.job_id and j.provider_id = ${providerId} and ${gone}
          and coalesce(s.${column}, ${MIN_KEY}) < ${mark.at}
          and exists (select 1 from ${chunks} c where c.series_id = s.id and c.chunk_start < ${cut})
        returning 1
      ) select count(*)::float8 as n from u`,
  );
  let dropped = 0;
  for (const part of await chunkPartitions(ctx, parent)) {
    if (part.end > cut) break;
    const table = sql.raw(part.name);
    const drop = await ctx.transaction(async (tx) => {
      // Locked first: no compaction adds a visible chunk between the check and the drop.
      await tx.db.execute(sql`lock table ${table} in share mode`);
      // A probe of the partition's key index per series not hidden past it, not a scan of its
      // rows: a partition another provider still reads is checked again each hour.
      const [seen] = await rowsOf<{ visible: boolean }>(
        tx.db,
        sql`select exists (select 1 from series s where coalesce(s.${column}, ${MIN_KEY}) < ${part.end}
            and exists (select 1 from ${table} c where c.series_id = s.id and c.chunk_start > coalesce(s.${column} - ${CHUNK_MS}, ${MIN_KEY}))) as visible`,
      );
      if (seen?.visible !== false) return false;
      await tx.db.execute(sql`drop table ${table}`);
      return true;
    });
    if (drop) dropped++;
  }
  return { dropped, hidden: Number(row?.n ?? 0) };
}

/**
 * Retention of the 1-hour rollup's month chunks (`rollup_chunks_1h`, a row per series and month;
 * off unless hourRollupRetentionDays is set) for a provider: its chunks wholly before `cut` (a UTC
 * month) go, by `drop table` of each year partition wholly before it that holds only the
 * provider's series that `gone` (SQL over `jobs j`) lets go, else by deleting those series' chunk
 * rows. The series that lost chunks remember `mark.at` in `mark.column` (never moved back). The
 * day chunks' retention hides instead (hideChunkDays); here a month's row is a twelfth of a year
 * partition and is read through no cut. Returns the partitions dropped and the chunk rows deleted.
 */
export async function dropChunkMonths(
  ctx: RepoContext,
  parent: ChunkTable,
  providerId: string,
  cut: number,
  gone: SQL,
  mark: { column: 'raw_before' | 'minute_before' | 'hour_before'; at: number },
): Promise<{ dropped: number; deleted: number }> {
  const column = sql.raw(mark.column);
  const remember = (ids: SQL) => sql`update series set ${column} = greatest(coalesce(${column}, ${mark.at}), ${mark.at}) where id in (${ids})`;
  let dropped = 0;
  let deleted = 0;
  for (const part of await chunkPartitions(ctx, parent)) {
    if (part.start >= cut) break;
    const table = sql.raw(part.name);
    if (part.end <= cut) {
      const drop = await ctx.transaction(async (tx) => {
        // Locked first: no compaction adds another provider's row between the check and the drop.
        await tx.db.execute(sql`lock table ${table} in share mode`);
        const [other] = await rowsOf<{ n: number | string }>(
          tx.db,
          sql`select count(*)::int as n from (select distinct c.series_id from ${table} c) c
              join series s on s.id = c.series_id join jobs j on j.id = s.job_id
              where j.provider_id <> ${providerId} or not ${gone}`,
        );
        if (Number(other?.n ?? 0) > 0) return false;
        await tx.db.execute(remember(sql`select distinct series_id from ${table}`));
        await tx.db.execute(sql`drop table ${table}`);
        return true;
      });
      if (drop) {
        dropped++;
        continue;
      }
    }
    const [row] = await rowsOf<{ n: number | string }>(
      ctx.db,
      sql`with d as (
          delete from ${table} c using series s join jobs j on j.id = s.job_id
          where s.id = c.series_id and j.provider_id = ${providerId} and c.chunk_start < ${cut} and ${gone}
          returning c.series_id
        ), u as (
          ${remember(sql`select distinct series_id from d`)} returning 1
        )
        select (select count(*) from d)::float8 as n, (select count(*) from u) as marked`,
    );
    deleted += Number(row?.n ?? 0);
  }
  return { dropped, deleted };
}

/**
 * A rollup kept in two places (rollup-chunks.ts, hour-rollups.ts): `rows`, where every write keeps
 * its buckets, and `chunks`, where the compactor moved the settled ones, a chunk spanning at most
 * `span` ms from its `chunk_start`. `decoded(lo, hi, needs)` is the lateral subquery `k` of chunk
 * `c`'s buckets (bucket, n, min, max, sum, last), at least those in [lo, hi] (null: unbounded), its
 * min, max and sum those in `needs` at least (the others may be null).
 */
export interface ChunkedRollup {
  rows: string;
  chunks: string;
  span: number;
  decoded: (lo: SQL | null, hi: SQL | null, needs: readonly RollupColumn[]) => SQL;
  /** The series' retention cut that hides what is before it (hideChunkDays), where retention hides rather than deletes. */
  mark?: RetentionMark;
}

/** A rollup bucket's aggregates a reader may not need (n and last it always gets). */
export type RollupColumn = 'min' | 'max' | 'sum';
export const ALL_ROLLUP_COLUMNS: readonly RollupColumn[] = ['min', 'max', 'sum'];

/**
 * The rollup's buckets of series `sid` in [lo, hi] (null: unbounded), as a subquery of columns
 * series_id, bucket, n, min, max, sum, last: the rows' primary-key range and the decoded chunks
 * that can overlap the range. Of min, max and sum, those not in `needs` may be null (a chunk's
 * are then not read). Unordered: a reader that needs bucket order says so.
 */
export function rollupRange(
  r: ChunkedRollup,
  sid: SQL,
  lo: SQL | null = null,
  hi: SQL | null = null,
  needs: readonly RollupColumn[] = ALL_ROLLUP_COLUMNS,
): SQL {
  const given = lo ? sql`coalesce(${lo}, ${MIN_KEY})` : MIN_KEY;
  const from = r.mark ? visibleFrom(sid, given, r.mark) : given;
  const to = hi ? sql`coalesce(${hi}, ${MAX_KEY})` : MAX_KEY;
  const lowest = sql.raw(`(-9223372036854775807 + ${r.span})::bigint`);
  return sql`(
    select p.series_id, p.bucket, p.n, p.min, p.max, p.sum, p.last from ${sql.raw(r.rows)} p
    where p.series_id = ${sid} and p.bucket >= ${from} and p.bucket <= ${to}
    union all
    select c.series_id, k.bucket, k.n, k.min, k.max, k.sum, k.last
    from ${sql.raw(r.chunks)} c cross join lateral ${r.decoded(lo || r.mark ? from : null, hi ? to : null, needs)}
    where c.series_id = ${sid} and c.chunk_start > greatest(${from}, ${lowest}) - ${r.span}
      and c.chunk_start <= ${to} and k.bucket >= ${from} and k.bucket <= ${to}
  )`;
}

/**
 * The rollup's first bucket of series `sid` at or after `at` (`first`) or its last at or before it
 * (`last`) (null: none), as a scalar subquery: one step on the rows' key index and the chunks from
 * `at` on (back) until one holds such a bucket, decoding only that one.
 */
export function rollupEdge(r: ChunkedRollup, sid: SQL, dir: 'first' | 'last', at: SQL): SQL {
  const order = sql.raw(dir === 'last' ? 'desc' : 'asc');
  const cmp = sql.raw(dir === 'last' ? '<=' : '>=');
  const lowest = sql.raw(`(-9223372036854775807 + ${r.span})::bigint`);
  // Where retention hides what is before the series' cut: the first edge starts there, the last
  // stops there (the walk back through the chunks too).
  const floor = r.mark ? visibleFrom(sid, MIN_KEY, r.mark) : null;
  const bound =
    dir === 'first' && floor ? visibleFrom(sid, sql`coalesce(${at}, ${MIN_KEY})`, r.mark) : sql`coalesce(${at}, ${dir === 'first' ? MIN_KEY : MAX_KEY})`;
  const seen = (col: SQL) => (dir === 'last' && floor ? sql` and ${col} >= ${floor}` : sql``);
  const chunks =
    dir === 'last'
      ? sql`c.chunk_start <= ${bound}${floor ? sql` and c.chunk_start > greatest(${floor}, ${lowest}) - ${r.span}` : sql``}`
      : sql`c.chunk_start > greatest(${bound}, ${lowest}) - ${r.span}`;
  return sql`(select ${sql.raw(dir === 'last' ? 'greatest' : 'least')}(
    (select p.bucket from ${sql.raw(r.rows)} p where p.series_id = ${sid} and p.bucket ${cmp} ${bound}${seen(sql`p.bucket`)} order by p.bucket ${order} limit 1),
    (select k.bucket from (select * from ${sql.raw(r.chunks)} c where c.series_id = ${sid} and ${chunks} order by c.chunk_start ${order}) c
      cross join lateral ${r.decoded(null, null, [])}
      where k.bucket ${cmp} ${bound}${seen(sql`k.bucket`)} order by c.chunk_start ${order}, k.bucket ${order} limit 1)))`;
}
