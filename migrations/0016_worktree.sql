ALTER TABLE `tasks` ADD `worktree` text;--> statement-breakpoint
CREATE INDEX `tasks_worktree` ON `tasks` (`completed_at`) WHERE worktree IS NOT NULL;