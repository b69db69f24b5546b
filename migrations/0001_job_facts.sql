ALTER TABLE "jobs" ADD COLUMN "accelerator_kind" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "failure_reason" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "console_url" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "restart_count" integer;