ALTER TABLE "usage_reports" ADD COLUMN "call_key" text;--> statement-breakpoint
CREATE UNIQUE INDEX "usage_reports_call" ON "usage_reports" USING btree ("task_id","call_key");