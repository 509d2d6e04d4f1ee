ALTER TABLE "tasks" ADD COLUMN "pause_until" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "waiting_calls" text;