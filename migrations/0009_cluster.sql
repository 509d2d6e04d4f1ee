CREATE TABLE `task_inbox` (
	`task_id` text NOT NULL,
	`n` integer NOT NULL,
	`text` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`task_id`, `n`)
);
--> statement-breakpoint
ALTER TABLE `tasks` ADD `owner` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `lease_until` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `resume_reason` text;--> statement-breakpoint
CREATE INDEX `tasks_owner` ON `tasks` (`owner`,`status`);