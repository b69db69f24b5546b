-- Compacted 1-minute rollups (docs/history.md, "Built: compacted 1-minute rollups"): one row per
-- time-keyed series and UTC day of its `points_1m` buckets, in bucket order. `offs` each bucket's
-- minutes after the one before (the first's after `chunk_start`; a day at one spacing keeps only
-- [first, spacing]); `lasts` each bucket's last value; `counts`, `mins`, `maxs` and `sums` the
-- rest of each bucket, all four null when every bucket of the day holds at most one value (its n
-- is then whether `last` is not null, and min = max = sum = last). Partitioned by range of
-- `chunk_start`, a partition per UTC month created by the compactor as it needs one, so retention
-- drops whole months. Nothing is moved here: the collector's lease holder compacts settled days in
-- batches after start (Repository.compactRollupsBatch).
CREATE TABLE "rollup_chunks_1m" (
	"series_id" bigint NOT NULL,
	"chunk_start" bigint NOT NULL,
	"n" integer NOT NULL,
	"offs" integer[] NOT NULL,
	"counts" integer[],
	"mins" double precision[],
	"maxs" double precision[],
	"sums" double precision[],
	"lasts" double precision[] NOT NULL,
	CONSTRAINT "rollup_chunks_1m_series_id_chunk_start_pk" PRIMARY KEY("series_id","chunk_start")
) PARTITION BY RANGE ("chunk_start");
