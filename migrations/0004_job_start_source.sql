ALTER TABLE "jobs" ADD COLUMN "started_at_source" text;--> statement-breakpoint
-- Rows cached before the column: Baseten has no start field (its start is the creation), the others' is the platform's own.
UPDATE "jobs" SET "started_at_source" = CASE WHEN "providers"."kind" = 'BASETEN' THEN 'CREATION' ELSE 'PLATFORM' END FROM "providers" WHERE "providers"."id" = "jobs"."provider_id" AND "jobs"."started_at" IS NOT NULL;
