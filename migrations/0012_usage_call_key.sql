ALTER TABLE `usage_reports` ADD `call_key` text;--> statement-breakpoint
CREATE UNIQUE INDEX `usage_reports_call` ON `usage_reports` (`task_id`,`call_key`);