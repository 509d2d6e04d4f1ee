CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant" text NOT NULL,
	"role" text NOT NULL,
	"name" text,
	"hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	"revoked_at" bigint,
	CONSTRAINT "api_keys_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant" text NOT NULL,
	"at" bigint NOT NULL,
	"key" text NOT NULL,
	"action" text NOT NULL,
	"target" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "purged_at" bigint;--> statement-breakpoint
CREATE INDEX "api_keys_tenant" ON "api_keys" USING btree ("tenant","id");--> statement-breakpoint
CREATE INDEX "audit_log_tenant" ON "audit_log" USING btree ("tenant","id");--> statement-breakpoint
CREATE INDEX "tasks_retention" ON "tasks" USING btree ("completed_at") WHERE purged_at IS NULL AND completed_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_user" ON "tasks" USING btree ("tenant","user_id");