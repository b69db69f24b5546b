-- Bytes per point of the 1-minute rollup's candidate chunk encodings (docs/history.md, "Built:
-- compacted 1-minute rollups"): 100 series x 7 days of the bench's values, one sample every
-- :spms milliseconds, in a scratch schema dropped at the end. For each day of 1-minute buckets:
-- rows as points_1m keeps them; the five arrays; `lasts` alone (exact where every bucket holds one
-- value); the five interleaved in one array; and `lasts` alone with its offsets as the minutes of
-- the day or as the minutes after the bucket before, in int4 and int2, against one spacing run.
--   psql "$TEST_DATABASE_URL" -v spms=302400 -f bench/rollup-chunk-encodings.sql
set client_min_messages = warning;
drop schema if exists scratch_rollup_encodings cascade;
create schema scratch_rollup_encodings;
set search_path = scratch_rollup_encodings;
create table pts as select s as series_id, k as key,
    round((50 + 40 * sin((i + s * 17) / 60.0) + ((i * 7919 + s * 104729) % 97) / 10.0)::numeric, 2)::float8 as value
  from generate_series(1, 100) s, generate_series(0, (7 * 86400000 / :spms) - 1) i,
    lateral (select 1793000000000::bigint - 1793000000000::bigint % 86400000 + i * :spms as k) kk;
create table m1 as select series_id, key - key % 60000 as bucket, count(value)::int as n, min(value) as min, max(value) as max,
    sum(value order by key) as sum, (array_agg(value order by key desc))[1] as last
  from pts group by 1, 2;
create table rows_1m (like m1, primary key (series_id, bucket));
insert into rows_1m select * from m1;
create table day_of as select m1.*, bucket - bucket % 86400000 as day,
    ((bucket - coalesce(lag(bucket) over (partition by series_id, bucket - bucket % 86400000 order by bucket), bucket - bucket % 86400000)) / 60000)::int4 as step
  from m1;
create table five (series_id bigint, day bigint, n int, offs int4[], counts int4[], mins float8[], maxs float8[], sums float8[], lasts float8[], primary key (series_id, day));
insert into five select series_id, day, count(*), array[0, 1], array_agg(n order by bucket), array_agg(min order by bucket),
  array_agg(max order by bucket), array_agg(sum order by bucket), array_agg(last order by bucket) from day_of group by 1, 2;
create table interleaved (series_id bigint, day bigint, n int, offs int4[], cells float8[], primary key (series_id, day));
insert into interleaved select series_id, day, count(*), array[0, 1], array_agg(x order by bucket, o)
  from day_of, unnest(array[n::float8, min, max, sum, last]) with ordinality u(x, o) group by 1, 2;
create table last_run (series_id bigint, day bigint, n int, offs int4[], lasts float8[], primary key (series_id, day));
insert into last_run select series_id, day, count(*), array[0, 1], array_agg(last order by bucket) from day_of group by 1, 2;
create table last_abs4 (series_id bigint, day bigint, n int, offs int4[], lasts float8[], primary key (series_id, day));
insert into last_abs4 select series_id, day, count(*), array_agg(((bucket - day) / 60000)::int4 order by bucket), array_agg(last order by bucket) from day_of group by 1, 2;
create table last_abs2 (series_id bigint, day bigint, n int, offs int2[], lasts float8[], primary key (series_id, day));
insert into last_abs2 select series_id, day, count(*), array_agg(((bucket - day) / 60000)::int2 order by bucket), array_agg(last order by bucket) from day_of group by 1, 2;
create table last_step4 (series_id bigint, day bigint, n int, offs int4[], lasts float8[], primary key (series_id, day));
insert into last_step4 select series_id, day, count(*), array_agg(step order by bucket), array_agg(last order by bucket) from day_of group by 1, 2;
create table last_step2 (series_id bigint, day bigint, n int, offs int2[], lasts float8[], primary key (series_id, day));
insert into last_step2 select series_id, day, count(*), array_agg(step::int2 order by bucket), array_agg(last order by bucket) from day_of group by 1, 2;
vacuum analyze;
select :spms as spacing_ms, (select count(*) from pts) as points, (select round(avg(n)) from last_run) as buckets_a_day,
  (select bool_and(n <= 1) from m1) as one_value_a_bucket,
  round(pg_total_relation_size('rows_1m')::numeric / (select count(*) from pts), 2) as rows,
  round(pg_total_relation_size('five')::numeric / (select count(*) from pts), 2) as five_arrays,
  round(pg_total_relation_size('interleaved')::numeric / (select count(*) from pts), 2) as interleaved,
  round(pg_total_relation_size('last_run')::numeric / (select count(*) from pts), 2) as last_run,
  round(pg_total_relation_size('last_abs4')::numeric / (select count(*) from pts), 2) as last_abs4,
  round(pg_total_relation_size('last_abs2')::numeric / (select count(*) from pts), 2) as last_abs2,
  round(pg_total_relation_size('last_step4')::numeric / (select count(*) from pts), 2) as last_step4,
  round(pg_total_relation_size('last_step2')::numeric / (select count(*) from pts), 2) as last_step2;
drop schema scratch_rollup_encodings cascade;
