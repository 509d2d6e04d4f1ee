CREATE TABLE "budgets" (
	"tenant" text NOT NULL,
	"scope" text NOT NULL,
	"scope_id" text NOT NULL,
	"max_tokens" bigint,
	"max_cost_micro_usd" bigint,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "budgets_tenant_scope_scope_id_pk" PRIMARY KEY("tenant","scope","scope_id")
);
--> statement-breakpoint
CREATE TABLE "subagent_records" (
	"id" text PRIMARY KEY NOT NULL,
	"task_id" text NOT NULL,
	"tenant" text NOT NULL,
	"subagent_type" text NOT NULL,
	"parent_task_id" text NOT NULL,
	"user_id" text NOT NULL,
	"tool_call_id" text,
	"description" text NOT NULL,
	"model" text,
	"steps" bigint DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"total_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_input_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micro_usd" bigint DEFAULT 0 NOT NULL,
	"unpriced_tokens" bigint DEFAULT 0 NOT NULL,
	"status" text NOT NULL,
	"started_at" bigint NOT NULL,
	"completed_at" bigint,
	"duration_ms" bigint DEFAULT 0 NOT NULL,
	"usage_reported" bigint DEFAULT 1 NOT NULL,
	CONSTRAINT "subagent_records_task_id_unique" UNIQUE("task_id")
);
--> statement-breakpoint
CREATE TABLE "task_events" (
	"task_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"type" text NOT NULL,
	"at" bigint NOT NULL,
	"data" text NOT NULL,
	"parent_key" text,
	"parent_seq" bigint,
	CONSTRAINT "task_events_task_id_seq_pk" PRIMARY KEY("task_id","seq")
);
--> statement-breakpoint
CREATE TABLE "task_messages" (
	"task_id" text NOT NULL,
	"n" bigint NOT NULL,
	"step" bigint NOT NULL,
	"message" text NOT NULL,
	CONSTRAINT "task_messages_task_id_n_pk" PRIMARY KEY("task_id","n")
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant" text NOT NULL,
	"parent_task_id" text NOT NULL,
	"user_id" text NOT NULL,
	"tool_call_id" text,
	"subagent_type" text NOT NULL,
	"description" text NOT NULL,
	"request" text NOT NULL,
	"model" text,
	"status" text NOT NULL,
	"summary" text,
	"artifacts" text,
	"skipped" text,
	"output" text,
	"steps" bigint DEFAULT 0 NOT NULL,
	"stop_reason" text,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"total_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_input_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micro_usd" bigint DEFAULT 0 NOT NULL,
	"unpriced_tokens" bigint DEFAULT 0 NOT NULL,
	"error_code" text,
	"error_message" text,
	"idempotency_key" text,
	"request_hash" text,
	"created_at" bigint NOT NULL,
	"started_at" bigint,
	"completed_at" bigint,
	"session_id" text,
	"previous_task_id" text,
	"resumes" bigint DEFAULT 0 NOT NULL,
	"compactions" bigint DEFAULT 0 NOT NULL,
	"pause" text,
	"trace_parent" text,
	"budget" text,
	"paused_at" bigint,
	"paused_ms" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_reports" (
	"task_id" text NOT NULL,
	"n" bigint NOT NULL,
	"step" bigint NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"total_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_input_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"model" text,
	"cost_micro_usd" bigint,
	"at" bigint NOT NULL,
	CONSTRAINT "usage_reports_task_id_n_pk" PRIMARY KEY("task_id","n")
);
--> statement-breakpoint
CREATE TABLE "usage_rollups" (
	"tenant" text NOT NULL,
	"dim" text NOT NULL,
	"key" text NOT NULL,
	"day" text NOT NULL,
	"tasks" bigint DEFAULT 0 NOT NULL,
	"steps" bigint DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"total_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_input_tokens" bigint DEFAULT 0 NOT NULL,
	"reasoning_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_micro_usd" bigint DEFAULT 0 NOT NULL,
	"unpriced_tokens" bigint DEFAULT 0 NOT NULL,
	"duration_ms" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_rollups_tenant_dim_day_key_pk" PRIMARY KEY("tenant","dim","day","key")
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"tenant" text NOT NULL,
	"event" text NOT NULL,
	"task_id" text NOT NULL,
	"payload" text NOT NULL,
	"status" text NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"delivered_at" bigint
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant" text NOT NULL,
	"url" text NOT NULL,
	"events" text NOT NULL,
	"secret" text NOT NULL,
	"created_at" bigint NOT NULL,
	"kind" text DEFAULT 'webhook' NOT NULL,
	"task_id" text,
	"config_id" text,
	"token" text,
	"authorization" text,
	"a2a_version" text
);
--> statement-breakpoint
CREATE INDEX "records_tenant_started" ON "subagent_records" USING btree ("tenant","started_at");--> statement-breakpoint
CREATE INDEX "records_user" ON "subagent_records" USING btree ("tenant","user_id","started_at");--> statement-breakpoint
CREATE INDEX "records_parent" ON "subagent_records" USING btree ("tenant","parent_task_id");--> statement-breakpoint
CREATE INDEX "task_events_parent" ON "task_events" USING btree ("parent_key","parent_seq");--> statement-breakpoint
CREATE INDEX "tasks_tenant_id" ON "tasks" USING btree ("tenant","id");--> statement-breakpoint
CREATE INDEX "tasks_session" ON "tasks" USING btree ("tenant","session_id","id");--> statement-breakpoint
CREATE INDEX "tasks_parent" ON "tasks" USING btree ("tenant","parent_task_id","id");--> statement-breakpoint
CREATE INDEX "tasks_status" ON "tasks" USING btree ("status");--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_idempotency" ON "tasks" USING btree ("tenant","idempotency_key");--> statement-breakpoint
CREATE INDEX "usage_rollups_by_key" ON "usage_rollups" USING btree ("tenant","dim","key","day");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_of" ON "webhook_deliveries" USING btree ("webhook_id","id");--> statement-breakpoint
CREATE INDEX "webhooks_tenant" ON "webhooks" USING btree ("tenant","id");--> statement-breakpoint
CREATE INDEX "webhooks_task" ON "webhooks" USING btree ("task_id");