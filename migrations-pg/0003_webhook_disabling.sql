ALTER TABLE "webhooks" ADD COLUMN "failing_since" bigint;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "disabled_at" bigint;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "disabled_reason" text;