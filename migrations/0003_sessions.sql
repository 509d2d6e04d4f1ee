CREATE TABLE `task_messages` (
	`task_id` text NOT NULL,
	`n` integer NOT NULL,
	`step` integer NOT NULL,
	`message` text NOT NULL,
	PRIMARY KEY(`task_id`, `n`)
);
--> statement-breakpoint
ALTER TABLE `tasks` ADD `session_id` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `previous_task_id` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `resumes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `compactions` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `tasks_session` ON `tasks` (`tenant`,`session_id`,`id`);--> statement-breakpoint
UPDATE `tasks` SET `session_id` = `id` WHERE `session_id` IS NULL;