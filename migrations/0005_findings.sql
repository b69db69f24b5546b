CREATE TABLE "finding_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"finding_id" bigint NOT NULL,
	"event" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "findings" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"fingerprint" text NOT NULL,
	"kind" text NOT NULL,
	"severity" text NOT NULL,
	"provider_id" text NOT NULL,
	"project_id" text NOT NULL,
	"job_id" text NOT NULL,
	"node_id" text,
	"gpu_id" text,
	"summary" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"last_seen_at" timestamp with time zone NOT NULL,
	"hold_until" timestamp with time zone,
	"evidence" jsonb NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "finding_events_once_idx" ON "finding_events" USING btree ("finding_id","event");--> statement-breakpoint
CREATE UNIQUE INDEX "findings_open_idx" ON "findings" USING btree ("fingerprint") WHERE ended_at is null;--> statement-breakpoint
CREATE INDEX "findings_fingerprint_idx" ON "findings" USING btree ("fingerprint");--> statement-breakpoint
CREATE INDEX "findings_job_idx" ON "findings" USING btree ("job_id","started_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "findings_started_idx" ON "findings" USING btree ("started_at" DESC NULLS LAST,"id" DESC NULLS LAST);