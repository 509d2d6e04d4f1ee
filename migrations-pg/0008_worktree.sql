ALTER TABLE "tasks" ADD COLUMN "worktree" text;--> statement-breakpoint
CREATE INDEX "tasks_worktree" ON "tasks" USING btree ("completed_at") WHERE worktree IS NOT NULL;