ALTER TABLE `tasks` ADD `pause_until` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `waiting_calls` text;