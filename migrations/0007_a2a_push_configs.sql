ALTER TABLE `webhooks` ADD `kind` text DEFAULT 'webhook' NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `task_id` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `config_id` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `token` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `authorization` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `a2a_version` text;--> statement-breakpoint
CREATE INDEX `webhooks_task` ON `webhooks` (`task_id`);