CREATE TABLE `subagent_records` (
	`id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`tenant` text NOT NULL,
	`subagent_type` text NOT NULL,
	`parent_task_id` text NOT NULL,
	`user_id` text NOT NULL,
	`tool_call_id` text,
	`description` text NOT NULL,
	`model` text,
	`steps` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`total_tokens` integer DEFAULT 0 NOT NULL,
	`cached_input_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`status` text NOT NULL,
	`started_at` integer NOT NULL,
	`completed_at` integer,
	`duration_ms` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `subagent_records_task_id_unique` ON `subagent_records` (`task_id`);--> statement-breakpoint
CREATE INDEX `records_tenant_started` ON `subagent_records` (`tenant`,`started_at`);--> statement-breakpoint
CREATE INDEX `records_user` ON `subagent_records` (`tenant`,`user_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `records_parent` ON `subagent_records` (`tenant`,`parent_task_id`);--> statement-breakpoint
CREATE TABLE `task_events` (
	`task_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`at` integer NOT NULL,
	`data` text NOT NULL,
	PRIMARY KEY(`task_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`parent_task_id` text NOT NULL,
	`user_id` text NOT NULL,
	`tool_call_id` text,
	`subagent_type` text NOT NULL,
	`description` text NOT NULL,
	`request` text NOT NULL,
	`model` text,
	`status` text NOT NULL,
	`summary` text,
	`artifacts` text,
	`skipped` text,
	`output` text,
	`steps` integer DEFAULT 0 NOT NULL,
	`stop_reason` text,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`total_tokens` integer DEFAULT 0 NOT NULL,
	`cached_input_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`error_code` text,
	`error_message` text,
	`idempotency_key` text,
	`request_hash` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`completed_at` integer
);
--> statement-breakpoint
CREATE INDEX `tasks_tenant_id` ON `tasks` (`tenant`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_parent` ON `tasks` (`tenant`,`parent_task_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_status` ON `tasks` (`status`);--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_idempotency` ON `tasks` (`tenant`,`idempotency_key`);