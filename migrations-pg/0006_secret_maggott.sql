ALTER TABLE "tasks" ADD COLUMN "depth" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "parent_task" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "max_depth" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_parent_task" ON "tasks" USING btree ("parent_task");