-- Bytes per point of the 1-hour rollup's candidate chunk encodings (docs/history.md, "Built:
-- compacted 1-hour rollups"): :nseries series x 62 days (two UTC months) of the bench's values,
-- one sample every :spms milliseconds, in a scratch schema dropped at the end. For each series and
-- month of 1-hour buckets: rows as points_1h keeps them; the five arrays (counts, mins, maxs,
-- sums, lasts); the same with a bucket's min, max and sum null where they are its last's very
-- bits (a bucket of one value: null elements take a bit each); the five interleaved in one float8 array; `lasts` alone (exact only where every
-- bucket holds one value); and the five arrays a row per series and day instead of month.
--   psql "$TEST_DATABASE_URL" -v spms=302400 -v nseries=100 -f bench/hour-rollup-chunk-encodings.sql
set client_min_messages = warning;
drop schema if exists scratch_hour_encodings cascade;
create schema scratch_hour_encodings;
set search_path = scratch_hour_encodings;
-- 2026-10-01T00:00Z: two whole months.
create table pts as select s as series_id, k as key,
    round((50 + 40 * sin((i + s * 17) / 60.0) + ((i * 7919 + s * 104729) % 97) / 10.0)::numeric, 2)::float8 as value
  from generate_series(1, :nseries) s, generate_series(0, (61 * 86400000::bigint / :spms) - 1) i,
    lateral (select 1790812800000::bigint + i * :spms::bigint as k) kk;
create table h1 as select series_id, key - key % 3600000 as bucket, count(value)::int as n, min(value) as min, max(value) as max,
    sum(value order by key) as sum, (array_agg(value order by key desc))[1] as last
  from pts group by 1, 2;
create table rows_1h (like h1, primary key (series_id, bucket));
insert into rows_1h select * from h1;
create table month_of as select h1.*,
    (extract(epoch from date_trunc('month', to_timestamp(bucket / 1000.0) at time zone 'UTC')) * 1000)::bigint as month,
    bucket - bucket % 86400000 as day
  from h1;
create table five (series_id bigint, month bigint, n int, offs int4[], counts int4[], mins float8[], maxs float8[], sums float8[], lasts float8[], primary key (series_id, month));
insert into five select series_id, month, count(*), array[0, 1], array_agg(n order by bucket), array_agg(min order by bucket),
  array_agg(max order by bucket), array_agg(sum order by bucket), array_agg(last order by bucket) from month_of group by 1, 2;
create table interleaved (series_id bigint, month bigint, n int, offs int4[], cells float8[], primary key (series_id, month));
insert into interleaved select series_id, month, count(*), array[0, 1], array_agg(x order by bucket, o)
  from month_of, unnest(array[n::float8, min, max, sum, last]) with ordinality u(x, o) group by 1, 2;
create table last_run (series_id bigint, month bigint, n int, offs int4[], lasts float8[], primary key (series_id, month));
insert into last_run select series_id, month, count(*), array[0, 1], array_agg(last order by bucket) from month_of group by 1, 2;
create table sparse (series_id bigint, month bigint, n int, offs int4[], counts int4[], mins float8[], maxs float8[], sums float8[], lasts float8[], primary key (series_id, month));
insert into sparse select series_id, month, count(*), array[0, 1], array_agg(n order by bucket),
  array_agg(case when float8send(min) = float8send(last) then null else min end order by bucket),
  array_agg(case when float8send(max) = float8send(last) then null else max end order by bucket),
  array_agg(case when float8send(sum) = float8send(last) then null else sum end order by bucket),
  array_agg(last order by bucket) from month_of group by 1, 2;
create table five_day (series_id bigint, day bigint, n int, offs int4[], counts int4[], mins float8[], maxs float8[], sums float8[], lasts float8[], primary key (series_id, day));
insert into five_day select series_id, day, count(*), array[0, 1], array_agg(n order by bucket), array_agg(min order by bucket),
  array_agg(max order by bucket), array_agg(sum order by bucket), array_agg(last order by bucket) from month_of group by 1, 2;
vacuum analyze;
select :spms as spacing_ms, (select count(*) from pts) as points, (select round(avg(n)) from last_run) as buckets_a_month,
  (select round(avg(n), 2) from h1) as values_a_bucket, (select bool_and(n <= 1) from h1) as one_value_a_bucket,
  round(pg_total_relation_size('rows_1h')::numeric / (select count(*) from pts), 2) as rows,
  round(pg_total_relation_size('five')::numeric / (select count(*) from pts), 2) as five_arrays,
  round(pg_total_relation_size('interleaved')::numeric / (select count(*) from pts), 2) as interleaved,
  round(pg_total_relation_size('sparse')::numeric / (select count(*) from pts), 2) as sparse,
  round(pg_total_relation_size('last_run')::numeric / (select count(*) from pts), 2) as last_only,
  round(pg_total_relation_size('five_day')::numeric / (select count(*) from pts), 2) as five_arrays_day;
drop schema scratch_hour_encodings cascade;
