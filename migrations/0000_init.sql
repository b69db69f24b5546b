CREATE TABLE "fetch_errors" (
	"job_id" text NOT NULL,
	"dataset" text NOT NULL,
	"failed_at" timestamp with time zone NOT NULL,
	"code" text NOT NULL,
	"message" text NOT NULL,
	CONSTRAINT "fetch_errors_job_id_dataset_pk" PRIMARY KEY("job_id","dataset")
);
--> statement-breakpoint
CREATE TABLE "fetches" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"job_id" text NOT NULL,
	"dataset" text NOT NULL,
	"range_from" timestamp with time zone NOT NULL,
	"range_to" timestamp with time zone NOT NULL,
	"fetched_at" timestamp with time zone NOT NULL,
	"step_seconds" integer NOT NULL,
	"final" boolean NOT NULL
);
--> statement-breakpoint
CREATE TABLE "gpus" (
	"id" text PRIMARY KEY NOT NULL,
	"job_id" text NOT NULL,
	"node_id" text NOT NULL,
	"idx" integer NOT NULL,
	"model" text,
	"memory_total_bytes" double precision
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"provider_id" text NOT NULL,
	"project_id" text NOT NULL,
	"external_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"raw_status" text,
	"created_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"gpu_type" text,
	"gpu_count" integer,
	"sort_at" timestamp with time zone NOT NULL,
	"seen_at" timestamp with time zone NOT NULL,
	"detail_fetched_at" timestamp with time zone,
	"topology_fetched_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "nodes" (
	"id" text PRIMARY KEY NOT NULL,
	"job_id" text NOT NULL,
	"external_id" text NOT NULL,
	"name" text NOT NULL,
	"ord" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "points" (
	"series_id" bigint NOT NULL,
	"key" bigint NOT NULL,
	"ts" timestamp with time zone,
	"step" integer,
	"value" double precision,
	CONSTRAINT "points_series_id_key_pk" PRIMARY KEY("series_id","key")
);
--> statement-breakpoint
CREATE TABLE "progress" (
	"job_id" text PRIMARY KEY NOT NULL,
	"iteration" double precision,
	"target_iteration" double precision,
	"rate" double precision,
	"updated_at" timestamp with time zone,
	"fetched_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"provider_id" text NOT NULL,
	"external_id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone,
	"seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "provider_syncs" (
	"provider_id" text NOT NULL,
	"dataset" text NOT NULL,
	"synced_at" timestamp with time zone,
	"attempted_at" timestamp with time zone NOT NULL,
	"error_code" text,
	"error_message" text,
	CONSTRAINT "provider_syncs_provider_id_dataset_pk" PRIMARY KEY("provider_id","dataset")
);
--> statement-breakpoint
CREATE TABLE "providers" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"simulated" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "series" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"series_key" text NOT NULL,
	"job_id" text NOT NULL,
	"node_id" text,
	"gpu_id" text,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"raw_name" text,
	"unit" text NOT NULL,
	"scope" text NOT NULL,
	"source" text NOT NULL,
	"stage" text,
	"keyed_by" text NOT NULL,
	"meta" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE INDEX "fetches_job_idx" ON "fetches" USING btree ("job_id","dataset","fetched_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "gpus_node_idx" ON "gpus" USING btree ("node_id","idx");--> statement-breakpoint
CREATE INDEX "gpus_job_idx" ON "gpus" USING btree ("job_id");--> statement-breakpoint
CREATE INDEX "jobs_sort_idx" ON "jobs" USING btree ("sort_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "jobs_provider_sort_idx" ON "jobs" USING btree ("provider_id","sort_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "jobs_project_sort_idx" ON "jobs" USING btree ("project_id","sort_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "nodes_job_idx" ON "nodes" USING btree ("job_id","ord");--> statement-breakpoint
CREATE INDEX "projects_provider_idx" ON "projects" USING btree ("provider_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "series_key_idx" ON "series" USING btree ("series_key");--> statement-breakpoint
CREATE INDEX "series_job_idx" ON "series" USING btree ("job_id","kind","name");