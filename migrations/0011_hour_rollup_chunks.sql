-- Compacted 1-hour rollups (docs/history.md, "Built: compacted 1-hour rollups"): one row per
-- time-keyed series and UTC month of its `points_1h` buckets, in bucket order, the month's settled
-- days so far (`last_bucket` its last bucket: a later hour of the month is not in it). `offs` each
-- bucket's hours after the one before (the first's after `chunk_start`; a month at one spacing
-- keeps only [first, spacing]); `counts` and `lasts` each bucket's n and last value; `mins`,
-- `maxs` and `sums` each bucket's min, max and sum, null where it is the bucket's last to the bit
-- (a bucket of one value), which costs a bit of the array's null bitmap instead of 8 bytes.
-- Partitioned by range of `chunk_start`, a partition per UTC year created by the compactor as it
-- needs one (the 1-hour rollup is kept for ever by default: twelve months a partition keep their
-- number small), so retention drops whole years and deletes chunk rows of whole months. Nothing is
-- moved here: the collector's lease holder compacts settled days in batches after start
-- (Repository.compactHourRollupsBatch).
CREATE TABLE "rollup_chunks_1h" (
	"series_id" bigint NOT NULL,
	"chunk_start" bigint NOT NULL,
	"n" integer NOT NULL,
	"last_bucket" bigint NOT NULL,
	"offs" integer[] NOT NULL,
	"counts" integer[] NOT NULL,
	"mins" double precision[] NOT NULL,
	"maxs" double precision[] NOT NULL,
	"sums" double precision[] NOT NULL,
	"lasts" double precision[] NOT NULL,
	CONSTRAINT "rollup_chunks_1h_series_id_chunk_start_pk" PRIMARY KEY("series_id","chunk_start")
) PARTITION BY RANGE ("chunk_start");
