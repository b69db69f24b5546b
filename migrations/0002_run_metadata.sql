CREATE TABLE "job_summaries" (
	"job_id" text NOT NULL,
	"name" text NOT NULL,
	"stage" text,
	"latest_value" double precision,
	"latest_step" bigint,
	"latest_at" timestamp with time zone,
	"best_value" double precision,
	"best_step" bigint,
	"mode" text,
	"best_source" text,
	CONSTRAINT "job_summaries_job_id_name_pk" PRIMARY KEY("job_id","name")
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "owner" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "labels" jsonb;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "config" jsonb;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "image" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "command" text;--> statement-breakpoint
CREATE INDEX "job_summaries_metric_idx" ON "job_summaries" USING btree ("name","latest_value");--> statement-breakpoint
CREATE INDEX "jobs_owner_idx" ON "jobs" USING btree ("owner");--> statement-breakpoint
CREATE INDEX "jobs_labels_idx" ON "jobs" USING gin ("labels");