CREATE TABLE "points_1h" (
	"series_id" bigint NOT NULL,
	"bucket" bigint NOT NULL,
	"n" integer NOT NULL,
	"min" double precision,
	"max" double precision,
	"sum" double precision,
	"last" double precision,
	CONSTRAINT "points_1h_series_id_bucket_pk" PRIMARY KEY("series_id","bucket")
);
--> statement-breakpoint
CREATE TABLE "points_1m" (
	"series_id" bigint NOT NULL,
	"bucket" bigint NOT NULL,
	"n" integer NOT NULL,
	"min" double precision,
	"max" double precision,
	"sum" double precision,
	"last" double precision,
	CONSTRAINT "points_1m_series_id_bucket_pk" PRIMARY KEY("series_id","bucket")
);
--> statement-breakpoint
ALTER TABLE "series" ADD COLUMN "raw_before" bigint;--> statement-breakpoint
-- Backfill: the rollups of every time-keyed series' stored points, as Repository.rollUp keeps them
-- on write (sum in key order, count and last of non-null values). One pass over points per table.
INSERT INTO "points_1m" ("series_id", "bucket", "n", "min", "max", "sum", "last")
SELECT p.series_id, p.key - ((p.key % 60000) + 60000) % 60000 AS bucket, count(p.value)::int, min(p.value), max(p.value),
  sum(p.value ORDER BY p.key), (array_agg(p.value ORDER BY p.key DESC) FILTER (WHERE p.value IS NOT NULL))[1]
FROM "points" p JOIN "series" s ON s.id = p.series_id AND s.keyed_by = 'time'
GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "points_1h" ("series_id", "bucket", "n", "min", "max", "sum", "last")
SELECT p.series_id, p.key - ((p.key % 3600000) + 3600000) % 3600000 AS bucket, count(p.value)::int, min(p.value), max(p.value),
  sum(p.value ORDER BY p.key), (array_agg(p.value ORDER BY p.key DESC) FILTER (WHERE p.value IS NOT NULL))[1]
FROM "points" p JOIN "series" s ON s.id = p.series_id AND s.keyed_by = 'time'
GROUP BY 1, 2;
