CREATE TABLE "collect_leases" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "collected_jobs" (
	"job_id" text PRIMARY KEY NOT NULL,
	"completed_at" timestamp with time zone NOT NULL
);
