-- Compacted raw points (docs/history.md, "Built: compact raw points"): one row per time-keyed
-- series and UTC day, `offs` the samples' milliseconds after `chunk_start` (a day at one spacing
-- keeps only [first, spacing]), `vals` and `steps` (null when the day has none) in key order.
-- Partitioned by
-- range of `chunk_start`, a partition per UTC month created by the compactor as it needs one, so
-- retention drops whole months. Nothing is moved here: the collector's lease holder compacts
-- settled days in batches after start (Repository.compactRawPointsBatch).
CREATE TABLE "point_chunks" (
	"series_id" bigint NOT NULL,
	"chunk_start" bigint NOT NULL,
	"n" integer NOT NULL,
	"offs" integer[] NOT NULL,
	"vals" double precision[] NOT NULL,
	"steps" integer[],
	CONSTRAINT "point_chunks_series_id_chunk_start_pk" PRIMARY KEY("series_id","chunk_start")
) PARTITION BY RANGE ("chunk_start");
