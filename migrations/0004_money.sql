CREATE TABLE `budgets` (
	`tenant` text NOT NULL,
	`scope` text NOT NULL,
	`scope_id` text NOT NULL,
	`max_tokens` integer,
	`max_cost_micro_usd` integer,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant`, `scope`, `scope_id`)
);
--> statement-breakpoint
ALTER TABLE `subagent_records` ADD `cost_micro_usd` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `subagent_records` ADD `unpriced_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `cost_micro_usd` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `unpriced_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `pause` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `budget` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `paused_at` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `paused_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_reports` ADD `model` text;--> statement-breakpoint
ALTER TABLE `usage_reports` ADD `cost_micro_usd` integer;