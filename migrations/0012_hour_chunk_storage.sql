-- The 1-hour rollup's month chunks stored out of line uncompressed (docs/history.md, "The 1-hour
-- chunks kept uncompressed"). A fleet view reads a day of every series from the month's chunk, and
-- PostgreSQL decompresses a compressed array whole to read any slice of it: at a sample a minute a
-- month's four float arrays are 480-744 values each, and their pglz decompression was about half of
-- the 1-hour rollup's read (1,000 series x 24 hours). Stored EXTERNAL, a chunk costs about twice
-- its compressed bytes (0.3 B a point of history at a sample a minute) and its read copies instead
-- of decompressing. `offs` and `counts` (a run of one value at one spacing) stay compressed.
-- SET STORAGE recurses to the year partitions and is inherited by those created later. Rows
-- already stored keep their compressed values until rewritten: the compactor rewrites a month's
-- chunk each time a day of it settles, so only past months keep theirs, read as before.
ALTER TABLE "rollup_chunks_1h" ALTER COLUMN "mins" SET STORAGE EXTERNAL;--> statement-breakpoint
ALTER TABLE "rollup_chunks_1h" ALTER COLUMN "maxs" SET STORAGE EXTERNAL;--> statement-breakpoint
ALTER TABLE "rollup_chunks_1h" ALTER COLUMN "sums" SET STORAGE EXTERNAL;--> statement-breakpoint
ALTER TABLE "rollup_chunks_1h" ALTER COLUMN "lasts" SET STORAGE EXTERNAL;
