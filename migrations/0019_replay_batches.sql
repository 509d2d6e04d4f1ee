CREATE TABLE `replay_batches` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`created_at` integer NOT NULL,
	`variants` text NOT NULL,
	`rows` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `replay_batches_tenant` ON `replay_batches` (`tenant`,`id`);