ALTER TABLE `webhooks` ADD `failing_since` integer;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `disabled_at` integer;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `disabled_reason` text;