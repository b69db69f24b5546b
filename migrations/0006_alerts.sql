CREATE TABLE "alert_notifications" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"finding_id" bigint NOT NULL,
	"event" text NOT NULL,
	"receiver" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"first_attempt_at" timestamp with time zone,
	"last_attempt_at" timestamp with time zone,
	"last_status" integer,
	"last_error" text,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "alert_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"finding_id" bigint NOT NULL,
	"event" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alert_silences" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"matchers" jsonb NOT NULL,
	"scope" jsonb,
	"starts_at" timestamp with time zone NOT NULL,
	"ends_at" timestamp with time zone NOT NULL,
	"comment" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expired_by" text
);
--> statement-breakpoint
CREATE TABLE "finding_acks" (
	"finding_id" bigint PRIMARY KEY NOT NULL,
	"by" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"comment" text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "alert_notifications_key_idx" ON "alert_notifications" USING btree ("idempotency_key");--> statement-breakpoint
CREATE INDEX "alert_notifications_due_idx" ON "alert_notifications" USING btree ("next_attempt_at") WHERE state in ('PENDING', 'SILENCED');--> statement-breakpoint
CREATE INDEX "alert_notifications_finding_idx" ON "alert_notifications" USING btree ("finding_id");--> statement-breakpoint
CREATE UNIQUE INDEX "alert_outbox_once_idx" ON "alert_outbox" USING btree ("finding_id","event");