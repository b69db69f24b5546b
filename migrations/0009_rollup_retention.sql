-- Retention per resolution (docs/history.md, "Built: retention per resolution"): where each
-- series' 1-minute and 1-hour rollup rows now begin, set by the collector's lease holder as it
-- drops them (Repository.dropMinuteRollupsBatch, dropHourRollupsBatch); null = none dropped.
ALTER TABLE "series" ADD COLUMN "minute_before" bigint;--> statement-breakpoint
ALTER TABLE "series" ADD COLUMN "hour_before" bigint;