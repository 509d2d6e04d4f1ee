ALTER TABLE `tasks` ADD `depth` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `parent_task` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `max_depth` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `tasks_parent_task` ON `tasks` (`parent_task`);