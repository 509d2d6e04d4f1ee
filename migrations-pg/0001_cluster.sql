CREATE TABLE "task_inbox" (
	"task_id" text NOT NULL,
	"n" bigint NOT NULL,
	"text" text NOT NULL,
	"at" bigint NOT NULL,
	CONSTRAINT "task_inbox_task_id_n_pk" PRIMARY KEY("task_id","n")
);
--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "owner" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "lease_until" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "resume_reason" text;--> statement-breakpoint
CREATE INDEX "tasks_owner" ON "tasks" USING btree ("owner","status");