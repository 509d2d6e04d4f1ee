CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`role` text NOT NULL,
	`name` text,
	`hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_unique` ON `api_keys` (`hash`);--> statement-breakpoint
CREATE INDEX `api_keys_tenant` ON `api_keys` (`tenant`,`id`);--> statement-breakpoint
CREATE TABLE `audit_log` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`at` integer NOT NULL,
	`key` text NOT NULL,
	`action` text NOT NULL,
	`target` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_log_tenant` ON `audit_log` (`tenant`,`id`);--> statement-breakpoint
ALTER TABLE `tasks` ADD `purged_at` integer;--> statement-breakpoint
CREATE INDEX `tasks_retention` ON `tasks` (`completed_at`) WHERE purged_at IS NULL AND completed_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `tasks_user` ON `tasks` (`tenant`,`user_id`);