ALTER TABLE `task_events` ADD `parent_key` text;--> statement-breakpoint
ALTER TABLE `task_events` ADD `parent_seq` integer;--> statement-breakpoint
CREATE INDEX `task_events_parent` ON `task_events` (`parent_key`,`parent_seq`);